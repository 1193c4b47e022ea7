// Energy: the table's format and every error of it, and the energy of runs derived by hand from
// their action counts and the table.
#include <doctest/doctest.h>

#include "tests/common/machine_text.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/error.h"
#include "sim/energy.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/report.h"

namespace fracsim::sim {
namespace {

// A machine of 2 clusters x 2 cores with an inline table (lines 19 on); the error tests change
// one line. Line numbers matter: see the margin.
const std::string& kMachine = testing::kTwoLevelMachine;  // lines 1 to 18
const std::string kTable =
    "energy:\n"                                  // 19
    "  mac: {f32: 4 pJ, i16: 2 pJ, i8: 1 pJ}\n"  // 20
    "  vector_op: {f32: 0.5 pJ, f16: 0.5 pJ, i32: 0.25 pJ, i16: 0.2 pJ, i8: 0.1 pJ, u8: 0.1 pJ, "
    "u16: 0.2 pJ, u32: 0.25 pJ, u64: 0.5 pJ, i64: 0.5 pJ, f64: 1 pJ}\n"  // 21
    "  lfu_op: 0.3 pJ\n"                                                 // 22
    "  root:\n"                                                          // 23
    "    memory: {read_per_byte: 100 pJ, write_per_byte: 150 pJ}\n"      // 24
    "    leakage: {memory: 1 W, logic: 2 mW}\n"                          // 25
    "  levels:\n"                                                        // 26
    "    cluster:\n"                                                     // 27
    "      memory: {read_per_byte: 10 pJ, write_per_byte: 12 pJ}\n"      // 28
    "      dma_per_byte: 3 pJ\n"                                         // 29
    "      leakage: {memory: 3 mW, logic: 4 mW}\n"                       // 30
    "    core:\n"                                                        // 31
    "      memory: {read_per_byte: 1 pJ, write_per_byte: 2 pJ}\n"        // 32
    "      dma_per_byte: 0.5 pJ\n"                                       // 33
    "      leakage: {memory: 5 uW, logic: 6 mW}\n"                       // 34
    "  sort_op: {f32: 0.6 pJ, i32: 0.4 pJ, i16: 0.3 pJ, i8: 0.2 pJ}\n";  // 35

std::string with(const std::string& from, const std::string& to) {
  return testing::replaced(kMachine + kTable, from, to);
}

std::string error_of(const std::string& text, const std::string& file = "bad.yaml") {
  return testing::machine_error_of(text, file);
}

std::string error_of_file(const std::string& path) {
  try {
    load_machine_spec(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

size_t at(EnergyComponent c) { return static_cast<size_t>(c); }

// Two matmuls of equal work (f32 and i8) and two vector ops (8 f32 and 32 i8 elements): the
// leaves' MACs split half and half by dtype, their vector ops 8 : 32. The compiler lowers only
// f32 vector layers so far, so the 32-element add is made i8 after compiling; the program is
// only read for its work per dtype, never run.
isa::Program compiled(const std::string& workload) {
  return compiler::compile(compiler::parse_workload(workload, "w.yaml"), isa::OpTable::builtin());
}

const isa::Program& mixed_program() {
  static isa::Program p = compiled(
      "workload: mixed\n"
      "inputs:\n"
      "  a: {shape: [4, 8], dtype: f32}\n"
      "  b: {shape: [8, 4], dtype: f32}\n"
      "  c: {shape: [4, 8], dtype: i8}\n"
      "  d: {shape: [8, 4], dtype: i8}\n"
      "  e: {shape: [2, 4], dtype: f32}\n"
      "  f: {shape: [2, 4], dtype: f32}\n"
      "  g: {shape: [8, 4], dtype: f32}\n"
      "  h: {shape: [8, 4], dtype: f32}\n"
      "layers:\n"
      "  - {name: m1, type: matmul, inputs: [a, b]}\n"
      "  - {name: m2, type: matmul, inputs: [c, d]}\n"
      "  - {name: s, type: add, inputs: [e, f]}\n"
      "  - {name: r, type: add, inputs: [g, h]}\n"
      "outputs: [m1, m2, s, r]\n");
  static const bool retyped = [] {
    int found = 0;
    for (isa::Instruction& instr : p.instructions) {
      if (isa::OpTable::builtin().get(instr.opcode).name != "eltwise") continue;
      if (instr.operands[0].elements() != 32) continue;
      for (isa::TensorRef& t : instr.operands) t.dtype = isa::DType::i8;
      ++found;
    }
    return found == 1;
  }();
  REQUIRE(retyped);
  return p;
}

NodeReport node(int level, uint64_t load, uint64_t store, uint64_t matrix_ops, uint64_t vector_ops,
                uint64_t lfu) {
  NodeReport n{level, {}};
  n.stats[Counter::load_bytes] = load;
  n.stats[Counter::store_bytes] = store;
  n.stats[Counter::matrix_ops] = matrix_ops;
  n.stats[Counter::vector_ops] = vector_ops;
  n.stats[Counter::lfu_elements] = lfu;
  return n;
}

TEST_CASE("the energy of a run, derived by hand from its action counts and the table") {
  const MachineSpec spec = parse_machine_spec(kMachine + kTable, "m.yaml");
  RunResult run;
  run.picoseconds = 1000000;                   // 1 us
  run.nodes = {node(-1, 0, 0, 0, 0, 0),        // root
               node(0, 600, 100, 0, 0, 50),    // root.cluster0
               node(0, 400, 100, 0, 0, 0),     // root.cluster1
               node(1, 300, 40, 2000, 30, 0),  // root.cluster0.core0
               node(1, 300, 40, 2000, 10, 0),  // root.cluster0.core1
               node(1, 0, 0, 0, 0, 0),         // root.cluster1.core0
               node(1, 0, 0, 0, 0, 0)};        // root.cluster1.core1
  // The leaves' work by unit and dtype, as the run's layer tallies hold it: 4000 matrix ops =
  // 2000 MACs (1000 f32 + 1000 i8), 40 vector ops (8 f32 + 32 i8), 50 sort ops (i32).
  run.layers.resize(1);
  auto work = [&](isa::UnitKind u, isa::DType d) -> uint64_t& {
    return run.layers[0].work[static_cast<size_t>(u)][static_cast<size_t>(d)];
  };
  work(isa::UnitKind::matrix, isa::DType::f32) = 2000;
  work(isa::UnitKind::matrix, isa::DType::i8) = 2000;
  work(isa::UnitKind::vector, isa::DType::f32) = 8;
  work(isa::UnitKind::vector, isa::DType::i8) = 32;
  work(isa::UnitKind::sort, isa::DType::i32) = 50;
  // Level totals: clusters load 1000 B, store 200 B, combine 50 elements; cores load 600 B,
  // store 80 B.
  // root (1 node): DRAM reads 1000 B x 100 pJ + writes 200 B x 150 pJ = 130000 pJ;
  //   leakage 1 W x 1 us = 1000000 pJ (memory) and 2 mW x 1 us = 2000 pJ (logic).
  //   Total 1132000 pJ.
  // cluster (2 nodes): memory written by its loads and the cores' write-backs, 1000 + 80 =
  //   1080 B x 12 pJ = 12960 pJ; read by its write-backs and the cores' loads, 200 + 600 =
  //   800 B x 10 pJ = 8000 pJ; local memory 20960 pJ. DMA (1000 + 200) B x 3 pJ = 3600 pJ.
  //   LFU 50 x 0.3 pJ = 15 pJ. Leakage 2 x 3 mW x 1 us = 6000 pJ, 2 x 4 mW x 1 us = 8000 pJ.
  //   Total 38575 pJ.
  // core (4 nodes): memory written by loads and by the units' results, 600 + 80 = 680 B x 2 pJ
  //   = 1360 pJ; read by write-backs and by the units' operand reads, 80 + 600 = 680 B x 1 pJ
  //   = 680 pJ; local memory 2040 pJ. DMA 680 B x 0.5 pJ = 340 pJ. MACs 1000 x 4 pJ + 1000 x
  //   1 pJ = 5000 pJ. Vector 8 x 0.5 pJ + 32 x 0.1 pJ = 7.2 pJ. Sort 50 x 0.4 pJ = 20 pJ.
  //   Leakage 4 x 5 uW x 1 us = 20 pJ, 4 x 6 mW x 1 us = 24000 pJ. Total 31427.2 pJ.
  // Machine: 1132000 + 38575 + 31427.2 = 1202002.2 pJ.
  const std::vector<LevelActions> actions = run_actions(spec, run);
  REQUIRE(actions.size() == 3);
  const LevelActions& core = actions[2];
  CHECK(core.nodes == 4);
  auto actions_of = [&](isa::UnitKind u, isa::DType d) {
    return core.unit_actions[static_cast<size_t>(u)][static_cast<size_t>(d)];
  };
  CHECK(actions_of(isa::UnitKind::matrix, isa::DType::f32) == 1000);
  CHECK(actions_of(isa::UnitKind::matrix, isa::DType::i8) == 1000);
  CHECK(actions_of(isa::UnitKind::vector, isa::DType::f32) == 8);
  CHECK(actions_of(isa::UnitKind::vector, isa::DType::i8) == 32);
  CHECK(actions_of(isa::UnitKind::sort, isa::DType::i32) == 50);
  CHECK(actions[1].unit_actions ==
        std::array<std::array<uint64_t, isa::kDTypeCount>, isa::kUnitKinds>{});
  CHECK(core.memory_read_bytes == 680);
  CHECK(core.memory_write_bytes == 680);
  CHECK(core.dma_bytes == 680);
  CHECK(actions[1].memory_read_bytes == 800);
  CHECK(actions[1].memory_write_bytes == 1080);
  CHECK(actions[0].memory_read_bytes == 1000);
  CHECK(actions[0].memory_write_bytes == 200);
  CHECK(actions[0].dma_bytes == 0);

  const EnergyReport e = price_actions(spec, actions, run.picoseconds);  // femtojoules
  CHECK(e.configured);
  CHECK(e.source == "inline");
  CHECK(e.by_level[0][at(EnergyComponent::dram)] == 130000e3);
  CHECK(e.by_level[0][at(EnergyComponent::memory_leakage)] == 1000000e3);
  CHECK(e.by_level[0][at(EnergyComponent::logic_leakage)] == 2000e3);
  CHECK(e.by_level[1][at(EnergyComponent::local_memory)] == 20960e3);
  CHECK(e.by_level[1][at(EnergyComponent::dma)] == 3600e3);
  CHECK(e.by_level[1][at(EnergyComponent::lfu)] == 15e3);
  CHECK(e.by_level[2][at(EnergyComponent::matrix_unit)] == 5000e3);
  CHECK(e.by_level[2][at(EnergyComponent::vector_unit)] == 7200);
  CHECK(e.by_level[2][at(EnergyComponent::sort_unit)] == 20e3);
  CHECK(e.by_level[2][at(EnergyComponent::memory_leakage)] == 20e3);
  CHECK(e.total == 1202002200.0);
  CHECK(e.dynamic() == 1202002200.0 - (1006020e3 + 34000e3));

  // stats.json in picojoules.
  const auto j = stats_json(spec, mixed_program(), run, {})["energy_pj"];
  CHECK(j["configured"] == true);
  CHECK(j["table"] == "inline");
  CHECK(j["total"] == 1202002.2);
  CHECK(j["by_level"][0]["name"] == "root");
  CHECK(j["by_level"][0]["total"] == 1132000.0);
  CHECK(j["by_level"][1]["name"] == "cluster");
  CHECK(j["by_level"][1]["total"] == 38575.0);
  CHECK(j["by_level"][2]["total"] == 31427.2);
  CHECK(j["by_component"].dump() ==
        R"({"matrix_unit":5000.0,"vector_unit":7.2,"sort_unit":20.0,"lfu":15.0,"dram":130000.0,)"
        R"("local_memory":23000.0,"dma":3940.0,"memory_leakage":1006020.0,)"
        R"("logic_leakage":34000.0})");
}

TEST_CASE("a simulated run: one matmul on one core, its counters and energy by hand") {
  // Root -> 1 core whose memory holds the whole matmul: one piece that loads a and b
  // (2 x 8x4 f32 = 256 B), stores out (4x4 f32 = 64 B) and does 4*4*8 = 128 MACs.
  const std::string machine =
      "machine: one\n"
      "root: {clock: 1 GHz, lfu_throughput: 1, memory: {capacity: 1 MiB, bandwidth: 1 GB/s}}\n"
      "levels:\n"
      "  - {name: core, fanout: 1, memory: {capacity: 64 KiB, bandwidth: 1 GB/s},\n"
      "     link: {bandwidth: 1 GB/s}, leaf: {matrix: {rows: 4, cols: 4}, vector: {lanes: 4}}}\n";
  const MachineSpec spec = parse_machine_spec(machine + kTable, "one.yaml");
  const isa::Program program = compiled(
      "workload: one\n"
      "inputs: {a: {shape: [4, 8], dtype: f32}, b: {shape: [8, 4], dtype: f32}}\n"
      "layers: [{name: m, type: matmul, inputs: [a, b]}]\n");
  const RunResult run = simulate(spec, isa::OpTable::builtin(), program, Mode::timing);
  REQUIRE(run.nodes.size() == 2);
  const NodeStats& core = run.nodes[1].stats;
  CHECK(core[Counter::load_bytes] == 256);
  CHECK(core[Counter::store_bytes] == 64);
  CHECK(core[Counter::matrix_ops] == 256);
  // root: DRAM 256 B x 100 pJ + 64 B x 150 pJ = 35200 pJ.
  // core: memory written 256 + 64 = 320 B x 2 pJ = 640 pJ, read 64 + 256 = 320 B x 1 pJ =
  //   320 pJ; DMA 320 B x 0.5 pJ = 160 pJ; 128 MACs x 4 pJ = 512 pJ.
  // Dynamic: 35200 + 640 + 320 + 160 + 512 = 36832 pJ. Leakage: (1 W + 2 mW) at the root and
  // (5 uW + 6 mW) at the core, over the run's simulated time.
  const EnergyReport e = run_energy(spec, run);
  CHECK(e.dynamic() == 36832e3);
  CHECK(e.by_level[1][at(EnergyComponent::matrix_unit)] == 512e3);
  const double ps = static_cast<double>(run.picoseconds);
  CHECK(ps > 0);
  CHECK(e.by_component[at(EnergyComponent::memory_leakage)] ==
        doctest::Approx((1e9 + 5e3) * ps / 1e6));
  CHECK(e.by_component[at(EnergyComponent::logic_leakage)] ==
        doctest::Approx((2e6 + 6e6) * ps / 1e6));
}

TEST_CASE("a machine without a table reports energy 0 and says it is not configured") {
  const MachineSpec spec = parse_machine_spec(kMachine, "m.yaml");
  CHECK_FALSE(spec.energy.has_value());
  CHECK_FALSE(spec.effective.contains("energy"));
  RunResult run;
  run.picoseconds = 1000;
  run.nodes = {node(-1, 0, 0, 0, 0, 0), node(0, 64, 0, 0, 0, 0)};
  const auto j = stats_json(spec, mixed_program(), run, {})["energy_pj"];
  CHECK(
      j.dump() ==
      R"({"configured":false,"table":null,"total":0.0,"by_level":[)"
      R"({"name":"root","total":0.0,"by_component":{"matrix_unit":0.0,"vector_unit":0.0,"sort_unit":0.0,)"
      R"("lfu":0.0,"dram":0.0,"local_memory":0.0,"dma":0.0,"memory_leakage":0.0,)"
      R"("logic_leakage":0.0}},)"
      R"({"name":"cluster","total":0.0,"by_component":{"matrix_unit":0.0,"vector_unit":0.0,"sort_unit":0.0,)"
      R"("lfu":0.0,"dram":0.0,"local_memory":0.0,"dma":0.0,"memory_leakage":0.0,)"
      R"("logic_leakage":0.0}},)"
      R"({"name":"core","total":0.0,"by_component":{"matrix_unit":0.0,"vector_unit":0.0,"sort_unit":0.0,)"
      R"("lfu":0.0,"dram":0.0,"local_memory":0.0,"dma":0.0,"memory_leakage":0.0,)"
      R"("logic_leakage":0.0}}],)"
      R"("by_component":{"matrix_unit":0.0,"vector_unit":0.0,"sort_unit":0.0,"lfu":0.0,"dram":0.0,)"
      R"("local_memory":0.0,"dma":0.0,"memory_leakage":0.0,"logic_leakage":0.0}})");
  const std::string summary = summary_text(spec, mixed_program(), run, {});
  CHECK(summary.find("  energy        not configured (the machine config has no energy "
                     "table)\n") != std::string::npos);
}

TEST_CASE("the effective config records the table with canonical units") {
  const MachineSpec spec = parse_machine_spec(kMachine + kTable, "m.yaml");
  const auto& j = spec.effective["energy"];
  CHECK(j["table"] == "inline");
  CHECK(j["mac"].dump() == R"({"f32":"4 pJ","i16":"2 pJ","i8":"1 pJ","defaulted":[]})");
  CHECK(j["lfu_op"] == "300 fJ");
  CHECK(j["root"]["leakage"].dump() == R"({"memory":"1 W","logic":"2 mW","defaulted":[]})");
  CHECK(j["levels"]["core"]["dma_per_byte"] == "500 fJ");
  CHECK(spec.energy->levels[1].leakage.memory == 5000);      // nW
  CHECK(spec.energy->root.memory.write_per_byte == 150000);  // fJ
}

TEST_CASE("every key of the table is required and checked, with file, line and key") {
  CHECK(error_of(with("  lfu_op: 0.3 pJ\n", "")) ==
        "bad.yaml:20: energy.lfu_op: missing required key");
  CHECK(error_of(with("lfu_op: 0.3 pJ", "lfu_op: 0.3 mW")) ==
        "bad.yaml:22: energy.lfu_op: expected an energy such as '0.2 pJ', got '0.3 mW'");
  CHECK(error_of(with("logic: 4 mW", "logic: 4 pJ")) ==
        "bad.yaml:30: energy.levels.cluster.leakage.logic: expected a power such as '15 mW', "
        "got '4 pJ'");
  CHECK(error_of(with("dma_per_byte: 3 pJ", "dma_per_byte: -3 pJ")) ==
        "bad.yaml:29: energy.levels.cluster.dma_per_byte: must not be negative, got '-3 pJ'");
  CHECK(error_of(with("i8: 1 pJ}", "i8: 1 pJ, f16: 1 pJ}")) ==
        "bad.yaml:20: energy.mac.f16: unknown key (expected one of: f32, i16, i8)");
  CHECK(error_of(with(" i16: 2 pJ,", "")) == "bad.yaml:20: energy.mac.i16: missing required key");
  CHECK(error_of(with("i32: 0.25 pJ, ", "")) ==
        "bad.yaml:21: energy.vector_op.i32: missing required key");
  CHECK(error_of(with("  sort_op: {f32: 0.6 pJ, i32: 0.4 pJ, i16: 0.3 pJ, i8: 0.2 pJ}\n", "")) ==
        "bad.yaml:20: energy.sort_op: missing required key");
  CHECK(error_of(with("i16: 0.3 pJ, ", "")) ==
        "bad.yaml:35: energy.sort_op.i16: missing required key");
  CHECK(error_of(with("  lfu_op: 0.3 pJ\n", "  lfu_op: 0.3 pJ\n  colour: red\n")) ==
        "bad.yaml:23: energy.colour: unknown key (expected one of: levels, lfu_op, mac, root, "
        "sort_op, vector_op)");
  CHECK(error_of(with("    leakage: {memory: 1 W",
                      "    dma_per_byte: 1 pJ\n    leakage: {memory: 1 W")) ==
        "bad.yaml:25: energy.root.dma_per_byte: unknown key (expected one of: leakage, memory)");
  CHECK(error_of(with("write_per_byte: 150 pJ}", "write: 150 pJ}")) ==
        "bad.yaml:24: energy.root.memory.write_per_byte: missing required key");
  CHECK(error_of(with("energy:\n", "energy: [1, 2]\nx:\n")) ==
        "bad.yaml:19: energy: expected a mapping of keys");
}

TEST_CASE("the table names an entry for every level of the machine, and checks every entry") {
  CHECK(error_of(with("    core:\n", "    cores:\n")) ==
        "bad.yaml:27: energy.levels: no entry for the machine's level 'core'");
  CHECK(error_of(with("  levels:\n", "  levels:\n    board: {memory: {read_per_byte: 1 pJ}}\n")) ==
        "bad.yaml:27: energy.levels.board.memory.write_per_byte: missing required key");
  // An entry for a level the machine lacks is accepted (shared tables) and left out of the
  // effective config.
  const MachineSpec m =
      parse_machine_spec(with("    core:\n",
                              "    board:\n"
                              "      memory: {read_per_byte: 1 pJ, write_per_byte: 1 pJ}\n"
                              "      dma_per_byte: 1 pJ\n"
                              "      leakage: {memory: 1 W, logic: 1 W}\n"
                              "    core:\n"),
                         "ok.yaml");
  CHECK(m.energy->levels.size() == 2);
  CHECK(m.effective["energy"]["levels"].size() == 2);
}

// A scratch directory of its own per test run, removed at the end.
struct ScratchDir {
  std::filesystem::path path;
  ScratchDir() {
    path = std::filesystem::temp_directory_path() /
           ("fracsim-energy-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    std::filesystem::create_directories(path / "tables");
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

TEST_CASE("a table file is found relative to the config and its errors name that file") {
  ScratchDir dir;
  // The table is kTable's mapping, unindented, in tables/t.yaml.
  std::string table;
  for (size_t at = kTable.find('\n') + 1; at < kTable.size();) {
    const size_t end = kTable.find('\n', at);
    table += kTable.substr(at + 2, end - at - 2) + "\n";
    at = end + 1;
  }
  dir.write("tables/t.yaml", table);
  const std::string config = dir.write("m.yaml", kMachine + "energy: tables/t.yaml\n");
  const MachineSpec m = load_machine_spec(config);
  REQUIRE(m.energy.has_value());
  CHECK(m.energy->source == "tables/t.yaml");
  CHECK(m.energy->lfu_op == 300);
  CHECK(m.effective["energy"]["table"] == "tables/t.yaml");

  const std::string bad_table = table;
  dir.write("tables/bad.yaml", bad_table.substr(0, bad_table.find("lfu_op")) + "lfu_op: 3 GHz\n" +
                                   bad_table.substr(bad_table.find("root:")));
  const std::string bad = dir.write("bad.yaml", kMachine + "energy: tables/bad.yaml\n");
  CHECK(error_of_file(bad) == (dir.path / "tables/bad.yaml").string() +
                                  ":3: lfu_op: expected an energy such as '0.2 pJ', got '3 GHz'");
  const std::string missing = dir.write("missing.yaml", kMachine + "energy: t.yaml\n");
  CHECK(error_of_file(missing) ==
        missing + ":19: energy: cannot open energy table 't.yaml' (looked for '" +
            (dir.path / "t.yaml").string() + "'; a path is relative to the machine config)");
}

}  // namespace
}  // namespace fracsim::sim
