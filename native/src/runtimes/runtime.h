// What the timing loop needs from a runtime, and nothing more. One implementation per file
// under src/runtimes/, each compiled in only when its SDK is found (CMake option per runtime).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace xlabench {

// A runtime failed (missing symbol, corrupt artifact, status not OK): one line, exit 1.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The input is wrong (an argument, a spec value, a manifest value refused by rule): one line,
// exit 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An SDK's error message, often many lines (a stack, a log), cut to the one line we print.
inline std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

struct Tensor {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

// The directory the Python worker exported: artifact.json (the manifest) and the files it names.
struct Artifact {
  std::string dir;
  nlohmann::json manifest;
  std::vector<Tensor> inputs;
  std::string path(const std::string& relative) const { return dir + "/" + relative; }
};

struct Options {
  int threads = 1;  // intra-op threads, set explicitly (the Python side uses the same count)
};

class Runtime {
 public:
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;
  virtual ~Runtime() = default;

  // Read the artifact (timed as the "load" stage, outside the method).
  virtual void load(const Artifact& artifact, const Options& options) = 0;
  // Compile / bind inputs (the "prepare" stage, outside the method).
  virtual void prepare() = 0;
  // Launch one batch on the bound input.
  virtual void step() = 0;
  // Block until the last launched batch has finished.
  virtual void sync() = 0;
  // Outputs of the last step, as float32.
  virtual std::vector<Tensor> output() = 0;
  // Name, SDK version and anything a reader needs to know what ran.
  virtual std::map<std::string, std::string> metadata() const = 0;

 protected:
  Runtime() = default;
};

using RuntimeFactory = std::function<std::unique_ptr<Runtime>()>;

class Registry {
 public:
  void add(const std::string& name, RuntimeFactory factory);
  // nullptr for an unknown name.
  std::unique_ptr<Runtime> create(const std::string& name) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, RuntimeFactory> factories_;
};

// Registers every runtime compiled into this binary (explicit: static self-registration
// would vanish when linking from static libraries).
void register_builtin_runtimes(Registry& registry);

// Per-runtime registration functions, defined in each runtime's file.
void register_tf_c(Registry& registry);
void register_aoti(Registry& registry);
void register_pjrt(Registry& registry);
void register_openvino(Registry& registry);
void register_executorch(Registry& registry);

}  // namespace xlabench
