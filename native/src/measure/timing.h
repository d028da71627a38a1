// The timing method of src/xlabench/measure/timing.py: first call, warm-up, calibration,
// samples, latency. It sees only `step` (launch one batch) and `sync` (wait for the last one),
// and takes its clock as a parameter: a steady clock in the program, a fake one in tests.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace xlabench::timing {

using Clock = std::function<double()>;  // seconds, monotonic
using Action = std::function<void()>;

// Warm-up counts as steady when the recent step times stop falling by more than this.
inline constexpr double kSteadyTolerance = 0.05;
// Fewest samples from which a throughput is reported at all (when the budget runs out).
inline constexpr std::size_t kMinReportableSamples = 3;

// core/spec.py MeasureSettings, plus the latency phase's budget the worker derives from it.
struct Settings {
  double target_rel_ci = 0.02;
  double min_sample_s = 0.1;
  long min_samples = 5;
  long max_samples = 200;
  long warmup_min_steps = 3;
  double warmup_min_s = 0.5;
  double warmup_max_s = 20.0;
  double budget_s = 20.0;
  long latency_steps = 30;
  double latency_budget_s = 5.0;
};

// The reason the settings are refused (the same rules as MeasureSettings), or "" when valid.
std::string validate(const Settings& settings);

struct WarmupResult {
  long steps = 0;
  double seconds = 0;
  std::vector<double> step_s;
  bool steady = false;
};

struct SampleResult {
  long steps_per_sample = 0;
  std::vector<double> sample_s;
  bool target_met = false;
};

class Method {
 public:
  Method(Action step, Action sync, Clock clock);

  // Seconds for one synced call. The first call includes whatever the runtime does lazily.
  double time_call() const;
  WarmupResult warm_up(const Settings& settings) const;
  // Seconds for `steps` back-to-back steps, then one sync (pipelined).
  double time_sample(long steps) const;
  long calibrate(const Settings& settings, double step_s) const;
  SampleResult collect_samples(const Settings& settings, long steps) const;
  std::vector<double> time_latency(long count, double budget_s) const;

 private:
  Action step_;
  Action sync_;
  Clock clock_;
};

bool is_steady(const std::vector<double>& step_s, std::size_t window = 3);
// Steps per sample so that one sample lasts at least `min_sample_s`.
long steps_for(double min_sample_s, double step_s);

}  // namespace xlabench::timing
