// Exact-cycle tests of the node pipeline on a one-level machine: the root and one leaf.
//
// The machine (kOneLevel): everything at 1 GHz, so a cycle is 1 ns.
//  - root: decode 1 cycle; its memory is the main memory (bandwidth 64 GB/s, latency 0).
//  - leaf: decode 1 cycle; link 16 GB/s with 10 ns latency. The DMA moves bytes at the slower
//    of link and parent memory, 16 B/cycle, and pays the latency once per piece and direction:
//      LD or WB of B bytes = 10 + ceil(B / 16) cycles.
//    The main memory's 64 GB/s is shared by the LD and WB in flight; two transfers get 32 GB/s
//    each, more than the link, so sharing never slows these tests.
//  - matrix unit 4x4: cycles = B * ceil(M/4) * ceil(N/4) * K + 4 + 4 - 1 (batch B = 1 here).
//  - static segment: an input whose view is the same in every piece of an instruction (b when
//    only M is split; every input of a one-piece instruction) is loaded with the first piece
//    only and stays resident in the tensor permutation table.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/reference.h"
#include "sim/machine.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

// The data-movement features off, as the tests derive their numbers without them unless they
// say otherwise.
const std::string kMovementOff = "keep_outputs: false";

std::string one_level(int pipeline_depth, const std::string& capacity,
                      const std::string& movement = kMovementOff) {
  return fmt::format(R"(machine: one
decomposer: halving
root:
  clock: 1 GHz
  lfu_throughput: 1
  memory: {{capacity: 1 MiB, bandwidth: 64 GB/s}}
levels:
  - name: core
    fanout: 1
    pipeline_depth: {}
    memory: {{capacity: {}, bandwidth: 64 GB/s}}
    link: {{bandwidth: 16 GB/s, latency: 10 ns}}
    {}
    leaf:
      matrix: {{rows: 4, cols: 4}}
      vector: {{lanes: 8}}
)",
                     pipeline_depth, capacity, movement);
}

// One matmul a[1,M,K] x b[1,K,N] -> out, operands one after another in the main memory.
isa::Program matmul_program(int64_t M, int64_t K, int64_t N) {
  const isa::OpDef& op = isa::OpTable::builtin().get("matmul");
  isa::Program p;
  p.name = "mm";
  isa::TensorRef a = isa::make_tensor(0, isa::DType::f32, {1, M, K});
  isa::TensorRef b = isa::make_tensor(4096, isa::DType::f32, {1, K, N});
  isa::TensorRef out = isa::make_tensor(8192, isa::DType::f32, {1, M, N});
  p.footprint = 12288;
  p.instructions.push_back(isa::Instruction{op.opcode, {a, b, out}, {0}});
  isa::DataSegment da;
  da.kind = isa::DataSegment::Kind::random;
  da.count = M * K;
  da.seed = 1;
  da.lo = -1;
  da.hi = 1;
  isa::DataSegment db = da;
  db.address = 4096;
  db.count = K * N;
  db.seed = 2;
  p.data = {da, db};
  p.symbols = {isa::Symbol{"out", isa::SymbolRole::output, out}};
  return p;
}

RunResult run(const std::string& yaml, const isa::Program& p, Mode mode) {
  return simulate(parse_machine_spec(yaml, "one.yaml"), isa::OpTable::builtin(), p, mode);
}

uint64_t counter(const RunResult& r, int node, Counter c) { return r.nodes.at(node).stats[c]; }

}  // namespace

TEST_CASE("one matmul in one piece: decode, load, compute, write back") {
  // a[8,8], b[8,8], out[8,8] f32: 256 B each, one piece (768 B fit a 1 KiB sub-block).
  //   root ID            0 ->   1
  //   leaf ID            1 ->   2
  //   leaf LD  512 B     2 ->  44   (10 + 32)
  //   leaf EX            44 ->  83   (2 * 2 * 8 + 7 = 39)
  //   leaf WB  256 B     83 -> 109   (10 + 16)
  const isa::Program p = matmul_program(8, 8, 8);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(one_level(3, "3 KiB"), p, mode);
    CHECK(r.cycles == 109);
    CHECK(counter(r, 1, Counter::pieces) == 1);
    CHECK(counter(r, 1, Counter::load_cycles) == 42);
    CHECK(counter(r, 1, Counter::unit_cycles) == 39);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 26);
    CHECK(counter(r, 1, Counter::load_bytes) == 512);
    CHECK(counter(r, 1, Counter::store_bytes) == 256);
    CHECK(counter(r, 0, Counter::execute_cycles) == 108);
  }
}

TEST_CASE("three pieces overlap in the pipeline: LD of piece 2 runs during EX of piece 1") {
  // a[9,4], b[4,3], out[9,3] in 600 B of local memory with N = 3 sub-blocks. Tiles are 64-byte
  // aligned. The node sizes its tiling against the whole memory: inputs left whole in every
  // piece (the static segment) count once, the rest three times.
  //   whole:   a 192 + b 64 + out 128 = 384, static a + b 256: 256 + 3 * 128 = 640 > 600
  //   M = 5:   a 128 + b 64 + out 64 = 256, static b 64: 64 + 3 * 192 = 640 (no better)
  //   M = 3:   a 64 + b 64 + out 64 = 192, static b 64: 64 + 3 * 128 = 448 <= 600
  // so M splits into 3 pieces of 3 rows and b is loaded with piece 0 only.
  // LD: piece 0 a 48 + b 48 = 96 B -> 10 + 6 = 16; pieces 1, 2 a 48 B -> 10 + 3 = 13.
  // EX 1 * 1 * 1 * 4 + 7 = 11; WB out[3,3] 36 B -> 10 + 3 = 13.
  //            ID       LD        EX        WB
  //   piece 0  1 -> 2   2 -> 18   18 -> 29  29 -> 42
  //   piece 1  2 -> 3   18 -> 31  31 -> 42  42 -> 55
  //   piece 2  3 -> 4   31 -> 44  44 -> 55  55 -> 68
  // LD of piece 2 (31 -> 44) overlaps EX of piece 1 (31 -> 42) and WB of piece 0 (29 -> 42);
  // the read and the write share the 64 GB/s memory, 32 GB/s each, above the 16 GB/s link.
  const isa::Program p = matmul_program(9, 4, 3);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult r = run(one_level(3, "600 B"), p, mode);
    CHECK(counter(r, 1, Counter::pieces) == 3);
    CHECK(counter(r, 1, Counter::load_bytes) == 96 + 48 + 48);
    CHECK(counter(r, 1, Counter::load_cycles) == 16 + 13 + 13);
    CHECK(counter(r, 1, Counter::unit_cycles) == 3 * 11);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 3 * 13);
    CHECK(r.cycles == 68);
  }
}

TEST_CASE("with one sub-block the same pieces run one after another") {
  // Same pieces (the static b takes 64 B, the single sub-block the other 192 B); each piece
  // waits for the previous write-back: 1 + (1 + 17 + 11 + 13) + 2 * (1 + 13 + 11 + 13) = 119.
  RunResult r = run(one_level(1, "256 B"), matmul_program(9, 4, 4), Mode::timing);
  CHECK(counter(r, 1, Counter::pieces) == 3);
  CHECK(r.cycles == 119);
}

TEST_CASE("the functional run computes what the reference computes") {
  const isa::Program p = matmul_program(9, 4, 4);
  RunResult r = run(one_level(3, "768 B"), p, Mode::functional);
  std::vector<uint8_t> ref = isa::run_reference(p, isa::OpTable::builtin());
  CHECK(std::equal(ref.begin() + 8192, ref.begin() + 8192 + 9 * 4 * 4, r.memory.begin() + 8192));
  CHECK(std::equal(ref.begin(), ref.end(), r.memory.begin(), r.memory.end()));
}

TEST_CASE("an output kept in the permutation table is not loaded by the next instruction") {
  // out = a x b, then out2 = out x b (each [8,8] f32, 256 B; one piece each in 3 KiB).
  // Instruction 1 as above: root ID 0 -> 1, leaf ID 1 -> 2, LD a + b 2 -> 44, EX 44 -> 83,
  // WB out 83 -> 109. The root decodes instruction 2 at 1 -> 2, but it reads out, which
  // instruction 1 writes: its LD waits for that write-back (109), then the leaf:
  //   ID 109 -> 110
  //   keep_outputs on:  out is still in the leaf's memory where its piece left it, b is static
  //                     from instruction 1: both hit, LD moves nothing (0 cycles);
  //                     EX 39: 110 -> 149; WB out2 26: 149 -> 175
  //   keep_outputs off: b hits, out is loaded: 256 B, 10 + 16 = 26: 110 -> 136;
  //                     EX 136 -> 175; WB 175 -> 201
  isa::Program p = matmul_program(8, 8, 8);
  isa::Instruction second = p.instructions[0];
  second.operands[0] = second.operands[2];
  second.operands[2] = isa::make_tensor(12288, isa::DType::f32, {1, 8, 8});
  p.instructions.push_back(second);
  p.footprint = 16384;
  for (Mode mode : {Mode::timing, Mode::functional}) {
    RunResult on = run(one_level(3, "3 KiB", "keep_outputs: true"), p, mode);
    CHECK(on.cycles == 175);
    CHECK(counter(on, 1, Counter::static_hits) == 2);
    CHECK(counter(on, 1, Counter::load_bytes) == 512);
    RunResult off = run(one_level(3, "3 KiB"), p, mode);
    CHECK(off.cycles == 201);
    CHECK(counter(off, 1, Counter::static_hits) == 1);
    CHECK(counter(off, 1, Counter::load_bytes) == 768);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

TEST_CASE("a program larger than the main memory is refused with both sizes") {
  isa::Program p = matmul_program(8, 8, 8);
  p.footprint = 2 << 20;
  CHECK_THROWS_WITH_AS(run(one_level(3, "3 KiB"), p, Mode::timing),
                       "one.yaml: program mm needs 2097152 bytes of main memory (plus room for "
                       "partial results) but the machine's root memory holds 1048576",
                       ConfigError);
}
