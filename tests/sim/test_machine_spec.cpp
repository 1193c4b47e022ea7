// Machine configs: the shipped configs load with their exact values, and every rule of the format
// gives its exact message (file, line, key).
#include <doctest/doctest.h>

#include "tests/common/machine_text.h"

#include <string>

#include "isa/error.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {
namespace {

const std::string kConfigs = std::string(FRACSIM_SOURCE_DIR) + "/configs/";

// A valid machine; each error test changes one thing in it.
const std::string& kBase = testing::kTwoLevelMachine;
using testing::replaced;

std::string with(const std::string& from, const std::string& to) {
  return replaced(kBase, from, to);
}

std::string error_of(const std::string& text) { return testing::machine_error_of(text); }

TEST_CASE("configs/tiny.yaml loads with its exact values") {
  MachineSpec m = load_machine_spec(kConfigs + "tiny.yaml");
  CHECK(m.name == "tiny");
  CHECK(m.file == kConfigs + "tiny.yaml");
  CHECK(m.leaves() == 4);
  CHECK(m.nodes_at(0) == 2);
  CHECK(m.nodes_at(1) == 4);
  CHECK_THROWS_AS(static_cast<void>(m.nodes_at(2)), InternalError);

  CHECK(m.root.controller.clock == 1000000000);
  CHECK(m.root.controller.period_ps() == 1000);
  CHECK(m.root.controller.pipeline_depth == 3);
  CHECK(m.root.controller.decode_cycles == 1);
  CHECK(m.root.controller.lfu_throughput == 16);
  CHECK(m.root.memory.capacity == 64 * 1024 * 1024);
  CHECK(m.root.memory.bandwidth == 32000000000ULL);
  CHECK(m.root.memory.latency == 50000);
  CHECK(m.root.memory.banks == 8);

  REQUIRE(m.levels.size() == 2);
  const LevelSpec& cluster = m.levels[0];
  CHECK(cluster.name == "cluster");
  CHECK(cluster.fanout == 2);
  CHECK_FALSE(cluster.is_leaf);
  CHECK(cluster.controller.clock == 1000000000);
  CHECK(cluster.controller.lfu_throughput == 16);
  CHECK(cluster.memory.capacity == 512 * 1024);
  CHECK(cluster.memory.bandwidth == 64000000000ULL);
  CHECK(cluster.memory.latency == 2000);
  CHECK(cluster.memory.banks == 4);
  CHECK(cluster.link.bandwidth == 32000000000ULL);
  CHECK(cluster.link.latency == 20000);

  const LevelSpec& core = m.levels[1];
  CHECK(core.name == "core");
  CHECK(core.fanout == 2);
  CHECK(core.is_leaf);
  CHECK(core.controller.clock == 1000000000);  // inherited from the cluster
  CHECK(core.controller.pipeline_depth == 3);
  CHECK(core.controller.decode_cycles == 1);
  CHECK(core.controller.lfu_throughput == 0);
  CHECK(core.memory.capacity == 64 * 1024);
  CHECK(core.memory.bandwidth == 64000000000ULL);
  CHECK(core.memory.latency == 0);
  CHECK(core.memory.banks == 1);
  CHECK(core.link.bandwidth == 16000000000ULL);
  CHECK(core.link.latency == 10000);
  CHECK(core.matrix.rows == 4);
  CHECK(core.matrix.cols == 4);
  CHECK(core.vector.lanes == 8);
  CHECK(core.sort.width == 4);
  CHECK(core.matrix.for_dtype(isa::DType::i8).rows == 4);
  CHECK(core.backend == "model");
  REQUIRE(m.energy.has_value());
  CHECK(m.energy->source == "inline");
}

TEST_CASE("tiny.yaml's effective config lists every value and what was defaulted") {
  MachineSpec m = load_machine_spec(kConfigs + "tiny.yaml");
  const auto expected = nlohmann::ordered_json::parse(R"({
    "machine": "tiny",
    "decomposer": "halving",
    "hazards": "spans",
    "root": {"clock": "1 GHz", "pipeline_depth": 3, "decode_cycles": 1, "lfu_throughput": 16,
             "memory": {"capacity": "64 MiB", "bandwidth": "32 GB/s", "latency": "50 ns",
                        "banks": 8, "defaulted": []},
             "defaulted": []},
    "levels": [
      {"name": "cluster", "fanout": 2, "clock": "1 GHz", "pipeline_depth": 3, "decode_cycles": 1,
       "lfu_throughput": 16,
       "memory": {"capacity": "512 KiB", "bandwidth": "64 GB/s", "latency": "2 ns", "banks": 4,
                  "defaulted": []},
       "link": {"bandwidth": "32 GB/s", "latency": "20 ns", "multicast": false,
                "pipelined": false, "posted_writes": false,
                "defaulted": []},
       "keep_outputs": false, "resident_partial_sums": false, "hold_partial_sums": false,
       "overlap": false, "prefetch": false, "defaulted": []},
      {"name": "core", "fanout": 2, "clock": "1 GHz", "pipeline_depth": 3, "decode_cycles": 1,
       "memory": {"capacity": "64 KiB", "bandwidth": "64 GB/s", "latency": "0 ps", "banks": 1,
                  "defaulted": ["latency", "banks"]},
       "link": {"bandwidth": "16 GB/s", "latency": "10 ns", "multicast": false,
                "pipelined": false, "posted_writes": false,
                "defaulted": []},
       "keep_outputs": false, "resident_partial_sums": false, "hold_partial_sums": false,
       "overlap": false, "prefetch": false, "leaf": {"matrix": {"rows": 4, "cols": 4,
                           "f32": {"rows": 4, "cols": 4, "defaulted": ["rows", "cols"]},
                           "i16": {"rows": 4, "cols": 4, "defaulted": ["rows", "cols"]},
                           "i8": {"rows": 4, "cols": 4, "defaulted": ["rows", "cols"]},
                           "defaulted": ["f32", "i16", "i8"]},
                "vector": {"lanes": 8, "defaulted": []},
                "sort": {"width": 4, "defaulted": []},
                "backend": "model", "overlapped_epilogue": false, "defaulted": []},
       "defaulted": ["clock", "pipeline_depth", "decode_cycles"]}
    ],
    "energy": {"table": "inline",
      "mac": {"f32": "4600 fJ", "i16": "900 fJ", "i8": "300 fJ", "defaulted": []},
      "vector_op": {"f32": "900 fJ", "f16": "400 fJ", "i32": "100 fJ", "i16": "50 fJ",
                    "i8": "30 fJ", "u8": "30 fJ", "u16": "50 fJ", "u32": "100 fJ",
                    "u64": "200 fJ", "i64": "200 fJ", "f64": "1800 fJ", "defaulted": []},
      "sort_op": {"f32": "900 fJ", "i32": "100 fJ", "i16": "50 fJ", "i8": "30 fJ",
                  "defaulted": []},
      "lfu_op": "900 fJ",
      "root": {"memory": {"read_per_byte": "162500 fJ", "write_per_byte": "162500 fJ",
                          "defaulted": []},
               "leakage": {"memory": "100 mW", "logic": "5 mW", "defaulted": []},
               "defaulted": []},
      "levels": {
        "cluster": {"memory": {"read_per_byte": "9 pJ", "write_per_byte": "9 pJ", "defaulted": []},
                    "dma_per_byte": "1 pJ",
                    "leakage": {"memory": "500 uW", "logic": "2 mW", "defaulted": []},
                    "defaulted": []},
        "core": {"memory": {"read_per_byte": "3500 fJ", "write_per_byte": "3500 fJ",
                            "defaulted": []},
                 "dma_per_byte": "500 fJ",
                 "leakage": {"memory": "50 uW", "logic": "1 mW", "defaulted": []},
                 "defaulted": []}},
      "defaulted": []},
    "defaulted": []
  })");
  CHECK(m.effective.dump(1) == expected.dump(1));
}

TEST_CASE("configs/f1.yaml loads with its exact values") {
  MachineSpec m = load_machine_spec(kConfigs + "f1.yaml");
  CHECK(m.name == "f1");
  CHECK(m.leaves() == 32);
  CHECK(m.nodes_at(0) == 1);
  CHECK(m.nodes_at(1) == 32);
  CHECK(m.root.controller.clock == 1000000000);
  CHECK(m.root.controller.lfu_throughput == 32);
  CHECK(m.root.memory.capacity == 8ULL << 30);
  CHECK(m.root.memory.bandwidth == 512000000000ULL);
  CHECK(m.root.memory.latency == 100000);
  CHECK(m.root.memory.banks == 16);

  REQUIRE(m.levels.size() == 2);
  const LevelSpec& chip = m.levels[0];
  CHECK(chip.name == "chip");
  CHECK_FALSE(chip.is_leaf);
  CHECK(chip.controller.clock == 1000000000);
  CHECK(chip.controller.lfu_throughput == 128);
  CHECK(chip.memory.capacity == 4ULL << 20);
  CHECK(chip.memory.bandwidth == 1024000000000ULL);
  CHECK(chip.memory.latency == 2000);
  CHECK(chip.memory.banks == 32);
  CHECK(chip.link.bandwidth == 512000000000ULL);
  CHECK(chip.link.latency == 10000);

  const LevelSpec& core = m.levels[1];
  CHECK(core.name == "core");
  CHECK(core.is_leaf);
  CHECK(core.fanout == 32);
  CHECK(core.controller.clock == 1000000000);
  CHECK(core.memory.capacity == 128 * 1024);
  CHECK(core.memory.bandwidth == 256000000000ULL);
  CHECK(core.memory.latency == 1000);
  CHECK(core.link.bandwidth == 32000000000ULL);
  CHECK(core.link.latency == 5000);
  CHECK(core.matrix.rows == 16);
  CHECK(core.matrix.cols == 16);
  CHECK(core.vector.lanes == 32);
  CHECK(core.backend == "model");
  // The cores' links together exactly use the chip memory's bandwidth (the stated assumption).
  CHECK(core.link.bandwidth * static_cast<uint64_t>(core.fanout) == chip.memory.bandwidth);
  CHECK(core.sort.width == 8);
  CHECK(m.effective["levels"][1]["leaf"]["defaulted"] ==
        nlohmann::ordered_json::array({"backend"}));
  CHECK(m.effective["levels"][0]["memory"]["bandwidth"] == "1024 GB/s");
  REQUIRE(m.energy.has_value());
  CHECK(m.energy->source == "energy/f1-16nm.yaml");
  const auto& action = m.energy->unit_action;
  CHECK(action[static_cast<size_t>(isa::UnitKind::matrix)][static_cast<size_t>(isa::DType::f32)] ==
        1380);
  CHECK(action[static_cast<size_t>(isa::UnitKind::sort)][static_cast<size_t>(isa::DType::i16)] ==
        15);
  CHECK(m.energy->levels.size() == 2);
  CHECK(m.energy->levels[1].leakage.memory == 62500);
}

TEST_CASE("the base machine of the error tests is valid") {
  MachineSpec m = parse_machine_spec(kBase, "bad.yaml");
  CHECK(m.file == "bad.yaml");
  CHECK(m.leaves() == 4);
  CHECK(m.levels[1].link.latency == 0);
}

// The four acceptance errors.
TEST_CASE("an unknown key names the file, line, key and the keys expected there") {
  CHECK(error_of(with("  - name: core\n", "  - name: core\n    colour: red\n")) ==
        "bad.yaml:13: levels[1].colour: unknown key (expected one of: clock, decode_cycles, "
        "fanout, hold_partial_sums, keep_outputs, leaf, link, memory, name, overlap, "
        "pipeline_depth, prefetch, resident_partial_sums)");
  CHECK(error_of(with("32 GB/s}\n", "32 GB/s, size: 1 GiB}\n")) ==
        "bad.yaml:5: root.memory.size: unknown key (expected one of: bandwidth, banks, "
        "capacity, latency)");
  CHECK(error_of("extra: 1\n" + kBase) ==
        "bad.yaml:1: extra: unknown key (expected one of: decomposer, energy, hazards, levels, "
        "machine, root)");
  CHECK(error_of("decomposer: greedy\n" + kBase) ==
        "bad.yaml:1: decomposer: unknown decomposer 'greedy' (expected halving or search)");
}

TEST_CASE("the decomposer is search unless the config names one") {
  CHECK(parse_machine_spec(kBase, "m.yaml").decomposer == isa::Policy::search);
  const MachineSpec h = parse_machine_spec("decomposer: halving\n" + kBase, "m.yaml");
  CHECK(h.decomposer == isa::Policy::halving);
  CHECK(h.effective["decomposer"] == "halving");
  CHECK(parse_machine_spec(kBase, "m.yaml").effective["defaulted"] ==
        nlohmann::ordered_json::array({"decomposer", "hazards"}));
}

TEST_CASE("a missing key names the mapping's line and the key path") {
  CHECK(error_of(with("    link: {bandwidth: 32 GB/s, latency: 20 ns}\n", "")) ==
        "bad.yaml:7: levels[0].link: missing required key");
  CHECK(error_of(with("machine: m\n", "")) == "bad.yaml:1: machine: missing required key");
  CHECK(error_of(with("  clock: 1 GHz\n", "")) == "bad.yaml:3: root.clock: missing required key");
  CHECK(error_of(with("{capacity: 64 MiB, ", "{")) ==
        "bad.yaml:5: root.memory.capacity: missing required key");
  CHECK(error_of(with("      vector: {lanes: 8}\n", "")) ==
        "bad.yaml:17: levels[1].leaf.vector: missing required key");
  CHECK(error_of(with("    fanout: 2\n    lfu", "    lfu")) ==
        "bad.yaml:7: levels[0].fanout: missing required key");
}

TEST_CASE("a wrong unit names the kind expected and the value seen") {
  CHECK(error_of(with("{bandwidth: 32 GB/s, latency", "{bandwidth: 12 GHz, latency")) ==
        "bad.yaml:11: levels[0].link.bandwidth: expected a bandwidth such as '256 GB/s', got "
        "'12 GHz'");
  CHECK(error_of(with("64 MiB", "64 MHz")) ==
        "bad.yaml:5: root.memory.capacity: expected a size such as '512 KiB', got '64 MHz'");
  CHECK(error_of(with("  clock: 1 GHz\n", "  clock: 1000\n")) ==
        "bad.yaml:3: root.clock: expected a frequency such as '1 GHz', got '1000'");
  CHECK(error_of(with("latency: 20 ns", "latency: 20 GB")) ==
        "bad.yaml:11: levels[0].link.latency: expected a time such as '100 ns', got '20 GB'");
}

TEST_CASE("a zero fan-out is rejected") {
  CHECK(error_of(with("    fanout: 2\n    lfu", "    fanout: 0\n    lfu")) ==
        "bad.yaml:8: levels[0].fanout: must be at least 1, got 0");
}

// The other rules.
TEST_CASE("integers out of range name the bound and the value") {
  CHECK(error_of(with("  lfu_throughput: 16\n", "  lfu_throughput: 16\n  pipeline_depth: -2\n")) ==
        "bad.yaml:5: root.pipeline_depth: must be at least 1, got -2");
  CHECK(error_of(with("  lfu_throughput: 16\n", "  lfu_throughput: 16\n  decode_cycles: -1\n")) ==
        "bad.yaml:5: root.decode_cycles: must be at least 0, got -1");
  CHECK(error_of(with("  lfu_throughput: 16\n", "  lfu_throughput: 0\n")) ==
        "bad.yaml:4: root.lfu_throughput: must be at least 1, got 0");
  CHECK(error_of(with("32 GB/s}\n", "32 GB/s, banks: 0}\n")) ==
        "bad.yaml:5: root.memory.banks: must be at least 1, got 0");
  CHECK(error_of(with("rows: 4", "rows: 0")) ==
        "bad.yaml:17: levels[1].leaf.matrix.rows: must be at least 1, got 0");
  CHECK(error_of(with("lanes: 8", "lanes: -8")) ==
        "bad.yaml:18: levels[1].leaf.vector.lanes: must be at least 1, got -8");
  CHECK(error_of(with("    fanout: 2\n    memory", "    fanout: 4294967296\n    memory")) ==
        "bad.yaml:13: levels[1].fanout: must be at most 2147483647, got 4294967296");
  // 2^10 x (2^10 + 1) leaves: more than the 2^20 nodes a level may have; 2^10 x 2^10 is allowed.
  const std::string huge = replaced(with("fanout: 2\n    lfu", "fanout: 1024\n    lfu"),
                                    "fanout: 2\n    memory", "fanout: 1025\n    memory");
  CHECK(error_of(huge) ==
        "bad.yaml:13: levels[1].fanout: gives level core more than 1048576 nodes (2^20), the most "
        "fracsim simulates");
  CHECK(error_of(replaced(with("fanout: 2\n    lfu", "fanout: 1024\n    lfu"),
                          "fanout: 2\n    memory", "fanout: 1024\n    memory")) == "(no error)");
  CHECK(error_of(with("    fanout: 2\n    memory", "    fanout: two\n    memory")) ==
        "bad.yaml:13: levels[1].fanout: expected an integer, got 'two'");
}

TEST_CASE("a clock must have a whole number of picoseconds per cycle") {
  CHECK(error_of(with("  clock: 1 GHz\n", "  clock: 1.5 GHz\n")) ==
        "bad.yaml:3: root.clock: 1.5 GHz gives a period of 666.667 ps; fracsim needs a whole "
        "number of picoseconds");
  CHECK(error_of(with("    fanout: 2\n    lfu", "    fanout: 2\n    clock: 3 GHz\n    lfu")) ==
        "bad.yaml:9: levels[0].clock: 3 GHz gives a period of 333.333 ps; fracsim needs a whole "
        "number of picoseconds");
  CHECK(error_of(with("  clock: 1 GHz\n", "  clock: 0 GHz\n")) ==
        "bad.yaml:3: root.clock: must be greater than zero, got '0 GHz'");
  // 1.25 GHz has an 800 ps period: accepted.
  MachineSpec m = parse_machine_spec(with("  clock: 1 GHz\n", "  clock: 1.25 GHz\n"), "ok.yaml");
  CHECK(m.root.controller.period_ps() == 800);
}

TEST_CASE("a level's clock defaults to the clock of the level above") {
  MachineSpec m = parse_machine_spec(
      with("    fanout: 2\n    lfu", "    fanout: 2\n    clock: 500 MHz\n    lfu"), "ok.yaml");
  CHECK(m.root.controller.clock == 1000000000);
  CHECK(m.levels[0].controller.clock == 500000000);
  CHECK(m.levels[1].controller.clock == 500000000);
  CHECK(m.levels[1].controller.period_ps() == 2000);
  CHECK(m.effective["levels"][1]["clock"] == "500 MHz");
  CHECK(m.effective["levels"][0]["defaulted"] ==
        nlohmann::ordered_json::array({"pipeline_depth", "decode_cycles", "keep_outputs",
                                       "resident_partial_sums", "hold_partial_sums", "overlap",
                                       "prefetch"}));
}

TEST_CASE("resident_partial_sums is a boolean of each level, true unless given") {
  const MachineSpec m = parse_machine_spec(kBase, "ok.yaml");
  CHECK(m.levels[0].resident_partial_sums);
  CHECK(m.levels[1].resident_partial_sums);
  const MachineSpec off = parse_machine_spec(
      with("  - name: core\n", "  - name: core\n    resident_partial_sums: false\n"), "ok.yaml");
  CHECK(off.levels[0].resident_partial_sums);
  CHECK_FALSE(off.levels[1].resident_partial_sums);
  CHECK(off.effective["levels"][1]["resident_partial_sums"] == false);
  CHECK(error_of(with("  - name: core\n", "  - name: core\n    resident_partial_sums: 1\n")) ==
        "bad.yaml:13: levels[1].resident_partial_sums: expected true or false, got '1'");
}

TEST_CASE("zero capacities and bandwidths are rejected, negative quantities too") {
  CHECK(error_of(with("capacity: 256 KiB", "capacity: 0 KiB")) ==
        "bad.yaml:10: levels[0].memory.capacity: must be greater than zero, got '0 KiB'");
  CHECK(error_of(with("bandwidth: 32 GB/s}", "bandwidth: 0 B/s}")) ==
        "bad.yaml:5: root.memory.bandwidth: must be greater than zero, got '0 B/s'");
  CHECK(error_of(with("{bandwidth: 16 GB/s}", "{bandwidth: 0 GB/s}")) ==
        "bad.yaml:15: levels[1].link.bandwidth: must be greater than zero, got '0 GB/s'");
  CHECK(error_of(with("latency: 20 ns", "latency: -20 ns")) ==
        "bad.yaml:11: levels[0].link.latency: must not be negative, got '-20 ns'");
}

TEST_CASE("lfu_throughput and leaf belong to exactly the right levels") {
  CHECK(error_of(with("    fanout: 2\n    memory",
                      "    fanout: 2\n    lfu_throughput: 4\n    memory")) ==
        "bad.yaml:14: levels[1].lfu_throughput: not allowed on the last level (a leaf has no LFU)");
  CHECK(error_of(with("    lfu_throughput: 8\n", "    lfu_throughput: 8\n    leaf: {}\n")) ==
        "bad.yaml:10: levels[0].leaf: only allowed on the last level");
  CHECK(error_of(with("    lfu_throughput: 8\n", "")) ==
        "bad.yaml:7: levels[0].lfu_throughput: missing required key");
  const std::string no_leaf = kBase.substr(0, kBase.find("    leaf:\n"));
  CHECK(error_of(no_leaf) == "bad.yaml:12: levels[1].leaf: missing required key");
}

TEST_CASE("the backend must be a known one") {
  CHECK(error_of(kBase + "      backend: x\n") ==
        "bad.yaml:19: levels[1].leaf.backend: unknown backend 'x' (expected model or rtl)");
  MachineSpec m = parse_machine_spec(kBase + "      backend: model\n", "ok.yaml");
  CHECK(m.levels[1].backend == "model");
  CHECK(m.effective["levels"][1]["leaf"]["defaulted"] ==
        nlohmann::ordered_json::array({"sort", "overlapped_epilogue"}));
}

TEST_CASE("the sort unit's width defaults to 8, recorded as defaulted, and is checked") {
  MachineSpec old = parse_machine_spec(kBase, "ok.yaml");
  CHECK(old.levels[1].sort.width == 8);
  CHECK(old.effective["levels"][1]["leaf"]["sort"].dump() ==
        R"({"width":8,"defaulted":["width"]})");
  // An absent optional mapping reads as an empty one: each of its keys takes its default.
  MachineSpec empty = parse_machine_spec(kBase + "      sort: {}\n", "ok.yaml");
  CHECK(empty.levels[1].sort.width == 8);
  CHECK(empty.effective["levels"][1]["leaf"]["sort"] == old.effective["levels"][1]["leaf"]["sort"]);
  MachineSpec m = parse_machine_spec(kBase + "      sort: {width: 16}\n", "ok.yaml");
  CHECK(m.levels[1].sort.width == 16);
  CHECK(error_of(kBase + "      sort: {width: 0}\n") ==
        "bad.yaml:19: levels[1].leaf.sort.width: must be at least 1, got 0");
  CHECK(error_of(kBase + "      sort: 8\n") ==
        "bad.yaml:19: levels[1].leaf.sort: expected a mapping of keys");
  CHECK(error_of(kBase + "      sort: {lanes: 4}\n") ==
        "bad.yaml:19: levels[1].leaf.sort.lanes: unknown key (expected one of: width)");
  CHECK(error_of(kBase + "      sort: {width: 4, ways: 2}\n") ==
        "bad.yaml:19: levels[1].leaf.sort.ways: unknown key (expected one of: width)");
}

TEST_CASE("the matrix unit may have another size per input dtype, inheriting rows and cols") {
  MachineSpec m = parse_machine_spec(
      with("{rows: 4, cols: 4}", "{rows: 4, cols: 4, i8: {rows: 16, cols: 8}, f32: {cols: 2}}"),
      "ok.yaml");
  const MatrixUnitSpec& mx = m.levels[1].matrix;
  CHECK(mx.rows == 4);
  CHECK(mx.cols == 4);
  CHECK(mx.for_dtype(isa::DType::i8).rows == 16);
  CHECK(mx.for_dtype(isa::DType::i8).cols == 8);
  CHECK(mx.for_dtype(isa::DType::f32).rows == 4);
  CHECK(mx.for_dtype(isa::DType::f32).cols == 2);
  CHECK(mx.for_dtype(isa::DType::i16).rows == 4);
  CHECK(mx.for_dtype(isa::DType::i16).cols == 4);
  CHECK(mx.for_dtype(isa::DType::i32).rows == 4);  // no matrix op takes i32 inputs
  const auto& j = m.effective["levels"][1]["leaf"]["matrix"];
  CHECK(j["f32"].dump() == R"({"rows":4,"cols":2,"defaulted":["rows"]})");
  CHECK(j["i16"].dump() == R"({"rows":4,"cols":4,"defaulted":["rows","cols"]})");
  CHECK(j["defaulted"].dump() == R"(["i16"])");
  CHECK(error_of(with("{rows: 4, cols: 4}", "{rows: 4, cols: 4, i32: {rows: 2}}")) ==
        "bad.yaml:17: levels[1].leaf.matrix.i32: unknown key (expected one of: cols, f32, i16, "
        "i8, rows)");
  CHECK(error_of(with("{rows: 4, cols: 4}", "{rows: 4, cols: 4, i8: {rows: 0}}")) ==
        "bad.yaml:17: levels[1].leaf.matrix.i8.rows: must be at least 1, got 0");
  CHECK(error_of(with("{rows: 4, cols: 4}", "{rows: 4, cols: 4, i8: {depth: 2}}")) ==
        "bad.yaml:17: levels[1].leaf.matrix.i8.depth: unknown key (expected one of: cols, rows)");
  CHECK(error_of(with("{rows: 4, cols: 4}", "{rows: 4, cols: 4, i8: 8}")) ==
        "bad.yaml:17: levels[1].leaf.matrix.i8: expected a mapping of keys");
}

TEST_CASE("level names default to level<i> and must be unique") {
  MachineSpec m =
      parse_machine_spec(with("  - name: cluster\n    fanout: 2\n", "  - fanout: 3\n"), "ok.yaml");
  CHECK(m.levels[0].name == "level0");
  CHECK(m.levels[1].name == "core");
  CHECK(m.leaves() == 6);
  CHECK(m.nodes_at(0) == 3);
  CHECK(m.effective["levels"][0]["defaulted"][0] == "name");
  CHECK(error_of(with("name: core", "name: cluster")) ==
        "bad.yaml:12: levels[1].name: duplicate level name 'cluster' (levels[0] has it too)");
  CHECK(error_of(with("name: core", "name: ''")) ==
        "bad.yaml:12: levels[1].name: must not be empty");
}

TEST_CASE("the levels must be a non-empty list of mappings") {
  const std::string head = kBase.substr(0, kBase.find("levels:\n"));
  CHECK(error_of(head + "levels: []\n") == "bad.yaml:6: levels: must list at least one level");
  CHECK(error_of(head + "levels: {a: 1}\n") ==
        "bad.yaml:6: levels: expected a list of levels, from the top down");
  CHECK(error_of(head + "levels:\n  - 5\n") == "bad.yaml:7: levels[0]: expected a mapping of keys");
  CHECK(error_of(head) == "bad.yaml:1: levels: missing required key");
}

TEST_CASE("a single level is both the top level and the leaf") {
  const std::string head = kBase.substr(0, kBase.find("  - name: cluster\n"));
  const std::string core = kBase.substr(kBase.find("  - name: core\n"));
  MachineSpec m = parse_machine_spec(head + core, "ok.yaml");
  REQUIRE(m.levels.size() == 1);
  CHECK(m.levels[0].is_leaf);
  CHECK(m.leaves() == 2);
}

TEST_CASE("a file that cannot be read names its path") {
  try {
    load_machine_spec("/nonexistent/m.yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == "/nonexistent/m.yaml: cannot open file");
  }
}

}  // namespace
}  // namespace fracsim::sim
