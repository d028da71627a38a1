// xlabench-native: time a compiled artifact with no Python in the loop.
//   xlabench-native --list
//   xlabench-native run ARTIFACT_DIR --spec SPEC.json   (JSON on stdout, logs on stderr)
#include <chrono>
#include <iostream>

#include "cli.h"

int main(int argc, char** argv) {
  xlabench::Registry registry;
  xlabench::register_builtin_runtimes(registry);
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto clock = [] {
    using Seconds = std::chrono::duration<double>;
    return Seconds(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  return xlabench::run_cli(args, registry, clock, std::cout, std::cerr);
}
