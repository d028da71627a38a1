// The C++ statistics against tests/vectors/stats.json, the file the Python tests also read.
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "check.h"
#include "measure/stats.h"
#include "measure/timing.h"
#include "util/files.h"

using namespace xlabench;
using Value = nlohmann::json;

namespace {

std::vector<double> numbers(const Value& array) {
  std::vector<double> out;
  for (const auto& v : array) out.push_back(v.get<double>());
  return out;
}

bool matches(double actual, const Value& expected) {
  if (expected.is_null()) return !std::isfinite(actual);  // JSON null stands for inf
  return test::close(actual, expected.get<double>());
}

void check_medians_and_percentiles(const Value& doc) {
  for (const auto& c : doc.at("median"))
    CHECK(matches(stats::median(numbers(c.at("values"))), c.at("expected")));
  for (const auto& c : doc.at("percentile")) {
    const double got = stats::percentile(numbers(c.at("values")), c.at("q").get<double>());
    if (!matches(got, c.at("expected")))
      std::cerr << "percentile q=" << c.at("q").get<double>() << " got " << got << "\n";
    CHECK(matches(got, c.at("expected")));
  }
}

void check_ci_ranks(const Value& doc) {
  std::size_t cases = 0;
  for (const auto& c : doc.at("median_ci_ranks")) {
    const auto n = static_cast<std::size_t>(c.at("n").get<long>());
    const stats::CiRanks r = stats::median_ci_ranks(n, c.at("confidence").get<double>());
    const bool ok = static_cast<long>(r.lo) == c.at("lo").get<long>() &&
                    static_cast<long>(r.hi) == c.at("hi").get<long>() &&
                    matches(r.achieved, c.at("achieved"));
    if (!ok) std::cerr << "median_ci_ranks n=" << n << " got " << r.lo << "," << r.hi << "\n";
    CHECK(ok);
    ++cases;
  }
  CHECK(cases >= 60);
}

void check_halfwidth_steps_steady(const Value& doc) {
  for (const auto& c : doc.at("rel_ci_halfwidth"))
    CHECK(matches(stats::rel_ci_halfwidth(numbers(c.at("values"))), c.at("expected")));
  for (const auto& c : doc.at("steps_for")) {
    const long got =
        timing::steps_for(c.at("min_sample_s").get<double>(), c.at("step_s").get<double>());
    CHECK(got == c.at("expected").get<long>());
  }
  for (const auto& c : doc.at("is_steady"))
    CHECK(timing::is_steady(numbers(c.at("step_s"))) == c.at("expected").get<bool>());
}

void check_edge_cases() {
  bool threw = false;
  try {
    stats::median({});
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    stats::median_ci_ranks(0);
  } catch (const std::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  CHECK(stats::binom_cdf(-1, 10) == 0.0);
  CHECK(stats::binom_cdf(10, 10) == 1.0);
  CHECK(stats::binom_cdf(2000, 1000) == 1.0);  // big-integer path, correctly rounded
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: test_stats VECTORS.json\n";
    return 2;
  }
  const Value doc = read_json(argv[1]);
  check_medians_and_percentiles(doc);
  check_ci_ranks(doc);
  check_halfwidth_steps_steady(doc);
  check_edge_cases();
  return test::finish("test_stats");
}
