// A minimal assertion helper for the CTest executables: every failed CHECK is printed, and
// the executable exits non-zero when any failed.
#pragma once

#include <cmath>
#include <iostream>

namespace xlabench::test {
inline int& failures() {
  static int count = 0;
  return count;
}
inline bool close(double actual, double expected, double rel = 1e-12) {
  if (actual == expected) return true;
  return std::abs(actual - expected) <= rel * std::abs(expected);
}
inline int finish(const char* name) {
  if (failures()) std::cerr << name << ": " << failures() << " check(s) failed\n";
  else std::cout << name << ": all checks passed\n";
  return failures() ? 1 : 0;
}
}  // namespace xlabench::test

#define CHECK(cond)                                                                   \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      ++xlabench::test::failures();                                                   \
      std::cerr << __FILE__ << ":" << __LINE__ << ": CHECK failed: " #cond "\n";      \
    }                                                                                 \
  } while (0)
