// aoti: an AOTInductor package (.pt2) of the torch.export capture the torch backend compiles
// (torch/compiled), run with libtorch's AOTIModelPackageLoader from the torch wheel.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>

#include <memory>

#include "runtimes/runtime.h"

#ifndef XLABENCH_TORCH_VERSION
#define XLABENCH_TORCH_VERSION "unknown"
#endif

namespace xlabench {
namespace {

class AotiRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options& options) override {
    // The same intra-op count the Python side is given (torch.set_num_threads there).
    at::set_num_threads(options.threads);
    threads_ = options.threads;
    const std::string path = artifact.path(artifact.manifest.at("package").get<std::string>());
    try {
      loader_ = std::make_unique<torch::inductor::AOTIModelPackageLoader>(path);
    } catch (const std::exception& e) {
      throw RuntimeError("aoti: loading package " + path + ": " + first_line(e.what()));
    }
    input_ = artifact.inputs.at(0);
  }

  void prepare() override {
    std::vector<int64_t> dims(input_.shape.begin(), input_.shape.end());
    inputs_ = {at::from_blob(input_.data.data(), dims, at::kFloat).clone()};
  }

  // CPU kernels run synchronously: run() returns with the outputs computed.
  void step() override {
    try {
      outputs_ = loader_->run(inputs_);
    } catch (const std::exception& e) {
      throw RuntimeError(std::string("aoti: run: ") + first_line(e.what()));
    }
  }

  void sync() override {}

  std::vector<Tensor> output() override {
    std::vector<Tensor> out;
    for (const at::Tensor& t : outputs_) {
      const at::Tensor host = t.to(at::kCPU, at::kFloat).contiguous();
      Tensor tensor;
      for (const auto d : host.sizes()) tensor.shape.push_back(d);
      const float* data = host.data_ptr<float>();
      tensor.data.assign(data, data + host.numel());
      out.push_back(std::move(tensor));
    }
    return out;
  }

  std::map<std::string, std::string> metadata() const override {
    return {{"runtime", "aoti"},
            {"sdk", "libtorch AOTIModelPackageLoader"},
            {"version", XLABENCH_TORCH_VERSION},
            {"threads", std::to_string(threads_)},
            {"intra_op_threads", std::to_string(at::get_num_threads())}};
  }

 private:
  std::unique_ptr<torch::inductor::AOTIModelPackageLoader> loader_;
  Tensor input_;
  std::vector<at::Tensor> inputs_;
  std::vector<at::Tensor> outputs_;
  int threads_ = 1;
};

}  // namespace

void register_aoti(Registry& registry) {
  registry.add("aoti", [] { return std::make_unique<AotiRuntime>(); });
}

}  // namespace xlabench
