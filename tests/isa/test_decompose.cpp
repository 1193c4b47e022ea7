// Property tests of the decomposition engine: for random shapes, budgets and fan-outs, running
// the serial pieces, the children and the LFU reductions with the reference semantics gives what
// the whole instruction gives. Integer results are bit-exact; f32 results are bit-exact unless a
// reduce dim was split across children, where the sum is reassociated and each element may
// differ by at most 2*(K-1)*2^-24 * sum_k |a_mk * b_kn| (the classic bound for two orders of a
// float sum).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "isa/decompose/execute.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/error.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

const OpTable& ops() { return OpTable::builtin(); }

Instruction make_instr(const OpDef& op, std::vector<TensorRef> operands,
                       std::vector<int64_t> attrs) {
  Instruction in;
  in.opcode = op.opcode;
  in.operands = std::move(operands);
  in.attrs = std::move(attrs);
  return in;
}

struct Case {
  Instruction instr;
  std::vector<uint8_t> memory;
};

// Lays the operands out one after another and fills the inputs (and the output) with values.
Case random_case(const OpDef& op, std::mt19937_64& rng, DType in_t, DType out_t) {
  auto dim = [&](int lo, int hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::map<std::string, int64_t> ext;
  for (const DimDef& d : op.dims) ext[d.name] = dim(1, 24);
  if (op.name == "matmul") {
    ext["K"] = dim(1, 80);
    // A third of the cases are dot products: only the reduce dim can be split across children.
    if (dim(0, 2) == 0) ext["M"] = ext["N"] = 1;
  }
  Case c;
  uint64_t at = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    Shape s;
    for (const std::string& d : op.operands[o].dims) s.push_back(ext[d]);
    DType t = o + 1 == op.operands.size() ? out_t : in_t;
    TensorRef ref = make_tensor(at, t, s);
    // Sometimes broadcast the second eltwise operand along M (a bias row).
    if (op.name == "eltwise" && o == 1 && dim(0, 2) == 0) ref.strides[0] = 0;
    at = align_up(at + ref.stored_bytes(), 64);
    c.instr.operands.push_back(ref);
  }
  c.instr.opcode = op.opcode;
  for (const AttrDef& a : op.attributes)
    c.instr.attrs.push_back(a.type == AttrType::enumeration
                                ? dim(0, static_cast<int>(a.values.size()) - 1)
                                : (a.type == AttrType::boolean ? dim(0, 1) : a.default_value));
  c.memory.assign(at, 0);
  for (const TensorRef& t : c.instr.operands) {
    uint8_t* base = c.memory.data() + t.address;
    for (int64_t i = 0; i < t.stored_elements(); ++i) {
      if (t.dtype == DType::f32) {
        float v = std::uniform_real_distribution<float>(-2, 2)(rng);
        std::memcpy(base + 4 * i, &v, 4);
      } else {
        int64_t v = dim(-128, 127);
        std::memcpy(base + dtype_size(t.dtype) * i, &v, dtype_size(t.dtype));  // little endian
      }
    }
  }
  return c;
}

std::vector<NodeBudget> random_levels(std::mt19937_64& rng, const OpDef& op, const Case& c) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  // The leaf must hold the smallest piece: every operand at extent 1 in each dim, aligned.
  uint64_t min_leaf = op.operands.size() * kTileAlign;
  std::vector<NodeBudget> levels;
  int depth = pick(1, 3);
  uint64_t whole = c.memory.size();
  for (int l = 0; l < depth; ++l) {
    NodeBudget b;
    b.fanout = l + 1 == depth ? 1 : pick(1, 6);
    // Some budgets hold everything, most force splits.
    uint64_t cap = pick(0, 4) == 0 ? whole * 2 + 4096 : whole / (1u << pick(0, 6)) + min_leaf * 8;
    b.bytes = std::max<uint64_t>(cap, min_leaf * 8);
    b.where = fmt::format("level {}", l);
    levels.push_back(b);
  }
  return levels;
}

void check_equal(const OpDef& op, const Case& c, const std::vector<uint8_t>& got,
                 const std::vector<uint8_t>& want, bool reassociated) {
  const TensorRef& out = c.instr.operands.back();
  MemoryView g{const_cast<uint8_t*>(got.data()), got.size()};
  MemoryView w{const_cast<uint8_t*>(want.data()), want.size()};
  int64_t mismatches = 0;
  for (int64_t m = 0; m < out.shape[0]; ++m)
    for (int64_t n = 0; n < out.shape[1]; ++n) {
      int64_t off = m * out.strides[0] + n * out.strides[1];
      double gv = load_element(out, off, g), wv = load_element(out, off, w);
      if (!reassociated || out.dtype != DType::f32) {
        if (std::memcmp(&got[out.address + off * dtype_size(out.dtype)],
                        &want[out.address + off * dtype_size(out.dtype)],
                        dtype_size(out.dtype)) != 0)
          ++mismatches;
        continue;
      }
      const TensorRef &a = c.instr.operands[0], &b = c.instr.operands[1];
      double mag = 0;
      for (int64_t k = 0; k < a.shape[1]; ++k)
        mag += std::fabs(load_element(a, m * a.strides[0] + k * a.strides[1], w) *
                         load_element(b, k * b.strides[0] + n * b.strides[1], w));
      if (c.instr.attrs[0]) mag += std::fabs(wv);
      double bound = 2.0 * static_cast<double>(a.shape[1]) * std::ldexp(1.0, -24) * mag;
      if (std::fabs(gv - wv) > bound) ++mismatches;
    }
  CHECK_MESSAGE(mismatches == 0, op.name, " ", tensor_str(out));
}

void property(const std::string& name, DType in_t, DType out_t, uint64_t seed) {
  const OpDef& op = ops().get(name);
  std::mt19937_64 rng(seed);
  int split_serially = 0, split_across_children = 0, reduced = 0;
  for (int i = 0; i < 100; ++i) {
    Case c = random_case(op, rng, in_t, out_t);
    std::vector<NodeBudget> levels = random_levels(rng, op, c);
    std::vector<uint8_t> want = c.memory, got = c.memory;
    execute_reference(op, c.instr, MemoryView{want.data(), want.size()});
    DecompositionStats st;
    execute_decomposed(op, ops(), c.instr, MemoryView{got.data(), got.size()}, levels, &st);
    CAPTURE(i);
    check_equal(op, c, got, want, st.reductions > 0);
    split_serially += st.pieces > static_cast<int64_t>(levels.size());
    split_across_children += st.leaf_runs > 1;
    reduced += st.reductions > 0;
    // Inputs are never written.
    for (size_t o = 0; o + 1 < c.instr.operands.size(); ++o) {
      auto [lo, hi] = c.instr.operands[o].byte_span();
      CHECK(std::memcmp(got.data() + lo, c.memory.data() + lo, hi - lo) == 0);
    }
  }
  // The random budgets and fan-outs really exercise the decomposer.
  CHECK(split_serially > 50);
  CHECK(split_across_children > 50);
  if (op.dim_index("K") >= 0) CHECK(reduced > 10);
  MESSAGE(name, ": ", split_serially, " split serially, ", split_across_children,
          " across children, ", reduced, " with LFU reductions");
}

}  // namespace

TEST_CASE("decomposition equals the whole op: matmul f32") { property("matmul", DType::f32, DType::f32, 1); }
TEST_CASE("decomposition equals the whole op: matmul i8") { property("matmul", DType::i8, DType::i32, 2); }
TEST_CASE("decomposition equals the whole op: matmul i16") { property("matmul", DType::i16, DType::i32, 3); }
TEST_CASE("decomposition equals the whole op: eltwise f32") { property("eltwise", DType::f32, DType::f32, 4); }
TEST_CASE("decomposition equals the whole op: eltwise i8") { property("eltwise", DType::i8, DType::i8, 5); }
TEST_CASE("decomposition equals the whole op: activation f32") { property("activation", DType::f32, DType::f32, 6); }
TEST_CASE("decomposition equals the whole op: activation i16") { property("activation", DType::i16, DType::i16, 7); }

TEST_CASE("every serial piece fits its sub-block") {
  const OpDef& op = ops().get("matmul");
  std::mt19937_64 rng(11);
  for (int i = 0; i < 100; ++i) {
    Case c = random_case(op, rng, DType::f32, DType::f32);
    for (const NodeBudget& b : random_levels(rng, op, c))
      for (const Instruction& p : sequential(op, ops(), c.instr, b))
        REQUIRE(piece_footprint(op, ops(), p, b.fanout) <= b.bytes);
  }
}

TEST_CASE("sequential split of a matmul, by hand") {
  // a[8,16] x b[16,8] f32: tiles of 512 + 512 + 256 bytes = 1280 > 1024. Halving M saves
  // 256+128 = 384, N the same, K 256+256 = 512: K is halved (640+... fits: 256+256+256 = 768).
  const OpDef& op = ops().get("matmul");
  Instruction in = make_instr(op, {make_tensor(0, DType::f32, {8, 16}),
                                   make_tensor(512, DType::f32, {16, 8}),
                                   make_tensor(1024, DType::f32, {8, 8})}, {0});
  auto pieces = sequential(op, ops(), in, NodeBudget{1024, 1, "leaf"});
  REQUIRE(pieces.size() == 2);
  CHECK(tensor_str(pieces[0].operands[0]) == "f32@0x0[8,8:16,1]");
  CHECK(tensor_str(pieces[1].operands[0]) == "f32@0x20[8,8:16,1]");
  CHECK(tensor_str(pieces[1].operands[1]) == "f32@0x300[8,8:8,1]");
  CHECK(pieces[0].attrs[0] == 0);
  CHECK(pieces[1].attrs[0] == 1);  // the second K piece accumulates
}

TEST_CASE("parallel split prefers parallel dims and balances remainders") {
  const OpDef& op = ops().get("matmul");
  Instruction in = make_instr(op, {make_tensor(0, DType::f32, {10, 4}),
                                   make_tensor(4096, DType::f32, {4, 3}),
                                   make_tensor(8192, DType::f32, {10, 3})}, {0});
  ParallelSplit s = parallel(op, ops(), in, 4, 1 << 20);
  // M=10,N=3 on 4 children: M in 4 parts gives max work 3*3*4 = 36; M2xN2 gives 5*2*4 = 40.
  REQUIRE(s.children.size() == 4);
  CHECK(s.reductions.empty());
  CHECK(s.scratch_bytes == 0);
  CHECK(s.children[0].operands[0].shape == Shape{3, 4});
  CHECK(s.children[1].operands[0].shape == Shape{3, 4});
  CHECK(s.children[2].operands[0].shape == Shape{2, 4});
  CHECK(s.children[3].operands[0].shape == Shape{2, 4});
  CHECK(s.children[2].operands[2].address == 8192 + 6 * 3 * 4);
}

TEST_CASE("parallel split falls back to the reduce dim with LFU reductions") {
  const OpDef& op = ops().get("matmul");
  Instruction in = make_instr(op, {make_tensor(0, DType::f32, {1, 10}),
                                   make_tensor(64, DType::f32, {10, 1}),
                                   make_tensor(128, DType::f32, {1, 1})}, {1});
  ParallelSplit s = parallel(op, ops(), in, 3, 1024);
  REQUIRE(s.children.size() == 3);
  CHECK(s.children[0].operands[0].shape == Shape{1, 4});
  CHECK(s.children[1].operands[0].shape == Shape{1, 3});
  CHECK(s.children[0].attrs[0] == 1);  // child 0 keeps accumulate and writes the output
  CHECK(s.children[1].attrs[0] == 0);
  CHECK(s.children[0].operands[2].address == 128);
  CHECK(s.children[1].operands[2].address == 1024);
  CHECK(s.children[2].operands[2].address == 1024 + 64);
  CHECK(s.scratch_bytes == 128);
  REQUIRE(s.reductions.size() == 2);
  CHECK(s.reductions[0].operands[1].address == 1024);
  CHECK(s.reductions[1].operands[1].address == 1024 + 64);
}

TEST_CASE("a piece that can never fit is an error naming level, op and operand") {
  const OpDef& op = ops().get("matmul");
  Instruction in = make_instr(op, {make_tensor(0, DType::f32, {4, 4}),
                                   make_tensor(64, DType::f32, {4, 4}),
                                   make_tensor(128, DType::f32, {4, 4})}, {0});
  CHECK_THROWS_WITH_AS(sequential(op, ops(), in, NodeBudget{100, 1, "level 2 (core)"}),
                       "level 2 (core): matmul: the smallest piece needs 192 bytes but a cyclic "
                       "sub-block holds 100 (operand a alone needs 4 bytes)",
                       ConfigError);
}
