// The command line end to end with a fake runtime on a fake clock: exit codes, one-line errors,
// and the JSON the Python worker reads.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "check.h"
#include "cli.h"

using namespace xlabench;

namespace {

double g_now = 0.0;

// Steps take 10 ms of fake time; the output is twice the input.
class FakeRuntime final : public Runtime {
 public:
  void load(const Artifact& artifact, const Options&) override {
    if (artifact.manifest.has("fail_load")) throw RuntimeError("fake: corrupt model file");
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
  std::map<std::string, std::string> metadata() const override { return {{"version", "0"}}; }

 private:
  Tensor input_;
};

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result call(const std::vector<std::string>& args) {
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

void write_artifact(const std::string& dir, const std::string& runtime) {
  write(dir + "/artifact.json", R"({"runtime": ")" + runtime +
                                    R"(", "inputs": [{"file": "input.bin", "shape": [2, 2]}]})");
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
  write(dir + "/check_spec.json",
        R"({"measure": {"budget_s": 1, "warmup_min_s": 0.05}, "self_check_rounds": 3})");
  const Result checked = call({"run", dir, "--spec", dir + "/check_spec.json"});
  CHECK(checked.code == 0);
  if (checked.code != 0) std::cerr << checked.err;
  const json::Value doc = json::parse(checked.out);
  const json::Value& check = doc.at("self_check");
  const long steps = doc.at("throughput").at("steps_per_sample").as_integer();
  CHECK(check.at("rounds").as_integer() == 3 && check.at("steps").as_integer() == steps);
  for (const char* key : {"library_s", "wrapped_s", "independent_s"})
    CHECK(check.at(key).as_array().size() == 3);
  for (const auto& seconds : check.at("library_s").as_array())
    CHECK(test::close(seconds.as_number(), 0.01 * static_cast<double>(steps), 1e-9));
  for (const auto& seconds : check.at("independent_s").as_array()) CHECK(seconds.as_number() >= 0);
  write(dir + "/bad_check.json", R"({"self_check_rounds": -1})");
  CHECK(call({"run", dir, "--spec", dir + "/bad_check.json"}).code == 2);
}

void check_run(const std::string& dir) {
  const Result r = call({"run", dir, "--spec", dir + "/spec.json"});
  CHECK(r.code == 0);
  const json::Value doc = json::parse(r.out);
  CHECK(doc.at("schema_version").as_integer() == kSchemaVersion);
  CHECK(doc.at("program").as_string() == kMarker);
  CHECK(doc.at("pid").as_integer() == static_cast<long>(getpid()));
  CHECK(doc.at("settings").at("threads").as_integer() == 2);
  CHECK(test::close(doc.at("stages_s").at("prepare").as_number(), 1.0));
  CHECK(test::close(doc.at("first_call_s").as_number(), 0.01));
  const json::Value& tp = doc.at("throughput");
  CHECK(tp.at("steps_per_sample").as_integer() == 10);
  CHECK(tp.at("target_met").as_bool());
  CHECK(tp.at("sample_s").as_array().size() == 5);
  CHECK(doc.at("latency").at("step_s").as_array().size() == 4);
  const json::Value& output = doc.at("outputs").as_array().at(0);
  CHECK(output.at("shape").as_array().size() == 2);
  std::ifstream in(dir + "/" + output.at("file").as_string(), std::ios::binary);
  float values[4] = {};
  in.read(reinterpret_cast<char*>(values), sizeof values);
  CHECK(in.gcount() == sizeof values && values[0] == 2.0f && values[2] == 7.0f);
  check_self_check(dir);
  CHECK(!json::parse(r.out).has("self_check"));
  write(dir + "/artifact.json", R"({"runtime": "fake", "fail_load": 1, )"
                                R"("inputs": [{"file": "input.bin", "shape": [2, 2]}]})");
  const Result failed = call({"run", dir, "--spec", dir + "/spec.json"});
  CHECK(failed.code == 1 && one_line_containing(failed, "corrupt model file"));
}

void check_list_and_numbers() {
  const Result r = call({"--list"});
  CHECK(r.code == 0);
  CHECK(json::parse(r.out).at("runtimes").as_array().at(0).as_string() == "fake");
  json::Writer w;
  w.begin_array().value(0.1).value(1.0 / 0.0).value(-2.5e-300).value(7L).end_array();
  CHECK(w.str() == "[0.1,null,-2.5e-300,7]");
}

}  // namespace

int main() {
  const std::string dir = make_dir();
  write(dir + "/spec.json", kSpec);
  write_artifact(dir, "fake");
  check_argument_errors(dir);
  check_artifact_errors(dir);
  check_run(dir);
  check_list_and_numbers();
  return test::finish("test_cli");
}
