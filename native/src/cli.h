// The command line of xlabench-native, apart from main() so tests can drive it with a fake
// runtime. Exit codes: 0 ok, 1 the runtime failed (one line on stderr), 2 bad arguments.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "measure/timing.h"
#include "runtimes/runtime.h"

namespace xlabench {

inline constexpr int kSchemaVersion = 1;
inline constexpr const char* kMarker = "xlabench-native";

// `clock` is the method's clock (a steady clock in the program, a fake one in tests).
int run_cli(const std::vector<std::string>& args, const Registry& registry,
            const timing::Clock& clock, std::ostream& out, std::ostream& err);

}  // namespace xlabench
