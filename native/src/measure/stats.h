// Distribution-free statistics for timing samples: the same functions, with the same
// arithmetic in the same order, as src/xlabench/measure/stats.py (tests/vectors/stats.json
// checks both implementations against one set of expected values).
#pragma once

#include <cstddef>
#include <vector>

namespace xlabench::stats {

struct CiRanks {
  std::size_t lo;   // 0-based rank of the lower bound
  std::size_t hi;   // 0-based rank of the upper bound
  double achieved;  // coverage probability of [x_(lo), x_(hi)]
};

struct Ci {
  double low;
  double high;
  double achieved;
};

// Median (mean of the two middle values for even n). Throws std::invalid_argument on empty input.
double median(std::vector<double> values);
// Linear-interpolated percentile, q in [0, 100] (numpy's default method).
double percentile(std::vector<double> values, double q);
// P(B <= k) for B ~ Binomial(n, 1/2), from the exact integer sum rounded once to double.
double binom_cdf(long k, std::size_t n);
// Narrowest symmetric order-statistic pair covering the median with >= confidence;
// (0, n-1) with what it achieves when no pair reaches it. Throws on n < 1.
CiRanks median_ci_ranks(std::size_t n, double confidence = 0.95);
Ci median_ci(std::vector<double> values, double confidence = 0.95);
// Largest distance of a CI bound from the median, relative to the median (inf when it is 0).
double rel_ci_halfwidth(const std::vector<double>& values, double confidence = 0.95);

}  // namespace xlabench::stats
