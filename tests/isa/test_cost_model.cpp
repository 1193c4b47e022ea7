// The search policy's cost model and its choices, derived by hand on a one-level leaf: 16 B per
// cycle over the link with 10 cycles of latency per transfer, a 4x4 MAC array (matmul cycles
// B * ceil(M/4) * ceil(N/4) * K + 7), 3 pieces in flight, 64 KiB of memory.
#include <doctest/doctest.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "isa/decompose/cost_model.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/sequential.h"
#include "isa/tensor.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

CostModel leaf_model(uint64_t capacity) {
  LevelCost c;
  c.name = "core";
  c.capacity = capacity;
  c.depth = 3;
  c.leaf = true;
  c.bytes_per_cycle = 16;
  c.latency_cycles = 10;
  for (auto& m : c.unit.matrix) m = {4, 4};
  c.unit.lanes = 8;
  c.unit.width = 4;
  return CostModel(Policy::search, {c});
}

Instruction matmul(int64_t M, int64_t K, int64_t N) {
  const OpDef& op = OpTable::builtin().get("matmul");
  return Instruction{
      op.opcode,
      {make_tensor(0, DType::f32, {1, M, K}), make_tensor(1 << 20, DType::f32, {1, K, N}),
       make_tensor(2 << 20, DType::f32, {1, M, N})},
      {0}};
}

// act(a[1,8,8] x b[1,8,8] + bias[8] (+ res[1,8,8] for matmul_bias_add_act)) with `epilogue`
// set or clear, not accumulating, act none.
Instruction fused_matmul(const OpDef& op, int64_t epilogue) {
  Instruction mm{
      op.opcode,
      {make_tensor(0, DType::f32, {1, 8, 8}), make_tensor(1 << 20, DType::f32, {1, 8, 8}),
       make_tensor(2 << 20, DType::f32, {8})},
      {0, epilogue, 0, 0, 0, 0}};
  for (size_t o = mm.operands.size(); o < op.operands.size(); ++o)
    mm.operands.push_back(make_tensor(static_cast<uint64_t>(o + 1) << 20, DType::f32, {1, 8, 8}));
  return mm;
}

// A node of level 0 over the leaf of leaf_model (the same link and memory): `fanout` children,
// `depth` sub-blocks, the children overlapping their instructions or not; its LFU combines 1
// element per cycle.
CostModel node_over_leaf(int fanout, int depth, bool overlap) {
  LevelCost node = leaf_model(64 << 10).level(0), leaf = node;
  node.leaf = false;
  node.name = "node";
  node.fanout = fanout;
  node.depth = depth;
  leaf.overlap = overlap;
  return CostModel(Policy::search, {node, leaf});
}

NodeBudget budget(const CostModel& model, uint64_t capacity) {
  NodeBudget b{capacity / 3 / 64 * 64, 1, "core"};
  b.capacity = capacity;
  b.depth = 3;
  b.model = &model;
  return b;
}

}  // namespace

TEST_CASE("the cost of a tiling, by hand") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  const CostModel model = leaf_model(64 << 10);
  const Instruction mm = matmul(8, 8, 8);
  // Whole: a and b (256 B each) stay whole, loaded once: 512 / 16 = 32; the piece then loads
  // nothing more (10, the latency), runs 1 * 2 * 2 * 8 + 7 = 39 and writes out back in
  // 10 + 256 / 16 = 26. 32 + 10 + 39 + 26 = 107.
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 8}) == 107.0);
  // Two pieces of 4 rows: b static (256 / 16 = 16), each piece loads its a tile (128 B: 10 + 8),
  // runs 1 * 2 * 8 + 7 = 23, writes 128 B (10 + 8); the second follows at the pace of the
  // slowest stage, 23. 16 + 18 + 23 + 18 + 23 = 98.
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 4, 8, 8}) == 98.0);
  // K split in two: the second piece accumulates onto out, reading it back (256 / 16 more), and
  // its load waits for the first piece's write-back: it runs alone. Nothing is static (each
  // piece has its own a and b tiles): each loads 256 B (10 + 16), runs 2 * 2 * 4 + 7 = 23,
  // writes 256 B (10 + 16). 26 + 23 + 26 + (26 + 16 + 23 + 26) = 166.
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}) == 166.0);
}

TEST_CASE("a posted write-back holds its sub-block for its data only") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  LevelCost c = leaf_model(64 << 10).level(0);
  c.depth = 1;
  const Instruction mm = matmul(8, 8, 8);
  // Four pieces of 2 rows, one sub-block: b static (256 / 16 = 16); each piece loads its a
  // tile (64 B: 10 + 4 = 14), runs 1 * 2 * 8 + 7 = 23 and writes 64 B back (10 + 4 = 14). The
  // first takes 14 + 23 + 14 = 51; each later one waits for the sub-block the one before
  // holds: 51 with the write's latency in it, 41 when the write is posted (its data, 4).
  CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, mm, {1, 2, 8, 8}) ==
        16.0 + 51 + 3 * 51);
  c.posted = true;
  CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, mm, {1, 2, 8, 8}) ==
        16.0 + 51 + 3 * 41);
}

TEST_CASE("a piece's load leaves out only the static inputs it reads") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul_bias_act");
  const CostModel model = leaf_model(64 << 10);
  // act(a[1,8,8] x b[1,8,8] + bias[8]), epilogue on, act none; dims B, M, N, K.
  const Instruction mm = fused_matmul(op, 1);
  // K split in two. The bias stays whole (static: 32 B, placed in 64, 64 / 16 = 4); a and b
  // have a tile per piece. The first piece does not complete the sum, so it neither reads the
  // bias nor runs the epilogue: it loads its a and b tiles, 128 B each (10 + 256 / 16 = 26),
  // runs the matmul 1 * 2 * 2 * 4 + 7 = 23 and writes out back (10 + 256 / 16 = 26). The second
  // reads out back (256 / 16 = 16 more) and runs alone: 26 + 16 + 23 + 26. The bias it does not
  // read is not subtracted from the a and b it does (that would load them in 22).
  // 4 + 26 + 23 + 26 + (26 + 16 + 23 + 26) = 170.
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}) == 170.0);
}

TEST_CASE("the last piece of a sum loads the epilogue's inputs") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul_bias_add_act");
  const CostModel model = leaf_model(64 << 10);
  // act(a[1,8,8] x b[1,8,8] + bias[8] + res[1,8,8]), epilogue on; dims B, M, N, K. Tiles of
  // 4 rows and half of K: 4 pieces, the two of K's first half first. The bias stays whole
  // (static: 32 B placed in 64, 64 / 16 = 4); res, split by rows, is not static. A piece of the
  // first half loads its a and b tiles (64 + 128 B: 10 + 12 = 22), runs the matmul
  // 1 * 1 * 2 * 4 + 7 = 15 and writes its out tile back (128 B: 10 + 8 = 18): 55; the second
  // follows at its load's pace, 22. A piece of the second half completes its sum: it reads
  // its out tile back (8) and its res tile (128 B, 8), and runs alone: 22 + 8 + 8 + 15 + 18.
  // 4 + 55 + 22 + 2 x 71 = 223 (207 if the residual were not loaded).
  const Instruction mm = fused_matmul(op, 1);
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 4, 8, 4}) == 223.0);
}

TEST_CASE("an instruction that completes a sum it did not continue keeps no tile for the next") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul_bias_act");
  LevelCost c = leaf_model(64 << 10).level(0);
  c.resident = c.hold = c.overlap = true;
  c.capacity = 64;  // no two instructions fit beside each other
  const CostModel model(Policy::search, {c});
  // act(a[1,8,8] x b[1,8,8] + bias[8]) with K split in two, in a run of its parent's pieces.
  // The bias stays whole (64 / 16 = 4). Each piece loads its a and b tiles (256 B: 10 + 16 =
  // 26) and runs the matmul 1 * 2 * 2 * 4 + 7 = 23; the second, resident, loads no out and
  // writes the sum back (10 + 16 = 26): its period is 26.
  Instruction mm = fused_matmul(op, 0);
  // Epilogue off: the start of a sum its parent's next piece continues, in the tile it holds:
  // its first piece overlaps the instruction before, a period (26). 4 + 26 + 26 = 56.
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}, inf, true) == 56.0);
  // Epilogue on and no accumulate: a whole sum; the parent's next piece starts a tile of its
  // own, so the first piece loads, runs and writes back in turn: 4 + (26 + 23 + 26) + 26 = 105.
  mm.attrs[1] = 1;
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}, inf, true) == 105.0);
  // The next whole sum goes on beside it when their static tiles and one cyclic segment (its
  // plan's, the same size: the rotation goes on) fit the memory at once: then 56 again.
  NodeBudget whole{0, 1, "core"};
  whole.capacity = 64 << 10;
  whole.depth = 3;
  const uint64_t beside =
      tiling_cost(op, ops, mm, {1, 8, 8, 4}, whole) + static_footprint(op, mm, {1, 8, 8, 4});
  for (const uint64_t capacity : {beside - 1, beside}) {
    c.capacity = capacity;
    CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}, inf, true) ==
          (capacity < beside ? 105.0 : 56.0));
  }
}

TEST_CASE("a resident output tile is loaded by the first piece of its sum only") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  LevelCost c = leaf_model(64 << 10).level(0);
  c.resident = true;
  const CostModel model(Policy::search, {c});
  Instruction mm = matmul(8, 8, 8);
  mm.attrs = {1};  // accumulate onto out's old value
  // K split in two, the output tile resident. Nothing is static. The first piece loads its a
  // and b tiles (128 B each) and out's old value (256 B): 10 + 512 / 16 = 42; runs 1 * 2 * 2 *
  // 4 + 7 = 23; writes out back, 10 + 256 / 16 = 26. The second finds out in local memory and
  // loads a and b only, 10 + 256 / 16 = 26, its stage the slowest (23 to run, 26 / 2 = 13 for
  // its share of the one write-back): 42 + 23 + 26 + 26 = 117 (with out loaded again, 133).
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 4}) == 117.0);
}

TEST_CASE("a leaf in a run pays a period for its first piece where the next goes on beside it") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  LevelCost c = leaf_model(64 << 10).level(0);
  c.overlap = true;
  const Instruction mm = matmul(8, 8, 8);
  // Two pieces of 4 rows, b static (256 B, 16 cycles); a piece loads its a tile (10 + 8 = 18),
  // runs 1 * 2 * 8 + 7 = 23, writes out (10 + 8 = 18). Alone: 16 + 18 + 23 + 18 + 23 = 98.
  // It needs 256 + 3 * (128 + 128) = 1024 B of memory: two such instructions fit 64 KiB, so in
  // a run the next one goes on beside it and the first piece costs the slowest stage, 23, as
  // the second does: 16 + 23 + 23 = 62.
  const CostModel roomy(Policy::search, {c});
  CHECK(roomy.tiling_cycles(0, op, ops, mm, {1, 4, 8, 8}) == 98.0);
  CHECK(roomy.tiling_cycles(0, op, ops, mm, {1, 4, 8, 8}, 1e9, true) == 62.0);
  // In 1536 B two do not fit: the next waits for this one to drain, so in a run too 98.
  c.capacity = 1536;
  const CostModel tight(Policy::search, {c});
  CHECK(tight.tiling_cycles(0, op, ops, mm, {1, 4, 8, 8}, 1e9, true) == 98.0);
  // Nor where its level does not overlap instructions.
  c.capacity = 64 << 10;
  c.overlap = false;
  CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, mm, {1, 4, 8, 8}, 1e9, true) ==
        98.0);
  // An accumulating instruction whose K is split in two, its output tile resident: one resident
  // group, 3 * (128 + 128 + 256) = 1536 B, two of which do not fit 2 KiB. Alone (as in "a
  // resident output tile is loaded by the first piece of its sum only"): 42 + 23 + 26 + 26 =
  // 117. Where the level holds partial sums, this instruction continues the tile the one
  // before kept in the same sub-blocks, and the next continues this one's: the first piece
  // finds the tile there, so it loads its a and b tiles alone (26, its slowest stage), and
  // the second costs the same: 26 + 26 = 52.
  Instruction acc = matmul(8, 8, 8);
  acc.attrs = {1};
  c.overlap = true;
  c.capacity = 2048;
  c.resident = true;
  CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, acc, {1, 8, 8, 4}, 1e9, true) ==
        117.0);
  c.hold = true;
  CHECK(CostModel(Policy::search, {c}).tiling_cycles(0, op, ops, acc, {1, 8, 8, 4}, 1e9, true) ==
        52.0);
}

TEST_CASE(
    "on a pipelined link a piece in the steady state pays the longer of data and latency, and "
    "pieces that all find a sub-block no latency after the first") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  LevelCost c = leaf_model(64 << 10).level(0);
  const CostModel plain(Policy::search, {c});
  c.pipelined = true;
  const CostModel pipelined(Policy::search, {c});
  // a[16,64] x b[64,4], 4 pieces of 4 rows. b stays whole (1024 B, 64 cycles), loaded once.
  // A piece loads its a tile (1024 B): 10 + 64 = 74; runs 1 * 1 * 1 * 64 + 7 = 71; writes
  // out[4,4] (64 B): 10 + 4 = 14. The first piece pays every latency.
  //   plain: the next pieces follow at the slowest stage, the load: 64 + 74 + 71 + 14 + 3 * 74
  //          = 445.
  //   pipelined: a load is requested when its piece is queued; of the 3 sub-blocks the pieces
  //          in LD and EX hold two, so one piece waits requested ahead, and at a period T a
  //          piece pays what is left of the latency after T: T = max(data, (data + latency) /
  //          2): 64 for a load, max(4, 14 / 2) = 7 for a write-back; the execution is now the
  //          slowest stage: 64 + 74 + 71 + 14 + 3 * 71 = 436.
  CHECK(plain.tiling_cycles(0, op, ops, matmul(16, 64, 4), {1, 4, 4, 64}) == 445.0);
  CHECK(pipelined.tiling_cycles(0, op, ops, matmul(16, 64, 4), {1, 4, 4, 64}) == 436.0);
  // a[12,8] x b[8,4], 3 pieces of 4 rows: no more than the sub-blocks. b (128 B: 8) stays
  // whole; a piece loads its a tile (128 B): 10 + 8 = 18, runs 1 * 1 * 1 * 8 + 7 = 15 and
  // writes 64 B: 10 + 4 = 14.
  //   plain: the next pieces follow at the slowest stage, the load: 8 + 18 + 15 + 14 + 2 * 18
  //          = 91.
  //   pipelined: all three are requested at the start, so the second and third loads' latency
  //          has passed when the load before them ends (8 each), and none waits for a
  //          sub-block; the execution is the slowest stage: 8 + 18 + 15 + 14 + 2 * 15 = 85.
  CHECK(plain.tiling_cycles(0, op, ops, matmul(12, 8, 4), {1, 4, 4, 8}) == 91.0);
  CHECK(pipelined.tiling_cycles(0, op, ops, matmul(12, 8, 4), {1, 4, 4, 8}) == 85.0);
}

TEST_CASE(
    "a child that overlaps its instructions costs a piece its period, the first its whole run") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  // A node of level 0 (64 KiB, 3 sub-blocks, 16 B per cycle, latency 10, one child) over the
  // leaf above, a[16,64] x b[64,4] in 4 pieces of 4 rows. At level 0 b stays whole (1024 B, 64
  // cycles); a piece loads its a tile (1024 B: 10 + 64 = 74) and writes out[4,4] (10 + 4 = 14).
  // Its one child runs the piece whole: it loads a and b (2048 B: 128), runs 1 * 1 * 1 * 64 +
  // 7 = 71 and writes 64 B (4), one piece in its sub-blocks, so in turn: 128 + 75 + 20 = 223,
  // the piece's execution alone.
  auto model = [](bool overlap, int depth) { return node_over_leaf(1, depth, overlap); };
  const Instruction piece = matmul(4, 64, 4);
  CHECK(model(true, 3).quick_cycles(1, op, ops, piece) == 223.0);
  // Overlapping its instructions, the child takes a piece in its longest stage, the load with
  // its latency (10 + 128 = 138; a turnover of its 3 sub-blocks, 223 / 3, is shorter).
  CHECK(model(true, 3).steady_cycles(1, op, ops, piece) == 138.0);
  // Without overlap each piece costs the child's whole run: 64 + 74 + 223 + 14 + 3 * 223 = 1044.
  CHECK(model(false, 3).tiling_cycles(0, op, ops, matmul(16, 64, 4), {1, 4, 4, 64}) == 1044.0);
  // With it the first piece does, the next three its period, 138 (the node's turnover of its
  // 3 sub-blocks, (74 + 223 + 14) / 3, is shorter): 64 + 74 + 223 + 14 + 3 * 138 = 789.
  CHECK(model(true, 3).tiling_cycles(0, op, ops, matmul(16, 64, 4), {1, 4, 4, 64}) == 789.0);
  // With 2 sub-blocks at the node the turnover binds: (74 + 223 + 14) / 2 = 155.5 a piece,
  // 64 + 74 + 223 + 14 + 3 * 155.5 = 841.5.
  CHECK(model(true, 2).tiling_cycles(0, op, ops, matmul(16, 64, 4), {1, 4, 4, 64}) == 841.5);
}

TEST_CASE("children that split a reduce dim run each piece alone, overlapping or not") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  // a[2,64] x b[64,1] at a node of two leaf children (as above, 16 B per cycle, latency 10, 3
  // sub-blocks; its LFU 1 element per cycle), in 2 pieces of one row. b stays whole (256 B:
  // 16); a piece loads its a row (10 + 256 / 16 = 26) and writes out[1,1] (10 + 4 / 16 =
  // 10.25). No parallel dim of a piece is longer than 1: its children split K, a[1,32] and
  // b[32,1] each (256 B: 16), run 1 * 1 * 1 * 32 + 7 = 39, write 4 B (0.25), in turn: 39 +
  // 16.25 + 20 = 75.25; the LFU adds the two partial sums (1 element: 1). A piece: 76.25.
  // Their partial sums share the node's scratch, so the next piece's children wait: each piece
  // costs 76.25 whether the children's level overlaps or not, 16 + 26 + 76.25 + 10.25 + 76.25
  // = 204.75 (charged the children's period, 39 + 1, it would be 168.5).
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    CHECK(
        node_over_leaf(2, 3, overlap).tiling_cycles(0, op, ops, matmul(2, 64, 1), {1, 1, 1, 64}) ==
        204.75);
  }
}

// sort in[1,64] -> out[1,64] (f32): N is a "reduce: merge" dim.
Instruction sort64() {
  const OpDef& op = OpTable::builtin().get("sort");
  return Instruction{
      op.opcode,
      {make_tensor(0, DType::f32, {1, 64}), make_tensor(1 << 20, DType::f32, {1, 64})},
      {0}};
}

TEST_CASE("sorted runs pipeline like independent pieces, and their merge follows the last") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("sort");
  // Two pieces of 32 keys: each loads 128 B (10 + 8 = 18), sorts (cdiv(32, 4) * clog2(32) = 40)
  // and writes 128 B back (18). They write apart, so the second follows at the pace of the
  // slowest stage, 40 (were it waiting for the first's write-back, as a piece accumulating onto
  // an output does, it would take another 76). Then the merge of the two runs: out (256 B)
  // loaded (10 + 16) and written back (10 + 16), merged in between on the unit (1 *
  // cdiv(64, 4) * clog2(2) = 16): 68. 76 + 40 + 68 = 184.
  CHECK(leaf_model(64 << 10).tiling_cycles(0, op, ops, sort64(), {1, 32}) == 184.0);
  // Whole: 256 B in (10 + 16), cdiv(64, 4) * clog2(64) = 96, 256 B out (26); no merge.
  CHECK(leaf_model(64 << 10).tiling_cycles(0, op, ops, sort64(), {1, 64}) == 148.0);
}

TEST_CASE("children that sort apart overlap a run's pieces, the LFU's merge beside them") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("sort");
  // A node of two leaf children (both as above; the node with 2 sub-blocks and an LFU of 1
  // element per cycle) sorts in[1,64] in two pieces of 32 keys. A piece loads and writes 128 B
  // (18 each way); its children sort 16 keys each (64 B in and out: 4 cycles each way; the
  // unit cdiv(16, 4) * clog2(16) = 16): a child alone 16 + (4 + 4) + 2 * 10 = 44; the LFU
  // merges their runs (32 elements: 32). A piece alone: 18 + (44 + 32) + 18 = 112.
  // The second piece follows at the slowest of its load (18), execution, write-back (18) and
  // its hold of a sub-block ((18 + 76 + 18) / 2 = 56). Execution: where the children's level
  // overlaps instructions, the children's period (16: their unit) beside the LFU's merge of
  // the piece before (32), the longer: 32; otherwise the two in turn, 76. Then the node merges
  // the two runs of 64 keys through its LFU (64) between loading out (10 + 16) and writing it
  // back (10 + 16): 116.
  for (bool overlap : {false, true}) {
    CAPTURE(overlap);
    CHECK(node_over_leaf(2, 2, overlap).tiling_cycles(0, op, ops, sort64(), {1, 32}) ==
          112.0 + (overlap ? 56 : 76) + 116);
  }
}

TEST_CASE("an input is reused when a later instruction reads its exact view before any write") {
  const OpTable& ops = OpTable::builtin();
  const uint16_t mm = ops.get("matmul").opcode, add = ops.get("eltwise").opcode;
  const TensorRef A = make_tensor(0, DType::f32, {1, 8, 8}),
                  B = make_tensor(256, DType::f32, {1, 8, 8}),
                  C = make_tensor(512, DType::f32, {1, 8, 8}),
                  D = make_tensor(768, DType::f32, {1, 8, 8}),
                  E = make_tensor(1024, DType::f32, {1, 8, 8});
  const TensorRef B6 = make_tensor(256, DType::f32, {1, 1, 1, 1, 8, 8});
  // The left and right halves of T[1,8,16]: their rows interleave, so their byte spans meet,
  // but they share no byte.
  const TensorRef T = make_tensor(2048, DType::f32, {1, 8, 16});
  const TensorRef L = T.slice(2, 0, 8), R = T.slice(2, 8, 8);
  const TensorRef G = make_tensor(4096, DType::f32, {1, 8, 8}),
                  K = make_tensor(5120, DType::f32, {1, 8, 8});
  Program p;
  p.instructions = {
      // B is read again by the next one: bit 1. A is read again only as a part (3): no bit.
      Instruction{mm, {A, B, C}, {0}},
      // B's next reader (3) comes after 2 writes over it; C is read by nobody later.
      Instruction{mm, {C, B, D}, {0}},
      // Its output overlaps its inputs: nothing of them survives it (4 reads B6 again).
      Instruction{add, {B6, B6, B6}, {0}},
      Instruction{mm, {make_tensor(0, DType::f32, {1, 4, 8}), B, E}, {0}},
      Instruction{add, {B6, B6, make_tensor(4352, DType::f32, {1, 1, 1, 1, 8, 8})}, {0}},
      // L and G are both read again by 7: bits 0 and 1; 6 writes only the right half of T.
      Instruction{mm, {L, G, make_tensor(4608, DType::f32, {1, 8, 8})}, {0}},
      Instruction{mm, {K, K, R}, {0}},
      Instruction{mm, {L, G, make_tensor(4864, DType::f32, {1, 8, 8})}, {0}}};
  CHECK(reused_inputs(ops, p) == std::vector<uint32_t>{2, 0, 0, 0, 0, 3, 0, 0});
  // What the marks keep wanted: B (256 B) from 0 to its reader 1; L and G (256 B each) from 5
  // to 7.
  CHECK(reused_bytes_live(ops, p) == std::vector<uint64_t>{256, 256, 0, 0, 0, 512, 512, 512});
}

TEST_CASE("a constant recurs alike when its next reader is the same op and shapes, same operand") {
  const OpTable& ops = OpTable::builtin();
  const uint16_t mm = ops.get("matmul").opcode, add = ops.get("eltwise").opcode;
  auto at = [](uint64_t a) { return make_tensor(a, DType::f32, {1, 8, 8}); };
  const TensorRef W = at(0), C = at(256), E = at(512);
  const TensorRef E6 = make_tensor(512, DType::f32, {1, 1, 1, 1, 8, 8});
  // The left and right halves of T[1,8,16]: their byte spans meet, they share no byte.
  const TensorRef T = make_tensor(2048, DType::f32, {1, 8, 16});
  const TensorRef L = T.slice(2, 0, 8), R = T.slice(2, 8, 8);
  Program p;
  p.instructions = {
      // W, never written, is read again by 1, alike, as its b: bit 1.
      Instruction{mm, {at(4096), W, at(8192)}, {0}},
      // Its next reader (2) reads a[1,4,8]: not alike.
      Instruction{mm, {at(4352), W, at(8448)}, {0}},
      Instruction{mm, {make_tensor(4608, DType::f32, {1, 4, 8}), W, at(8704)}, {0}},
      // 4 reads W as its a and C as its b, each the other operand than here.
      Instruction{mm, {C, W, at(8960)}, {0}}, Instruction{mm, {W, C, at(9216)}, {0}},
      // E is read again alike by 6, but 7 writes over it.
      Instruction{mm, {at(4864), E, at(9472)}, {0}}, Instruction{mm, {at(5120), E, at(9728)}, {0}},
      Instruction{add, {E6, E6, E6}, {0}},
      // L is read again alike by 10; 9 writes the right half of T, no byte of L.
      Instruction{mm, {L, at(5376), at(9984)}, {0}}, Instruction{mm, {at(5632), at(5888), R}, {0}},
      Instruction{mm, {L, at(6144), at(10240)}, {0}}};
  CHECK(reused_inputs(ops, p) == std::vector<uint32_t>{2, 2, 2, 3, 0, 2, 0, 0, 1, 0, 0});
  const std::vector<uint32_t> recurs = recurring_inputs(ops, p);
  CHECK(recurs == std::vector<uint32_t>{2, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0});
  // Of those alone: W (256 B) from 0 to its reader 1, L (256 B) from 8 to 10.
  CHECK(reused_bytes_live(ops, p, &recurs) ==
        std::vector<uint64_t>{256, 256, 0, 0, 0, 0, 0, 0, 256, 256, 256});
}

TEST_CASE("deeper than the root's level, only a recurring constant is found again") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  const LevelCost c = leaf_model(64 << 10).level(0);
  const CostModel model(Policy::search, {c, c, c});
  Instruction mm = matmul(8, 8, 8);
  mm.reused = 2;  // b
  // As above: 91 with b's 256 B not charged, 107 with them. Level 1 and 2 count on the
  // recurring marks alone, on the levels the root allows (2: levels 0 and 1).
  CHECK(model.tiling_cycles(1, op, ops, mm, {1, 8, 8, 8}) == 107.0);
  mm.recurs = 2;
  mm.recur_levels = 2;
  CHECK(model.tiling_cycles(1, op, ops, mm, {1, 8, 8, 8}) == 91.0);
  CHECK(model.tiling_cycles(2, op, ops, mm, {1, 8, 8, 8}) == 107.0);
}

TEST_CASE("under the root, a static input read again is not charged its load") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  const LevelCost c = leaf_model(64 << 10).level(0);
  const CostModel model(Policy::search, {c, c});
  Instruction mm = matmul(8, 8, 8);
  mm.reused = 2;  // b
  // As "the cost of a tiling, by hand", whole: 107 with a and b loaded once (32). At a node of
  // level 0 (under the root) b's 256 B are not charged: 107 - 16 = 91. One level deeper the
  // view lies in the parent's memory and is charged: 107.
  CHECK(model.tiling_cycles(0, op, ops, mm, {1, 8, 8, 8}) == 91.0);
  CHECK(model.tiling_cycles(1, op, ops, mm, {1, 8, 8, 8}) == 107.0);
}

TEST_CASE("a quick estimate leaves exposed what one piece of the fewest cannot overlap") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  // 8x8x8 in 64 KiB (sub-blocks of 21,824 B): 768 B moved, one piece, whose load (512 / 16 =
  // 32), execution (1 * 2 * 2 * 8 + 7 = 39) and write-back (256 / 16 = 16) run in turn, with a
  // latency each way: 39 + (32 + 16) / 1 + 20 = 107, the whole tiling's own estimate above.
  CHECK(leaf_model(64 << 10).quick_cycles(0, op, ops, matmul(8, 8, 8)) == 107.0);
  // 16x16x16 in 4 KiB (sub-blocks of 1,344 B): 3,072 B moved need 3 pieces. Execution is the
  // longest stage (1 * 4 * 4 * 16 + 7 = 263); of the load (2048 / 16 = 128) and the write-back
  // (1024 / 16 = 64) a third stays exposed: 263 + 192 / 3 + 20 = 347.
  CHECK(leaf_model(4 << 10).quick_cycles(0, op, ops, matmul(16, 16, 16)) == 347.0);
}

TEST_CASE("search picks the tiling of least estimated time, halving its own") {
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  const CostModel model = leaf_model(64 << 10);
  const NodeBudget b = budget(model, 64 << 10);
  NodeBudget halving = b;
  halving.model = nullptr;
  // 8x8x8 fits whole: halving keeps it whole, search pipelines two pieces of 4 rows (98 < 107).
  CHECK(choose_tiling(op, ops, matmul(8, 8, 8), halving) == std::vector<int64_t>{1, 8, 8, 8});
  CHECK(choose_tiling(op, ops, matmul(8, 8, 8), b) == std::vector<int64_t>{1, 4, 8, 8});
}

TEST_CASE("search reaches the best tiling that fits, found by enumerating them all") {
  // Every tile length per dim (M, N, K), legal (a reduce dim is split only with the earlier
  // ones at 1; matmul has one) and fitting the memory as the decomposer counts it.
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul");
  for (const auto& [M, K, N, capacity] :
       std::vector<std::array<int64_t, 4>>{{16, 16, 16, 64 << 10},
                                           {24, 40, 12, 8 << 10},
                                           {64, 8, 64, 16 << 10},
                                           {32, 64, 32, 12 << 10}}) {
    CAPTURE(M);
    CAPTURE(K);
    CAPTURE(N);
    const CostModel model = leaf_model(static_cast<uint64_t>(capacity));
    const NodeBudget b = budget(model, static_cast<uint64_t>(capacity));
    const Instruction mm = matmul(M, K, N);
    const std::vector<int64_t> chosen = choose_tiling(op, ops, mm, b);
    double best = 1e300;
    for (int64_t m = 1; m <= M; ++m)
      for (int64_t n = 1; n <= N; ++n)
        for (int64_t k = 1; k <= K; ++k) {
          const std::vector<int64_t> t{1, m, n, k};
          const uint64_t f = tiling_footprint(op, ops, mm, t, 1);
          const uint64_t st = std::min(f, static_footprint(op, mm, t));
          if (st + 3 * (f - st) > static_cast<uint64_t>(capacity)) continue;
          best = std::min(best, model.tiling_cycles(0, op, ops, mm, t));
        }
    const double got = model.tiling_cycles(0, op, ops, mm, chosen);
    MESSAGE("search ", got, ", best of all tilings ", best);
    CHECK(got <= best * 1.01);  // within 1% of the enumerated optimum of the same estimate
  }
}
