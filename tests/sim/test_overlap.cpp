// Exact-cycle tests of overlap below the root (LevelSpec::overlap): a node takes its parent's
// next instruction while the pieces of the one before still drain through its pipeline.
//
// The machine: everything at 1 GHz (a cycle is 1 ns); the root (decode 1) and one leaf.
//  - leaf: decode 1, 3 sub-blocks, 3 KiB; link 16 GB/s with 10 ns latency, so LD or WB of B
//    bytes = 10 + B / 16 cycles (the 64 GB/s main memory shared by two transfers still gives
//    each more than the link).
//  - matrix unit 4x4: a [8,8] x [8,8] matmul takes 2 * 2 * 8 + 4 + 4 - 1 = 39 cycles.
//  - one piece per instruction: a [8,8] f32 tile is 256 B, a + b + out 768 B fit a sub-block
//    of 1 KiB; a and b are static operands (the view of every piece), out is cyclic.
//  - the other data-movement features off: outputs are not kept, links do not broadcast.
#include <doctest/doctest.h>

#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/reference.h"
#include "sim/machine.h"
#include "sim/trace.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

std::string machine(bool overlap, const char* hazards = "tiles", bool prefetch = false) {
  return fmt::format(R"(machine: m
decomposer: halving
hazards: {}
root:
  clock: 1 GHz
  lfu_throughput: 1
  memory: {{capacity: 1 MiB, bandwidth: 64 GB/s}}
levels:
  - name: core
    fanout: 1
    memory: {{capacity: 3 KiB, bandwidth: 64 GB/s}}
    link: {{bandwidth: 16 GB/s, latency: 10 ns}}
    keep_outputs: false
    overlap: {}
    prefetch: {}
    leaf:
      matrix: {{rows: 4, cols: 4}}
      vector: {{lanes: 8}}
)",
                     hazards, overlap, prefetch);
}

isa::TensorRef f32(uint64_t address) {
  return isa::make_tensor(address, isa::DType::f32, {1, 8, 8});
}

isa::Instruction matmul(uint64_t a, uint64_t b, uint64_t out) {
  return isa::Instruction{ops().get("matmul").opcode, {f32(a), f32(b), f32(out)}, {0}};
}

// A program of `instructions` over 20 KiB of random f32 data, its output `out`.
isa::Program program(std::vector<isa::Instruction> instructions, const isa::TensorRef& out) {
  isa::Program p;
  p.name = "p";
  p.footprint = 20480;
  p.instructions = std::move(instructions);
  isa::DataSegment d;
  d.kind = isa::DataSegment::Kind::random;
  d.count = p.footprint / 4;
  d.seed = 7;
  d.lo = -1;
  d.hi = 1;
  p.data = {d};
  p.symbols = {isa::Symbol{"out", isa::SymbolRole::output, out}};
  return p;
}

// Two matmuls sharing b (at 4096); the second reads `second_a`.
isa::Program two_matmuls(uint64_t second_a) {
  return program({matmul(0, 4096, 8192), matmul(second_a, 4096, 16384)}, f32(16384));
}

RunResult run(bool overlap, const isa::Program& p, Mode mode, TraceRecorder* trace = nullptr,
              const char* hazards = "tiles", bool prefetch = false) {
  SimOptions o;
  o.trace = trace;
  return simulate(parse_machine_spec(machine(overlap, hazards, prefetch), "m.yaml"), ops(), p, mode,
                  o);
}

uint64_t counter(const RunResult& r, int node, Counter c) { return r.nodes.at(node).stats[c]; }

// The trace event of stage `tid` of node `pid` from `ts` to `ts + dur` (nanoseconds).
std::string event(int pid, int tid, int ts, int dur) {
  return fmt::format(
      R"({{"ph": "X", "name": "matmul", "pid": {}, "tid": {}, "ts": {:.6f}, "dur": {:.6f}}})", pid,
      tid, ts / 1000.0, dur / 1000.0);
}

// Each of `events` (event()'s) is on the timeline `json`.
void check_events(const std::string& json, const std::vector<std::string>& events) {
  for (const std::string& e : events) {
    CAPTURE(e);
    CHECK(json.find(e) != std::string::npos);
  }
}

}  // namespace

TEST_CASE(
    "two independent instructions overlap in the leaf: the second loads while the first runs") {
  // The second reads a2 (12288) and b, writes out2; the first writes out1 (8192): no hazard.
  // The root's pipeline lets both through at once (root ID 0 -> 1 and 1 -> 2, LD moves nothing).
  // First:   leaf ID 1 -> 2, LD a1 + b 512 B: 10 + 32 = 42: 2 -> 44, EX 39: 44 -> 83,
  //          WB out1 256 B: 10 + 16 = 26: 83 -> 109.
  // overlap off: the root's EX waits for the first to write back before it issues the second.
  //   Second: leaf ID 109 -> 110, LD a2 only (b is resident) 256 B: 26: 110 -> 136,
  //           EX 136 -> 175, WB 175 -> 201.                                         201 cycles
  // overlap on: the root issues the second at 2. It fits beside the first (a2's tile in the
  //   free middle of the leaf's memory, the cyclic segment continued at sub-block 1), so the
  //   leaf decodes it at 2 -> 3 and its LD takes it as soon as the first's load is done:
  //   Second: LD a2 256 B: 26: 44 -> 70 (while the first executes), EX waits for the unit:
  //           83 -> 122, WB waits for the channel: 122 -> 148.                      148 cycles
  // The root's EX counts each instruction from issue to its last write-back: 108 + 92 off,
  // 108 + 146 on.
  const isa::Program p = two_matmuls(12288);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult off = run(false, p, mode);
    CHECK(off.cycles == 201);
    CHECK(counter(off, 0, Counter::execute_cycles) == 108 + 92);
    CHECK(counter(off, 0, Counter::overlapped_pieces) == 0);
    const RunResult on = run(true, p, mode);
    CHECK(on.cycles == 148);
    CHECK(counter(on, 0, Counter::execute_cycles) == 108 + 146);
    CHECK(counter(on, 0, Counter::overlapped_pieces) == 1);
    for (const RunResult* r : {&off, &on}) {
      CHECK(counter(*r, 1, Counter::load_bytes) == 512 + 256);
      CHECK(counter(*r, 1, Counter::load_cycles) == 42 + 26);
      CHECK(counter(*r, 1, Counter::unit_cycles) == 39 + 39);
      CHECK(counter(*r, 1, Counter::writeback_cycles) == 26 + 26);
      CHECK(counter(*r, 1, Counter::hazard_cycles) == 0);
    }
    if (mode == Mode::functional) CHECK(on.memory == isa::run_reference(p, ops()));
  }
  // The leaf's stages on the timeline (tid 1 LD, 2 EX, 4 WB): the second's load starts at 44,
  // before the first has written back (109).
  TraceRecorder trace;
  run(true, p, Mode::timing, &trace);
  check_events(trace.json(), {event(1, 1, 2, 42), event(1, 1, 44, 26), event(1, 2, 44, 39),
                              event(1, 2, 83, 39), event(1, 4, 83, 26), event(1, 4, 122, 26)});
}

TEST_CASE(
    "an instruction placed over the running ones' cyclic segment executes after their write-back") {
  // Three independent matmuls. The first two, 8x8 (a1 at 0, a2 at 12288, b at 4096 for both):
  // a 256 B tile of a and of b static, one piece, sub-blocks of 256 B: a1 at 0, b at 2816, the
  // cyclic segment at 256 (sub-block 0 [256, 512) the first's, 1 [512, 768) the second's,
  // which goes on rotating it beside the first; a2 at 2560).
  // The third: c [16,2] (1024) x d [2,8] (2048) -> out3 [16,8]: 128 + 64 B static, sub-blocks
  // of 512 B. Its segment of 1536 B does not fit beside the two: it is placed as a drained
  // leaf would place it, c at 256 and d at 384 (over the first's out tile), its segment at
  // 448, its first sub-block [448, 960) over the second's out tile.
  // First:  leaf ID 1 -> 2, LD a1 + b 512 B: 10 + 32 = 42: 2 -> 44, EX 2 * 2 * 8 + 7 = 39:
  //         44 -> 83, WB out1 256 B 26: 83 -> 109.
  // Second: leaf ID 2 -> 3, LD a2 (b resident) 26: 44 -> 70, EX 83 -> 122, WB 122 -> 148.
  // Third:  leaf ID 3 -> 4, LD c + d 192 B: 10 + 12 = 22 once the first has written back:
  //         109 -> 131; EX 4 * 2 * 2 + 7 = 23, which writes out3 over the second's out tile,
  //         once the second has written back: 148 -> 171; WB 512 B 42: 171 -> 213. 213 cycles
  const isa::TensorRef out3 = isa::make_tensor(18432, isa::DType::f32, {1, 16, 8});
  const isa::Program p =
      program({matmul(0, 4096, 8192), matmul(12288, 4096, 16384),
               isa::Instruction{ops().get("matmul").opcode,
                                {isa::make_tensor(1024, isa::DType::f32, {1, 16, 2}),
                                 isa::make_tensor(2048, isa::DType::f32, {1, 2, 8}), out3},
                                {0}}},
              out3);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult on = run(true, p, mode);
    CHECK(on.cycles == 213);
    CHECK(counter(on, 0, Counter::overlapped_pieces) == 2);
    CHECK(counter(on, 1, Counter::unit_cycles) == 39 + 39 + 23);
    if (mode == Mode::functional) CHECK(on.memory == isa::run_reference(p, ops()));
  }
  TraceRecorder trace;
  run(true, p, Mode::timing, &trace);
  check_events(trace.json(), {event(1, 4, 122, 26), event(1, 1, 109, 22), event(1, 2, 148, 23),
                              event(1, 4, 171, 42)});
}

TEST_CASE(
    "a second instruction of smaller sub-blocks goes on rotating in the first's cyclic segment") {
  // The first: a1 [16,8] (0) x b (4096) -> out1 [16,8] (8192), one piece: a1 512 B and b 256 B
  // static, a sub-block of out1's 512 B, its cyclic segment 3 x 512 = 1536 B: 2304 of the
  // leaf's 3072 B. The second: a2 (12288) x b -> out2 (16384), 8x8: a2 256 B static (b
  // resident), sub-blocks of 256 B. A segment of its own (768 B) and a2 do not fit the 768 B
  // left beside the first, so it goes on in the first's segment, each sub-block 512 B, at
  // sub-block 1 (the first's one piece took sub-block 0): nothing it overwrites is running.
  // First:  leaf ID 1 -> 2, LD a1 + b 768 B: 10 + 48 = 58: 2 -> 60, EX 4 * 2 * 8 + 7 = 71:
  //         60 -> 131, WB out1 512 B: 10 + 32 = 42: 131 -> 173.
  // Second: leaf ID 2 -> 3, LD a2 26: 60 -> 86 (once the first's load is done), EX 39 once the
  //         unit is free: 131 -> 170, WB 26 once the channel is: 173 -> 199.   199 cycles
  // overlap off: the second starts after the first's write-back, ID 173 -> 174, LD 174 -> 200,
  // EX 200 -> 239, WB 239 -> 265.                                              265 cycles
  const isa::Program p =
      program({isa::Instruction{ops().get("matmul").opcode,
                                {isa::make_tensor(0, isa::DType::f32, {1, 16, 8}), f32(4096),
                                 isa::make_tensor(8192, isa::DType::f32, {1, 16, 8})},
                                {0}},
               matmul(12288, 4096, 16384)},
              f32(16384));
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    CHECK(run(false, p, mode).cycles == 265);
    const RunResult on = run(true, p, mode);
    CHECK(on.cycles == 199);
    CHECK(counter(on, 0, Counter::overlapped_pieces) == 1);
    CHECK(counter(on, 1, Counter::load_bytes) == 768 + 256);
    CHECK(counter(on, 1, Counter::unit_cycles) == 71 + 39);
    CHECK(counter(on, 1, Counter::hazard_cycles) == 0);
    if (mode == Mode::functional) CHECK(on.memory == isa::run_reference(p, ops()));
  }
  TraceRecorder trace;
  run(true, p, Mode::timing, &trace);
  check_events(trace.json(), {event(1, 1, 2, 58), event(1, 1, 60, 26), event(1, 2, 60, 71),
                              event(1, 2, 131, 39), event(1, 4, 131, 42), event(1, 4, 173, 26)});
}

TEST_CASE("two dependent instructions do not overlap: the second waits for the first's result") {
  // The second reads out1 (8192) as its a: read after write. The root's LD holds it until the
  // first has written back at 109 (107 hazard cycles), then the leaf runs it as a drained
  // leaf would, overlap or not: ID 109 -> 110, LD out1 256 B (b resident): 26: 110 -> 136,
  // EX 136 -> 175, WB 175 -> 201.
  const isa::Program p = two_matmuls(8192);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    for (bool overlap : {false, true}) {
      CAPTURE(overlap);
      const RunResult r = run(overlap, p, mode);
      CHECK(r.cycles == 201);
      CHECK(counter(r, 0, Counter::hazard_cycles) == 107);
      CHECK(counter(r, 0, Counter::overlapped_pieces) == 0);
      CHECK(counter(r, 1, Counter::load_cycles) == 42 + 26);
      if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, ops()));
    }
  }
  TraceRecorder trace;
  run(true, p, Mode::timing, &trace);
  CHECK(trace.json().find(event(1, 1, 110, 26)) != std::string::npos);
}

TEST_CASE("prefetch: a dependent instruction loads its weights while the one before drains") {
  // The second reads out1 (8192) as its a and its own b2 (12288): read after write on a only.
  // Both: 1 cycle decode; LD of B bytes 10 + B / 16; EX 39; WB of out 256 B 26.
  // prefetch off (overlap on): the root's LD holds the second until the first has written back
  //   at 109 (107 hazard cycles); then leaf ID 109 -> 110, LD out1 + b2 512 B: 42: 110 -> 152,
  //   EX 152 -> 191, WB 191 -> 217.                                                217 cycles
  // prefetch on: the root's LD loads nothing, so it holds nothing: the root issues the second
  //   at 2, beside the first, which the leaf's loads of out1 are to wait for. Leaf ID 2 -> 3;
  //   at 44 its LD finds out1 held by the first (written back at 109), so b2 goes first:
  //   256 B, 26: 44 -> 70; out1 waits (39 hazard cycles) until 109: 26: 109 -> 135,
  //   EX 135 -> 174, WB 174 -> 200.                                                200 cycles
  // The 17 cycles saved are the second's decode and b2's 16 cycles of transfer; its latency
  // is paid twice, once per load.
  isa::Program p = two_matmuls(8192);
  p.instructions[1].operands[1] = f32(12288);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult off = run(true, p, mode, nullptr, "tiles", false);
    CHECK(off.cycles == 217);
    CHECK(counter(off, 0, Counter::hazard_cycles) == 107);
    CHECK(counter(off, 0, Counter::overlapped_pieces) == 0);
    CHECK(counter(off, 1, Counter::load_cycles) == 42 + 42);
    CHECK(counter(off, 1, Counter::hazard_cycles) == 0);
    const RunResult on = run(true, p, mode, nullptr, "tiles", true);
    CHECK(on.cycles == 200);
    CHECK(counter(on, 0, Counter::hazard_cycles) == 0);
    CHECK(counter(on, 0, Counter::overlapped_pieces) == 1);
    CHECK(counter(on, 1, Counter::load_cycles) == 42 + 26 + 26);
    CHECK(counter(on, 1, Counter::load_bytes) == 512 + 512);
    CHECK(counter(on, 1, Counter::hazard_cycles) == 39);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, ops()));
      CHECK(off.memory == on.memory);
    }
  }
  TraceRecorder trace;
  run(true, p, Mode::timing, &trace, "tiles", true);
  check_events(trace.json(), {event(1, 1, 2, 42), event(1, 1, 44, 26), event(1, 1, 109, 26),
                              event(1, 2, 135, 39), event(1, 4, 174, 26)});
  // Default on; like every level boolean, other values name the file, line and key.
  std::string absent = machine(true, "tiles", false);
  CHECK(!parse_machine_spec(absent, "m.yaml").levels[0].prefetch);
  absent.erase(absent.find("    prefetch: false\n"), 20);
  CHECK(parse_machine_spec(absent, "m.yaml").levels[0].prefetch);
  std::string bad = machine(true, "tiles", true);
  bad.replace(bad.find("prefetch: true"), 14, "prefetch: often");
  CHECK_THROWS_WITH_AS(parse_machine_spec(bad, "m.yaml"),
                       "m.yaml:15: levels[0].prefetch: expected true or false, got 'often'",
                       ConfigError);
}

TEST_CASE("hazards: tiles lets a read beside an earlier strided output overlap where spans hold it") {
  // The first writes out1 as columns 0-7 of an [8, 16] f32 matrix at 8192 (row stride 16); the
  // second reads columns 8-15 of it as its a. Their byte spans meet ([8192, 8672) and
  // [8224, 8704)), their bytes do not. With `tiles` the second is independent of the first and
  // runs as in the first test: 148 cycles, no hazard. With `spans` the root's LD holds it as
  // a dependent one until the first has written back at 109: 107 hazard cycles, 201 cycles.
  // The strided tiles move the same 256 B at the same rate as the dense ones.
  isa::Program p = two_matmuls(0);
  const isa::TensorRef left{8192, isa::DType::f32, {1, 8, 8}, {128, 16, 1}};
  isa::TensorRef right = left;
  right.address = 8192 + 8 * 4;
  p.instructions[0].operands[2] = left;
  p.instructions[1].operands[0] = right;
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult tiles = run(true, p, mode, nullptr, "tiles");
    CHECK(tiles.cycles == 148);
    CHECK(counter(tiles, 0, Counter::hazard_cycles) == 0);
    CHECK(counter(tiles, 0, Counter::overlapped_pieces) == 1);
    const RunResult spans = run(true, p, mode, nullptr, "spans");
    CHECK(spans.cycles == 201);
    CHECK(counter(spans, 0, Counter::hazard_cycles) == 107);
    CHECK(counter(spans, 0, Counter::overlapped_pieces) == 0);
    if (mode == Mode::functional) {
      CHECK(tiles.memory == isa::run_reference(p, ops()));
      CHECK(spans.memory == tiles.memory);
    }
  }
  std::string yaml = machine(true);
  yaml.replace(yaml.find("hazards: tiles"), 14, "hazards: bytes");
  CHECK_THROWS_WITH_AS(parse_machine_spec(yaml, "m.yaml"),
                       "m.yaml:3: hazards: unknown hazards 'bytes' (expected tiles or spans)",
                       ConfigError);
}

TEST_CASE("overlap is a per-level boolean: other values name the file, line and key") {
  std::string yaml = machine(true);
  yaml.replace(yaml.find("overlap: true"), 13, "overlap: sometimes");
  CHECK_THROWS_WITH_AS(parse_machine_spec(yaml, "m.yaml"),
                       "m.yaml:14: levels[0].overlap: expected true or false, got 'sometimes'",
                       ConfigError);
  const MachineSpec on = parse_machine_spec(machine(true), "m.yaml");
  CHECK(on.levels[0].overlap);
  CHECK(!parse_machine_spec(machine(false), "m.yaml").levels[0].overlap);
  // Default on.
  std::string absent = machine(true);
  absent.erase(absent.find("    overlap: true\n"), 18);
  CHECK(parse_machine_spec(absent, "m.yaml").levels[0].overlap);
}

TEST_CASE(
    "the next instruction's first group accumulates beside the one before's last, not in it") {
  // Two independent [8,16] x [16,8] matmuls on a leaf of 2 KiB in 2 sub-blocks (search): the
  // whole instruction (512 + 512 + 256 B) does not fit a sub-block of 1 KiB, so the leaf
  // splits K in two pieces of one resident group: the first accumulates in sub-block 0, the
  // second adds to it there, and the group writes back once. Each piece loads its a and b
  // halves, 512 B: 10 + 32 = 42 cycles; EX 39; WB 256 B: 26. The second instruction's
  // rotation starts at sub-block (0 + 2) % 2 = 0, where the first's group still accumulates.
  // First:  ID 1 -> 2 and 2 -> 3, LD 2 -> 44 and 44 -> 86, EX 44 -> 83 and 86 -> 125,
  //         WB 125 -> 151.
  // Its first group in sub-block 0 waited for that write-back: ID 151 -> 152 and 152 -> 153,
  //   LD 152 -> 194 -> 236, EX 194 -> 233 and 236 -> 275, WB 275 -> 301: 301 cycles.
  // Its first group accumulates in sub-block 1: its first piece takes the sub-block the first
  //   instruction's first piece frees when it retires (83: it holds its output, nothing to
  //   store): ID 83 -> 84, LD when the link is free 86 -> 128, EX 128 -> 167; its second piece
  //   the sub-block freed at 151: ID 151 -> 152, LD 152 -> 194, EX 194 -> 233; WB 233 -> 259.
  const std::string yaml = R"(machine: m
decomposer: search
root:
  clock: 1 GHz
  lfu_throughput: 1
  memory: {capacity: 1 MiB, bandwidth: 64 GB/s}
levels:
  - name: core
    fanout: 1
    pipeline_depth: 2
    memory: {capacity: 2 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s, latency: 10 ns}
    keep_outputs: false
    prefetch: false
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";
  const isa::OpDef& mm = ops().get("matmul");
  auto t = [](uint64_t at, int64_t rows, int64_t cols) {
    return isa::make_tensor(at, isa::DType::f32, {1, rows, cols});
  };
  const isa::Program p = program(
      {isa::Instruction{mm.opcode, {t(0, 8, 16), t(4096, 16, 8), t(8192, 8, 8)}, {0}},
       isa::Instruction{mm.opcode, {t(12288, 8, 16), t(16384, 16, 8), t(18432, 8, 8)}, {0}}},
      t(18432, 8, 8));
  const MachineSpec spec = parse_machine_spec(yaml, "m.yaml");
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult r = simulate(spec, ops(), p, mode);
    CHECK(r.cycles == 259);
    CHECK(counter(r, 1, Counter::pieces) == 4);
    CHECK(counter(r, 1, Counter::load_bytes) == 4 * 512);
    CHECK(counter(r, 1, Counter::store_bytes) == 2 * 256);
    CHECK(counter(r, 0, Counter::overlapped_pieces) == 1);
    if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, ops()));
  }
  TraceRecorder trace;
  SimOptions o;
  o.trace = &trace;
  simulate(spec, ops(), p, Mode::timing, o);
  check_events(trace.json(), {event(1, 0, 83, 1), event(1, 1, 86, 42), event(1, 2, 128, 39),
                              event(1, 1, 152, 42), event(1, 2, 194, 39), event(1, 4, 233, 26)});
}
