#include "cli.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <sys/stat.h>

#include "measure/stats.h"
#include "util/files.h"

namespace xlabench {
namespace timing {

// Settings <-> JSON, both ways, from this one list of fields (in the order they are printed).
// nlohmann 3.11.2's macro defines to_json for nlohmann::json only, whose keys come out sorted:
// the ordered to_json below runs nlohmann's own per-field step over the same list.
#define XLABENCH_SETTINGS_FIELDS                                                         \
  target_rel_ci, min_sample_s, min_samples, max_samples, warmup_min_steps, warmup_min_s, \
      warmup_max_s, budget_s, latency_steps, latency_budget_s
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(Settings, XLABENCH_SETTINGS_FIELDS)
inline void to_json(nlohmann::ordered_json& nlohmann_json_j, const Settings& nlohmann_json_t) {
  NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(NLOHMANN_JSON_TO, XLABENCH_SETTINGS_FIELDS))
}
#undef XLABENCH_SETTINGS_FIELDS

}  // namespace timing

namespace {

using Json = nlohmann::json;
// What the runner prints: keys in the order they are written (nlohmann::json sorts them).
using OrderedJson = nlohmann::ordered_json;

constexpr const char* kUsage =
    "usage: xlabench-native --list | run ARTIFACT_DIR --spec SPEC.json";

struct RunArgs {
  std::string artifact_dir;
  std::string spec_path;
};

RunArgs parse_run_args(const std::vector<std::string>& args) {
  RunArgs parsed;
  for (std::size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "--spec") {
      if (i + 1 >= args.size()) throw UsageError("--spec needs a file");
      parsed.spec_path = args[++i];
    } else if (!args[i].empty() && args[i][0] == '-') {
      throw UsageError("unknown option " + args[i] + "; " + kUsage);
    } else if (parsed.artifact_dir.empty()) {
      parsed.artifact_dir = args[i];
    } else {
      throw UsageError("unexpected argument " + args[i] + "; " + kUsage);
    }
  }
  if (parsed.artifact_dir.empty() || parsed.spec_path.empty()) throw UsageError(kUsage);
  return parsed;
}

bool is_directory(const std::string& path) {
  struct stat info {};
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// A number that is not a count where a count is wanted (2.5 steps).
class BadValue : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A count: an integer, or a number with no fractional part (5.0), as Python writes either.
long integer(const Json& value) {
  if (value.is_number_integer()) return value.get<long>();
  const double d = value.get<double>();  // nlohmann's type_error for a non-number
  if (std::floor(d) != d || std::abs(d) > 9e15)
    throw BadValue("expected an integer, got " + value.dump());
  return static_cast<long>(d);
}
// Reads a JSON document; every way it can be bad (unreadable, not JSON, a missing key, a value
// of the wrong type) becomes one `Error` whose message starts with `what`.
template <typename Error, typename Read>
auto read_document(const std::string& what, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const FileError& e) {
    throw Error(what + e.what());
  } catch (const BadValue& e) {
    throw Error(what + e.what());
  } catch (const Json::exception& e) {
    throw Error(what + json_reason(e));
  }
}

// Reads a T through its from_json (nlohmann's macros), each count checked first: a field whose
// default is an integer takes an integer (or 5.0), where nlohmann alone would read 2.5 as 2.
template <typename T>
T read_fields(Json object) {
  const Json defaults = T{};
  if (object.is_object()) {
    for (const auto& [key, fallback] : defaults.items())
      if (fallback.is_number_integer() && object.contains(key)) object[key] = integer(object[key]);
  }
  return object.get<T>();
}

// The spec file: {"measure": MeasureSettings fields, "latency_budget_s": s, "threads": n,
// "self_check_rounds": r} (and the rest of the Python Spec, not read here).
struct RunSpec {
  timing::Settings settings;   // "measure", with the latency budget written beside it
  long threads = 1;            // intra-op threads (the Python side uses the same count)
  long self_check_rounds = 0;  // > 0: also check the harness against the steady clock
};
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RunSpec, threads, self_check_rounds)

RunSpec read_spec(const std::string& path) {
  RunSpec spec;
  read_document<UsageError>("bad spec: ", [&] {
    const Json doc = read_json(path);
    spec = read_fields<RunSpec>(doc);
    Json measure = doc.value("measure", Json::object());
    // The worker derives the latency phase's budget from "measure" and writes it beside it.
    if (doc.contains("latency_budget_s")) measure["latency_budget_s"] = doc["latency_budget_s"];
    spec.settings = read_fields<timing::Settings>(measure);
  });
  const std::string problem = timing::validate(spec.settings);
  if (!problem.empty()) throw UsageError("bad spec: " + problem);
  if (spec.threads < 1) throw UsageError("bad spec: threads must be >= 1");
  if (spec.self_check_rounds < 0) throw UsageError("bad spec: self_check_rounds must be >= 0");
  return spec;
}

// The file is sized before anything is allocated for it: a shape that does not match it fails
// here, not as an allocation of the shape's size.
std::vector<float> read_floats(const std::string& path, std::size_t count) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw RuntimeError("cannot read input " + path);
  const auto bytes = static_cast<std::size_t>(in.tellg());
  if (bytes != count * sizeof(float))
    throw RuntimeError(path + " does not hold " + std::to_string(count) + " float32 values");
  std::vector<float> data(count);
  in.seekg(0);
  in.read(reinterpret_cast<char*>(data.data()), static_cast<std::streamsize>(bytes));
  if (in.gcount() != static_cast<std::streamsize>(bytes))
    throw RuntimeError("cannot read input " + path);
  return data;
}

// An input's shape: every dimension an integer >= 1 (a negative one would wrap to a huge
// element count, a zero one holds no data), with fewer elements than a file can hold bytes.
std::vector<std::int64_t> read_shape(const Json& shape) {
  const auto refuse = [&](const std::string& why) {
    return UsageError("bad artifact manifest: shape " + shape.dump() + ": " + why);
  };
  if (!shape.is_array()) throw refuse("not an array");
  std::vector<std::int64_t> dims;
  std::size_t count = 1;
  for (const auto& value : shape) {
    long dim = 0;
    try {
      dim = integer(value);
    } catch (const std::exception&) {  // BadValue, or nlohmann's type_error for a non-number
      throw refuse("dimensions must be integers");
    }
    if (dim < 1) throw refuse("dimensions must be >= 1");
    const auto size = static_cast<std::size_t>(dim);
    if (count > std::numeric_limits<std::size_t>::max() / sizeof(float) / size)
      throw refuse("too many elements");
    count *= size;
    dims.push_back(dim);
  }
  return dims;
}

Tensor read_input(const Artifact& artifact, const Json& entry) {
  Tensor tensor;
  tensor.shape = read_shape(entry.at("shape"));
  std::size_t count = 1;
  for (const auto dim : tensor.shape) count *= static_cast<std::size_t>(dim);
  tensor.data = read_floats(artifact.path(entry.at("file").get<std::string>()), count);
  return tensor;
}

Artifact read_artifact(const std::string& dir) {
  if (!is_directory(dir)) throw UsageError("artifact directory " + dir + " does not exist");
  Artifact artifact;
  artifact.dir = dir;
  read_document<RuntimeError>("bad artifact manifest: ", [&] {
    artifact.manifest = read_json(artifact.path("artifact.json"));
    const Json& inputs = artifact.manifest.at("inputs");
    if (!inputs.is_array()) throw BadValue("inputs is not an array");
    for (const auto& entry : inputs) artifact.inputs.push_back(read_input(artifact, entry));
  });
  return artifact;
}

void write_floats(const std::string& path, const std::vector<float>& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data.data()),
            static_cast<std::streamsize>(data.size() * 4));
  if (!out) throw RuntimeError("cannot write " + path);
}

// The settings the run used, as read: every Settings field, then the thread count.
OrderedJson settings_json(const RunSpec& spec) {
  OrderedJson settings = spec.settings;
  settings["threads"] = spec.threads;
  return settings;
}

// Writes each output as raw float32 next to the artifact and describes it in the JSON.
OrderedJson outputs_json(const Artifact& artifact, const std::vector<Tensor>& outputs) {
  OrderedJson described = OrderedJson::array();
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string file = "native_output_" + std::to_string(i) + ".bin";
    write_floats(artifact.path(file), outputs[i].data);
    described.push_back({{"file", file}, {"shape", outputs[i].shape}});
  }
  return described;
}

// The harness checking itself against the steady clock, read here and never through the
// injected clock, in rounds of two blocks of `steps` steps each:
//   * wrapped: one method sample, timed from outside, with an extra sync before the outside
//     clock is read, so a library that stopped its clock before the work was done shows up
//     as wrapped_s > library_s;
//   * independent: the same steps and one sync in a loop of its own, no library at all.
// One block of each per round, adjacent in time, so the Python side compares pairs and the
// machine's drift over the run (samples here spread 10-40%) cancels.
struct SelfCheck {
  long steps = 0;
  std::vector<double> library_s;
  std::vector<double> wrapped_s;
  std::vector<double> independent_s;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void wrapped_sample(Runtime& runtime, const timing::Method& method, SelfCheck& check) {
  const auto start = std::chrono::steady_clock::now();
  check.library_s.push_back(method.time_sample(check.steps));
  runtime.sync();  // a no-op after a correct sample; the wait a forgotten one left undone
  check.wrapped_s.push_back(seconds_since(start));
}

void independent_block(Runtime& runtime, SelfCheck& check) {
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < check.steps; ++i) runtime.step();
  runtime.sync();
  check.independent_s.push_back(seconds_since(start));
}

// The order flips every round: drift within a pair, and whatever the first of two blocks
// pays (a cold cache, a clock ramping up), falls on each side alike.
SelfCheck self_check(Runtime& runtime, const timing::Method& method, long rounds, long steps) {
  SelfCheck check;
  check.steps = steps;
  for (long round = 0; round < rounds; ++round) {
    if (round % 2 == 0) wrapped_sample(runtime, method, check);
    independent_block(runtime, check);
    if (round % 2 == 1) wrapped_sample(runtime, method, check);
  }
  return check;
}

std::unique_ptr<Runtime> create_runtime(const Registry& registry, const std::string& name) {
  std::unique_ptr<Runtime> runtime = registry.create(name);
  if (runtime) return runtime;
  std::string known;
  for (const auto& n : registry.names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown runtime '" + name + "'; compiled in: " +
                   (known.empty() ? "none" : known));
}

// Everything one run measured: raw values only, the summary is the Python side's.
struct Measured {
  double load_s = 0;
  double prepare_s = 0;
  double first_call_s = 0;
  std::vector<Tensor> outputs;  // of the first call
  timing::WarmupResult warm;
  double calibration_step_s = 0;
  timing::SampleResult samples;
  std::vector<double> latency_s;
  SelfCheck self_check;
};

// The worker's sequence (runner/worker.py _time_runner), after untimed load and prepare.
Measured measure(Runtime& runtime, const Artifact& artifact, const RunSpec& spec,
                 const timing::Clock& clock) {
  Measured m;
  double start = clock();
  runtime.load(artifact, Options{static_cast<int>(spec.threads)});
  m.load_s = clock() - start;
  start = clock();
  runtime.prepare();
  m.prepare_s = clock() - start;
  const timing::Method method([&] { runtime.step(); }, [&] { runtime.sync(); }, clock);
  m.first_call_s = method.time_call();
  m.outputs = runtime.output();
  m.warm = method.warm_up(spec.settings);
  const auto& steps = m.warm.step_s;
  m.calibration_step_s = stats::median(
      std::vector<double>(steps.end() - std::min<std::size_t>(3, steps.size()), steps.end()));
  const long per_sample = method.calibrate(spec.settings, m.calibration_step_s);
  m.samples = method.collect_samples(spec.settings, per_sample);
  m.latency_s = method.time_latency(spec.settings.latency_steps, spec.settings.latency_budget_s);
  // Blocks as long as the samples: the same pipelining, the same per-block fixed costs.
  m.self_check = self_check(runtime, method, spec.self_check_rounds, per_sample);
  return m;
}

OrderedJson self_check_json(long rounds, const SelfCheck& check) {
  return {{"rounds", rounds}, {"steps", check.steps}, {"library_s", check.library_s},
          {"wrapped_s", check.wrapped_s}, {"independent_s", check.independent_s}};
}

// One line: keys in the order they were added, numbers in their shortest round-trip form (an
// integral double with ".0"; a non-finite one as null), text as UTF-8 (a byte that is not UTF-8
// becomes U+FFFD rather than an error).
std::string print(const OrderedJson& doc) {
  return doc.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

// The result runner/native.py reads (SCHEMA_VERSION there); native/tests/golden/ pins its text.
std::string result_json(const std::string& name, const Runtime& runtime, const Artifact& artifact,
                        const RunSpec& spec, const Measured& m) {
  OrderedJson doc = {{"schema_version", kSchemaVersion}, {"program", kMarker},
                     {"pid", static_cast<long>(getpid())}, {"runtime", name}};
  doc["runtime_metadata"] = OrderedJson(runtime.metadata());
  doc["settings"] = settings_json(spec);
  doc["stages_s"] = {{"load", m.load_s}, {"prepare", m.prepare_s}};
  doc["first_call_s"] = m.first_call_s;
  doc["warmup"] = {{"steps", m.warm.steps}, {"seconds", m.warm.seconds},
                   {"step_s", m.warm.step_s}, {"steady", m.warm.steady}};
  doc["calibration_step_s"] = m.calibration_step_s;
  doc["throughput"] = {{"steps_per_sample", m.samples.steps_per_sample},
                       {"sample_s", m.samples.sample_s}, {"target_met", m.samples.target_met}};
  doc["latency"] = {{"step_s", m.latency_s}};
  if (spec.self_check_rounds > 0)
    doc["self_check"] = self_check_json(spec.self_check_rounds, m.self_check);
  doc["outputs"] = outputs_json(artifact, m.outputs);
  return print(doc);
}

int run(const std::vector<std::string>& args, const Registry& registry,
        const timing::Clock& clock, std::ostream& out, std::ostream& err) {
  const RunArgs parsed = parse_run_args(args);
  const RunSpec spec = read_spec(parsed.spec_path);
  const Artifact artifact = read_artifact(parsed.artifact_dir);
  const std::string name = artifact.manifest.at("runtime").get<std::string>();
  std::unique_ptr<Runtime> runtime = create_runtime(registry, name);
  err << "xlabench-native: loading " << name << " artifact from " << artifact.dir << "\n";
  const Measured measured = measure(*runtime, artifact, spec, clock);
  out << result_json(name, *runtime, artifact, spec, measured) << "\n";
  return 0;
}

int list(const Registry& registry, std::ostream& out) {
  const OrderedJson doc = {
      {"schema_version", kSchemaVersion}, {"program", kMarker}, {"runtimes", registry.names()}};
  out << print(doc) << "\n";
  return 0;
}

}  // namespace

int run_cli(const std::vector<std::string>& args, const Registry& registry,
            const timing::Clock& clock, std::ostream& out, std::ostream& err) {
  try {
    if (args.size() == 1 && args[0] == "--list") return list(registry, out);
    if (!args.empty() && args[0] == "run") return run(args, registry, clock, out, err);
    throw UsageError(kUsage);
  } catch (const UsageError& e) {
    err << "xlabench-native: " << e.what() << "\n";
    return 2;
  } catch (const Json::exception& e) {  // the spec's are UsageErrors: this is a manifest's
    err << "xlabench-native: bad artifact manifest: " << json_reason(e) << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "xlabench-native: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace xlabench
