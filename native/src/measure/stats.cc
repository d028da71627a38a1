#include "measure/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

namespace xlabench::stats {
namespace {

// Just enough of an unsigned big integer for sums of binomial coefficients C(n, i), n up to
// a few thousand: Python's math.comb is exact, and so must this be for the ranks to agree.
class BigUint {
 public:
  explicit BigUint(std::uint32_t value) : limbs_{value} {}

  void add(const BigUint& other) {
    limbs_.resize(std::max(limbs_.size(), other.limbs_.size()) + 1, 0);
    std::uint64_t carry = 0;
    for (std::size_t i = 0; i < limbs_.size(); ++i) {
      const std::uint64_t rhs = i < other.limbs_.size() ? other.limbs_[i] : 0;
      const std::uint64_t sum = std::uint64_t{limbs_[i]} + rhs + carry;
      limbs_[i] = static_cast<std::uint32_t>(sum);
      carry = sum >> 32;
    }
    trim();
  }

  void multiply(std::uint32_t factor) {
    std::uint64_t carry = 0;
    for (auto& limb : limbs_) {
      const std::uint64_t product = std::uint64_t{limb} * factor + carry;
      limb = static_cast<std::uint32_t>(product);
      carry = product >> 32;
    }
    if (carry) limbs_.push_back(static_cast<std::uint32_t>(carry));
  }

  // Exact division (the caller guarantees divisibility, as in C(n, i) * (n - i) / (i + 1)).
  void divide(std::uint32_t divisor) {
    std::uint64_t rest = 0;
    for (std::size_t i = limbs_.size(); i-- > 0;) {
      const std::uint64_t current = (rest << 32) | limbs_[i];
      limbs_[i] = static_cast<std::uint32_t>(current / divisor);
      rest = current % divisor;
    }
    trim();
  }

  // Correctly rounded (nearest, ties to even) like Python's int -> float.
  double to_double() const {
    const std::size_t bits = bit_length();
    if (bits <= 64) return static_cast<double>(low_bits(0));
    const std::size_t shift = bits - 64;
    std::uint64_t top = low_bits(shift);
    // A sticky bit below the 11 discarded bits of the 64-bit conversion keeps the rounding exact.
    if (any_bits_below(shift)) top |= 1;
    return std::ldexp(static_cast<double>(top), static_cast<int>(shift));
  }

 private:
  void trim() {
    while (limbs_.size() > 1 && limbs_.back() == 0) limbs_.pop_back();
  }
  std::size_t bit_length() const {
    std::size_t bits = 32 * (limbs_.size() - 1);
    for (std::uint32_t top = limbs_.back(); top; top >>= 1) ++bits;
    return bits;
  }
  bool bit(std::size_t index) const {
    const std::size_t limb = index / 32;
    return limb < limbs_.size() && ((limbs_[limb] >> (index % 32)) & 1U);
  }
  std::uint64_t low_bits(std::size_t shift) const {
    std::uint64_t value = 0;
    for (std::size_t i = 64; i-- > 0;) value = (value << 1) | (bit(shift + i) ? 1U : 0U);
    return value;
  }
  bool any_bits_below(std::size_t shift) const {
    for (std::size_t i = 0; i < shift; ++i)
      if (bit(i)) return true;
    return false;
  }

  std::vector<std::uint32_t> limbs_;
};

void require_values(const std::vector<double>& values, const char* what) {
  if (values.empty()) throw std::invalid_argument(what);
}

}  // namespace

double median(std::vector<double> values) {
  require_values(values, "median of no values");
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  const std::size_t mid = n / 2;
  return n % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

double percentile(std::vector<double> values, double q) {
  require_values(values, "percentile of no values");
  std::sort(values.begin(), values.end());
  const double pos = static_cast<double>(values.size() - 1) * q / 100.0;
  const double low_f = std::floor(pos);
  const auto low = static_cast<std::size_t>(low_f);
  const std::size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (values[high] - values[low]) * (pos - low_f);
}

double binom_cdf(long k, std::size_t n) {
  if (k < 0) return 0.0;
  const std::size_t last = std::min(static_cast<std::size_t>(k), n);
  BigUint term(1);  // C(n, 0)
  BigUint sum(1);
  for (std::size_t i = 0; i < last; ++i) {
    term.multiply(static_cast<std::uint32_t>(n - i));
    term.divide(static_cast<std::uint32_t>(i + 1));
    sum.add(term);
  }
  return sum.to_double() / std::ldexp(1.0, static_cast<int>(n));
}

CiRanks median_ci_ranks(std::size_t n, double confidence) {
  if (n < 1) throw std::invalid_argument("need at least one sample");
  CiRanks best{0, n - 1, 1.0 - 2.0 * binom_cdf(0, n)};
  for (std::size_t j = 1; j <= n / 2; ++j) {
    const std::size_t k = n - j + 1;  // symmetric partner, 1-based
    const double coverage = 1.0 - 2.0 * binom_cdf(static_cast<long>(j) - 1, n);
    if (coverage < confidence) break;
    best = CiRanks{j - 1, k - 1, coverage};
  }
  return best;
}

Ci median_ci(std::vector<double> values, double confidence) {
  require_values(values, "need at least one sample");
  std::sort(values.begin(), values.end());
  const CiRanks ranks = median_ci_ranks(values.size(), confidence);
  return Ci{values[ranks.lo], values[ranks.hi], ranks.achieved};
}

double rel_ci_halfwidth(const std::vector<double>& values, double confidence) {
  const double mid = median(values);
  const Ci ci = median_ci(values, confidence);
  if (mid == 0) return std::numeric_limits<double>::infinity();
  return std::max(mid - ci.low, ci.high - mid) / std::abs(mid);
}

}  // namespace xlabench::stats
