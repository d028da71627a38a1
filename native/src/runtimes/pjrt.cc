// pjrt: a jax.export StableHLO module (jax/xla) compiled and run through the PJRT C API of a
// dlopen'ed plugin (CPU: pip xla-cpu-pjrt). The plugin's XLA is not jaxlib's: its version is
// recorded so native-vs-Python differences are not read as Python overhead.
#include <dlfcn.h>

#include <memory>

#include "pjrt_c_api.h"
#include "runtimes/runtime.h"
#include "util/files.h"

namespace xlabench {
namespace {

// The dlopen'ed plugin; closed last (the runtime's members are destroyed before it).
// RTLD_NODELETE: the plugin registers exit handlers of its own, which crashed the process at
// exit once dlclose had unmapped them (seen when a load failed after the client was created).
class Library {
 public:
  explicit Library(const std::string& path)
      : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)) {
    if (!handle_) throw RuntimeError(std::string("pjrt: dlopen: ") + dlerror());
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  ~Library() { dlclose(handle_); }
  void* symbol(const char* name) const {
    void* found = dlsym(handle_, name);
    if (!found) throw RuntimeError(std::string("pjrt: the plugin does not export ") + name);
    return found;
  }

 private:
  void* handle_;
};

template <typename Args>
Args make_args(std::size_t struct_size) {
  Args args{};
  args.struct_size = struct_size;
  return args;
}

// How each PJRT handle is destroyed; an error a destroy returns is its own handle to free.
template <typename Handle>
struct Destroy;
template <>
struct Destroy<PJRT_Error> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_Error* error) {
    auto args = make_args<PJRT_Error_Destroy_Args>(PJRT_Error_Destroy_Args_STRUCT_SIZE);
    args.error = error;
    api->PJRT_Error_Destroy(&args);
    return nullptr;
  }
};
template <>
struct Destroy<PJRT_Event> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_Event* event) {
    auto args = make_args<PJRT_Event_Destroy_Args>(PJRT_Event_Destroy_Args_STRUCT_SIZE);
    args.event = event;
    return api->PJRT_Event_Destroy(&args);
  }
};
template <>
struct Destroy<PJRT_Buffer> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_Buffer* buffer) {
    auto args = make_args<PJRT_Buffer_Destroy_Args>(PJRT_Buffer_Destroy_Args_STRUCT_SIZE);
    args.buffer = buffer;
    return api->PJRT_Buffer_Destroy(&args);
  }
};
template <>
struct Destroy<PJRT_Executable> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_Executable* executable) {
    auto args = make_args<PJRT_Executable_Destroy_Args>(PJRT_Executable_Destroy_Args_STRUCT_SIZE);
    args.executable = executable;
    return api->PJRT_Executable_Destroy(&args);
  }
};
template <>
struct Destroy<PJRT_LoadedExecutable> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_LoadedExecutable* executable) {
    auto args = make_args<PJRT_LoadedExecutable_Destroy_Args>(
        PJRT_LoadedExecutable_Destroy_Args_STRUCT_SIZE);
    args.executable = executable;
    return api->PJRT_LoadedExecutable_Destroy(&args);
  }
};
template <>
struct Destroy<PJRT_Client> {
  static PJRT_Error* call(const PJRT_Api* api, PJRT_Client* client) {
    auto args = make_args<PJRT_Client_Destroy_Args>(PJRT_Client_Destroy_Args_STRUCT_SIZE);
    args.client = client;
    return api->PJRT_Client_Destroy(&args);
  }
};

// RAII for the handles, as tf_c.cc has for TensorFlow's; destructors never throw (an error
// from a destroy on teardown is freed: there is nothing to do about it).
template <typename Handle>
struct Deleter {
  const PJRT_Api* api = nullptr;
  void operator()(Handle* handle) const {
    PJRT_Error* error = Destroy<Handle>::call(api, handle);
    if (error) Destroy<PJRT_Error>::call(api, error);
  }
};
template <typename Handle>
using Owned = std::unique_ptr<Handle, Deleter<Handle>>;

class PjrtRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options& options) override {
    const nlohmann::json& m = artifact.manifest;
    library_ = std::make_unique<Library>(m.at("plugin").get<std::string>());
    using GetApi = const PJRT_Api* (*)();
    api_ = reinterpret_cast<GetApi>(library_->symbol("GetPjrtApi"))();
    if (!api_) throw RuntimeError("pjrt: GetPjrtApi returned null");
    threads_ = options.threads;
    auto init = make_args<PJRT_Plugin_Initialize_Args>(PJRT_Plugin_Initialize_Args_STRUCT_SIZE);
    check(api_->PJRT_Plugin_Initialize(&init), "plugin initialize");
    read_attributes();
    create_client();
    module_ = read_bytes(artifact.path(m.at("module").get<std::string>()));
    compile_options_ = read_bytes(artifact.path(m.at("compile_options").get<std::string>()));
    host_inputs_ = artifact.inputs;
  }

  // Compile the module and copy every argument (variables, then the batch) to the device.
  void prepare() override {
    PJRT_Program program{};
    program.struct_size = PJRT_Program_STRUCT_SIZE;
    program.code = module_.data();
    program.code_size = module_.size();
    const std::string format = "mlir";
    program.format = format.c_str();
    program.format_size = format.size();
    auto args = make_args<PJRT_Client_Compile_Args>(PJRT_Client_Compile_Args_STRUCT_SIZE);
    args.client = client_.get();
    args.program = &program;
    args.compile_options = compile_options_.data();
    args.compile_options_size = compile_options_.size();
    check(api_->PJRT_Client_Compile(&args), "compile");
    executable_ = own(args.executable);
    num_outputs_ = count_outputs();
    for (const Tensor& t : host_inputs_) inputs_.push_back(to_device(t));
    for (const auto& buffer : inputs_) arguments_.push_back(buffer.get());
  }

  // Launch asynchronously, as jax does: the previous batch's outputs are released, not awaited.
  void step() override {
    outputs_.clear();
    done_.reset();
    std::vector<PJRT_Buffer*> outputs(num_outputs_, nullptr);
    PJRT_Event* done = nullptr;
    PJRT_ExecuteOptions options{};
    options.struct_size = PJRT_ExecuteOptions_STRUCT_SIZE;
    PJRT_Buffer* const* argument_list = arguments_.data();
    PJRT_Buffer** output_list = outputs.data();
    auto args = make_args<PJRT_LoadedExecutable_Execute_Args>(
        PJRT_LoadedExecutable_Execute_Args_STRUCT_SIZE);
    args.executable = executable_.get();
    args.options = &options;
    args.argument_lists = &argument_list;
    args.num_devices = 1;
    args.num_args = arguments_.size();
    args.output_lists = &output_list;
    args.device_complete_events = &done;
    PJRT_Error* error = api_->PJRT_LoadedExecutable_Execute(&args);
    for (PJRT_Buffer* buffer : outputs) outputs_.push_back(own(buffer));  // owned before checked
    done_ = own(done);
    check(error, "execute");
  }

  void sync() override {
    if (done_) await(done_.get(), "await execution");
  }

  std::vector<Tensor> output() override {
    sync();
    std::vector<Tensor> out;
    for (const auto& buffer : outputs_) out.push_back(to_host(buffer.get()));
    return out;
  }

  std::map<std::string, std::string> metadata() const override {
    std::map<std::string, std::string> meta = attributes_;
    meta["runtime"] = "pjrt";
    meta["sdk"] = "PJRT C API plugin";
    meta["pjrt_c_api"] = std::to_string(api_->pjrt_api_version.major_version) + "." +
                         std::to_string(api_->pjrt_api_version.minor_version);
    meta["version"] = "PJRT C API " + meta["pjrt_c_api"];
    meta["platform"] = platform_version_;
    meta["threads"] = std::to_string(threads_);
    return meta;
  }

 private:
  template <typename Handle>
  Owned<Handle> own(Handle* handle) const {
    return Owned<Handle>(handle, Deleter<Handle>{api_});
  }

  // Every PJRT_Error becomes an exception here, and only here.
  void check(PJRT_Error* returned, const std::string& what) const {
    const Owned<PJRT_Error> error = own(returned);
    if (!error) return;
    auto message = make_args<PJRT_Error_Message_Args>(PJRT_Error_Message_Args_STRUCT_SIZE);
    message.error = error.get();
    api_->PJRT_Error_Message(&message);
    const std::string text(message.message, message.message_size);
    throw RuntimeError("pjrt: " + what + ": " + first_line(text));
  }

  void await(PJRT_Event* event, const std::string& what) const {
    auto args = make_args<PJRT_Event_Await_Args>(PJRT_Event_Await_Args_STRUCT_SIZE);
    args.event = event;
    check(api_->PJRT_Event_Await(&args), what);
  }

  void read_attributes() {
    auto args = make_args<PJRT_Plugin_Attributes_Args>(PJRT_Plugin_Attributes_Args_STRUCT_SIZE);
    if (own(api_->PJRT_Plugin_Attributes(&args))) return;  // optional information
    for (std::size_t i = 0; i < args.num_attributes; ++i) {
      const PJRT_NamedValue& v = args.attributes[i];
      const std::string name(v.name, v.name_size);
      if (v.type == PJRT_NamedValue_kString)
        attributes_["plugin_" + name] = std::string(v.string_value, v.value_size);
      else if (v.type == PJRT_NamedValue_kInt64)
        attributes_["plugin_" + name] = std::to_string(v.int64_value);
    }
  }

  // One CPU device: the plugin otherwise makes several.
  void create_client() {
    PJRT_NamedValue option{};
    option.struct_size = PJRT_NamedValue_STRUCT_SIZE;
    const std::string name = "cpu_device_count";
    option.name = name.c_str();
    option.name_size = name.size();
    option.type = PJRT_NamedValue_kInt64;
    option.int64_value = 1;
    option.value_size = 1;
    auto args = make_args<PJRT_Client_Create_Args>(PJRT_Client_Create_Args_STRUCT_SIZE);
    args.create_options = &option;
    args.num_options = 1;
    check(api_->PJRT_Client_Create(&args), "create client");
    client_ = own(args.client);
    auto devices = make_args<PJRT_Client_AddressableDevices_Args>(
        PJRT_Client_AddressableDevices_Args_STRUCT_SIZE);
    devices.client = client_.get();
    check(api_->PJRT_Client_AddressableDevices(&devices), "devices");
    if (devices.num_addressable_devices < 1) throw RuntimeError("pjrt: no device");
    device_ = devices.addressable_devices[0];
    auto version = make_args<PJRT_Client_PlatformVersion_Args>(
        PJRT_Client_PlatformVersion_Args_STRUCT_SIZE);
    version.client = client_.get();
    check(api_->PJRT_Client_PlatformVersion(&version), "platform version");
    platform_version_.assign(version.platform_version, version.platform_version_size);
  }

  std::size_t count_outputs() {
    auto get = make_args<PJRT_LoadedExecutable_GetExecutable_Args>(
        PJRT_LoadedExecutable_GetExecutable_Args_STRUCT_SIZE);
    get.loaded_executable = executable_.get();
    check(api_->PJRT_LoadedExecutable_GetExecutable(&get), "get executable");
    const Owned<PJRT_Executable> executable = own(get.executable);
    auto count = make_args<PJRT_Executable_NumOutputs_Args>(
        PJRT_Executable_NumOutputs_Args_STRUCT_SIZE);
    count.executable = executable.get();
    check(api_->PJRT_Executable_NumOutputs(&count), "number of outputs");
    return count.num_outputs;
  }

  // The buffer is owned as soon as it exists: a failed transfer frees it too.
  Owned<PJRT_Buffer> to_device(const Tensor& t) {
    auto args = make_args<PJRT_Client_BufferFromHostBuffer_Args>(
        PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE);
    args.client = client_.get();
    args.data = t.data.data();
    args.type = PJRT_Buffer_Type_F32;
    args.dims = t.shape.data();
    args.num_dims = t.shape.size();
    args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes;
    args.device = device_;
    check(api_->PJRT_Client_BufferFromHostBuffer(&args), "copy argument to device");
    Owned<PJRT_Buffer> buffer = own(args.buffer);
    const Owned<PJRT_Event> done = own(args.done_with_host_buffer);
    if (done) await(done.get(), "copy argument to device");
    return buffer;
  }

  Tensor to_host(PJRT_Buffer* buffer) const {
    auto dims = make_args<PJRT_Buffer_Dimensions_Args>(PJRT_Buffer_Dimensions_Args_STRUCT_SIZE);
    dims.buffer = buffer;
    check(api_->PJRT_Buffer_Dimensions(&dims), "output dimensions");
    auto type = make_args<PJRT_Buffer_ElementType_Args>(PJRT_Buffer_ElementType_Args_STRUCT_SIZE);
    type.buffer = buffer;
    check(api_->PJRT_Buffer_ElementType(&type), "output type");
    if (type.type != PJRT_Buffer_Type_F32) throw RuntimeError("pjrt: output is not float32");
    Tensor tensor;
    tensor.shape.assign(dims.dims, dims.dims + dims.num_dims);
    auto copy = make_args<PJRT_Buffer_ToHostBuffer_Args>(PJRT_Buffer_ToHostBuffer_Args_STRUCT_SIZE);
    copy.src = buffer;
    check(api_->PJRT_Buffer_ToHostBuffer(&copy), "output size");  // dst null: size only
    tensor.data.resize(copy.dst_size / sizeof(float));
    copy.dst = tensor.data.data();
    check(api_->PJRT_Buffer_ToHostBuffer(&copy), "copy output to host");
    const Owned<PJRT_Event> copied = own(copy.event);
    if (copied) await(copied.get(), "copy output to host");
    return tensor;
  }

  // Destroyed in reverse order: outputs, their event, inputs, executable, client, plugin.
  std::unique_ptr<Library> library_;
  const PJRT_Api* api_ = nullptr;
  Owned<PJRT_Client> client_;
  PJRT_Device* device_ = nullptr;  // the client's, not ours to free
  Owned<PJRT_LoadedExecutable> executable_;
  std::vector<Owned<PJRT_Buffer>> inputs_;
  std::vector<PJRT_Buffer*> arguments_;  // inputs_, as the argument list Execute takes
  Owned<PJRT_Event> done_;
  std::vector<Owned<PJRT_Buffer>> outputs_;
  std::size_t num_outputs_ = 0;
  std::string module_;
  std::string compile_options_;
  std::vector<Tensor> host_inputs_;
  std::map<std::string, std::string> attributes_;
  std::string platform_version_;
  int threads_ = 1;
};

}  // namespace

void register_pjrt(Registry& registry) {
  registry.add("pjrt", [] { return std::make_unique<PjrtRuntime>(); });
}

}  // namespace xlabench
