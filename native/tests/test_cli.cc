// The command line end to end with a fake runtime on a fake clock: exit codes, one-line errors,
// and the JSON the Python worker reads (its exact text pinned by the files under golden/).
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "check.h"
#include "cli.h"
#include "util/files.h"

using namespace xlabench;
using Json = nlohmann::json;

namespace {

double g_now = 0.0;

// Steps take 10 ms of fake time; the output is twice the input.
class FakeRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options&) override {
    if (artifact.manifest.contains("fail_load")) throw RuntimeError("fake: corrupt model file");
    input_ = artifact.inputs.at(0);
  }
  void prepare() override { g_now += 1.0; }
  void step() override { g_now += 0.01; }
  void sync() override {}
  std::vector<Tensor> output() override {
    Tensor out = input_;
    for (auto& v : out.data) v *= 2;
    return {out};
  }
  // Text that needs escaping, and a byte that is not UTF-8 (printed as U+FFFD).
  std::map<std::string, std::string> metadata() const override {
    return {{"version", "0"}, {"note", "quote\" backslash\\ tab\t ctl\x01 \xc3\xa9 \xff"}};
  }

 private:
  Tensor input_;
};

struct Result {
  int code;
  std::string out;
  std::string err;
};

// Each call starts the fake clock at 0, so a run's times do not depend on the calls before it.
Result call(const std::vector<std::string>& args) {
  g_now = 0.0;
  Registry registry;
  registry.add("fake", [] { return std::make_unique<FakeRuntime>(); });
  std::ostringstream out, err;
  const int code = run_cli(args, registry, [] { return g_now; }, out, err);
  return {code, out.str(), err.str()};
}

// The reason is the last line of stderr (logs may precede it); usage errors are the only line.
bool one_line_containing(const Result& r, const std::string& text) {
  const bool ends = !r.err.empty() && r.err.back() == '\n';
  const std::size_t start = ends ? r.err.rfind('\n', r.err.size() - 2) : std::string::npos;
  const std::string last = r.err.substr(start == std::string::npos ? 0 : start + 1);
  const bool single = r.code != 2 || start == std::string::npos;
  const bool ok = ends && single && last.find(text) != std::string::npos;
  if (!ok) std::cerr << "stderr was: " << r.err;
  return ok;
}

void write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string make_dir() {
  char pattern[] = "/tmp/xlabench-native-test-XXXXXX";
  return mkdtemp(pattern);
}

const char* kSpec =
    R"({"measure": {"target_rel_ci": 0.02, "min_sample_s": 0.1, "min_samples": 5,)"
    R"( "max_samples": 20, "warmup_min_steps": 3, "warmup_min_s": 0.05, "warmup_max_s": 1,)"
    R"( "budget_s": 2, "latency_steps": 4}, "latency_budget_s": 1, "threads": 2})";

const char* kSelfCheckSpec =
    R"({"measure": {"budget_s": 1, "warmup_min_s": 0.05}, "self_check_rounds": 3})";

void write_artifact(const std::string& dir, const std::string& runtime,
                    const std::string& shape = "[2, 2]") {
  write(dir + "/artifact.json", R"({"runtime": ")" + runtime +
                                    R"(", "inputs": [{"file": "input.bin", "shape": )" + shape +
                                    "}]}");
  const float input[4] = {1.0f, -2.0f, 3.5f, 0.0f};
  std::ofstream(dir + "/input.bin", std::ios::binary)
      .write(reinterpret_cast<const char*>(input), sizeof input);
}

void check_argument_errors(const std::string& dir) {
  CHECK(call({}).code == 2);
  CHECK(one_line_containing(call({"bogus"}), "usage"));
  CHECK(call({"run", dir}).code == 2);
  CHECK(call({"run", dir, "--spec"}).code == 2);
  CHECK(call({"run", dir, "--spec", dir + "/spec.json", "--frobnicate"}).code == 2);
  const Result missing_spec = call({"run", dir, "--spec", dir + "/none.json"});
  CHECK(missing_spec.code == 2 && one_line_containing(missing_spec, "cannot read"));
  write(dir + "/bad_spec.json", R"({"measure": {"min_samples": 2}})");
  const Result bad = call({"run", dir, "--spec", dir + "/bad_spec.json"});
  CHECK(bad.code == 2 && one_line_containing(bad, "min_samples"));
  write(dir + "/bad_type.json", R"({"measure": {"min_samples": "five"}})");
  CHECK(call({"run", dir, "--spec", dir + "/bad_type.json"}).code == 2);
  // A count is an integer (5.0 is one); nlohmann alone would read 5.5 as 5.
  write(dir + "/fraction.json", R"({"measure": {"min_samples": 5.5}})");
  const Result fraction = call({"run", dir, "--spec", dir + "/fraction.json"});
  CHECK(fraction.code == 2 && one_line_containing(fraction, "expected an integer, got 5.5"));
  write(dir + "/fraction.json", R"({"threads": 1.5})");
  CHECK(call({"run", dir, "--spec", dir + "/fraction.json"}).code == 2);
  write(dir + "/whole.json", R"({"measure": {"min_samples": 5.0}, "threads": 2.0})");
  CHECK(call({"run", dir, "--spec", dir + "/whole.json"}).code == 0);
}

// A shape the runner refuses by rule, before anything is allocated for it: exit 2, one line.
void check_shape_errors(const std::string& spec) {
  const std::string dir = make_dir();
  const auto refused = [&](const std::string& shape, const std::string& why) {
    write_artifact(dir, "fake", shape);
    const Result r = call({"run", dir, "--spec", spec});
    const bool ok = r.code == 2 && one_line_containing(r, "bad artifact manifest: shape ") &&
                    one_line_containing(r, why);
    if (!ok) std::cerr << "shape " << shape << ": exit " << r.code << "\n";
    return ok;
  };
  CHECK(refused("[2, -2]", "dimensions must be >= 1"));
  CHECK(refused("[0, 4]", "dimensions must be >= 1"));
  CHECK(refused("[2, 2.5]", "dimensions must be integers"));
  CHECK(refused("[2, \"2\"]", "dimensions must be integers"));
  CHECK(refused("[4611686018427387904, 4]", "too many elements"));
  CHECK(refused("4", "not an array"));
}

void check_artifact_errors(const std::string& dir) {
  const std::string spec = dir + "/spec.json";
  const Result no_dir = call({"run", dir + "/nope", "--spec", spec});
  CHECK(no_dir.code == 2 && one_line_containing(no_dir, "does not exist"));
  const std::string corrupt = make_dir();
  write(corrupt + "/artifact.json", "{\"runtime\": \"fake\", \"inputs\": [");
  const Result bad_manifest = call({"run", corrupt, "--spec", spec});
  CHECK(bad_manifest.code == 1 && one_line_containing(bad_manifest, "bad artifact manifest"));
  write_artifact(corrupt, "nope");
  const Result unknown = call({"run", corrupt, "--spec", spec});
  CHECK(unknown.code == 2 && one_line_containing(unknown, "unknown runtime 'nope'; compiled in: fake"));
  write_artifact(corrupt, "fake");
  write(corrupt + "/input.bin", "abcde");
  const Result short_input = call({"run", corrupt, "--spec", spec});
  CHECK(short_input.code == 1 && one_line_containing(short_input, "float32"));
}

// R rounds of each block, each as long as a sample. The library's times are on the fake clock
// (10 ms a step); the outside ones on the real steady clock, so only their count is known.
void check_self_check(const std::string& dir) {
  const Result checked = call({"run", dir, "--spec", dir + "/check_spec.json"});
  CHECK(checked.code == 0);
  if (checked.code != 0) std::cerr << checked.err;
  const Json doc = Json::parse(checked.out);
  const Json& check = doc.at("self_check");
  const long steps = doc.at("throughput").at("steps_per_sample").get<long>();
  CHECK(check.at("rounds").get<long>() == 3 && check.at("steps").get<long>() == steps);
  for (const char* key : {"library_s", "wrapped_s", "independent_s"})
    CHECK(check.at(key).size() == 3);
  for (const auto& seconds : check.at("library_s"))
    CHECK(test::close(seconds.get<double>(), 0.01 * static_cast<double>(steps), 1e-9));
  for (const auto& seconds : check.at("independent_s")) CHECK(seconds.get<double>() >= 0);
  write(dir + "/bad_check.json", R"({"self_check_rounds": -1})");
  CHECK(call({"run", dir, "--spec", dir + "/bad_check.json"}).code == 2);
}

void check_run(const std::string& dir) {
  const Result r = call({"run", dir, "--spec", dir + "/spec.json"});
  CHECK(r.code == 0);
  const Json doc = Json::parse(r.out);
  CHECK(doc.at("schema_version").get<long>() == kSchemaVersion);
  CHECK(doc.at("program").get<std::string>() == kMarker);
  CHECK(doc.at("pid").get<long>() == static_cast<long>(getpid()));
  CHECK(doc.at("settings").at("threads").get<long>() == 2);
  CHECK(test::close(doc.at("stages_s").at("prepare").get<double>(), 1.0));
  CHECK(test::close(doc.at("first_call_s").get<double>(), 0.01));
  const Json& tp = doc.at("throughput");
  CHECK(tp.at("steps_per_sample").get<long>() == 10);
  CHECK(tp.at("target_met").get<bool>());
  CHECK(tp.at("sample_s").size() == 5);
  CHECK(doc.at("latency").at("step_s").size() == 4);
  const Json& output = doc.at("outputs").at(0);
  CHECK(output.at("shape").size() == 2);
  std::ifstream in(dir + "/" + output.at("file").get<std::string>(), std::ios::binary);
  float values[4] = {};
  in.read(reinterpret_cast<char*>(values), sizeof values);
  CHECK(in.gcount() == sizeof values && values[0] == 2.0f && values[2] == 7.0f);
  check_self_check(dir);
  CHECK(!Json::parse(r.out).contains("self_check"));
  write(dir + "/artifact.json", R"({"runtime": "fake", "fail_load": 1, )"
                                R"("inputs": [{"file": "input.bin", "shape": [2, 2]}]})");
  const Result failed = call({"run", dir, "--spec", dir + "/spec.json"});
  CHECK(failed.code == 1 && one_line_containing(failed, "corrupt model file"));
}

// The printed JSON, byte for byte, against GOLDEN_DIR/NAME: keys, their order, nesting, types
// and number forms, as runner/native.py reads them. What changes from run to run is masked:
// the pid, and the self-check's outside times (the real steady clock). To accept a deliberate
// change: XLABENCH_UPDATE_GOLDEN=1 build/native/tests/test_cli native/tests/golden, then review
// the diff (and runner/native.py, which reads it).
void check_golden(const Result& r, const std::string& golden_dir, const std::string& name) {
  CHECK(r.code == 0);
  std::string got = std::regex_replace(r.out, std::regex(R"("pid":\d+)"), R"("pid":0)");
  got = std::regex_replace(got, std::regex(R"re(("(wrapped_s|independent_s)":)\[[^\]]*\])re"),
                           R"($1["real clock"])");
  const std::string path = golden_dir + "/" + name;
  if (std::getenv("XLABENCH_UPDATE_GOLDEN")) write(path, got);
  const std::string want = read_bytes(path);
  if (got != want) std::cerr << name << ": expected\n" << want << "got\n" << got;
  CHECK(got == want);
}

void check_goldens(const std::string& dir, const std::string& golden_dir) {
  check_golden(call({"run", dir, "--spec", dir + "/spec.json"}), golden_dir, "run.json");
  check_golden(call({"run", dir, "--spec", dir + "/check_spec.json"}), golden_dir,
               "run_self_check.json");
}

void check_list() {
  const Result r = call({"--list"});
  CHECK(r.code == 0);
  CHECK(r.out == R"({"schema_version":1,"program":"xlabench-native","runtimes":["fake"]})" "\n");
}

}  // namespace

// test_cli: the behaviour; test_cli GOLDEN_DIR: the printed text against the golden files.
int main(int argc, char** argv) {
  const std::string dir = make_dir();
  write(dir + "/spec.json", kSpec);
  write(dir + "/check_spec.json", kSelfCheckSpec);
  write_artifact(dir, "fake");
  if (argc == 2) {
    check_goldens(dir, argv[1]);
    return test::finish("test_cli (golden)");
  }
  check_argument_errors(dir);
  check_artifact_errors(dir);
  check_shape_errors(dir + "/spec.json");
  check_run(dir);
  check_list();
  return test::finish("test_cli");
}
