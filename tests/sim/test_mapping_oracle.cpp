// The mapping oracle (sim/mapping_oracle.h) on a machine small enough to count its space by
// hand, and the pinned decisions it simulates candidates with.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "isa/assembly.h"
#include "isa/decompose/cost_model.h"
#include "isa/decompose/parallel.h"
#include "sim/instruction_plan.h"
#include "sim/machine.h"
#include "sim/mapping_oracle.h"
#include "sim/trace.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

// The root, one cluster (the top node: the root passes it the instruction whole) and two cores
// below it, with the search policy.
const std::string kMachine = R"(machine: two
decomposer: search
root:
  clock: 1 GHz
  lfu_throughput: 4
  memory: {capacity: 1 MiB, bandwidth: 64 GB/s}
levels:
  - name: cluster
    fanout: 1
    lfu_throughput: 4
    memory: {capacity: 256 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 32 GB/s, latency: 10 ns}
  - name: core
    fanout: 2
    memory: {capacity: 64 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s, latency: 5 ns}
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";

// out[8,8] = a[8,8] x b[8,8], f32.
isa::Program matmul_program() {
  const isa::OpDef& op = isa::OpTable::builtin().get("matmul");
  isa::Program p;
  p.name = "mm";
  const isa::TensorRef a = isa::make_tensor(0, isa::DType::f32, {1, 8, 8});
  const isa::TensorRef b = isa::make_tensor(256, isa::DType::f32, {1, 8, 8});
  const isa::TensorRef out = isa::make_tensor(512, isa::DType::f32, {1, 8, 8});
  p.instructions.push_back(isa::Instruction{op.opcode, {a, b, out}, {0}});
  p.footprint = 768;
  return p;
}

uint64_t counter(const RunResult& r, size_t node, Counter c) {
  return r.nodes[node].stats.value[static_cast<size_t>(c)];
}

}  // namespace

TEST_CASE("oracle: the whole space of an 8x8x8 matmul, counted by hand, holds the choice") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const OracleResult r = map_instruction(spec, ops, matmul_program(), 0, OracleOptions{});
  // Tile lengths per dim: B {1}; M, N, K {1, 2, 3, 4, 8} (ceil(8 / p), p = 1, 2, 3, 4, 6, 8):
  // 125 tilings, all legal (K is the only reduce dim) and all fitting 256 KiB.
  CHECK(r.tilings == 125);
  CHECK(r.fitting_tilings == 125);
  // Partitions across 2 cores of a piece M x N: unsplit, N in 2, M in 2 when both exceed 1
  // (16 pairs, 3 each); unsplit and the longer dim in 2 when one is 1 (8 pairs, 2 each); unsplit
  // when both are 1: 48 + 16 + 1 = 65 per K tile, 325 in all.
  CHECK(r.space == 325);
  CHECK(r.unfit == 0);
  REQUIRE(r.rows.size() == 325);
  CHECK_FALSE(r.sampled);
  CHECK(r.chosen_in_space);
  // The choice pinned as a candidate reproduces the plain run to the cycle.
  CHECK(r.chosen_pinned_cycles == r.chosen_cycles);
  auto own = std::find_if(r.rows.begin(), r.rows.end(),
                          [&](const OracleRow& row) { return row.candidate == r.chosen; });
  REQUIRE(own != r.rows.end());
  CHECK(own->cycles == r.chosen_cycles);
  // Rows fastest first; rank, best and gap as defined.
  CHECK(std::is_sorted(r.rows.begin(), r.rows.end(),
                       [](const OracleRow& a, const OracleRow& b) { return a.cycles < b.cycles; }));
  size_t faster = 0;
  for (const OracleRow& row : r.rows) faster += row.cycles < r.chosen_cycles ? 1 : 0;
  CHECK(r.rank == faster + 1);
  CHECK(r.best == std::min(r.rows.front().cycles, r.chosen_cycles));
  CHECK(r.gap == static_cast<double>(r.chosen_cycles) / static_cast<double>(r.best) - 1);
  // The candidates differ: the pins take effect (512 pieces of 1 take longer than one piece).
  CHECK(r.rows.back().cycles > r.rows.front().cycles);
  // The same inputs give the same report; progress is told after each of the 325 candidates.
  OracleOptions o;
  std::vector<size_t> told;
  o.progress = [&](size_t done, size_t total) {
    CHECK(total == 325);
    told.push_back(done);
  };
  const OracleResult again = map_instruction(spec, ops, matmul_program(), 0, o);
  CHECK(oracle_text(ops, again, 5) == oracle_text(ops, r, 5));
  REQUIRE(told.size() == 325);
  for (size_t i = 0; i < told.size(); ++i) CHECK(told[i] == i + 1);
}

TEST_CASE("oracle: a pinned tiling and partition are what the top node does") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = matmul_program();
  SimOptions options;
  isa::PinnedDecision pin;
  pin.level = 0;
  pin.instruction = isa::shape_key(p.instructions[0]);
  // Tiles of 4 along M and K: 2 x 2 = 4 pieces at the cluster; each piece 4 x 8 split in N
  // across the two cores: 8 core instructions.
  pin.tile = {1, 4, 8, 4};
  pin.parts = {1, 1, 2, 1};
  options.pin = pin;
  RunResult run = simulate(spec, ops, p, Mode::timing, options);
  // Nodes: the root, the cluster, the two cores (folded: each counted for its own node).
  CHECK(counter(run, 1, Counter::pieces) == 4);
  CHECK(counter(run, 2, Counter::instructions) == 4);
  CHECK(counter(run, 3, Counter::instructions) == 4);
  // Unsplit pieces: the second core gets nothing.
  pin.parts = {1, 1, 1, 1};
  options.pin = pin;
  run = simulate(spec, ops, p, Mode::timing, options);
  CHECK(counter(run, 1, Counter::pieces) == 4);
  CHECK(counter(run, 2, Counter::instructions) == 4);
  CHECK(counter(run, 3, Counter::instructions) == 0);
  // A pin for another instruction's shape leaves the policy's plan.
  pin.instruction[pin.instruction.size() - 1] += 1;
  options.pin = pin;
  options.pin->parts.clear();
  CHECK(simulate(spec, ops, p, Mode::timing, options).cycles ==
        simulate(spec, ops, p, Mode::timing).cycles);
}

TEST_CASE("oracle: --sample draws distinct candidates with the seed, the same each time") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  OracleOptions o;
  o.sample = 20;
  o.seed = 7;
  const OracleResult a = map_instruction(spec, ops, matmul_program(), 0, o);
  CHECK(a.sampled);
  // The neighbourhood of the choice (whole tiles 8 x 8 x 8: its 3 partitions; each of M, N, K
  // at 1, 2, 3 or 4: 12 tilings) and 20 drawn.
  CHECK(a.chosen.tile == std::vector<int64_t>{1, 8, 8, 8});
  CHECK(a.neighbours == 15);
  REQUIRE(a.rows.size() == 35);
  for (size_t i = 0; i < a.rows.size(); ++i)
    for (size_t j = i + 1; j < a.rows.size(); ++j)
      CHECK_FALSE(a.rows[i].candidate == a.rows[j].candidate);
  CHECK(oracle_text(ops, map_instruction(spec, ops, matmul_program(), 0, o), 20) ==
        oracle_text(ops, a, 20));
  o.seed = 8;
  CHECK(oracle_text(ops, map_instruction(spec, ops, matmul_program(), 0, o), 20) !=
        oracle_text(ops, a, 20));
}

TEST_CASE("oracle: each simulation's timeline, named by its candidate, is that run's own") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = matmul_program();
  OracleOptions o;
  o.sample = 4;
  std::map<std::string, std::string> timelines;
  size_t handed = 0;
  o.timeline = [&](const std::string& name, const std::string& json) {
    ++handed;
    auto [it, fresh] = timelines.try_emplace(name, json);
    CHECK((fresh || it->second == json));  // the choice pinned again: its candidate's run
  };
  const OracleResult r = map_instruction(spec, ops, p, 0, o);
  // The plain run, every candidate, and the choice pinned (one of the candidates).
  REQUIRE(r.chosen_in_space);
  CHECK(handed == r.rows.size() + 2);
  REQUIRE(timelines.size() == r.rows.size() + 1);
  // The plain run's: what simulate() records for the program.
  TraceRecorder plain;
  SimOptions traced;
  traced.trace = &plain;
  CHECK(simulate(spec, ops, p, Mode::timing, traced).cycles == r.chosen_cycles);
  CHECK(timelines.at("chosen") == plain.json());
  // A candidate's: the run pinned to it. The name reads as the report lists it (B=1 M=8 N=8
  // K=8 | B=1 M=1 N=2: B1-M8-N8-K8_B1-M1-N2).
  const isa::OpDef& op = ops.get(p.instructions[0].opcode);
  CHECK(candidate_name(op, MapCandidate{{1, 8, 8, 8}, {1, 1, 2, 1}}) == "B1-M8-N8-K8_B1-M1-N2");
  for (const OracleRow& row : r.rows) {
    const std::string name = candidate_name(op, row.candidate);
    CAPTURE(name);
    REQUIRE(timelines.count(name) == 1);
    TraceRecorder pinned;
    traced.trace = &pinned;
    isa::PinnedDecision pin;
    pin.instruction = isa::shape_key(p.instructions[0]);
    pin.tile = row.candidate.tile;
    pin.parts = row.candidate.parts;
    traced.pin = pin;
    CHECK(simulate(spec, ops, p, Mode::timing, traced).cycles == row.cycles);
    CHECK(timelines.at(name) == pinned.json());
  }
}

TEST_CASE("oracle: an instruction past the program's is a ConfigError naming the count") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  CHECK_THROWS_WITH(
      map_instruction(spec, isa::OpTable::builtin(), matmul_program(), 1, OracleOptions{}),
      "fracsim map: --instruction 1: program mm has 1 instructions (counted from 0)");
}

TEST_CASE("oracle: under the halving policy the choice is halving's, pinned as in a plain run") {
  std::string text = kMachine;
  text.replace(text.find("decomposer: search"), 18, "decomposer: halving");
  const MachineSpec spec = parse_machine_spec(text, "two.yaml");
  OracleOptions o;
  o.sample = 5;
  const OracleResult r = map_instruction(spec, isa::OpTable::builtin(), matmul_program(), 0, o);
  CHECK(r.policy == "halving");
  // Halving's partition of the 8 x 8 x 8 piece across 2 cores: M or N in 2 give equal work and
  // bytes; the first found, N, is kept.
  CHECK(r.chosen.tile == std::vector<int64_t>{1, 8, 8, 8});
  CHECK(r.chosen.parts == std::vector<int64_t>{1, 1, 2, 1});
  CHECK(r.chosen_in_space);
  CHECK(r.chosen_pinned_cycles == r.chosen_cycles);
}

TEST_CASE(
    "oracle: beside each candidate the cost model's estimate, its partition pinned, by hand") {
  const isa::OpTable& ops = isa::OpTable::builtin();
  auto row = [](const OracleResult& r, const std::vector<int64_t>& parts) {
    const MapCandidate c{{1, 8, 8, 8}, parts};  // the whole 8x8x8 matmul as one piece
    auto it = std::find_if(r.rows.begin(), r.rows.end(),
                           [&](const OracleRow& x) { return x.candidate == c; });
    REQUIRE(it != r.rows.end());
    return *it;
  };
  // One core under the root (kMachine without its cluster level): the link moves 16 B per cycle
  // after a 5-cycle latency. Both inputs stay whole, so they load once as static tiles (512 B: 32
  // cycles) and a piece's load is the latency alone (5); the unit's 4x4 array computes 4 output
  // tiles of 8 steps plus its fill of 4 + 4 - 1: 39; the write-back 5 + 256 B / 16 = 21. 32 + 5 +
  // 39 + 21 = 97. The simulation adds the root's decode and dispatch (99).
  std::string one_core = kMachine;
  one_core.erase(one_core.find("  - name: cluster"),
                 one_core.find("  - name: core") - one_core.find("  - name: cluster"));
  one_core.replace(one_core.find("fanout: 2"), 9, "fanout: 1");
  const MachineSpec one = parse_machine_spec(one_core, "one.yaml");
  const OracleResult r1 = map_instruction(one, ops, matmul_program(), 0, OracleOptions{});
  CHECK(row(r1, {}).estimate == 97);
  CHECK(row(r1, {}).cycles == 99);
  // The core at half the root's clock: in its own cycles the link moves 32 B per cycle after
  // ceil(5 ns / 2 ns) = 3, so 16 + 3 + 39 + (3 + 8) = 69, which the report gives in the root's
  // cycles: 138.
  std::string slow_core = one_core;
  slow_core.replace(slow_core.find("    fanout: 1\n"), 14, "    fanout: 1\n    clock: 500 MHz\n");
  const OracleResult r_slow = map_instruction(parse_machine_spec(slow_core, "slow.yaml"), ops,
                                              matmul_program(), 0, OracleOptions{});
  CHECK(row(r_slow, {}).estimate == 138);

  // The cluster of kMachine over two cores: 32 B per cycle after 10. Static inputs 512 / 32 =
  // 16, load 10, write-back 10 + 256 / 32 = 18, and the execution is the largest core's quick
  // estimate (16 B per cycle from the cluster, after 5 each way; one piece, so its stages add
  // up): unsplit, a core loads 512 B (32), computes 39 and writes 256 B back (16): 39 + 32 + 16
  // + 10 = 97, in all 16 + 10 + 97 + 18 = 141; N in 2, 384 B (24), 2 tiles x 8 + 7 = 23 and
  // 128 B (8): 24 + 23 + 8 + 10 = 65, in all 109. The pin reaches the estimate: the policy
  // itself splits N (its choice's estimate is 109 too).
  const MachineSpec two = parse_machine_spec(kMachine, "two.yaml");
  const OracleResult r2 = map_instruction(two, ops, matmul_program(), 0, OracleOptions{});
  CHECK(row(r2, {1, 1, 1, 1}).estimate == 141);
  CHECK(row(r2, {1, 1, 2, 1}).estimate == 109);
  CHECK(row(r2, {1, 2, 1, 1}).estimate == 109);
  CHECK(r2.chosen == MapCandidate{{1, 8, 8, 8}, {1, 1, 2, 1}});
  CHECK(r2.chosen_estimate == 109);
  CHECK(row(r2, {1, 1, 1, 1}).cycles == 135);
  CHECK(row(r2, {1, 1, 2, 1}).cycles == 107);
}

TEST_CASE("a node splits every piece of an instruction as its first: the plain run is the pinned") {
  // ResNet-50's res5a_2c at batch 64 (1x1, 512 -> 2048 channels at 7x7, bias, residual add and
  // ReLU fused) on scale/leaves-0256. The root gives each module 32 images x 1024 channels; a
  // module tiles them 11, 11 and 10 images and splits each piece across its 4 chips N 2 x Co 2,
  // as the oracle's pinned run of that choice does. Each piece split as its own shape would be,
  // the 10-image one went along Wo (each chip loading all 2 MB of the module's weights): the
  // plain run took 186,960 cycles, the choice pinned 165,303.
  const MachineSpec spec =
      load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/scale/leaves-0256.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = isa::assemble(
      ".program res5a_2c\n"
      ".footprint 63438848\n"
      "conv2d_bias_add_act in=f32@0x0[64,1,512,7,7:25088,25088,49,7,1] "
      "w=f32@0x700000[1,2048,512,1,1:1048576,512,1,1,1] bias=f32@0xb00000[1,2048:2048,1] "
      "res=f32@0xb10000[64,1,2048,7,7:100352,100352,49,7,1] "
      "out=f32@0x2400000[64,1,2048,7,7:100352,100352,49,7,1] stride_h=1 stride_w=1 "
      "dilation_h=1 dilation_w=1 pad_h0=0 pad_h1=0 pad_w0=0 pad_w1=0 accumulate=0 epilogue=1 "
      "act=relu alpha=0.01 lo=0 hi=6\n",
      "res5a_2c.fasm", ops);
  OracleOptions o;
  o.sample = 1;
  o.max_pieces = 3;
  const OracleResult r = map_instruction(spec, ops, p, 0, o);
  CHECK(r.chosen.parts == std::vector<int64_t>{2, 1, 2, 1, 1, 1, 1, 1, 1, 1});
  CHECK(r.chosen_cycles == 141143);
  CHECK(r.chosen_pinned_cycles == r.chosen_cycles);
}

TEST_CASE("oracle: candidates given as the report writes them are simulated as the space's") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const OracleResult space = map_instruction(spec, ops, matmul_program(), 0, OracleOptions{});
  auto row_of = [&](const MapCandidate& c) {
    auto it = std::find_if(space.rows.begin(), space.rows.end(),
                           [&](const OracleRow& row) { return row.candidate == c; });
    REQUIRE(it != space.rows.end());
    return *it;
  };
  OracleOptions o;
  // Tiles of 4 along M and K, N in 2 across the cores; the same again (simulated once); M at 3,
  // which is rebalanced as the space's tiles are (8 in 3 pieces: 3, 3, 2) and, without '|',
  // takes the policy's partition.
  o.candidates = {"M=4 K=4 | N=2", "B=1 M=4 N=8 K=4 | B=1 M=1 N=2", "M=3"};
  const OracleResult r = map_instruction(spec, ops, matmul_program(), 0, o);
  CHECK(r.listed);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.unfit == 0);
  const MapCandidate given{{1, 4, 8, 4}, {1, 1, 2, 1}};
  const OracleRow three = r.rows[0].candidate == given ? r.rows[1] : r.rows[0];
  const OracleRow four = r.rows[0].candidate == given ? r.rows[0] : r.rows[1];
  CHECK(four.candidate == given);
  CHECK(four.cycles == row_of(given).cycles);
  CHECK(four.estimate == row_of(given).estimate);
  CHECK(three.candidate.tile == std::vector<int64_t>{1, 3, 8, 8});
  CHECK(three.cycles == row_of(three.candidate).cycles);
  CHECK(r.chosen_cycles == space.chosen_cycles);
  CHECK(oracle_text(ops, r, 5).find("  space         the 2 candidates given (--candidate)\n") !=
        std::string::npos);
  // Without '|', the policy's partition: the choice's own whole tiling, given so, is the choice
  // (its parts those of the plain run's first piece) and simulates as the choice pinned.
  REQUIRE(space.chosen.tile == std::vector<int64_t>{1, 8, 8, 8});
  o.candidates = {"M=8"};
  const OracleResult whole = map_instruction(spec, ops, matmul_program(), 0, o);
  REQUIRE(whole.rows.size() == 1);
  CHECK(whole.rows[0].candidate == space.chosen);
  CHECK(whole.rows[0].cycles == space.chosen_pinned_cycles);
  CHECK(whole.chosen_in_space);
}

TEST_CASE("oracle: a candidate given wrong is a ConfigError naming it and what is wrong") {
  const MachineSpec spec = parse_machine_spec(kMachine, "two.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  auto error = [&](const std::string& text, const MachineSpec& s) {
    OracleOptions o;
    o.candidates = {text};
    try {
      map_instruction(s, ops, matmul_program(), 0, o);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string head = "fracsim map: --candidate '";
  CHECK(error("Q=2", spec) == head + "Q=2': no dim 'Q' among matmul's splittable dims (B M N K)");
  CHECK(error("M=4 | K=2", spec) ==
        head +
            "M=4 | K=2': no dim 'K' among matmul's parallel dims, which the parts split (B M N)");
  CHECK(error("M=0", spec) ==
        head + "M=0': M: expected M=N, N a whole number of at least 1, got 'M=0'");
  CHECK(error("M=x", spec) ==
        head + "M=x': M: expected M=N, N a whole number of at least 1, got 'M=x'");
  CHECK(error("M=+2", spec) ==
        head + "M=+2': M: expected M=N, N a whole number of at least 1, got 'M=+2'");
  CHECK(error("M", spec) == head + "M': M: expected M=N, N a whole number of at least 1, got 'M'");
  CHECK(error("M=9", spec) == head + "M=9': M=9: more than the dim's extent 8 at the top node");
  CHECK(error("M=4 M=2", spec) == head + "M=4 M=2': M given twice");
  CHECK(error("| M=2 N=2", spec) ==
        head + "| M=2 N=2': 4 parts in all, more than the top node's 2 children");
  CHECK(error("M=1 | M=2", spec) ==
        head +
            "M=1 | M=2': M=2: more parts than the tile's 1 (a piece is split into at most its "
            "length)");
  // A cluster of 1 KiB: the whole 8 x 8 x 8 keeps a and b static (256 bytes each) beside 3
  // sub-blocks of the output (256 bytes each): 1280 bytes. Tiles of 4 along M fit: b static,
  // 3 sub-blocks of 128 + 128 bytes, 1024 in all.
  std::string small = kMachine;
  small.replace(small.find("capacity: 256 KiB"), 17, "capacity: 1 KiB");
  const MachineSpec tight = parse_machine_spec(small, "two.yaml");
  CHECK(error("M=8", tight) == head +
                                   "M=8': the tiling does not fit the top node's memory (cluster: "
                                   "1280 bytes needed, 1024 available)");
  CHECK(error("M=4", tight) == "no error");
}

TEST_CASE("a node re-ranks its nearest partitions for leaves by their own tilings") {
  // The f1 chip's first piece of ResNet-50's res2a_2c (1x1, 64 -> 256 channels, 7 rows of 56,
  // bias, residual and ReLU fused), split across the 32 cores. By the quick estimate (each
  // operand counted once) Co 4 x Wo 8 is best; a core's 64 channels x 49 pixels then do not fit
  // beside its input, so its own tiling loads the input once per weight tile, and its full
  // estimate ranks Co 8 x Wo 4 first. A piece the chip executes takes that one; the estimates of
  // candidate tilings keep the quick choice.
  const MachineSpec spec = load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/f1.yaml");
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = isa::assemble(
      ".program piece\n"
      ".footprint 2097152\n"
      "conv2d_bias_add_act in=f32@0x0[1,1,64,7,56:25088,25088,392,56,1] "
      "w=f32@0x10000[1,256,64,1,1:16384,64,1,1,1] bias=f32@0x20000[1,256:256,1] "
      "res=f32@0x30000[1,1,256,7,56:100352,100352,392,56,1] "
      "out=f32@0x50000[1,1,256,7,56:100352,100352,392,56,1] stride_h=1 stride_w=1 "
      "dilation_h=1 dilation_w=1 pad_h0=0 pad_h1=0 pad_w0=0 pad_w1=0 accumulate=0 epilogue=1 "
      "act=relu alpha=0.0001 lo=0 hi=6\n",
      "piece.fasm", ops);
  const isa::Instruction& piece = p.instructions.front();
  const isa::OpDef& op = ops.get(piece.opcode);
  const isa::CostModel model = cost_model(spec);
  using Choice = isa::CostModel::Choice;
  const std::vector<int64_t> quick = model.parallel_parts(0, op, ops, piece, 32, Choice::estimate);
  const std::vector<int64_t> decided = model.parallel_parts(0, op, ops, piece, 32, Choice::decide);
  // Parts per dim: N, G, Co, Ho, Wo, then the reduce and window dims.
  CHECK(quick == std::vector<int64_t>{1, 1, 4, 1, 8, 1, 1, 1, 1, 1});
  CHECK(decided == std::vector<int64_t>{1, 1, 8, 1, 4, 1, 1, 1, 1, 1});
  auto child = [&](const std::vector<int64_t>& parts) {
    return isa::split_by_parts(op, ops, piece, parts, 0).children.front();
  };
  CHECK(model.quick_cycles(1, op, ops, child(quick)) <
        model.quick_cycles(1, op, ops, child(decided)));
  CHECK(model.node_cycles(1, op, ops, child(decided), true) <
        model.node_cycles(1, op, ops, child(quick), true));
}
