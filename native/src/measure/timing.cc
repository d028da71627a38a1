#include "measure/timing.h"

#include <cmath>
#include <utility>

#include "measure/stats.h"

namespace xlabench::timing {

std::string validate(const Settings& s) {
  if (!(s.target_rel_ci > 0 && s.target_rel_ci < 1))
    return "target CI must be between 0 and 1, got " + std::to_string(s.target_rel_ci);
  if (s.min_sample_s <= 0 || s.budget_s <= 0 || s.warmup_max_s < 0)
    return "sample time, budget and warm-up time must be positive";
  if (!(3 <= s.min_samples && s.min_samples <= s.max_samples))
    return "need 3 <= min_samples <= max_samples, got " + std::to_string(s.min_samples) + ", " +
           std::to_string(s.max_samples);
  if (s.warmup_min_steps < 1 || s.latency_steps < 0)
    return "warm-up needs at least one step; latency steps must be >= 0";
  if (!(s.latency_budget_s > 0)) return "latency budget must be positive";
  return "";
}

Method::Method(Action step, Action sync, Clock clock)
    : step_(std::move(step)), sync_(std::move(sync)), clock_(std::move(clock)) {}

double Method::time_call() const {
  const double start = clock_();
  step_();
  sync_();
  return clock_() - start;
}

WarmupResult Method::warm_up(const Settings& settings) const {
  std::vector<double> times;
  const double start = clock_();
  while (true) {
    times.push_back(time_call());
    const double elapsed = clock_() - start;
    const auto count = static_cast<long>(times.size());
    const bool enough = count >= settings.warmup_min_steps && elapsed >= settings.warmup_min_s;
    if (enough && is_steady(times)) return WarmupResult{count, elapsed, times, true};
    if (elapsed >= settings.warmup_max_s && count >= settings.warmup_min_steps)
      return WarmupResult{count, elapsed, times, false};
  }
}

bool is_steady(const std::vector<double>& step_s, std::size_t window) {
  if (step_s.size() < 2 * window) return false;
  const auto end = step_s.end();
  const double recent = stats::median(std::vector<double>(end - window, end));
  const double before = stats::median(std::vector<double>(end - 2 * window, end - window));
  return recent >= before * (1.0 - kSteadyTolerance);
}

long steps_for(double min_sample_s, double step_s) {
  if (step_s <= 0) return 1;
  const double steps = std::ceil(min_sample_s / step_s);
  return steps < 1 ? 1 : static_cast<long>(steps);
}

double Method::time_sample(long steps) const {
  const double start = clock_();
  for (long i = 0; i < steps; ++i) step_();
  sync_();
  return clock_() - start;
}

long Method::calibrate(const Settings& settings, double step_s) const {
  long steps = steps_for(settings.min_sample_s, step_s);
  for (int attempt = 0; attempt < 8; ++attempt) {
    const double seconds = time_sample(steps);
    if (seconds >= settings.min_sample_s) return steps;
    const long grown = steps_for(settings.min_sample_s, seconds / static_cast<double>(steps));
    steps = std::max(steps + 1, grown);
  }
  return steps;
}

SampleResult Method::collect_samples(const Settings& settings, long steps) const {
  std::vector<double> samples;
  const double start = clock_();
  while (true) {
    samples.push_back(time_sample(steps));
    const auto count = static_cast<long>(samples.size());
    const bool met = count >= settings.min_samples &&
                     stats::rel_ci_halfwidth(samples) <= settings.target_rel_ci;
    const bool out_of_time = clock_() - start >= settings.budget_s;
    if (met || count >= settings.max_samples) return SampleResult{steps, samples, met};
    if (out_of_time && samples.size() >= kMinReportableSamples)
      return SampleResult{steps, samples, false};
  }
}

std::vector<double> Method::time_latency(long count, double budget_s) const {
  std::vector<double> times;
  const double start = clock_();
  while (static_cast<long>(times.size()) < count &&
         (times.empty() || clock_() - start < budget_s))
    times.push_back(time_call());
  return times;
}

}  // namespace xlabench::timing
