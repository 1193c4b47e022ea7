// End-to-end runs of workloads/mlp.yaml: the same program on tiny.yaml (4 leaves) and f1.yaml
// (32 leaves), in functional and timing mode.
#include <doctest/doctest.h>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/encoding.h"
#include "sim/machine.h"
#include "sim/report.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

const isa::Program& mlp() {
  // Through the binary form, as `fracsim run -w mlp.fbin` does.
  static const isa::Program p = isa::decode_program(
      isa::encode_program(compiler::compile(compiler::load_workload(kRoot + "/workloads/mlp.yaml"),
                                            isa::OpTable::builtin())),
      "mlp.fbin");
  return p;
}

RunResult run_on(const std::string& config, Mode mode) {
  return simulate(load_machine_spec(kRoot + "/configs/" + config), isa::OpTable::builtin(), mlp(),
                  mode);
}

const isa::TensorRef& output() {
  for (const isa::Symbol& s : mlp().symbols)
    if (s.role == isa::SymbolRole::output) return s.tensor;
  throw std::logic_error("no output");
}

}  // namespace

TEST_CASE("the MLP on tiny.yaml matches the reference element by element") {
  RunResult r = run_on("tiny.yaml", Mode::functional);
  std::vector<OutputCheck> checks = check_outputs(mlp(), isa::OpTable::builtin(), r.memory);
  REQUIRE(checks.size() == 1);
  CHECK(checks[0].name == "fc3");
  CHECK(checks[0].elements == 64 * 10);
  CHECK(checks[0].bit_exact == 64 * 10);
}

TEST_CASE("the same program on tiny.yaml and f1.yaml: identical outputs, fewer cycles on f1") {
  RunResult tiny = run_on("tiny.yaml", Mode::functional);
  RunResult f1 = run_on("f1.yaml", Mode::functional);
  auto [lo, hi] = output().byte_span();
  CHECK(std::equal(tiny.memory.begin() + lo, tiny.memory.begin() + hi, f1.memory.begin() + lo));
  CHECK(f1.cycles < tiny.cycles);
  // The whole main memory ends the same, intermediates included.
  CHECK(tiny.memory == f1.memory);
}

TEST_CASE("timing mode reports the cycles of functional mode, node by node") {
  for (const char* config : {"tiny.yaml", "f1.yaml"}) {
    CAPTURE(config);
    RunResult f = run_on(config, Mode::functional);
    RunResult t = run_on(config, Mode::timing);
    CHECK(f.cycles == t.cycles);
    REQUIRE(f.nodes.size() == t.nodes.size());
    for (size_t i = 0; i < f.nodes.size(); ++i)
      CHECK(f.nodes[i].stats.value == t.nodes[i].stats.value);
  }
}

TEST_CASE("stats.json is byte-identical across runs") {
  MachineSpec spec = load_machine_spec(kRoot + "/configs/tiny.yaml");
  std::string a = stats_text(spec, mlp(), run_on("tiny.yaml", Mode::timing), {});
  std::string b = stats_text(spec, mlp(), run_on("tiny.yaml", Mode::timing), {});
  CHECK(a == b);
  nlohmann::json j = nlohmann::json::parse(a);
  for (const char* key :
       {"cycles", "seconds", "mode", "folded", "machine", "utilization", "levels", "config"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j["machine"]["leaves"] == 4);
  CHECK(j["levels"].size() == 3);
}

TEST_CASE("stats.json's text is nlohmann::json's own two-space dump, node entries included") {
  // The node entries are written directly (thousands on a large machine, most sharing their
  // counters): they must come out as the library writes them, key order and spacing included.
  for (const char* config : {"tiny.yaml", "scale/leaves-4096.yaml"}) {
    CAPTURE(config);
    MachineSpec spec = load_machine_spec(kRoot + "/configs/" + config);
    const RunResult run = run_on(config, Mode::timing);
    const std::string text = stats_text(spec, mlp(), run, {});
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(text);
    CHECK(text == j.dump(2) + "\n");
    size_t nodes = 1;
    for (size_t l = 0; l < spec.levels.size(); ++l) nodes += spec.nodes_at(l);
    REQUIRE(j["nodes"].size() == nodes);
    CHECK(j["nodes"][0]["path"] == "root");
    // Per level, the node entries add up to the level's totals (computed apart from them).
    std::vector<uint64_t> pieces(spec.levels.size() + 1, 0);
    for (size_t i = 0; i < nodes; ++i)
      pieces[run.nodes[i].level + 1] += j["nodes"][i]["pieces"].get<uint64_t>();
    for (size_t l = 0; l < pieces.size(); ++l)
      CHECK(pieces[l] == j["levels"][l]["totals"]["pieces"].get<uint64_t>());
  }
}
