// tf_c: a SavedModel's serving signature run through the TensorFlow C API
// (tensorflow/graph: jit_compile off; tensorflow/xla: the exported function has jit_compile on).
// The manifest names the feed and fetch tensors ("op:index") and a serialized ConfigProto
// with the thread counts; the C side never parses protobufs.
#include <tensorflow/c/c_api.h>

#include <charconv>
#include <cstring>

#include "runtimes/runtime.h"
#include "util/files.h"

namespace xlabench {
namespace {

// RAII for the C handles; destructors never throw.
struct StatusDeleter {
  void operator()(TF_Status* s) const { TF_DeleteStatus(s); }
};
struct GraphDeleter {
  void operator()(TF_Graph* g) const { TF_DeleteGraph(g); }
};
struct OptionsDeleter {
  void operator()(TF_SessionOptions* o) const { TF_DeleteSessionOptions(o); }
};
struct TensorDeleter {
  void operator()(TF_Tensor* t) const { TF_DeleteTensor(t); }
};
struct BufferDeleter {
  void operator()(TF_Buffer* b) const { TF_DeleteBuffer(b); }
};
using Status = std::unique_ptr<TF_Status, StatusDeleter>;
using Graph = std::unique_ptr<TF_Graph, GraphDeleter>;
using SessionOptions = std::unique_ptr<TF_SessionOptions, OptionsDeleter>;
using TensorPtr = std::unique_ptr<TF_Tensor, TensorDeleter>;
using Buffer = std::unique_ptr<TF_Buffer, BufferDeleter>;

struct SessionDeleter {
  void operator()(TF_Session* s) const {
    Status status(TF_NewStatus());
    TF_CloseSession(s, status.get());
    TF_DeleteSession(s, status.get());  // errors on teardown are ignored: nothing to do
  }
};
using Session = std::unique_ptr<TF_Session, SessionDeleter>;

// Every status code is turned into an error here, and only here.
void check(const Status& status, const std::string& what) {
  if (TF_GetCode(status.get()) != TF_OK)
    throw RuntimeError("tf_c: " + what + ": " + first_line(TF_Message(status.get())));
}

// A tensor of the graph as the manifest names it, "op:index" (or "op": index 0).
struct TensorName {
  std::string op;
  int index = 0;
};

// Parsed before the SavedModel is loaded: a bad name is the manifest's fault, refused in one
// line (std::stoi said only "stoi", and read "1x" as 1 and "-1" as -1).
TensorName tensor_name(const std::string& tensor) {
  const auto colon = tensor.rfind(':');
  if (colon == std::string::npos) return {tensor, 0};
  TensorName parsed{tensor.substr(0, colon), 0};
  const char* first = tensor.data() + colon + 1;
  const char* last = tensor.data() + tensor.size();
  const auto [stop, error] = std::from_chars(first, last, parsed.index);
  if (first == last || error != std::errc() || stop != last || parsed.index < 0)
    throw UsageError("tf_c: bad tensor '" + tensor +
                     "' in the artifact manifest: expected op:index, index an integer >= 0");
  return parsed;
}

class TfCRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options& options) override {
    const nlohmann::json& m = artifact.manifest;
    const TensorName feed = tensor_name(m.at("inputs").at(0).at("tensor").get<std::string>());
    std::vector<TensorName> fetches;
    for (const auto& output : m.at("outputs"))
      fetches.push_back(tensor_name(output.at("tensor").get<std::string>()));
    SessionOptions session_options(TF_NewSessionOptions());
    Status status(TF_NewStatus());
    if (m.contains("session_config")) {
      const std::string config =
          read_bytes(artifact.path(m.at("session_config").get<std::string>()));
      TF_SetConfig(session_options.get(), config.data(), config.size(), status.get());
      check(status, "session config");
    }
    threads_ = options.threads;
    graph_.reset(TF_NewGraph());
    const std::string dir = artifact.path(m.at("saved_model").get<std::string>());
    const char* tags[] = {"serve"};
    session_.reset(TF_LoadSessionFromSavedModel(session_options.get(), nullptr, dir.c_str(), tags,
                                                1, graph_.get(), nullptr, status.get()));
    check(status, "loading SavedModel " + dir);
    feed_ = operation(feed);
    for (const TensorName& fetch : fetches) fetches_.push_back(operation(fetch));
    input_ = artifact.inputs.at(0);
  }

  void prepare() override {
    std::vector<int64_t> dims(input_.shape.begin(), input_.shape.end());
    const std::size_t bytes = input_.data.size() * sizeof(float);
    input_tensor_.reset(TF_AllocateTensor(TF_FLOAT, dims.data(), static_cast<int>(dims.size()),
                                          bytes));
    std::memcpy(TF_TensorData(input_tensor_.get()), input_.data.data(), bytes);
  }

  // TF_SessionRun returns when the outputs are computed: on the CPU, step is also the sync.
  void step() override {
    std::vector<TF_Tensor*> values(fetches_.size(), nullptr);
    TF_Tensor* feed_value = input_tensor_.get();
    Status status(TF_NewStatus());
    TF_SessionRun(session_.get(), nullptr, &feed_, &feed_value, 1, fetches_.data(), values.data(),
                  static_cast<int>(values.size()), nullptr, 0, nullptr, status.get());
    outputs_.clear();
    for (TF_Tensor* t : values) outputs_.emplace_back(t);
    check(status, "TF_SessionRun");
  }

  void sync() override {}

  std::vector<Tensor> output() override {
    std::vector<Tensor> out;
    for (const auto& t : outputs_) {
      if (TF_TensorType(t.get()) != TF_FLOAT) throw RuntimeError("tf_c: output is not float32");
      Tensor tensor;
      for (int d = 0; d < TF_NumDims(t.get()); ++d) tensor.shape.push_back(TF_Dim(t.get(), d));
      const auto* data = static_cast<const float*>(TF_TensorData(t.get()));
      tensor.data.assign(data, data + TF_TensorByteSize(t.get()) / sizeof(float));
      out.push_back(std::move(tensor));
    }
    return out;
  }

  std::map<std::string, std::string> metadata() const override {
    return {{"runtime", "tf_c"},
            {"sdk", "TensorFlow C API"},
            {"version", TF_Version()},
            {"threads", std::to_string(threads_)}};
  }

 private:
  // The graph's output; a missing operation is named in the error.
  TF_Output operation(const TensorName& tensor) const {
    TF_Operation* op = TF_GraphOperationByName(graph_.get(), tensor.op.c_str());
    if (!op) throw RuntimeError("tf_c: the SavedModel has no operation " + tensor.op);
    return TF_Output{op, tensor.index};
  }

  Graph graph_;
  Session session_;
  TF_Output feed_{};
  std::vector<TF_Output> fetches_;
  Tensor input_;
  TensorPtr input_tensor_;
  std::vector<TensorPtr> outputs_;
  int threads_ = 1;
};

}  // namespace

void register_tf_c(Registry& registry) {
  registry.add("tf_c", [] { return std::make_unique<TfCRuntime>(); });
}

}  // namespace xlabench
