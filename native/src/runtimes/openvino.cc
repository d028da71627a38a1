// openvino: the OpenVINO IR the openvino backend converts (openvino/compiled), read and compiled
// for the CPU with the OpenVINO C++ API of the openvino wheel. The manifest carries the IR
// (model.xml + model.bin, fp32 weights) and the compile properties the Python backend sets
// (backends/openvino.py compile_config); the properties the compiled model reports back, named
// by the manifest's "reported" (backends/openvino.py REPORTED), are recorded.
#include <openvino/core/version.hpp>
#include <openvino/openvino.hpp>

#include <cstring>
#include <memory>

#include "runtimes/runtime.h"

namespace xlabench {
namespace {

// OpenVINO reports errors as exceptions with multi-line messages: one line, named stage.
template <typename F>
auto guarded(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const RuntimeError&) {
    throw;
  } catch (const std::exception& e) {
    throw RuntimeError("openvino: " + what + ": " + first_line(e.what()));
  }
}

class OpenVinoRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options& options) override {
    const nlohmann::json& m = artifact.manifest;
    threads_ = options.threads;
    const std::string xml = artifact.path(m.at("model").get<std::string>());
    const std::string bin = artifact.path(m.at("weights").get<std::string>());
    for (const auto& item : m.at("config").items())
      config_[item.key()] = item.value().get<std::string>();
    reported_names_ = m.at("reported").get<std::vector<std::string>>();
    input_ = artifact.inputs.at(0);
    // The Core (it finds the device plugins) is made here, so that it counts as loading.
    core_ = guarded("ov::Core", [] { return std::make_unique<ov::Core>(); });
    model_ = guarded("reading IR " + xml, [&] { return core_->read_model(xml, bin); });
  }

  // The compile of the IR for the CPU, and the infer request bound to the input.
  void prepare() override {
    compiled_ = guarded("compile_model",
                        [&] { return core_->compile_model(model_, "CPU", config_); });
    for (const std::string& name : reported_names_) {
      try {
        reported_[name] = compiled_.get_property(name).as<std::string>();
      } catch (const std::exception&) {  // a property this device or version does not have
      }
    }
    const auto wanted = config_.find("INFERENCE_PRECISION_HINT");
    const auto got = reported_.find("INFERENCE_PRECISION_HINT");
    if (wanted != config_.end() &&
        (got == reported_.end() || got->second != wanted->second.as<std::string>()))
      throw RuntimeError("openvino: compiled for inference precision " +
                         (got == reported_.end() ? std::string("unknown") : got->second) +
                         ", asked " + wanted->second.as<std::string>());
    request_ = guarded("create_infer_request", [&] { return compiled_.create_infer_request(); });
    const ov::Shape shape(input_.shape.begin(), input_.shape.end());
    ov::Tensor tensor(ov::element::f32, shape);
    if (tensor.get_byte_size() != input_.data.size() * sizeof(float))
      throw RuntimeError("openvino: input size does not match its shape");
    std::memcpy(tensor.data(), input_.data.data(), tensor.get_byte_size());
    guarded("set_input_tensor", [&] { request_.set_input_tensor(0, tensor); });
  }

  // InferRequest::infer is synchronous: it returns with the outputs computed.
  void step() override {
    guarded("infer", [&] { request_.infer(); });
  }

  void sync() override {}

  std::vector<Tensor> output() override {
    std::vector<Tensor> out;
    for (std::size_t i = 0; i < compiled_.outputs().size(); ++i) {
      const ov::Tensor t = request_.get_output_tensor(i);
      if (t.get_element_type() != ov::element::f32)
        throw RuntimeError("openvino: output is not float32");
      Tensor tensor;
      for (const auto d : t.get_shape()) tensor.shape.push_back(static_cast<std::int64_t>(d));
      const float* data = t.data<const float>();
      tensor.data.assign(data, data + t.get_size());
      out.push_back(std::move(tensor));
    }
    return out;
  }

  std::map<std::string, std::string> metadata() const override {
    std::map<std::string, std::string> out = {{"runtime", "openvino"},
                                              {"sdk", "OpenVINO C++ API (ov::Core)"},
                                              {"version", ov::get_openvino_version().buildNumber},
                                              {"device", "CPU"},
                                              {"threads", std::to_string(threads_)}};
    for (const auto& [key, value] : config_) out["config." + key] = value.as<std::string>();
    for (const auto& [key, value] : reported_) out["reported." + key] = value;
    return out;
  }

 private:
  std::unique_ptr<ov::Core> core_;
  std::shared_ptr<ov::Model> model_;
  ov::AnyMap config_;
  ov::CompiledModel compiled_;
  ov::InferRequest request_;
  std::vector<std::string> reported_names_;
  std::map<std::string, std::string> reported_;
  Tensor input_;
  int threads_ = 1;
};

}  // namespace

void register_openvino(Registry& registry) {
  registry.add("openvino", [] { return std::make_unique<OpenVinoRuntime>(); });
}

}  // namespace xlabench
