// Exact-cycle tests of the memory system: one DMA load at a given bandwidth and latency, two
// siblings sharing their parent's memory, a tensor permutation table hit, its invalidation,
// and what a run does when it cannot start or cannot finish. Every cycle count is derived by
// hand in the comment above its check; each check is an equality, so one cycle less (or more)
// fails. Everything runs at 1 GHz: a cycle is 1 ns.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <systemc>

#include "isa/error.h"
#include "isa/reference.h"
#include "sim/leaf_unit.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "sim/trace.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

// Root and one level of `fanout` leaves with a 4x4 matrix unit. The numbers below are derived
// with every instruction draining from the leaves before the next starts (overlap off).
std::string machine(const std::string& root_memory, int fanout, const std::string& capacity,
                    const std::string& link) {
  return fmt::format(R"(machine: m
decomposer: halving
root:
  clock: 1 GHz
  lfu_throughput: 1
  memory: {}
levels:
  - name: core
    fanout: {}
    memory: {{capacity: {}, bandwidth: 64 GB/s}}
    link: {}
    overlap: false
    leaf:
      matrix: {{rows: 4, cols: 4}}
      vector: {{lanes: 8}}
)",
                     root_memory, fanout, capacity, link);
}

isa::Instruction matmul(const isa::TensorRef& a, const isa::TensorRef& b,
                        const isa::TensorRef& out) {
  return isa::Instruction{ops().get("matmul").opcode, {a, b, out}, {0}};
}

isa::TensorRef f32(uint64_t address, isa::Shape shape) {
  return isa::make_tensor(address, isa::DType::f32, std::move(shape));
}

// A program over the given instructions; every tensor below `footprint` starts random.
isa::Program program(std::vector<isa::Instruction> instrs, uint64_t footprint,
                     const isa::TensorRef& output) {
  isa::Program p;
  p.name = "p";
  p.footprint = footprint;
  p.instructions = std::move(instrs);
  isa::DataSegment d;
  d.kind = isa::DataSegment::Kind::random;
  d.count = footprint / 4;
  d.seed = 7;
  d.lo = -1;
  d.hi = 1;
  p.data = {d};
  p.symbols = {isa::Symbol{"out", isa::SymbolRole::output, output}};
  return p;
}

RunResult run(const std::string& yaml, const isa::Program& p, Mode mode, const SimOptions& o = {}) {
  return simulate(parse_machine_spec(yaml, "m.yaml"), ops(), p, mode, o);
}

uint64_t counter(const RunResult& r, int node, Counter c) { return r.nodes.at(node).stats[c]; }

SimOptions options(bool fold, TraceRecorder* trace = nullptr) {
  SimOptions o;
  o.fold = fold;
  o.trace = trace;
  return o;
}

}  // namespace

TEST_CASE("one load at a given bandwidth and latency") {
  // Link 8 GB/s with 24.5 ns latency, main memory 64 GB/s with 5 ns latency. A DMA batch pays
  // ceil(24.5 + 5) = 30 cycles of latency, then moves at min(8, 64) = 8 B/cycle.
  // matmul a[1,3,5] (60 B) x b[1,5,2] (40 B) -> out[1,3,2] (24 B), one piece:
  //   root ID  0 -> 1;  leaf ID 1 -> 2
  //   leaf LD  100 B: 30 + ceil(100 / 8) = 30 + 13 = 43        2 -> 45
  //            (the last byte arrives at 2 + 30 + 12.5 = 44.5 ns: the stage holds to 45)
  //   leaf EX  ceil(3/4) * ceil(2/4) * 5 + 7 = 12               45 -> 57
  //   leaf WB  24 B: 30 + 3 = 33                                57 -> 90
  const std::string m = machine("{capacity: 1 MiB, bandwidth: 64 GB/s, latency: 5 ns}", 1, "4 KiB",
                                "{bandwidth: 8 GB/s, latency: 24.5 ns}");
  const isa::Program p =
      program({matmul(f32(0, {1, 3, 5}), f32(64, {1, 5, 2}), f32(128, {1, 3, 2}))}, 192,
              f32(128, {1, 3, 2}));
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(m, p, mode);
    CHECK(counter(r, 1, Counter::load_bytes) == 100);
    CHECK(counter(r, 1, Counter::load_cycles) == 43);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 33);
    CHECK(r.cycles == 90);
  }
}

TEST_CASE("two siblings loading from one parent memory at once take twice as long as one") {
  // Main memory 16 GB/s, links 16 GB/s, no latency. Alone, a leaf loads at 16 B/cycle; two
  // leaves loading at once share the memory: 8 B/cycle each.
  // One leaf: matmul a[1,2,16] x b[1,16,2] -> out[1,2,2]: loads 128 + 128 = 256 B.
  //   root ID 0 -> 1; leaf ID 1 -> 2; LD 256 / 16 = 16: 2 -> 18;
  //   EX 1 * 1 * 16 + 7 = 23: 18 -> 41; WB 16 B / 16 = 1: 41 -> 42.
  // Two leaves: matmul a[1,2,16] x b[1,16,4] -> out[1,2,4], split along N: each leaf gets the
  // same shapes as above (a whole, half of b, half of out) and loads 256 B.
  //   LD 256 / 8 = 32: 2 -> 34 (twice 16); EX 34 -> 57; WB 16 / 8 = 2: 57 -> 59.
  const std::string root = "{capacity: 1 MiB, bandwidth: 16 GB/s}";
  const std::string link = "{bandwidth: 16 GB/s}";
  const isa::Program one =
      program({matmul(f32(0, {1, 2, 16}), f32(128, {1, 16, 2}), f32(256, {1, 2, 2}))}, 320,
              f32(256, {1, 2, 2}));
  const isa::Program two =
      program({matmul(f32(0, {1, 2, 16}), f32(128, {1, 16, 4}), f32(384, {1, 2, 4}))}, 448,
              f32(384, {1, 2, 4}));
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult alone = run(machine(root, 1, "3 KiB", link), one, mode);
    CHECK(counter(alone, 1, Counter::load_bytes) == 256);
    CHECK(counter(alone, 1, Counter::load_cycles) == 16);
    CHECK(alone.cycles == 42);
    for (bool fold : {true, false}) {
      RunResult both = run(machine(root, 2, "3 KiB", link), two, mode, options(fold));
      for (int leaf : {1, 2}) {
        CHECK(counter(both, leaf, Counter::load_bytes) == 256);
        CHECK(counter(both, leaf, Counter::load_cycles) == 2 * 16);
        CHECK(counter(both, leaf, Counter::writeback_cycles) == 2);
      }
      CHECK(both.cycles == 59);
      CHECK(both.folded == (fold && mode == Mode::timing));
    }
  }
}

TEST_CASE("three children loading the same weights over a shared medium: one parent read") {
  // Main memory 24 GB/s, links 16 GB/s, no latency. matmul a[1,6,16] x b[1,16,2] -> out[1,6,2]
  // on 3 leaves splits M: each leaf gets a[1,2,16] (128 B, its own), the whole b (128 B, the
  // same view for all three) and out[1,2,2] (16 B), one piece, a and b static.
  //   root ID 0 -> 1; leaf ID 1 -> 2
  //   point to point: three loads of 256 B share the memory, 8 GB/s each (below the link):
  //       LD 256 / 8 = 32: 2 -> 34; EX ceil(2/4) * ceil(2/4) * 16 + 7 = 23: 34 -> 57;
  //       WB 3 x 16 B at 8 GB/s: 2: 57 -> 59
  //   multicast: leaf 0 reads b once for all three, alone on the memory at the link's 16 GB/s:
  //       128 / 16 = 8: 2 -> 10; then each loads its a, 128 B at 8 GB/s: 16: 10 -> 26;
  //       EX 26 -> 49; WB 49 -> 51
  // The memory reads 128 + 3 * 128 = 512 bytes instead of 768.
  const std::string root = "{capacity: 1 MiB, bandwidth: 24 GB/s}";
  const isa::Program p =
      program({matmul(f32(0, {1, 6, 16}), f32(384, {1, 16, 2}), f32(512, {1, 6, 2}))}, 576,
              f32(512, {1, 6, 2}));
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    for (bool fold : {true, false}) {
      CAPTURE(fold);
      RunResult own = run(machine(root, 3, "3 KiB", "{bandwidth: 16 GB/s, multicast: false}"), p,
                          mode, options(fold));
      CHECK(own.cycles == 59);
      for (int leaf : {1, 2, 3}) {
        CHECK(counter(own, leaf, Counter::load_bytes) == 256);
        CHECK(counter(own, leaf, Counter::load_cycles) == 32);
      }
      RunResult shared = run(machine(root, 3, "3 KiB", "{bandwidth: 16 GB/s, multicast: true}"), p,
                             mode, options(fold));
      CHECK(shared.cycles == 51);
      CHECK(counter(shared, 1, Counter::load_bytes) == 256);
      CHECK(counter(shared, 1, Counter::broadcast_bytes) == 0);
      for (int leaf : {2, 3}) {
        CHECK(counter(shared, leaf, Counter::load_bytes) == 128);
        CHECK(counter(shared, leaf, Counter::broadcast_bytes) == 128);
      }
      for (int leaf : {1, 2, 3}) CHECK(counter(shared, leaf, Counter::load_cycles) == 24);
      if (mode == Mode::functional) CHECK(shared.memory == isa::run_reference(p, ops()));
    }
  }
}

TEST_CASE("an instruction issued beside the one still running sends each child its own copy") {
  // The case above, then a second, independent matmul a2 x b2 of the same shapes, with the
  // leaves taking it while the first drains (overlap on). A broadcast needs its receivers at a
  // common first load; the leaves are busy with the first, so each loads its own b2.
  //   first, as above: leaf 0 reads b1 2 -> 10, each its a1 10 -> 26, EX 26 -> 49.
  //   second: root ID 1 -> 2, issued beside the first at 2; leaf ID 2 -> 3; LD once the
  //     first's loads are done, at 26: a2's 128 B and b2's 128 B per leaf, three leaves on the
  //     24 GB/s memory at 8 GB/s each. At 49 the first's write-backs (16 B per leaf) join:
  //     six transfers at 4 GB/s; the loads have moved 23 x 8 = 184 B and move 4 x 4 = 16 B
  //     more while the write-backs run 49 -> 53, then their last 56 B at 8 GB/s: 53 -> 60.
  //     EX 60 -> 83; WB 16 B per leaf at 8 GB/s: 83 -> 85.                        85 cycles
  // Were it to wait until the first had drained (51), its broadcast round would run 52 -> 76,
  // EX 76 -> 99 and WB 99 -> 101.
  const std::string root = "{capacity: 1 MiB, bandwidth: 24 GB/s}";
  const isa::Program p =
      program({matmul(f32(0, {1, 6, 16}), f32(384, {1, 16, 2}), f32(512, {1, 6, 2})),
               matmul(f32(576, {1, 6, 16}), f32(960, {1, 16, 2}), f32(1088, {1, 6, 2}))},
              1152, f32(1088, {1, 6, 2}));
  std::string yaml = machine(root, 3, "3 KiB", "{bandwidth: 16 GB/s, multicast: true}");
  yaml.replace(yaml.find("overlap: false"), 14, "overlap: true");
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    for (bool fold : {true, false}) {
      CAPTURE(fold);
      const RunResult r = run(yaml, p, mode, options(fold));
      CHECK(r.cycles == 85);
      CHECK(counter(r, 0, Counter::overlapped_pieces) == 1);
      CHECK(counter(r, 1, Counter::load_bytes) == 256 + 256);
      CHECK(counter(r, 1, Counter::broadcast_bytes) == 0);
      for (int leaf : {2, 3}) {
        CHECK(counter(r, leaf, Counter::load_bytes) == 128 + 256);
        CHECK(counter(r, leaf, Counter::broadcast_bytes) == 128);
      }
      for (int leaf : {1, 2, 3}) CHECK(counter(r, leaf, Counter::load_cycles) == 24 + 34);
      if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, ops()));
    }
  }
}

namespace {
// out1 = a1 x b, then out2 = a2 x b: the same weights b in both, 8x8 f32 tiles of 256 B.
isa::Program shared_weights() {
  return program({matmul(f32(0, {1, 8, 8}), f32(4096, {1, 8, 8}), f32(8192, {1, 8, 8})),
                  matmul(f32(12288, {1, 8, 8}), f32(4096, {1, 8, 8}), f32(16384, {1, 8, 8}))},
                 20480, f32(16384, {1, 8, 8}));
}
const std::string kOneLevel = machine("{capacity: 1 MiB, bandwidth: 64 GB/s}", 1, "3 KiB",
                                      "{bandwidth: 16 GB/s, latency: 10 ns}");
}  // namespace

TEST_CASE("a tensor permutation table hit removes a load") {
  // Link 16 GB/s, 10 ns: LD or WB of B bytes = 10 + B / 16. One piece per instruction, so a
  // and b are static operands of the leaf; the second matmul finds b resident.
  //   root ID 0 -> 1 (first), 1 -> 2 (second; it waits for the root's EX)
  //   first:  leaf ID 1 -> 2, LD a1 + b 512 B: 42: 2 -> 44, EX 2 * 2 * 8 + 7 = 39: 44 -> 83,
  //           WB 256 B: 26: 83 -> 109
  //   second: leaf ID 109 -> 110, LD a2 only, 256 B: 26: 110 -> 136 (42 without the hit),
  //           EX 136 -> 175, WB 175 -> 201
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(kOneLevel, shared_weights(), mode);
    CHECK(counter(r, 1, Counter::static_hits) == 1);
    CHECK(counter(r, 1, Counter::static_hit_bytes) == 256);
    CHECK(counter(r, 1, Counter::load_bytes) == 512 + 256);
    CHECK(counter(r, 1, Counter::load_cycles) == 42 + 26);
    CHECK(r.cycles == 201);
  }
  RunResult f = run(kOneLevel, shared_weights(), Mode::functional);
  CHECK(isa::run_reference(shared_weights(), ops()) == f.memory);
}

TEST_CASE("a write to the parent memory invalidates the copy: the next use loads it again") {
  // Between the two matmuls an eltwise rewrites b in place (b = b + c). The leaf's write-back
  // of b into the main memory makes its static copy of b stale: the second matmul must load
  // b again (and does hit a, which nothing wrote). Functional mode proves the data is fresh.
  isa::Program p = shared_weights();
  const isa::OpDef& elt = ops().get("eltwise");
  auto as6 = [](uint64_t a) { return f32(a, {1, 1, 1, 1, 8, 8}); };
  isa::Instruction add{elt.opcode, {as6(4096), as6(12288), as6(4096)}, {0}};
  p.instructions.insert(p.instructions.begin() + 1, add);
  // The second matmul reads a1 again, so that a stays resident and hits.
  p.instructions[2].operands[0] = f32(0, {1, 8, 8});
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(kOneLevel, p, mode);
    CHECK(counter(r, 1, Counter::static_hits) == 1);  // a; not b
    CHECK(counter(r, 1, Counter::static_hit_bytes) == 256);
    // Loads: a1 + b (512), the eltwise's b and c (512), then b again (256).
    CHECK(counter(r, 1, Counter::load_bytes) == 512 + 512 + 256);
  }
  RunResult f = run(kOneLevel, p, Mode::functional);
  CHECK(isa::run_reference(p, ops()) == f.memory);
  // Without the eltwise both a and b of the second matmul would hit.
  isa::Program q = p;
  q.instructions.erase(q.instructions.begin() + 1);
  CHECK(counter(run(kOneLevel, q, Mode::timing), 1, Counter::static_hits) == 2);

  // Two leaves: each matmul is split by rows, so both leaves hold all of b; the eltwise is split
  // by rows too, so each leaf's copy of b is overwritten in part by its sibling's write-back.
  // Both must load b again; a, which nobody wrote, hits on both.
  const std::string two = machine("{capacity: 1 MiB, bandwidth: 64 GB/s}", 2, "3 KiB",
                                  "{bandwidth: 16 GB/s, latency: 10 ns}");
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(two, p, mode);
    CHECK(counter(r, 1, Counter::static_hits) == 1);
    CHECK(counter(r, 2, Counter::static_hits) == 1);
    if (mode == Mode::functional) CHECK(isa::run_reference(p, ops()) == r.memory);
  }
}

TEST_CASE("a leaf memory too small for the smallest piece is rejected before simulating") {
  // 384 B / 3 sub-blocks = 128 B; the smallest matmul piece has three 64-byte tiles.
  const std::string m =
      machine("{capacity: 1 MiB, bandwidth: 64 GB/s}", 1, "384 B", "{bandwidth: 16 GB/s}");
  CHECK_THROWS_WITH_AS(run(m, shared_weights(), Mode::timing),
                       "m.yaml: level core, program p instruction 1: matmul: the smallest piece "
                       "needs 192 bytes but a cyclic sub-block holds 128 (operand a alone needs "
                       "4 bytes)",
                       ConfigError);
}

namespace {
// A leaf backend that suspends the stage process running it (stages are SC_METHODs and a unit
// answers at once, so a test cannot make one wait for what never comes): the stage never runs
// again, and the kernel runs out of events with work unfinished.
class StuckUnit : public LeafUnit {
 public:
  uint64_t run(const isa::OpDef&, const isa::Instruction&, isa::MemoryView*) override {
    sc_core::sc_get_current_process_handle().suspend();
    return 1;
  }
};
}  // namespace

TEST_CASE("a run that stops making progress names the node, the stage and the instruction") {
  register_leaf_backend("stuck", [](const LevelSpec&) { return std::make_unique<StuckUnit>(); });
  MachineSpec spec = parse_machine_spec(kOneLevel, "m.yaml");
  spec.levels.back().backend = "stuck";
  isa::Program p = shared_weights();
  p.instructions.resize(1);
  // The leaf's EX starts at 44 (see the permutation table test) and its cycle ends at 45, when
  // its suspended process does not run.
  const std::string instr =
      "matmul a=f32@0x0[1,8,8:64,8,1] b=f32@0x1000[1,8,8:64,8,1] out=f32@0x2000[1,8,8:64,8,1] "
      "accumulate=0";
  CHECK_THROWS_WITH_AS(
      simulate(spec, ops(), p, Mode::timing),
      ("the run stopped making progress at 45000 ps with 1 of 1 instructions unfinished: root "
       "stage EX holds piece 1 of 1 of instruction `" +
       instr +
       "`; root.core0 stage EX holds "
       "piece 1 of 1 of instruction `" +
       instr + "`")
          .c_str(),
      InternalError);
}

TEST_CASE("the trace has one track per node and stage, in simulated microseconds") {
  // The first matmul alone: root ID 0 -> 1, EX 1 -> 109; leaf ID 1 -> 2, LD 2 -> 44,
  // EX 44 -> 83, WB 83 -> 109 (see the permutation table test).
  isa::Program p = shared_weights();
  p.instructions.resize(1);
  TraceRecorder trace;
  run(kOneLevel, p, Mode::timing, options(true, &trace));
  const std::string json = trace.json();
  for (const char* e :
       {R"({"ph": "X", "name": "matmul", "pid": 0, "tid": 0, "ts": 0.000000, "dur": 0.001000})",
        R"({"ph": "X", "name": "matmul", "pid": 0, "tid": 2, "ts": 0.001000, "dur": 0.108000})",
        R"({"ph": "X", "name": "matmul", "pid": 1, "tid": 0, "ts": 0.001000, "dur": 0.001000})",
        R"({"ph": "X", "name": "matmul", "pid": 1, "tid": 1, "ts": 0.002000, "dur": 0.042000})",
        R"({"ph": "X", "name": "matmul", "pid": 1, "tid": 2, "ts": 0.044000, "dur": 0.039000})",
        R"({"ph": "X", "name": "matmul", "pid": 1, "tid": 4, "ts": 0.083000, "dur": 0.026000})",
        R"({"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "root.core0"}})",
        R"({"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "LD"}})"})
    CHECK_MESSAGE(json.find(e) != std::string::npos, e);
  CHECK(trace.events() == 6);
  TraceRecorder again;
  run(kOneLevel, p, Mode::timing, options(true, &again));
  CHECK(again.json() == json);
}

TEST_CASE("progress is reported after every program instruction") {
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  SimOptions o;
  o.progress = [&](const Progress& p) {
    CHECK(p.total == 2);
    seen.emplace_back(p.done, p.picoseconds);
  };
  run(kOneLevel, shared_weights(), Mode::timing, o);
  CHECK(seen == std::vector<std::pair<uint64_t, uint64_t>>{{1, 109000}, {2, 201000}});
}

TEST_CASE("a sort split into serial runs is merged by the finalize pass, in functional mode too") {
  // 2048 f32 (8 KiB) on a leaf of 6 KiB: the leaf sorts runs piece by piece, then merges them
  // in place in the main memory with its sort unit. Two leaves under a cluster: the cluster's
  // LFU merges what its children sorted, and itself merges its own serial runs.
  const isa::OpDef& sort = ops().get("sort");
  const isa::TensorRef x = f32(0, {1, 2048}), y = f32(8192, {1, 2048});
  const isa::Program p = program({isa::Instruction{sort.opcode, {x, y}, {0}}}, 16384, y);
  const std::string two_level = R"(machine: s
root:
  clock: 1 GHz
  lfu_throughput: 4
  memory: {capacity: 1 MiB, bandwidth: 64 GB/s}
levels:
  - name: cluster
    fanout: 1
    lfu_throughput: 4
    memory: {capacity: 12 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 32 GB/s}
  - name: core
    fanout: 2
    memory: {capacity: 6 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s}
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";
  for (const std::string& m :
       {machine("{capacity: 1 MiB, bandwidth: 64 GB/s}", 1, "6 KiB", "{bandwidth: 16 GB/s}"),
        two_level}) {
    const RunResult f = run(m, p, Mode::functional);
    CHECK(f.memory == isa::run_reference(p, ops()));
    const RunResult t = run(m, p, Mode::timing);
    CHECK(t.cycles == f.cycles);
    CHECK(counter(t, 1, Counter::pieces) > 1);  // the first level below the root split it
  }
  // Posted write-backs: the finalize pass of a node reads what its pieces wrote only once
  // every write has landed.
  std::string posted = two_level;
  for (const char* link : {"link: {bandwidth: 32 GB/s}", "link: {bandwidth: 16 GB/s}"}) {
    const size_t at = posted.find(link);
    REQUIRE(at != std::string::npos);
    std::string with(link);
    with.insert(with.size() - 1, ", latency: 100 ns, pipelined: true, posted_writes: true");
    posted.replace(at, std::string(link).size(), with);
  }
  const RunResult f = run(posted, p, Mode::functional);
  CHECK(f.memory == isa::run_reference(p, ops()));
  CHECK(run(posted, p, Mode::timing).cycles == f.cycles);
}
