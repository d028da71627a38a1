// The C++ statistics against tests/vectors/stats.json, the file the Python tests also read.
#include <cmath>
#include <iostream>
#include <limits>
#include <stdexcept>

#include "check.h"
#include "measure/stats.h"
#include "measure/timing.h"
#include "util/json.h"

using namespace xlabench;
using json::Value;

namespace {

std::vector<double> numbers(const Value& array) {
  std::vector<double> out;
  for (const auto& v : array.as_array()) out.push_back(v.as_number());
  return out;
}

bool matches(double actual, const Value& expected) {
  if (expected.is_null()) return !std::isfinite(actual);  // JSON null stands for inf
  return test::close(actual, expected.as_number());
}

void check_medians_and_percentiles(const Value& doc) {
  for (const auto& c : doc.at("median").as_array())
    CHECK(matches(stats::median(numbers(c.at("values"))), c.at("expected")));
  for (const auto& c : doc.at("percentile").as_array()) {
    const double got = stats::percentile(numbers(c.at("values")), c.at("q").as_number());
    if (!matches(got, c.at("expected")))
      std::cerr << "percentile q=" << c.at("q").as_number() << " got " << got << "\n";
    CHECK(matches(got, c.at("expected")));
  }
}

void check_ci_ranks(const Value& doc) {
  std::size_t cases = 0;
  for (const auto& c : doc.at("median_ci_ranks").as_array()) {
    const auto n = static_cast<std::size_t>(c.at("n").as_integer());
    const stats::CiRanks r = stats::median_ci_ranks(n, c.at("confidence").as_number());
    const bool ok = static_cast<long>(r.lo) == c.at("lo").as_integer() &&
                    static_cast<long>(r.hi) == c.at("hi").as_integer() &&
                    matches(r.achieved, c.at("achieved"));
    if (!ok) std::cerr << "median_ci_ranks n=" << n << " got " << r.lo << "," << r.hi << "\n";
    CHECK(ok);
    ++cases;
  }
  CHECK(cases >= 60);
}

void check_halfwidth_steps_steady(const Value& doc) {
  for (const auto& c : doc.at("rel_ci_halfwidth").as_array())
    CHECK(matches(stats::rel_ci_halfwidth(numbers(c.at("values"))), c.at("expected")));
  for (const auto& c : doc.at("steps_for").as_array()) {
    const long got = timing::steps_for(c.at("min_sample_s").as_number(), c.at("step_s").as_number());
    CHECK(got == c.at("expected").as_integer());
  }
  for (const auto& c : doc.at("is_steady").as_array())
    CHECK(timing::is_steady(numbers(c.at("step_s"))) == c.at("expected").as_bool());
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
  const Value doc = json::parse_file(argv[1]);
  check_medians_and_percentiles(doc);
  check_ci_ranks(doc);
  check_halfwidth_steps_steady(doc);
  check_edge_cases();
  return test::finish("test_stats");
}
