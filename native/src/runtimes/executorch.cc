// executorch: the .pte program the executorch backend lowers (executorch/basic: every op on the
// runtime's CPU kernels; executorch/compiled: XNNPACK delegate calls), loaded and run with
// ExecuTorch's C++ runtime (Program / Method) from the executorch wheel. One code path for both
// modes: what differs is inside the program (its delegate calls), and the kernels and XNNPACK
// register themselves when their shared libraries load (CMake links them --no-as-needed).
#include <executorch/extension/data_loader/file_data_loader.h>
#include <executorch/extension/memory_allocator/malloc_memory_allocator.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/method_meta.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "runtimes/runtime.h"

#ifndef XLABENCH_EXECUTORCH_VERSION
#define XLABENCH_EXECUTORCH_VERSION "unknown"
#endif

// Declared by hand, because ExecuTorch's own declaration cannot be included: the wheel
// (executorch 1.5.1) ships libexecutorch_threadpool.so, but of include/executorch/extension/
// threadpool/ only threadpool_guard.h; threadpool.h is missing (it includes pthreadpool.h,
// missing too). extension::Module is no way around it: module.h ships, but no library defines
// Module, and it has no thread count to set. These are the two members the Python backend's
// _unsafe_reset_threadpool reaches, declared as the library defines them (extension/
// threadpool/threadpool.h of the same release; the symbols are checked when the binary links);
// the class is only used through the pointer get_threadpool() returns, never constructed or
// sized here.
namespace executorch::extension::threadpool {
class ThreadPool final {
 public:
  std::size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(std::uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool

namespace xlabench {
namespace {

namespace et = ::executorch::runtime;
namespace etx = ::executorch::extension;
using ::executorch::aten::ScalarType;

std::string error_text(et::Error error) {
  std::ostringstream out;
  out << et::to_string(error) << " (0x" << std::hex << static_cast<unsigned>(error) << ")";
  return out.str();
}

// Result<T> or one line naming the stage that failed.
template <typename T>
T value_or_throw(et::Result<T>&& result, const std::string& what) {
  if (!result.ok()) throw RuntimeError("executorch: " + what + ": " + error_text(result.error()));
  return std::move(result.get());
}

void check(et::Error error, const std::string& what) {
  if (error != et::Error::Ok) throw RuntimeError("executorch: " + what + ": " + error_text(error));
}

// The planned (activation) memory a method asks for in its MethodMeta, one owned buffer per
// planned memory id, and the allocators the Method is loaded with. Owned together: the Method
// keeps raw pointers into all of it, so it must outlive the Method (declared before it).
class MethodMemory {
 public:
  explicit MethodMemory(const et::MethodMeta& meta) {
    for (std::size_t id = 0; id < meta.num_memory_planned_buffers(); ++id) {
      const int64_t bytes = value_or_throw(meta.memory_planned_buffer_size(id),
                                           "planned buffer size " + std::to_string(id));
      buffers_.emplace_back(static_cast<std::size_t>(bytes));
      planned_bytes_ += bytes;
    }
    for (auto& buffer : buffers_) spans_.emplace_back(buffer.data(), buffer.size());
    planned_ = std::make_unique<et::HierarchicalAllocator>(
        et::Span<et::Span<uint8_t>>(spans_.data(), spans_.size()));
    manager_ = std::make_unique<et::MemoryManager>(&method_allocator_, planned_.get(),
                                                   &temp_allocator_);
  }
  MethodMemory(const MethodMemory&) = delete;
  MethodMemory& operator=(const MethodMemory&) = delete;

  et::MemoryManager* manager() { return manager_.get(); }
  std::size_t buffers() const { return buffers_.size(); }
  int64_t planned_bytes() const { return planned_bytes_; }

 private:
  std::vector<std::vector<uint8_t>> buffers_;
  std::vector<et::Span<uint8_t>> spans_;
  std::unique_ptr<et::HierarchicalAllocator> planned_;
  etx::MallocMemoryAllocator method_allocator_;  // the method's own structures (load_method)
  etx::MallocMemoryAllocator temp_allocator_;    // kernels' and delegates' scratch per execute
  std::unique_ptr<et::MemoryManager> manager_;
  int64_t planned_bytes_ = 0;
};

class ExecuTorchRuntime final : public Runtime {
 public:
  // Reading and verifying the program, and checking it against the input and this binary's
  // registered delegates, before anything is allocated for it.
  void load(const Artifact& artifact, const Options& options) override {
    et::runtime_init();
    threads_ = options.threads;
    set_threadpool(options.threads);
    const nlohmann::json& m = artifact.manifest;
    path_ = artifact.path(m.at("program").get<std::string>());
    method_name_ = m.value("method", std::string("forward"));
    loader_.emplace(value_or_throw(etx::FileDataLoader::from(path_.c_str()),
                                   "loading program " + path_));
    program_.emplace(value_or_throw(
        et::Program::load(&*loader_, et::Program::Verification::InternalConsistency),
        "loading program " + path_));
    const et::MethodMeta meta =
        value_or_throw(program_->method_meta(method_name_.c_str()), "method " + method_name_);
    // One entry per delegate call: a backend not registered would fail later, in load_method,
    // with a bare NotFound.
    delegate_calls_ = meta.num_backends();
    for (std::size_t i = 0; i < delegate_calls_; ++i) {
      const char* name = value_or_throw(meta.get_backend_name(i), "backend name");
      if (et::get_backend_class(name) == nullptr)
        throw RuntimeError(std::string("executorch: the program delegates to ") + name +
                           ", which is not registered in this binary");
      delegates_.insert(name);
    }
    check_inputs(meta, artifact.inputs);
    inputs_ = artifact.inputs;
  }

  // load_method: the delegates build their runtimes and pack their weights here (XNNPACK's
  // init), on memory planned from the method's MethodMeta; then the input is bound.
  void prepare() override {
    const et::MethodMeta meta = value_or_throw(program_->method_meta(method_name_.c_str()),
                                               "method " + method_name_);
    memory_.emplace(meta);
    method_.emplace(value_or_throw(
        program_->load_method(method_name_.c_str(), memory_->manager()),
        "load_method " + method_name_));
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      Tensor& input = inputs_[i];
      std::vector<executorch::aten::SizesType> sizes(input.shape.begin(), input.shape.end());
      etx::TensorPtr tensor = etx::from_blob(input.data.data(), sizes, ScalarType::Float);
      // A planned input is copied into the method's own buffer; inputs_ keeps the data alive
      // for an input the program left unplanned.
      check(method_->set_input(et::EValue(*tensor), i), "set_input " + std::to_string(i));
      bound_.push_back(std::move(tensor));
    }
  }

  // Method::execute runs on this thread (and the threadpool) and returns when its outputs are
  // computed: there is nothing left to wait for.
  void step() override { check(method_->execute(), "execute " + method_name_); }

  void sync() override {}

  std::vector<Tensor> output() override {
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < method_->outputs_size(); ++i) {
      const et::EValue& value = method_->get_output(i);
      if (!value.isTensor())
        throw RuntimeError("executorch: output " + std::to_string(i) + " is not a tensor");
      const executorch::aten::Tensor& t = value.toTensor();
      if (t.scalar_type() != ScalarType::Float)
        throw RuntimeError("executorch: output " + std::to_string(i) + " is not float32");
      Tensor tensor;
      for (const auto d : t.sizes()) tensor.shape.push_back(d);
      const float* data = t.const_data_ptr<float>();
      tensor.data.assign(data, data + t.numel());
      out.push_back(std::move(tensor));
    }
    return out;
  }

  std::map<std::string, std::string> metadata() const override {
    std::map<std::string, std::string> out = {
        {"runtime", "executorch"},
        {"sdk", "ExecuTorch C++ runtime (Program, Method)"},
        {"version", XLABENCH_EXECUTORCH_VERSION},
        {"method", method_name_},
        {"delegates", delegates()},
        {"delegate_calls", std::to_string(delegate_calls_)},
        {"threads", std::to_string(threads_)},
        {"threadpool_threads", std::to_string(threadpool_threads_)}};
    if (memory_) {
      out["planned_buffers"] = std::to_string(memory_->buffers());
      out["planned_bytes"] = std::to_string(memory_->planned_bytes());
    }
    return out;
  }

 private:
  // The shared pool XNNPACK and the optimised kernels run on starts with one thread per
  // performance core of the machine; both sides get the worker's CPUs (as backends/executorch.py
  // set_threadpool).
  void set_threadpool(int threads) {
    auto* pool = etx::threadpool::get_threadpool();
    if (pool == nullptr) throw RuntimeError("executorch: no threadpool");
    const auto wanted = static_cast<std::uint32_t>(threads);
    if (pool->get_thread_count() != wanted && !pool->_unsafe_reset_threadpool(wanted))
      throw RuntimeError("executorch: cannot size the threadpool to " + std::to_string(threads));
    threadpool_threads_ = pool->get_thread_count();
  }

  std::string delegates() const {
    std::string out;
    for (const auto& name : delegates_) out += (out.empty() ? "" : ",") + name;
    return out.empty() ? "none" : out;
  }

  // The runner feeds float32 tensors of the exported shape: refuse anything else by name.
  static void check_inputs(const et::MethodMeta& meta, const std::vector<Tensor>& inputs) {
    if (meta.num_inputs() != inputs.size())
      throw RuntimeError("executorch: the method takes " + std::to_string(meta.num_inputs()) +
                         " inputs, the artifact has " + std::to_string(inputs.size()));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string which = "input " + std::to_string(i);
      const et::TensorInfo info = value_or_throw(meta.input_tensor_meta(i), which);
      if (info.scalar_type() != ScalarType::Float)
        throw RuntimeError("executorch: " + which + " is not float32");
      const auto sizes = info.sizes();
      if (!std::equal(sizes.begin(), sizes.end(), inputs[i].shape.begin(), inputs[i].shape.end()))
        throw RuntimeError("executorch: " + which + " does not have the exported shape");
    }
  }

  // Destroyed in reverse: the method before the inputs and memory it points into, the
  // program before its loader.
  std::optional<etx::FileDataLoader> loader_;
  std::optional<et::Program> program_;
  std::optional<MethodMemory> memory_;
  std::vector<Tensor> inputs_;
  std::vector<etx::TensorPtr> bound_;
  std::optional<et::Method> method_;
  std::string path_;
  std::string method_name_;
  std::set<std::string> delegates_;
  std::size_t delegate_calls_ = 0;
  int threads_ = 1;
  std::size_t threadpool_threads_ = 0;
};

}  // namespace

void register_executorch(Registry& registry) {
  registry.add("executorch", [] { return std::make_unique<ExecuTorchRuntime>(); });
}

}  // namespace xlabench
