// The timing method on a fake clock and a fake runtime with scripted step times: the same
// scenarios as tests/vectors/timing.json, which the Python method produced and its tests check.
#include <iostream>

#include "check.h"
#include "measure/stats.h"
#include "measure/timing.h"
#include "util/files.h"

using namespace xlabench;
using Value = nlohmann::json;

namespace {

// Each step advances the clock by the next scripted time (cycling), each sync by sync_s.
class ScriptedRuntime {
 public:
  ScriptedRuntime(std::vector<double> script, double sync_s)
      : script_(std::move(script)), sync_s_(sync_s) {}
  double clock() const { return now_; }
  void step() { now_ += script_[calls_++ % script_.size()]; }
  void sync() { now_ += sync_s_; }
  long calls() const { return static_cast<long>(calls_); }

 private:
  std::vector<double> script_;
  double sync_s_;
  double now_ = 0.0;
  std::size_t calls_ = 0;
};

std::vector<double> numbers(const Value& array) {
  std::vector<double> out;
  for (const auto& v : array) out.push_back(v.get<double>());
  return out;
}

bool same(const std::vector<double>& actual, const Value& expected) {
  const std::vector<double> want = numbers(expected);
  if (actual.size() != want.size()) return false;
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!test::close(actual[i], want[i])) return false;
  return true;
}

timing::Settings settings_from(const Value& s) {
  timing::Settings out;
  out.target_rel_ci = s.at("target_rel_ci").get<double>();
  out.min_sample_s = s.at("min_sample_s").get<double>();
  out.min_samples = s.at("min_samples").get<long>();
  out.max_samples = s.at("max_samples").get<long>();
  out.warmup_min_steps = s.at("warmup_min_steps").get<long>();
  out.warmup_min_s = s.at("warmup_min_s").get<double>();
  out.warmup_max_s = s.at("warmup_max_s").get<double>();
  out.budget_s = s.at("budget_s").get<double>();
  out.latency_steps = s.at("latency_steps").get<long>();
  out.latency_budget_s = s.at("latency_budget_s").get<double>();
  return out;
}

// The sequence of runner/worker.py's _time_runner (and of src/cli.cc).
void replay(const Value& scenario) {
  const std::string name = scenario.at("name").get<std::string>();
  const Value& want = scenario.at("expected");
  const timing::Settings settings = settings_from(scenario.at("settings"));
  CHECK(timing::validate(settings).empty());
  ScriptedRuntime rt(numbers(scenario.at("script")), scenario.at("sync_s").get<double>());
  const timing::Method method([&] { rt.step(); }, [&] { rt.sync(); }, [&] { return rt.clock(); });

  const double first_s = method.time_call();
  const timing::WarmupResult warm = method.warm_up(settings);
  const std::vector<double> last3(warm.step_s.end() - std::min<std::size_t>(3, warm.step_s.size()),
                                  warm.step_s.end());
  const long steps = method.calibrate(settings, stats::median(last3));
  const timing::SampleResult samples = method.collect_samples(settings, steps);
  const std::vector<double> latency =
      method.time_latency(settings.latency_steps, settings.latency_budget_s);

  const bool ok = test::close(first_s, want.at("first_call_s").get<double>()) &&
                  warm.steps == want.at("warmup_steps").get<long>() &&
                  warm.steady == want.at("warmup_steady").get<bool>() &&
                  test::close(warm.seconds, want.at("warmup_s").get<double>()) &&
                  steps == want.at("steps_per_sample").get<long>() &&
                  same(samples.sample_s, want.at("sample_s")) &&
                  samples.target_met == want.at("target_met").get<bool>() &&
                  same(latency, want.at("latency_s")) &&
                  rt.calls() == want.at("total_steps").get<long>();
  if (!ok)
    std::cerr << name << ": warm-up " << warm.steps << ", steps " << steps << ", samples "
              << samples.sample_s.size() << ", latency " << latency.size() << ", calls "
              << rt.calls() << "\n";
  CHECK(ok);
}

void check_validation() {
  timing::Settings s;
  CHECK(timing::validate(s).empty());
  s.min_samples = 2;
  CHECK(!timing::validate(s).empty());
  s = timing::Settings{};
  s.target_rel_ci = 1.5;
  CHECK(!timing::validate(s).empty());
  s = timing::Settings{};
  s.warmup_min_steps = 0;
  CHECK(!timing::validate(s).empty());
  s = timing::Settings{};
  s.budget_s = 0;
  CHECK(!timing::validate(s).empty());
}

// A pipelined sample pays one sync however many steps it runs.
void check_one_sync_per_sample() {
  ScriptedRuntime rt({0.01}, 1.0);
  const timing::Method method([&] { rt.step(); }, [&] { rt.sync(); }, [&] { return rt.clock(); });
  CHECK(test::close(method.time_sample(10), 1.1));
  CHECK(test::close(method.time_call(), 1.01));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: test_timing TIMING_VECTORS.json\n";
    return 2;
  }
  const Value doc = read_json(argv[1]);
  std::size_t count = 0;
  for (const auto& scenario : doc.at("scenarios")) {
    replay(scenario);
    ++count;
  }
  CHECK(count >= 5);
  check_validation();
  check_one_sync_per_sample();
  return test::finish("test_timing");
}
