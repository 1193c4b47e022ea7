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

#include "isa/assembly.h"
#include "isa/decompose/cost_model.h"
#include "isa/error.h"
#include "isa/reference.h"
#include "sim/instruction_plan.h"
#include "sim/machine.h"
#include "sim/report.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

// The data-movement features off, as the tests derive their numbers without them unless they
// say otherwise; prefetch always off (tests/sim/test_overlap.cpp derives it).
const std::string kMovementOff = "keep_outputs: false\n    resident_partial_sums: false";

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
    prefetch: false
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

// The machine with the data-movement features off but resident partial sums as given.
std::string resident(int pipeline_depth, const std::string& capacity, bool on) {
  return one_level(pipeline_depth, capacity,
                   fmt::format("keep_outputs: false\n    resident_partial_sums: {}", on));
}

TEST_CASE("resident partial sums: four K pieces of one output tile, pipelined 3 deep") {
  // a[4,64] x b[64,4] -> out[4,4] f32: a 1024 B, b 1024 B, out 64 B, in 2112 B with N = 3.
  // The whole memory: a and b static, 2048 + 3 * 64 = 2240 > 2112; no halving saves bytes
  // (K: 3 * 1088; M or N: 1024 + 3 * 576), so the longest tile, K, is halved, then K again:
  // 3 * (256 + 256 + 64) = 1728 <= 2112, but nothing is static, so the sub-block plan decides:
  // 2112 / 3 = 704 B a sub-block, K halved twice (1088 -> 576 <= 704): 4 pieces of K = 16.
  // Each piece: LD a 256 + b 256 = 512 B: 10 + 32 = 42; EX 1 * 1 * 16 + 7 = 23; WB out 64 B:
  // 10 + 4 = 14; an accumulating piece that reloads out loads 576 B: 10 + 36 = 46.
  //   on: the tile stays in the accumulator; pieces 0-2 write nothing back (WB 0 cycles),
  //       none loads out, so no piece waits for another's write-back: LD back to back.
  //            ID        LD          EX          WB
  //   piece 0  1 -> 2    2 -> 44     44 -> 67    67 (nothing)
  //   piece 1  2 -> 3    44 -> 86    86 -> 109   109 (nothing)
  //   piece 2  3 -> 4    86 -> 128   128 -> 151  151 (nothing)
  //   piece 3  67 -> 68  128 -> 170  170 -> 193  193 -> 207
  //   (piece 3 waits for a sub-block: piece 0 retires at 67.)
  //   off: each piece past 0 accumulates onto out in the parent: its LD waits for the previous
  //        piece's write-back (37 cycles of hazard each), then loads 576 B.
  //   piece 0  1 -> 2    2 -> 44     44 -> 67    67 -> 81
  //   piece 1  2 -> 3    81 -> 127   127 -> 150  150 -> 164
  //   piece 2  3 -> 4    164 -> 210  210 -> 233  233 -> 247
  //   piece 3  81 -> 82  247 -> 293  293 -> 316  316 -> 330
  const isa::Program p = matmul_program(4, 64, 4);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult on = run(resident(3, "2112 B", true), p, mode);
    CHECK(counter(on, 1, Counter::pieces) == 4);
    CHECK(on.cycles == 207);
    CHECK(counter(on, 1, Counter::load_bytes) == 4 * 512);
    CHECK(counter(on, 1, Counter::store_bytes) == 64);
    CHECK(counter(on, 1, Counter::load_cycles) == 4 * 42);
    CHECK(counter(on, 1, Counter::writeback_cycles) == 14);
    CHECK(counter(on, 1, Counter::hazard_cycles) == 0);
    CHECK(counter(on, 1, Counter::resident_bytes) == 3 * 2 * 64);
    RunResult off = run(resident(3, "2112 B", false), p, mode);
    CHECK(counter(off, 1, Counter::pieces) == 4);
    CHECK(off.cycles == 330);
    CHECK(counter(off, 1, Counter::load_bytes) == 4 * 512 + 3 * 64);
    CHECK(counter(off, 1, Counter::store_bytes) == 4 * 64);
    CHECK(counter(off, 1, Counter::load_cycles) == 42 + 3 * 46);
    CHECK(counter(off, 1, Counter::writeback_cycles) == 4 * 14);
    CHECK(counter(off, 1, Counter::hazard_cycles) == 3 * 37);
    CHECK(counter(off, 1, Counter::resident_bytes) == 0);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

TEST_CASE("resident partial sums: two output tiles, each of two K pieces, issued tile by tile") {
  // a[8,16] x b[16,8] -> out[8,8] f32: a 512 B, b 512 B, out 256 B, in a 512 B memory with one
  // sub-block. Halving: K first (saves a/2 + b/2 = 512, M or N saves 384): 256 + 256 + 256 =
  // 768 > 512; then M, N and K each save 256 and M wins the tie (parallel, first): a[4,8]
  // 128 + b[8,8] 256 + out[4,8] 128 = 512. Pieces (m, k) of M 2 x K 2; nothing is static.
  // Each piece: LD a + b 384 B: 10 + 24 = 34; EX 1 * 2 * 8 + 7 = 23; WB out 128 B: 10 + 8 = 18;
  // an accumulating piece that reloads out loads 512 B: 10 + 32 = 42. One sub-block: a piece
  // is decoded when the one before has retired.
  //   on: issued (m0,k0) (m0,k1) (m1,k0) (m1,k1); the k0 pieces write nothing back.
  //   piece (m0,k0)  ID 1 -> 2      LD 2 -> 36      EX 36 -> 59
  //   piece (m0,k1)  ID 59 -> 60    LD 60 -> 94     EX 94 -> 117    WB 117 -> 135
  //   piece (m1,k0)  ID 135 -> 136  LD 136 -> 170   EX 170 -> 193
  //   piece (m1,k1)  ID 193 -> 194  LD 194 -> 228   EX 228 -> 251   WB 251 -> 269
  //   off: issued (k0,m0) (k0,m1) (k1,m0) (k1,m1), reduce dims outermost; every piece writes
  //   back, the k1 pieces load out again.
  //   piece (m0,k0)  ID 1 -> 2      LD 2 -> 36      EX 36 -> 59     WB 59 -> 77
  //   piece (m1,k0)  ID 77 -> 78    LD 78 -> 112    EX 112 -> 135   WB 135 -> 153
  //   piece (m0,k1)  ID 153 -> 154  LD 154 -> 196   EX 196 -> 219   WB 219 -> 237
  //   piece (m1,k1)  ID 237 -> 238  LD 238 -> 280   EX 280 -> 303   WB 303 -> 321
  const isa::Program p = matmul_program(8, 16, 8);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult on = run(resident(1, "512 B", true), p, mode);
    CHECK(counter(on, 1, Counter::pieces) == 4);
    CHECK(on.cycles == 269);
    CHECK(counter(on, 1, Counter::load_bytes) == 4 * 384);
    CHECK(counter(on, 1, Counter::store_bytes) == 2 * 128);
    CHECK(counter(on, 1, Counter::writeback_cycles) == 2 * 18);
    CHECK(counter(on, 1, Counter::resident_bytes) == 2 * 2 * 128);
    RunResult off = run(resident(1, "512 B", false), p, mode);
    CHECK(counter(off, 1, Counter::pieces) == 4);
    CHECK(off.cycles == 321);
    CHECK(counter(off, 1, Counter::load_bytes) == 4 * 384 + 2 * 128);
    CHECK(counter(off, 1, Counter::store_bytes) == 4 * 128);
    CHECK(counter(off, 1, Counter::writeback_cycles) == 4 * 18);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

TEST_CASE("a kept output that the next instruction accumulates onto is not loaded again") {
  // out = a x b, then out += a2 x b2 (accumulate), each as in "four K pieces of one output
  // tile" above (resident partial sums on, 2112 B, 3 sub-blocks): 4 pieces of K = 16, every
  // piece loading 512 B of a and b (42 cycles), EX 23, the last writing out back (64 B, 14).
  // Nothing is static, so the cyclic segment is the whole memory, from 0; the tile accumulates
  // in the first accumulator, at 0. Instruction 1 ends at 207 (that test's "on" column). The
  // root's instruction 2 reads out, which instruction 1 writes: it reaches the leaf when that
  // write-back is done, ID 207 -> 208.
  //   keep_outputs on: the leaf kept out at 0, where instruction 2's tile accumulates: piece 0
  //   loads only a2 and b2 (512 B, 42).
  //            ID          LD          EX          WB
  //   piece 0  207 -> 208  208 -> 250  250 -> 273  273 (nothing)
  //   piece 1  208 -> 209  250 -> 292  292 -> 315  315 (nothing)
  //   piece 2  209 -> 210  292 -> 334  334 -> 357  357 (nothing)
  //   piece 3  273 -> 274  334 -> 376  376 -> 399  399 -> 413
  //   off: piece 0 loads out too (576 B, 10 + 36 = 46), every later stage 4 cycles on:
  //   piece 0  207 -> 208  208 -> 254  254 -> 277
  //   piece 1  208 -> 209  254 -> 296  296 -> 319
  //   piece 2  209 -> 210  296 -> 338  338 -> 361
  //   piece 3  277 -> 278  338 -> 380  380 -> 403  403 -> 417
  isa::Program p = matmul_program(4, 64, 4);
  isa::Instruction second = p.instructions[0];
  second.operands[0].address = 12288;
  second.operands[1].address = 16384;
  second.attrs = {1};
  p.instructions.push_back(second);
  p.footprint = 20480;
  for (int64_t at : {12288, 16384}) {
    isa::DataSegment d = p.data[0];
    d.address = at;
    d.count = 256;
    d.seed = at;
    p.data.push_back(d);
  }
  const std::string keep = "keep_outputs: true\n    resident_partial_sums: true";
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult on = run(one_level(3, "2112 B", keep), p, mode);
    CHECK(counter(on, 1, Counter::pieces) == 8);
    CHECK(on.cycles == 413);
    CHECK(counter(on, 1, Counter::load_bytes) == 8 * 512);
    CHECK(counter(on, 1, Counter::load_cycles) == 8 * 42);
    CHECK(counter(on, 1, Counter::store_bytes) == 2 * 64);
    CHECK(counter(on, 1, Counter::resident_bytes) == 2 * 3 * 2 * 64 + 64);
    RunResult off = run(resident(3, "2112 B", true), p, mode);
    CHECK(off.cycles == 417);
    CHECK(counter(off, 1, Counter::load_bytes) == 8 * 512 + 64);
    CHECK(counter(off, 1, Counter::load_cycles) == 7 * 42 + 46);
    CHECK(counter(off, 1, Counter::resident_bytes) == 2 * 3 * 2 * 64);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

// The same machine with `keys` added to the leaf's link.
std::string with_link(const std::string& yaml, const std::string& keys) {
  const std::string plain = "latency: 10 ns}";
  const size_t at = yaml.find(plain);
  REQUIRE(at != std::string::npos);
  return std::string(yaml).replace(at, plain.size(), "latency: 10 ns, " + keys + "}");
}

// Split transactions on the leaf's link (link.pipelined).
std::string pipelined(const std::string& yaml) { return with_link(yaml, "pipelined: true"); }

TEST_CASE("a pipelined link requests a queued piece's load while the one before still moves") {
  // The three pieces of "three pieces overlap in the pipeline", on a pipelined link. A piece's
  // load is requested when it is queued for LD (at the end of its ID) and pays what is left of
  // the 10 cycles of latency when the channel takes it; a write-back likewise from when its EX
  // ended. Bytes as there: LD piece 0 96 B (6 cycles of data), pieces 1, 2 48 B (3);
  // EX 11; WB 36 B (3).
  //            ID       LD                          EX        WB
  //   piece 0  1 -> 2   2 -> 18   (asked at 2: 10)  18 -> 29  29 -> 42  (asked at 29: 10)
  //   piece 1  2 -> 3   18 -> 21  (asked at 3: 0)   29 -> 40  42 -> 53  (asked at 40: 8)
  //   piece 2  3 -> 4   21 -> 24  (asked at 4: 0)   40 -> 51  53 -> 64  (asked at 51: 8)
  const isa::Program p = matmul_program(9, 4, 3);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult r = run(pipelined(one_level(3, "600 B")), p, mode);
    CHECK(counter(r, 1, Counter::pieces) == 3);
    CHECK(counter(r, 1, Counter::load_cycles) == 16 + 3 + 3);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 13 + 11 + 11);
    CHECK(counter(r, 1, Counter::unit_cycles) == 3 * 11);
    CHECK(r.cycles == 64);
    if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, isa::OpTable::builtin()));
  }
}

TEST_CASE("a pipelined link hides no latency of a load that waits for a write-back") {
  // The four K pieces of "resident partial sums: four K pieces of one output tile".
  //   off: every piece past 0 reads the out tile the piece before writes back; it can be
  //        requested only once that write-back is done, when its LD starts anyway: each pays
  //        the whole latency and the run keeps its 330 cycles (piece 3, queued at 82, waits
  //        for piece 2's write-back at 247).
  //   on:  no piece reads what another writes; pieces 1 to 3 were queued long before the
  //        channel takes them (at 3, 4 and 68, after piece 0 retired at 67) and load in
  //        32 cycles:
  //            ID        LD          EX          WB
  //   piece 0  1 -> 2    2 -> 44     44 -> 67    67 (nothing)
  //   piece 1  2 -> 3    44 -> 76    76 -> 99    99 (nothing)
  //   piece 2  3 -> 4    76 -> 108   108 -> 131  131 (nothing)
  //   piece 3  67 -> 68  108 -> 140  140 -> 163  163 -> 177 (asked at 163: 10 + 4)
  const isa::Program p = matmul_program(4, 64, 4);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult off = run(pipelined(resident(3, "2112 B", false)), p, mode);
    CHECK(counter(off, 1, Counter::pieces) == 4);
    CHECK(off.cycles == 330);
    CHECK(counter(off, 1, Counter::load_cycles) == 42 + 3 * 46);
    CHECK(counter(off, 1, Counter::hazard_cycles) == 3 * 37);
    RunResult on = run(pipelined(resident(3, "2112 B", true)), p, mode);
    CHECK(counter(on, 1, Counter::pieces) == 4);
    CHECK(on.cycles == 177);
    CHECK(counter(on, 1, Counter::load_cycles) == 42 + 3 * 32);
    CHECK(counter(on, 1, Counter::writeback_cycles) == 14);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

// With posted write-backs as well (link.posted_writes).
std::string posted(const std::string& yaml) {
  return with_link(yaml, "pipelined: true, posted_writes: true");
}

TEST_CASE("a posted write-back frees its sub-block when its data has left and retires on landing") {
  // The pieces of "with one sub-block the same pieces run one after another" (LD piece 0
  // a 48 + b 64 = 112 B: 10 + 7 = 17; pieces 1, 2 a 48 B: 10 + 3 = 13; EX 11; WB out[3,4]
  // 48 B), with posted writes: WB sends the 48 B in 3 cycles and frees the one sub-block, so
  // the next piece's ID and LD start then; each write lands 10 cycles after its data left,
  // and the run ends when the last one has landed.
  //            ID         LD         EX         WB (sent)   lands
  //   piece 0  1 -> 2     2 -> 19    19 -> 30   30 -> 33    43
  //   piece 1  33 -> 34   34 -> 47   47 -> 58   58 -> 61    71
  //   piece 2  61 -> 62   62 -> 75   75 -> 86   86 -> 89    99
  // (119 cycles when WB holds each piece until its write has landed.)
  const isa::Program p = matmul_program(9, 4, 4);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    RunResult r = run(posted(one_level(1, "256 B")), p, mode);
    CHECK(counter(r, 1, Counter::pieces) == 3);
    CHECK(counter(r, 1, Counter::load_cycles) == 17 + 13 + 13);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 3 * 3);
    CHECK(counter(r, 1, Counter::store_bytes) == 3 * 48);
    CHECK(r.cycles == 99);
    if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, isa::OpTable::builtin()));
  }
  CHECK(run(pipelined(one_level(1, "256 B")), p, Mode::timing).cycles == 119);
  // "a pipelined link requests a queued piece's load while the one before still moves", its
  // writes posted: three sub-blocks, so no piece waits for one; each write lands when it did
  // there (sent at 32, 43, 54; landed at 42, 53, 64), the WB stage busy 3 cycles a piece.
  const isa::Program q = matmul_program(9, 4, 3);
  RunResult three = run(posted(one_level(3, "600 B")), q, Mode::timing);
  CHECK(counter(three, 1, Counter::writeback_cycles) == 3 * 3);
  CHECK(three.cycles == 64);
}

TEST_CASE("the rows of an accumulating conv pipeline: no row waits for another's write-back") {
  // A 1x1 conv over two images, [2,64,7,7] x [64,64] -> [2,64,7,7] f32, that accumulates onto
  // its output (as a piece of a reduce split above does), on one core of scale/leaves-0256
  // under `search`: weight and input 41 KiB with the 25 KiB output read and written do not fit
  // a third of 128 KiB, and the tiling cuts H into 7 one-row pieces, the weight static. Row h's
  // output tile is [2,64,1,7] (strides 3136, 49, 7, 1): no two rows share a byte, though the
  // channels of one image reach past the other image's first row, so no piece's load waits for
  // an earlier piece's write-back (each waited for the row before when that was taken for an
  // overlap: 4,973 cycles, 2,436 of them hazard stalls).
  const std::string yaml = R"(machine: core
root:
  clock: 1 GHz
  lfu_throughput: 64
  memory: {capacity: 1 MiB, bandwidth: 256 GB/s, latency: 2 ns, banks: 8}
levels:
  - name: core
    fanout: 1
    memory: {capacity: 128 KiB, bandwidth: 256 GB/s, latency: 1 ns, banks: 4}
    link: {bandwidth: 32 GB/s, latency: 5 ns, pipelined: true}
    leaf:
      matrix: {rows: 16, cols: 16}
      vector: {lanes: 32}
)";
  const isa::Program p = isa::assemble(
      ".program rows\n"
      ".footprint 90112\n"
      ".symbol output y f32@0xa400[2,64,7,7:3136,49,7,1]\n"
      "conv2d in=f32@0x0[2,1,64,7,7:3136,3136,49,7,1] w=f32@0x6400[1,64,64,1,1:4096,64,1,1,1] "
      "out=f32@0xa400[2,1,64,7,7:3136,3136,49,7,1] stride_h=1 stride_w=1 dilation_h=1 "
      "dilation_w=1 pad_h0=0 pad_h1=0 pad_w0=0 pad_w1=0 accumulate=1\n",
      "rows.fasm", isa::OpTable::builtin());
  const RunResult r =
      simulate(parse_machine_spec(yaml, "core.yaml"), isa::OpTable::builtin(), p, Mode::timing);
  CHECK(counter(r, 1, Counter::pieces) == 7);
  CHECK(counter(r, 1, Counter::hazard_cycles) == 0);
  CHECK(counter(r, 1, Counter::load_bytes) == 66560);  // 16 KiB weight once, 7 x 7 KiB rows
  CHECK(r.cycles == 2873);
}

TEST_CASE("the root's reuse marks stand where the level under it holds what they keep wanted") {
  // Two 16x16x16 matmuls read the same a and b (1 KiB each): the first marks both (bits 0 and
  // 1), which stay wanted across both instructions, 2 KiB. The one core of 4 KiB holds that in
  // half its memory; one of 3 KiB (1.5 KiB) does not, and the marks go. Under halving, none.
  isa::Program p = matmul_program(16, 16, 16);
  p.instructions.push_back(p.instructions[0]);
  p.instructions[1].operands[2] = isa::make_tensor(12288, isa::DType::f32, {1, 16, 16});
  auto marks = [&](const std::string& capacity, isa::Policy policy) {
    MachineSpec spec = parse_machine_spec(one_level(2, capacity), "one.yaml");
    spec.decomposer = policy;
    std::vector<uint32_t> reused;
    for (const ReuseMarks& m : root_reuse_marks(spec, isa::OpTable::builtin(), p))
      reused.push_back(m.reused);
    return reused;
  };
  CHECK(isa::reused_bytes_live(isa::OpTable::builtin(), p) == std::vector<uint64_t>{2048, 2048});
  CHECK(marks("4 KiB", isa::Policy::search) == std::vector<uint32_t>{3, 0});
  CHECK(marks("3 KiB", isa::Policy::search) == std::vector<uint32_t>{0, 0});
  CHECK(marks("4 KiB", isa::Policy::halving) == std::vector<uint32_t>{0, 0});
}

namespace {

// root -> mid -> core under `search`, one node each, the two memories' capacities given.
std::string mid_and_core(const std::string& mid, const std::string& core) {
  return fmt::format(R"(machine: two
decomposer: search
root:
  clock: 1 GHz
  lfu_throughput: 1
  memory: {{capacity: 1 MiB, bandwidth: 64 GB/s}}
levels:
  - name: mid
    fanout: 1
    lfu_throughput: 1
    memory: {{capacity: {}, bandwidth: 64 GB/s}}
    link: {{bandwidth: 16 GB/s, latency: 10 ns}}
  - name: core
    fanout: 1
    memory: {{capacity: {}, bandwidth: 64 GB/s}}
    link: {{bandwidth: 16 GB/s, latency: 10 ns}}
    leaf:
      matrix: {{rows: 4, cols: 4}}
      vector: {{lanes: 8}}
)",
                     mid, core);
}

// n 16x16x16 matmuls reading the same a and b (1 KiB each), each into its own out.
isa::Program alike_matmuls(int n) {
  isa::Program p = matmul_program(16, 16, 16);
  for (int i = 1; i < n; ++i) {
    p.instructions.push_back(p.instructions[0]);
    p.instructions[i].operands[2] =
        isa::make_tensor(8192 + 4096 * static_cast<uint64_t>(i), isa::DType::f32, {1, 16, 16});
  }
  p.footprint = 8192 + 4096 * static_cast<uint64_t>(n);
  return p;
}

}  // namespace

TEST_CASE("a recurring constant stays marked down to the deepest level that holds it") {
  // a and b are never written and the second matmul reads them alike: both recur (bits 0 and
  // 1), 2 KiB wanted across the first. The mid holds that in half of 4 KiB, a core of 4 KiB
  // too (recur_levels 2), one of 3 KiB not (the marks stop at the mid, which reads `reused`).
  // A mid of 3 KiB keeps no mark at all.
  const isa::Program p = alike_matmuls(2);
  auto marks = [&](const std::string& mid, const std::string& core) {
    const MachineSpec spec = parse_machine_spec(mid_and_core(mid, core), "two.yaml");
    return root_reuse_marks(spec, isa::OpTable::builtin(), p);
  };
  const ReuseMarks none;
  CHECK(marks("4 KiB", "4 KiB") == std::vector<ReuseMarks>{{3, 3, 2}, none});
  CHECK(marks("4 KiB", "3 KiB") == std::vector<ReuseMarks>{{3, 0, 0}, none});
  CHECK(marks("3 KiB", "4 KiB") == std::vector<ReuseMarks>{none, none});
}

TEST_CASE("a core told that an input recurs keeps it, and the next reader finds it") {
  // Three such matmuls, a mid of 8 KiB. A core of 4 KiB receives the marks of the inputs the
  // mid holds (recur_levels 2): a later matmul's core finds an input (1 KiB) that the one
  // before it kept whole, one hit. A core of 3 KiB receives none (the marks stop at the mid)
  // and finds nothing again.
  const isa::Program p = alike_matmuls(3);
  auto hits = [&](const std::string& core) {
    const RunResult r = simulate(parse_machine_spec(mid_and_core("8 KiB", core), "two.yaml"),
                                 isa::OpTable::builtin(), p, Mode::timing);
    return std::pair{counter(r, 2, Counter::static_hits), counter(r, 2, Counter::static_hit_bytes)};
  };
  CHECK(hits("4 KiB") == std::pair<uint64_t, uint64_t>{1, 1024});
  CHECK(hits("3 KiB") == std::pair<uint64_t, uint64_t>{0, 0});
}

TEST_CASE("a program larger than the main memory is refused with both sizes") {
  isa::Program p = matmul_program(8, 8, 8);
  p.footprint = 2 << 20;
  CHECK_THROWS_WITH_AS(run(one_level(3, "3 KiB"), p, Mode::timing),
                       "one.yaml: program mm needs 2097152 bytes of main memory (plus room for "
                       "partial results) but the machine's root memory holds 1048576",
                       ConfigError);
}

namespace {

// Options that pin the tiling of the program's first instruction's shape at level 0 (the mid).
SimOptions mid_tiling(const isa::Program& p, std::vector<int64_t> tile) {
  SimOptions o;
  isa::PinnedDecision pin;
  pin.level = 0;
  pin.instruction = isa::shape_key(p.instructions[0]);
  pin.tile = std::move(tile);
  o.pin = pin;
  return o;
}

// The machine of the held-partial-sums cases: root -> mid -> core, links 16 GB/s with 10 ns
// latency, a 4x4 array; `mid` and `core` are the two levels' own keys (each line indented as
// a level's), the core's hold_partial_sums `hold`.
std::string held_machine(const std::string& mid, const std::string& core, const std::string& hold) {
  return "machine: two\ndecomposer: halving\nroot:\n  clock: 1 GHz\n  lfu_throughput: 1\n"
         "  memory: {capacity: 1 MiB, bandwidth: 64 GB/s}\nlevels:\n  - name: mid\n"
         "    fanout: 1\n    lfu_throughput: 1\n" +
         mid +
         "    link: {bandwidth: 16 GB/s, latency: 10 ns}\n  - name: core\n    fanout: 1\n"
         "    memory: {capacity: 2112 B, bandwidth: 64 GB/s}\n"
         "    link: {bandwidth: 16 GB/s, latency: 10 ns}\n" +
         core + "    hold_partial_sums: " + hold +
         "\n    leaf:\n      matrix: {rows: 4, cols: 4}\n      vector: {lanes: 8}\n";
}

// a[4,k] x b[k,4] -> out[4,4] f32, a at 0, b at 0x1000, out at 0x2000.
isa::Program held_matmul(int k) {
  return isa::assemble(
      fmt::format(".program mm\n"
                  ".footprint 12288\n"
                  ".data random 0x0 f32 {0} seed=1 lo=-1 hi=1\n"
                  ".data random 0x1000 f32 {0} seed=2 lo=-1 hi=1\n"
                  ".symbol output out f32@0x2000[1,4,4:16,4,1]\n"
                  "matmul a=f32@0x0[1,4,{1}:{0},{1},1] b=f32@0x1000[1,{1},4:{0},4,1] "
                  "out=f32@0x2000[1,4,4:16,4,1] accumulate=0\n",
                  4 * k, k),
      "mm.fasm", isa::OpTable::builtin());
}

}  // namespace

TEST_CASE(
    "held partial sums: a leaf keeps its tile from one of its parent's K pieces to the next") {
  // a[4,128] x b[128,4] -> out[4,4] f32 on root -> mid -> core, each 2112 B, links 16 GB/s with
  // 10 ns latency, keep_outputs and resident partial sums on, no overlap or prefetch. The mid
  // node (one sub-block) halves K once: two pieces of a[4,64] + b[64,4] (2048 B, LD 10 + 128 =
  // 138), accumulating in its memory (its resident partial sums); each reaches the core as the
  // instruction of "four K pieces of one output tile" (4 pieces of K = 16: LD 42, EX 23, the
  // tile resident in the core; its job runs 1 -> 207 there, here from 140: ID 140 -> 141, EX
  // of its last piece 309 -> 332). The second piece's core job finds its tile in the core
  // either way (kept, or held): its first piece loads a and b only (42).
  //   hold on: the core keeps the tile after the first job (no write-back): done at 332; the
  //   mid's second piece ID 332 -> 333, LD 333 -> 471; core job 471 -> 663, whose last piece
  //   writes the tile back 663 -> 677; the mid writes out back 677 -> 691.          691 cycles
  //   hold off: the first core job writes its tile back 332 -> 346, every later time 14 cycles
  //   on.                                                                           705 cycles
  auto machine = [](const std::string& hold) {
    return held_machine(
        "    pipeline_depth: 1\n    memory: {capacity: 2112 B, bandwidth: 64 GB/s}\n"
        "    overlap: false\n    prefetch: false\n",
        "    overlap: false\n    prefetch: false\n", hold);
  };
  const isa::Program p = held_matmul(128);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult on = run(machine("true"), p, mode);
    CHECK(on.cycles == 691);
    CHECK(counter(on, 1, Counter::pieces) == 2);
    CHECK(counter(on, 2, Counter::pieces) == 8);
    CHECK(counter(on, 2, Counter::load_cycles) == 8 * 42);
    CHECK(counter(on, 2, Counter::store_bytes) == 64);
    CHECK(counter(on, 2, Counter::writeback_cycles) == 14);
    // Per job, pieces 0-2 keep the tile (twice 64 B each); the second job finds it (64 B) and
    // the first's last piece holds it (the 64 B write-back).
    CHECK(counter(on, 2, Counter::resident_bytes) == 2 * 3 * 2 * 64 + 64 + 64);
    const RunResult off = run(machine("false"), p, mode);
    CHECK(off.cycles == 705);
    CHECK(counter(off, 2, Counter::load_cycles) == 8 * 42);
    CHECK(counter(off, 2, Counter::store_bytes) == 2 * 64);
    CHECK(counter(off, 2, Counter::writeback_cycles) == 2 * 14);
    CHECK(counter(off, 2, Counter::resident_bytes) == 2 * 3 * 2 * 64 + 64);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
  // Default on; like every level boolean, other values name the file, line and key.
  std::string absent = machine("false");
  absent.erase(absent.find("    hold_partial_sums: false\n"), 29);
  CHECK(parse_machine_spec(absent, "two.yaml").levels[1].hold_partial_sums);
  CHECK_THROWS_WITH_AS(parse_machine_spec(machine("often"), "two.yaml"),
                       "two.yaml:22: levels[1].hold_partial_sums: expected true or false, got "
                       "'often'",
                       ConfigError);
}

TEST_CASE(
    "an epilogue's bias and residual are loaded by the instruction that reads them, not before") {
  // a[4,128] x b[128,4] + bias[4] + res[4,4] -> out[4,4] f32 (matmul_bias_add_act) on the
  // machine above, the mid two sub-blocks deep. The mid is pinned to tiles of M 2 and K 64:
  // pieces (M0, K0), (M0, K1), (M1, K0), (M1, K1), the first of each M tile with `epilogue`
  // clear, the second completing the sum. The mid keeps the bias (16 B) static and loads it
  // once; each residual tile (2 x 4 x 4 = 32 B) lies in the sub-block of the piece that reads
  // it, loaded by that piece alone: a 4 x 512 + b 4 x 1024 + 16 + 2 x 32 = 6,224 B.
  // The core takes each job whole (one piece; 1,728 B of its 2,112), so it holds no partial
  // sums across them: each job loads a and b (1,536 B), a job completing a tile reads back the
  // 32 B the first wrote, and its residual (32 B); the first job loads the bias, which the mid
  // holds in its static segment (the same view for all four: the others find it): 4 x 1536 +
  // 2 x 32 + 2 x 32 + 16 = 6,288 B. A job that clears `epilogue` gives the residual, which the
  // mid has not loaded for it, room only: loading it, the first job read 32 B of a sub-block
  // the mid had not filled (6,320 B).
  const std::string yaml = held_machine(
      "    pipeline_depth: 2\n    memory: {capacity: 4608 B, bandwidth: 64 GB/s}\n"
      "    overlap: false\n    prefetch: false\n",
      "    overlap: false\n    prefetch: false\n", "true");
  const isa::Program p = isa::assemble(
      ".program mmr\n"
      ".footprint 12800\n"
      ".data random 0x0 f32 512 seed=1 lo=-1 hi=1\n"
      ".data random 0x1000 f32 512 seed=2 lo=-1 hi=1\n"
      ".data random 0x2100 f32 4 seed=3 lo=-1 hi=1\n"
      ".data random 0x2200 f32 16 seed=4 lo=-1 hi=1\n"
      ".symbol output out f32@0x2000[1,4,4:16,4,1]\n"
      "matmul_bias_add_act a=f32@0x0[1,4,128:512,128,1] b=f32@0x1000[1,128,4:512,4,1] "
      "bias=f32@0x2100[4:1] res=f32@0x2200[1,4,4:16,4,1] out=f32@0x2000[1,4,4:16,4,1] "
      "accumulate=0 epilogue=1 act=none alpha=0.01 lo=0 hi=6\n",
      "mmr.fasm", isa::OpTable::builtin());
  const SimOptions o = mid_tiling(p, {1, 2, 4, 64});  // B, M, N, K
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult r =
        simulate(parse_machine_spec(yaml, "two.yaml"), isa::OpTable::builtin(), p, mode, o);
    CHECK(counter(r, 1, Counter::pieces) == 4);
    CHECK(counter(r, 1, Counter::load_bytes) == 4 * 512 + 4 * 1024 + 16 + 2 * 32);
    CHECK(counter(r, 2, Counter::pieces) == 4);
    CHECK(counter(r, 2, Counter::load_bytes) == 4 * 1536 + 2 * 32 + 2 * 32 + 16);
    // The bias, loaded by the first job because the mid holds it, is found by the other three;
    // given room only there, the second would load it and the fourth alone count a hit.
    CHECK(counter(r, 2, Counter::static_hits) == 3);
    CHECK(counter(r, 2, Counter::store_bytes) == 4 * 32);
    if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, isa::OpTable::builtin()));
  }
}

TEST_CASE(
    "held partial sums issued beside: the core's next instruction continues the held tile while "
    "the one before drains") {
  // a[4,256] x b[256,4] -> out[4,4] f32 on root -> mid -> core, links 16 GB/s with 10 ns
  // latency, resident partial sums, keep_outputs, overlap and prefetch on. The mid (4224 B, two
  // sub-blocks of 2112 B) cuts K into four pieces of 64 (a[4,64] + b[64,4], 2048 B: LD 10 +
  // 128 = 138), accumulating onto its own tile; it issues each piece's instruction to the core
  // beside the one before (overlap: 3 overlapped pieces). The core (2112 B) runs each as four K
  // pieces of 16 (a 256 B + b 256 B: LD 10 + 32 = 42; EX 16 + 4 + 4 - 1 = 23 on a 4x4 array).
  //   mid: piece 0 LD 2 -> 140, issued at 140; piece 1 LD 140 -> 278, issued at 278; piece 2
  //   waits for piece 0's sub-block (its core job ends at 332): ID 332 -> 333, LD 333 -> 471;
  //   piece 3 likewise after job 1 (ends 500): LD 501 -> 639. Each arrives before the core's
  //   LD channel reaches it, so the core loads its 16 pieces back to back: 141 -> 813.
  //   hold on: no job writes its tile back but the last, whose last piece runs EX 813 -> 836
  //   and WB 836 -> 850 (10 + 64 / 16); the mid writes out back 850 -> 864.      864 cycles
  //   The loads run back to back because each later job's first group takes the held
  //   accumulator over: were it to wait for the held group's retire (e.g. 332) before its ID,
  //   its LD would run 333 -> 375 instead of 309 -> 351, 24 later, three times: 936.
  //   hold off: each of the first three jobs writes its tile back after its last EX (e.g. 332
  //   -> 346), and the next job's first piece loads it again after its a and b (309 -> 351,
  //   then 351 -> 365: 14 more on the LD channel), three times.            864 + 3 x 14 = 906
  auto machine = [](const std::string& hold) {
    return held_machine(
        "    pipeline_depth: 2\n    memory: {capacity: 4224 B, bandwidth: 64 GB/s}\n", "", hold);
  };
  const isa::Program p = held_matmul(256);
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult on = run(machine("true"), p, mode);
    CHECK(on.cycles == 864);
    CHECK(counter(on, 1, Counter::pieces) == 4);
    CHECK(counter(on, 1, Counter::overlapped_pieces) == 3);
    CHECK(counter(on, 2, Counter::pieces) == 16);
    CHECK(counter(on, 2, Counter::load_cycles) == 16 * 42);
    CHECK(counter(on, 2, Counter::hazard_cycles) == 0);
    CHECK(counter(on, 2, Counter::store_bytes) == 64);
    CHECK(counter(on, 2, Counter::writeback_cycles) == 14);
    // Per job, pieces 0-2 keep the tile (twice 64 B each); jobs 1-3 find it held (64 B each)
    // and jobs 0-2 hold it instead of writing it back (64 B each).
    CHECK(counter(on, 2, Counter::resident_bytes) == 4 * 3 * 2 * 64 + 3 * 64 + 3 * 64);
    const RunResult off = run(machine("false"), p, mode);
    CHECK(off.cycles == 906);
    CHECK(counter(off, 1, Counter::overlapped_pieces) == 3);
    CHECK(counter(off, 2, Counter::load_cycles) == 16 * 42 + 3 * 14);
    CHECK(counter(off, 2, Counter::load_bytes) == 16 * 512 + 3 * 64);
    CHECK(counter(off, 2, Counter::store_bytes) == 4 * 64);
    CHECK(counter(off, 2, Counter::writeback_cycles) == 4 * 14);
    CHECK(counter(off, 2, Counter::resident_bytes) == 4 * 3 * 2 * 64);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}

TEST_CASE("held partial sums issued beside when the held tile outweighs the next piece's inputs") {
  // VGG-16's conv5_1 at batch 4 (3x3, 512 -> 512 channels at 14x14) on scale/leaves-0064, under
  // `search`. Each chip cuts Ci into three pieces across its 4 clusters, each cluster its pieces
  // into many that its 4 cores accumulate onto output tiles they hold from one to the next
  // (hold_partial_sums). A core's tile (its channels at 4 x 14 x 7 pixels) is larger than the
  // inputs of the cluster's next piece. A child that will find its earlier instruction's
  // output in its memory waits for it where that saves more bytes than the loads it could start
  // early; a child that holds its tile finds it either way, so it does not wait: the clusters
  // issue their pieces beside the ones before. Waiting, they issued none (0 overlapped pieces)
  // and the run took 177,614 cycles for the same bytes. The figures are the simulation's,
  // not derived by hand: no tiling halving would choose holds a tile of that weight.
  const MachineSpec spec =
      load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/scale/leaves-0064.yaml");
  const isa::Program p = isa::assemble(
      ".program conv5_1\n.footprint 14188544\n"
      "conv2d_bias_act in=f32@0x0[4,1,512,14,14:100352,100352,196,14,1] "
      "w=f32@0x200000[1,512,512,3,3:2359296,4608,9,3,1] bias=f32@0xb00000[1,512:512,1] "
      "out=f32@0xc00000[4,1,512,14,14:100352,100352,196,14,1] stride_h=1 stride_w=1 "
      "dilation_h=1 dilation_w=1 pad_h0=1 pad_h1=1 pad_w0=1 pad_w1=1 accumulate=0 epilogue=1 "
      "act=relu alpha=0.0001 lo=0 hi=6\n",
      "conv5_1.fasm", isa::OpTable::builtin());
  const RunResult r = simulate(spec, isa::OpTable::builtin(), p, Mode::timing);
  const std::vector<NodeStats> totals = level_totals(spec, r);
  auto per_level = [&](Counter c) {
    std::vector<uint64_t> v;
    for (const NodeStats& t : totals) v.push_back(t[c]);
    return v;
  };
  CHECK(r.cycles == 163326);
  CHECK(per_level(Counter::pieces) == std::vector<uint64_t>{1, 12, 1056, 8448});
  CHECK(per_level(Counter::overlapped_pieces) == std::vector<uint64_t>{0, 8, 752, 0});
  CHECK(per_level(Counter::load_bytes) == std::vector<uint64_t>{0, 22548480, 33558528, 106500096});
  CHECK(per_level(Counter::store_bytes) == std::vector<uint64_t>{0, 1605632, 1605632, 30507008});
}

TEST_CASE(
    "a child reads what an earlier piece of its parent's produced once that piece's children "
    "are done, not once it retires behind a write-back") {
  // a[32,2] x b[2,16] -> out[32,16] f32 on root -> mid -> core (16 KiB each), the mid's tiling
  // pinned to two output tiles of 16 rows (1 KiB each), each of two K pieces of 1, accumulating
  // in the mid's memory (resident partial sums, three sub-blocks). Mid link 16 GB/s with 100 ns
  // latency, not pipelined: a piece's a and b (128 B) load in 100 + 8 = 108, a tile writes
  // back in 100 + 64 = 164. Core link 16 GB/s, 10 ns; the core keeps no partial sums
  // (hold_partial_sums off): each job is one piece, EX 4 x 4 x 1 + 7 = 23, and writes its tile
  // back, 10 + 64 = 74; a job that accumulates loads a, b and the tile, 10 + 1152 / 16 = 82,
  // else a and b, 10 + 8 = 18.
  //   root ID 0 -> 1, mid ID 1 -> 2; mid LD of pieces 0-3: 2 -> 110 -> 218 -> 326 -> 434.
  //   job 0 (issued at 110): core ID 110 -> 111, LD 111 -> 129, EX 129 -> 152, WB 152 -> 226.
  //   job 1 accumulates onto the tile job 0 wrote: issued once job 0 has ended (226), ID -> 227,
  //     LD 227 -> 309, EX 309 -> 332, WB 332 -> 406; the mid writes tile 0 back 406 -> 570.
  //   job 2 (tile 1's first piece, issued beside at 326): ID -> 327, LD 327 -> 345, EX 345 ->
  //     368, WB after job 1's, 406 -> 480. Mid piece 2 is done at 480; it writes nothing back
  //     but waits in the mid's in-order WB stage until tile 0's write-back ends at 570.
  //   job 3 accumulates onto what job 2 wrote: issued at 480, ID -> 481; its load of the tile
  //     waits for mid piece 2's children (done at 480), not for its retire: LD 481 -> 563,
  //     EX 563 -> 586, WB 586 -> 660; the mid writes tile 1 back 660 -> 824.       824 cycles
  // Waiting for the retire instead, job 3 would load a and b 481 -> 499 and its tile only at
  // 570 -> 644 (71 hazard cycles), EX 644 -> 667, WB 667 -> 741, the mid's 741 -> 905.
  const std::string yaml =
      "machine: two\ndecomposer: halving\nroot:\n  clock: 1 GHz\n  lfu_throughput: 1\n"
      "  memory: {capacity: 1 MiB, bandwidth: 64 GB/s}\nlevels:\n  - name: mid\n"
      "    fanout: 1\n    lfu_throughput: 1\n    pipeline_depth: 3\n"
      "    memory: {capacity: 16 KiB, bandwidth: 64 GB/s}\n"
      "    link: {bandwidth: 16 GB/s, latency: 100 ns}\n  - name: core\n    fanout: 1\n"
      "    memory: {capacity: 16 KiB, bandwidth: 64 GB/s}\n"
      "    link: {bandwidth: 16 GB/s, latency: 10 ns}\n    hold_partial_sums: false\n"
      "    leaf:\n      matrix: {rows: 4, cols: 4}\n      vector: {lanes: 8}\n";
  const isa::Program p = isa::assemble(
      ".program mm\n.footprint 12288\n"
      ".data random 0x0 f32 64 seed=1 lo=-1 hi=1\n"
      ".data random 0x1000 f32 32 seed=2 lo=-1 hi=1\n"
      ".symbol output out f32@0x2000[1,32,16:512,16,1]\n"
      "matmul a=f32@0x0[1,32,2:64,2,1] b=f32@0x1000[1,2,16:32,16,1] "
      "out=f32@0x2000[1,32,16:512,16,1] accumulate=0\n",
      "mm.fasm", isa::OpTable::builtin());
  const SimOptions o = mid_tiling(p, {1, 16, 16, 1});  // B, M, N, K
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult r =
        simulate(parse_machine_spec(yaml, "two.yaml"), isa::OpTable::builtin(), p, mode, o);
    CHECK(r.cycles == 824);
    CHECK(counter(r, 1, Counter::pieces) == 4);
    CHECK(counter(r, 1, Counter::load_cycles) == 4 * 108);
    CHECK(counter(r, 1, Counter::writeback_cycles) == 2 * 164);
    CHECK(counter(r, 2, Counter::load_cycles) == 18 + 82 + 18 + 82);
    CHECK(counter(r, 2, Counter::hazard_cycles) == 0);
    CHECK(counter(r, 2, Counter::writeback_cycles) == 4 * 74);
    if (mode == Mode::functional) CHECK(r.memory == isa::run_reference(p, isa::OpTable::builtin()));
  }
}

TEST_CASE("a node keeps an instruction's whole output, and the next reads its parts from there") {
  // t = a x b, then out = t x c (a, t, out [8,4]; b, c [4,4]; f32) on root -> mid -> core,
  // links 16 GB/s with 10 ns latency, one sub-block per node, no overlap or prefetch, the mid's
  // tiling pinned to two pieces of four rows (each part of t one dense run of 64 B). The core
  // (keeping no outputs) runs each job as one piece, every input static: LD 10 + B / 16, EX
  // 4 x 1 x 1 + 7 = 11, WB of its 64 B 10 + 4 = 14; so does the mid. Both instructions alike:
  //   instruction 1: root ID 0 -> 1; mid piece 0: ID 1 -> 2, LD a rows + b 128 B 2 -> 20; core
  //   ID 20 -> 21, LD 21 -> 39, EX 39 -> 50, WB 50 -> 64; mid WB 64 -> 78. Piece 1 (after the
  //   write-back: one sub-block): ID 78 -> 79, LD its rows 79 -> 93; core ID 93 -> 94, LD its
  //   rows (b hits) 94 -> 108, EX 108 -> 119, WB 119 -> 133; mid WB 133 -> 147.
  //   instruction 2 reads t: the root issues it when instruction 1 has ended, 147.
  //   keep_outputs on: the mid held t whole (its pieces wrote there) and kept it; piece 0 loads
  //   c only (64 B) 148 -> 162; core ID 162 -> 163, LD its rows of t and c 163 -> 181, EX 181
  //   -> 192, WB 192 -> 206; mid WB 206 -> 220; piece 1 ID 220 -> 221 loads nothing; core ID
  //   221 -> 222, LD its rows (c hits) 222 -> 236, EX 236 -> 247, WB 247 -> 261; mid WB 261 ->
  //   275.                                                                          275 cycles
  //   keep_outputs off: piece 0 loads its rows of t and c, 148 -> 166; core 167 -> 210; mid WB
  //   210 -> 224; piece 1 ID 224 -> 225, LD its rows 225 -> 239, core 240 -> 279, mid WB 279 ->
  //   293.                                                                          293 cycles
  const auto machine = [](const char* keep) {
    return fmt::format(
        "machine: two\ndecomposer: halving\nroot:\n  clock: 1 GHz\n  lfu_throughput: 1\n"
        "  memory: {{capacity: 1 MiB, bandwidth: 64 GB/s}}\nlevels:\n  - name: mid\n"
        "    fanout: 1\n    lfu_throughput: 1\n    pipeline_depth: 1\n"
        "    memory: {{capacity: 16 KiB, bandwidth: 64 GB/s}}\n"
        "    link: {{bandwidth: 16 GB/s, latency: 10 ns}}\n    keep_outputs: {}\n"
        "    overlap: false\n    prefetch: false\n  - name: core\n    fanout: 1\n"
        "    pipeline_depth: 1\n    memory: {{capacity: 2112 B, bandwidth: 64 GB/s}}\n"
        "    link: {{bandwidth: 16 GB/s, latency: 10 ns}}\n    keep_outputs: false\n"
        "    overlap: false\n    prefetch: false\n"
        "    leaf:\n      matrix: {{rows: 4, cols: 4}}\n      vector: {{lanes: 8}}\n",
        keep);
  };
  const isa::Program p = isa::assemble(
      ".program chain\n.footprint 20480\n"
      ".data random 0x0 f32 32 seed=1 lo=-1 hi=1\n"
      ".data random 0x1000 f32 16 seed=2 lo=-1 hi=1\n"
      ".data random 0x3000 f32 16 seed=3 lo=-1 hi=1\n"
      ".symbol output out f32@0x4000[1,8,4:32,4,1]\n"
      "matmul a=f32@0x0[1,8,4:32,4,1] b=f32@0x1000[1,4,4:16,4,1] "
      "out=f32@0x2000[1,8,4:32,4,1] accumulate=0\n"
      "matmul a=f32@0x2000[1,8,4:32,4,1] b=f32@0x3000[1,4,4:16,4,1] "
      "out=f32@0x4000[1,8,4:32,4,1] accumulate=0\n",
      "chain.fasm", isa::OpTable::builtin());
  const SimOptions o = mid_tiling(p, {1, 4, 4, 4});  // B, M, N, K: two pieces of four rows
  for (Mode mode : {Mode::timing, Mode::functional}) {
    CAPTURE(mode == Mode::timing);
    const RunResult on = simulate(parse_machine_spec(machine("true"), "two.yaml"),
                                  isa::OpTable::builtin(), p, mode, o);
    CHECK(on.cycles == 275);
    CHECK(counter(on, 1, Counter::pieces) == 4);
    CHECK(counter(on, 1, Counter::load_bytes) == 128 + 64 + 64);
    CHECK(counter(on, 1, Counter::kept_read_bytes) == 2 * 64);
    CHECK(counter(on, 1, Counter::store_bytes) == 4 * 64);
    const RunResult off = simulate(parse_machine_spec(machine("false"), "two.yaml"),
                                   isa::OpTable::builtin(), p, mode, o);
    CHECK(off.cycles == 293);
    CHECK(counter(off, 1, Counter::load_bytes) == 2 * (128 + 64));
    CHECK(counter(off, 1, Counter::kept_read_bytes) == 0);
    if (mode == Mode::functional) {
      CHECK(on.memory == isa::run_reference(p, isa::OpTable::builtin()));
      CHECK(off.memory == on.memory);
    }
  }
}
