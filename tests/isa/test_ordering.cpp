// Reference semantics of sort, merge, topk and count on cases computed by hand (ties, +0/-0,
// NaN placement, fill entries, wrap-around), and directed decompositions that force serial
// pieces and fan-out at once, compared with the whole op bit for bit.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "isa/decompose/execute.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/error.h"
#include "isa/reference.h"
#include "tests/common/instruction_helpers.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

using fracsim::testing::instruction;
using fracsim::testing::run_reference;
const OpTable& ops() { return OpTable::builtin(); }

using fracsim::testing::get;
using fracsim::testing::put;
// f32 results compared as bits: +0/-0 and NaN payloads matter.
std::vector<uint32_t> get_bits(const std::vector<uint8_t>& mem, uint64_t addr, size_t n) {
  return get<uint32_t>(mem, addr, n);
}

constexpr uint32_t kPos0 = 0x00000000u, kNeg0 = 0x80000000u, kInf = 0x7f800000u,
                   kNegInf = 0xff800000u, kNanA = 0x7fc00001u, kNanB = 0xffc00002u;
constexpr uint32_t kOne = 0x3f800000u, kMinusOne = 0xbf800000u, kTwo = 0x40000000u,
                   kFour = 0x40800000u, kFive = 0x40a00000u;
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();

// Attribute vectors in declaration order (pinned by the first test).
std::vector<int64_t> sort_attrs(bool descending) { return {descending}; }
std::vector<int64_t> merge_attrs(int64_t runs, bool descending) { return {runs, descending}; }
std::vector<int64_t> topk_attrs(bool largest, bool accumulate) { return {largest, accumulate}; }
std::vector<int64_t> count_attrs(int64_t base, bool accumulate) { return {base, accumulate}; }

// sort or merge of in[M,N] at `in` into out[M,N] at `out` (the same address: in place).
Instruction rows(const std::string& op, DType t, int64_t m, int64_t n, uint64_t in, uint64_t out,
                 std::vector<int64_t> attrs) {
  return instruction(op, {make_tensor(in, t, {m, n}), make_tensor(out, t, {m, n})},
                     std::move(attrs));
}

// topk of in[M,N] at 0, idx[M,N] at 256, out[M,K] at 512, out_idx[M,K] at 768.
Instruction topk(DType t, int64_t m, int64_t n, int64_t k, bool largest, bool accumulate) {
  return instruction("topk",
                     {make_tensor(0, t, {m, n}), make_tensor(256, DType::i32, {m, n}),
                      make_tensor(512, t, {m, k}), make_tensor(768, DType::i32, {m, k})},
                     topk_attrs(largest, accumulate));
}
}  // namespace

TEST_CASE("ordering ops: the attribute layout the hand cases rely on") {
  auto names = [](const std::string& op) {
    std::vector<std::string> v;
    for (const AttrDef& a : ops().get(op).attributes) v.push_back(a.name);
    return v;
  };
  CHECK(names("sort") == std::vector<std::string>{"descending"});
  CHECK(names("merge") == std::vector<std::string>{"runs", "descending"});
  CHECK(names("topk") == std::vector<std::string>{"largest", "accumulate"});
  CHECK(names("count") == std::vector<std::string>{"base", "accumulate"});
  for (const char* op : {"sort", "merge", "topk", "count"}) CHECK(has_reference(op));
}

TEST_CASE("sort f32: stable, -0 == +0, NaN after +inf ascending and first descending") {
  std::vector<uint8_t> mem(256, 0);
  const std::vector<uint32_t> row = {kTwo, kPos0, kNanA,   kMinusOne, kNeg0,
                                     kInf, kTwo,  kNegInf, kNanB};
  put<uint32_t>(mem, 0, row);
  const Instruction asc = rows("sort", DType::f32, 1, 9, 0, 128, sort_attrs(false));
  run_reference(asc, mem);
  CHECK(get_bits(mem, 128, 9) ==
        std::vector<uint32_t>{kNegInf, kMinusOne, kPos0, kNeg0, kTwo, kTwo, kInf, kNanA, kNanB});
  // Descending reverses the key order, not the result: equal keys still keep input order.
  Instruction desc = asc;
  desc.attrs = sort_attrs(true);
  run_reference(desc, mem);
  CHECK(get_bits(mem, 128, 9) ==
        std::vector<uint32_t>{kNanA, kNanB, kInf, kTwo, kTwo, kPos0, kNeg0, kMinusOne, kNegInf});
  // In place: the same tensor as in and out; -0 now comes first, so it stays first.
  put<uint32_t>(mem, 0, {kNeg0, kOne, kPos0, kNanB, kNegInf});
  run_reference(rows("sort", DType::f32, 1, 5, 0, 0, sort_attrs(false)), mem);
  CHECK(get_bits(mem, 0, 5) == std::vector<uint32_t>{kNegInf, kNeg0, kPos0, kOne, kNanB});
}

TEST_CASE("sort integers: rows independent, duplicates, extremes, descending") {
  std::vector<uint8_t> mem(256, 0);
  SUBCASE("i8, two rows") {
    put<int8_t>(mem, 0, {3, -128, 3, 127, 0, -1, 5, 5, -7, 5});
    run_reference(rows("sort", DType::i8, 2, 5, 0, 64, sort_attrs(false)), mem);
    CHECK(get<int8_t>(mem, 64, 10) == std::vector<int8_t>{-128, 0, 3, 3, 127, -7, -1, 5, 5, 5});
    run_reference(rows("sort", DType::i8, 2, 5, 0, 64, sort_attrs(true)), mem);
    CHECK(get<int8_t>(mem, 64, 10) == std::vector<int8_t>{127, 3, 3, 0, -128, 5, 5, 5, -1, -7});
  }
  SUBCASE("i16 and i32") {
    put<int16_t>(mem, 0, {-300, 32767, -32768, 7});
    run_reference(rows("sort", DType::i16, 1, 4, 0, 64, sort_attrs(true)), mem);
    CHECK(get<int16_t>(mem, 64, 4) == std::vector<int16_t>{32767, 7, -300, -32768});
    put<int32_t>(mem, 0, {kI32Max, 0, kI32Min, -1});
    run_reference(rows("sort", DType::i32, 1, 4, 0, 64, sort_attrs(false)), mem);
    CHECK(get<int32_t>(mem, 64, 4) == std::vector<int32_t>{kI32Min, -1, 0, kI32Max});
  }
}

TEST_CASE("merge: 3 unequal runs in place, ties from the lower run") {
  std::vector<uint8_t> mem(256, 0);
  SUBCASE("f32 ascending, runs of 3, 3, 2") {
    put<uint32_t>(mem, 0, {kNeg0, kOne, kNanB, kPos0, kOne, kFive, kMinusOne, kNanA});
    const TensorRef t = make_tensor(0, DType::f32, {1, 8});
    run_reference(instruction("merge", {t, t}, merge_attrs(3, false)), mem);
    CHECK(get_bits(mem, 0, 8) ==
          std::vector<uint32_t>{kMinusOne, kNeg0, kPos0, kOne, kOne, kFive, kNanB, kNanA});
  }
  SUBCASE("f32 descending: NaN runs first, +0 of the lower run before -0") {
    put<uint32_t>(mem, 0, {kInf, kPos0, kNanA, kNeg0, kNegInf});  // runs of 2, 2, 1
    const TensorRef t = make_tensor(0, DType::f32, {1, 5});
    run_reference(instruction("merge", {t, t}, merge_attrs(3, true)), mem);
    CHECK(get_bits(mem, 0, 5) == std::vector<uint32_t>{kNanA, kInf, kPos0, kNeg0, kNegInf});
  }
  SUBCASE("i32 descending, two rows, runs of 3, 2, 2") {
    put<int32_t>(mem, 0, {9, 5, 1, 7, 5, 9, 0, 3, 2, 1, 6, 0, 4, -1});
    run_reference(rows("merge", DType::i32, 2, 7, 0, 64, merge_attrs(3, true)), mem);
    CHECK(get<int32_t>(mem, 64, 14) ==
          std::vector<int32_t>{9, 9, 7, 5, 5, 1, 0, 6, 4, 3, 2, 1, 0, -1});
  }
  SUBCASE("more runs than elements: the extra runs are empty") {
    put<int8_t>(mem, 0, {3, 1});
    const TensorRef t = make_tensor(0, DType::i8, {1, 2});
    run_reference(instruction("merge", {t, t}, merge_attrs(4, false)), mem);
    CHECK(get<int8_t>(mem, 0, 2) == std::vector<int8_t>{1, 3});
  }
  SUBCASE("runs below 1 are an error") {
    const TensorRef t = make_tensor(0, DType::i16, {1, 2});
    CHECK_THROWS_WITH_AS(run_reference(instruction("merge", {t, t}, merge_attrs(0, false)), mem),
                         "merge: runs = 0, must be at least 1", ConfigError);
  }
}

TEST_CASE("topk: value, then smaller index, largest and smallest") {
  std::vector<uint8_t> mem(1024, 0);
  put<float>(mem, 0, {1.0f, 3.0f, 3.0f, 2.0f, 3.0f});
  put<int32_t>(mem, 256, {10, 4, 2, 7, 9});
  run_reference(topk(DType::f32, 1, 5, 3, true, false), mem);
  CHECK(get<float>(mem, 512, 3) == std::vector<float>{3.0f, 3.0f, 3.0f});
  CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{2, 4, 9});
  run_reference(topk(DType::f32, 1, 5, 3, false, false), mem);
  CHECK(get<float>(mem, 512, 3) == std::vector<float>{1.0f, 2.0f, 3.0f});
  CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{10, 7, 2});
  SUBCASE("i16, two rows") {
    put<int16_t>(mem, 0, {-5, 8, 8, -32768, 0, 0, 32767, -1});
    put<int32_t>(mem, 256, {0, 1, 2, 3, 0, 1, 2, 3});
    run_reference(topk(DType::i16, 2, 4, 2, false, false), mem);
    CHECK(get<int16_t>(mem, 512, 4) == std::vector<int16_t>{-32768, -5, -1, 0});
    CHECK(get<int32_t>(mem, 768, 4) == std::vector<int32_t>{3, 0, 3, 0});
  }
  SUBCASE("+0 and -0 tie; equal indices then order by the value's bits") {
    put<uint32_t>(mem, 0, {kNeg0, kPos0, kPos0, kNanB, kNanA});
    put<int32_t>(mem, 256, {1, 1, 0, 5, 5});
    run_reference(topk(DType::f32, 1, 5, 5, true, false), mem);
    CHECK(get_bits(mem, 512, 5) == std::vector<uint32_t>{kNanA, kNanB, kPos0, kPos0, kNeg0});
    CHECK(get<int32_t>(mem, 768, 5) == std::vector<int32_t>{5, 5, 0, 1, 1});
  }
}

TEST_CASE("topk: fewer candidates than K fill with the worst value and index -1, last") {
  std::vector<uint8_t> mem(1024, 0);
  SUBCASE("f32 largest: a real -inf ranks before the fill") {
    put<uint32_t>(mem, 0, {kNegInf, kFive});
    put<int32_t>(mem, 256, {0, 1});
    run_reference(topk(DType::f32, 1, 2, 4, true, false), mem);
    CHECK(get_bits(mem, 512, 4) == std::vector<uint32_t>{kFive, kNegInf, kNegInf, kNegInf});
    CHECK(get<int32_t>(mem, 768, 4) == std::vector<int32_t>{1, 0, -1, -1});
  }
  SUBCASE("f32 smallest: a real NaN ranks before the +inf fill") {
    put<uint32_t>(mem, 0, {kNanA, kOne});
    put<int32_t>(mem, 256, {0, 1});
    run_reference(topk(DType::f32, 1, 2, 3, false, false), mem);
    CHECK(get_bits(mem, 512, 3) == std::vector<uint32_t>{kOne, kNanA, kInf});
    CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{1, 0, -1});
  }
  SUBCASE("i8: min for largest, max for smallest") {
    put<int8_t>(mem, 0, {4});
    put<int32_t>(mem, 256, {7});
    run_reference(topk(DType::i8, 1, 1, 2, true, false), mem);
    CHECK(get<int8_t>(mem, 512, 2) == std::vector<int8_t>{4, -128});
    CHECK(get<int32_t>(mem, 768, 2) == std::vector<int32_t>{7, -1});
    run_reference(topk(DType::i8, 1, 1, 2, false, false), mem);
    CHECK(get<int8_t>(mem, 512, 2) == std::vector<int8_t>{4, 127});
    CHECK(get<int32_t>(mem, 768, 2) == std::vector<int32_t>{7, -1});
  }
  SUBCASE("i32 with N = 0: all fill") {
    run_reference(topk(DType::i32, 1, 0, 2, false, false), mem);
    CHECK(get<int32_t>(mem, 512, 2) == std::vector<int32_t>{kI32Max, kI32Max});
    CHECK(get<int32_t>(mem, 768, 2) == std::vector<int32_t>{-1, -1});
  }
}

TEST_CASE("topk with accumulate: the old list competes, old fill entries rank last") {
  std::vector<uint8_t> mem(1024, 0);
  SUBCASE("f32 largest") {
    put<uint32_t>(mem, 512, {kFive, kTwo, kNegInf});
    put<int32_t>(mem, 768, {3, 8, -1});
    put<uint32_t>(mem, 0, {kTwo, kFour, kNegInf});
    put<int32_t>(mem, 256, {1, 9, 5});
    run_reference(topk(DType::f32, 1, 3, 3, true, true), mem);
    CHECK(get_bits(mem, 512, 3) == std::vector<uint32_t>{kFive, kFour, kTwo});
    CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{3, 9, 1});
  }
  SUBCASE("f32 smallest: a real NaN beats the old +inf fill entries") {
    put<uint32_t>(mem, 512, {kOne, kInf, kInf});
    put<int32_t>(mem, 768, {1, -1, -1});
    put<uint32_t>(mem, 0, {kNanA});
    put<int32_t>(mem, 256, {0});
    run_reference(topk(DType::f32, 1, 1, 3, false, true), mem);
    CHECK(get_bits(mem, 512, 3) == std::vector<uint32_t>{kOne, kNanA, kInf});
    CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{1, 0, -1});
  }
  SUBCASE("i32 smallest: a real max beats the old fill entries") {
    put<int32_t>(mem, 512, {-7, kI32Max, kI32Max});
    put<int32_t>(mem, 768, {0, -1, -1});
    put<int32_t>(mem, 0, {kI32Max});
    put<int32_t>(mem, 256, {6});
    run_reference(topk(DType::i32, 1, 1, 3, false, true), mem);
    CHECK(get<int32_t>(mem, 512, 3) == std::vector<int32_t>{-7, kI32Max, kI32Max});
    CHECK(get<int32_t>(mem, 768, 3) == std::vector<int32_t>{0, 6, -1});
  }
}

TEST_CASE("count: labels base..base+C-1, accumulate, i32 wrap-around") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("i8, two rows, base 1") {
    put<int8_t>(mem, 0, {1, 2, 2, 5, -1, 3, 0, 0, 3, 3, 3, 4});
    run_reference(
        instruction("count",
                    {make_tensor(0, DType::i8, {2, 6}), make_tensor(256, DType::i32, {2, 3})},
                    count_attrs(1, false)),
        mem);
    CHECK(get<int32_t>(mem, 256, 6) == std::vector<int32_t>{1, 2, 1, 0, 0, 3});
  }
  SUBCASE("i16, negative base, accumulate wraps") {
    put<int16_t>(mem, 0, {-300, -299, -300, 7});
    put<int32_t>(mem, 256, {kI32Max, 5});
    run_reference(
        instruction("count",
                    {make_tensor(0, DType::i16, {1, 4}), make_tensor(256, DType::i32, {1, 2})},
                    count_attrs(-300, true)),
        mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{kI32Min + 1, 6});
  }
  SUBCASE("i32: base + c is not wrapped to meet a label") {
    put<int32_t>(mem, 0, {kI32Max, kI32Min, kI32Max});
    run_reference(
        instruction("count",
                    {make_tensor(0, DType::i32, {1, 3}), make_tensor(256, DType::i32, {1, 2})},
                    count_attrs(kI32Max, false)),
        mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{2, 0});
  }
}

namespace {
// A deterministic pick from `pool` (the tests want many ties, not uniform values).
template <typename T>
std::vector<T> picks(std::mt19937& rng, const std::vector<T>& pool, size_t n) {
  std::vector<T> v(n);
  for (T& x : v) x = pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
  return v;
}

// Runs `in` whole and decomposed over `levels` on copies of `mem`: every byte must agree.
DecompositionStats check_decomposed(const Instruction& in, const std::vector<uint8_t>& mem,
                                    const std::vector<NodeBudget>& levels) {
  const OpDef& op = ops().get(in.opcode);
  std::vector<uint8_t> want = mem, got = mem;
  run_reference(in, want);
  DecompositionStats st;
  execute_decomposed(op, ops(), in, MemoryView{got.data(), got.size()}, levels, &st);
  CAPTURE(instruction_str(op, in));
  CHECK(got == want);
  return st;
}

// The serial plan of the top level and the parallel split of its first piece.
struct TopLevel {
  SequentialPlan plan;
  ParallelSplit split;
};
TopLevel top_level(const Instruction& in, const NodeBudget& b) {
  const OpDef& op = ops().get(in.opcode);
  TopLevel t{plan_sequential(op, ops(), in, b), {}};
  const LocalPiece lp = localize(op, t.plan.pieces.at(0), 0);
  t.split = parallel(op, ops(), lp.local, b.fanout, lp.bytes);
  return t;
}

const std::vector<uint32_t> kTies = {kPos0,   kNeg0, kNanA,     kNanB, kInf,
                                     kNegInf, kOne,  kMinusOne, kTwo};
}  // namespace

TEST_CASE("sort decomposed: serial runs merged by the finalize pass, children's by the LFU") {
  // f32 [1,48]: 384 bytes of tiles; a 256-byte sub-block takes N in 2 serial pieces of 24, each
  // sorted by 3 children (8 each, merged by the LFU), then one finalize merge of 2 runs.
  std::mt19937 rng(7);
  std::vector<uint8_t> mem(512, 0);
  put<uint32_t>(mem, 0, picks(rng, kTies, 48));
  const std::vector<NodeBudget> levels = {{256, 3, "level 0"}, {1024, 1, "leaf"}};
  for (bool descending : {false, true}) {
    CAPTURE(descending);
    const Instruction in = rows("sort", DType::f32, 1, 48, 0, 256, sort_attrs(descending));
    const TopLevel t = top_level(in, levels[0]);
    CHECK(t.plan.pieces.size() == 2);
    REQUIRE(t.plan.finalize.size() == 1);
    CHECK(t.plan.finalize[0].opcode == ops().get("merge").opcode);
    CHECK(t.split.children.size() == 3);
    REQUIRE(t.split.reductions.size() == 1);
    CHECK(t.split.reductions[0].attrs == merge_attrs(3, descending));
    const DecompositionStats st = check_decomposed(in, mem, levels);
    CHECK(st.reductions == 3);  // two LFU merges and the finalize merge
  }
}

TEST_CASE("merge decomposed: rows split serially and across children") {
  // i16 [6,7] in place, 3 sorted runs per row (3, 2, 2).
  std::vector<uint8_t> mem(256, 0);
  std::mt19937 rng(3);
  std::vector<int16_t> rows;
  for (int m = 0; m < 6; ++m)
    for (int len : {3, 2, 2}) {
      std::vector<int16_t> run = picks<int16_t>(rng, {-5, 0, 0, 2, 9}, len);
      std::sort(run.begin(), run.end());
      rows.insert(rows.end(), run.begin(), run.end());
    }
  put<int16_t>(mem, 0, rows);
  const TensorRef t = make_tensor(0, DType::i16, {6, 7});
  const Instruction in = instruction("merge", {t, t}, merge_attrs(3, false));
  const std::vector<NodeBudget> levels = {{128, 2, "level 0"}, {256, 1, "leaf"}};
  const TopLevel top = top_level(in, levels[0]);
  CHECK(top.plan.pieces.size() > 1);
  CHECK(top.split.children.size() == 2);
  const DecompositionStats st = check_decomposed(in, mem, levels);
  CHECK(st.leaf_runs > 2);
}

TEST_CASE("topk decomposed: serial accumulation and self-combined children, with fill entries") {
  // f32 [1,40], K=5: 512 bytes of tiles and 384 of scratch for 3 partial lists; a 640-byte
  // sub-block takes N in 4 serial pieces of 10, each split across 4 children of 3 or 2 elements
  // (fewer than K), whose partial lists carry fill entries into the self-combine.
  std::mt19937 rng(5);
  std::vector<uint8_t> ties(1024, 0);
  put<uint32_t>(ties, 0, picks(rng, kTies, 40));
  put<int32_t>(ties, 256, picks<int32_t>(rng, {-1, 0, 1, 2, 3, 7}, 40));  // duplicates, -1
  put<uint32_t>(ties, 512, {kOne, kPos0, kNeg0, kNegInf, kInf});
  put<int32_t>(ties, 768, {4, 2, 2, -1, -1});  // an old list with a fill entry
  // Mostly NaN: the best 5 smallest are 1, +inf and three NaNs, which must beat the +inf fill
  // entries of the all-NaN children's partial lists.
  std::vector<uint8_t> nans = ties;
  std::vector<uint32_t> v(40, kNanA);
  v[5] = kOne;
  v[30] = kInf;
  put<uint32_t>(nans, 0, v);
  put<uint32_t>(nans, 512, {kInf, kInf, kInf, kInf, kInf});
  put<int32_t>(nans, 768, {-1, -1, -1, -1, -1});  // an old list of fill entries only
  const std::vector<NodeBudget> levels = {{640, 4, "level 0"}, {1024, 1, "leaf"}};
  for (const std::vector<uint8_t>* mem : {&ties, &nans})
    for (bool largest : {true, false})
      for (bool accumulate : {false, true}) {
        CAPTURE(mem == &nans);
        CAPTURE(largest);
        CAPTURE(accumulate);
        const Instruction in = topk(DType::f32, 1, 40, 5, largest, accumulate);
        const TopLevel t = top_level(in, levels[0]);
        CHECK(t.plan.pieces.size() == 4);
        CHECK(t.plan.pieces.back().attrs == topk_attrs(largest, true));
        REQUIRE(t.split.children.size() == 4);
        CHECK(t.split.children[0].operands[0].shape[1] < 5);
        CHECK(t.split.reductions.size() == 3);  // self-combines of children 1..3
        check_decomposed(in, *mem, levels);
      }
  std::vector<uint8_t> whole = nans;
  run_reference(topk(DType::f32, 1, 40, 5, false, false), whole);
  CHECK(get_bits(whole, 512, 5) == std::vector<uint32_t>{kOne, kInf, kNanA, kNanA, kNanA});
}

TEST_CASE("count decomposed: C split across children with base offsets, N serially") {
  // i8 [1,200] into i32 [1,8]: 256 + 64 bytes of tiles; a 192-byte sub-block takes N in 2
  // serial pieces (the second accumulates), each split across 4 children by C (2 labels each).
  std::mt19937 rng(9);
  std::vector<uint8_t> mem(512, 0);
  put<int8_t>(mem, 0, picks<int8_t>(rng, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, -128}, 200));
  put<int32_t>(mem, 256, {5, -1, kI32Max, 0, 1, 2, 3, 4});
  const std::vector<NodeBudget> levels = {{192, 4, "level 0"}, {512, 1, "leaf"}};
  for (bool accumulate : {false, true}) {
    CAPTURE(accumulate);
    const Instruction in = instruction(
        "count", {make_tensor(0, DType::i8, {1, 200}), make_tensor(256, DType::i32, {1, 8})},
        count_attrs(3, accumulate));
    const TopLevel t = top_level(in, levels[0]);
    REQUIRE(t.plan.pieces.size() == 2);
    CHECK(t.plan.pieces[1].attrs == count_attrs(3, true));
    REQUIRE(t.split.children.size() == 4);
    CHECK(t.split.reductions.empty());
    for (size_t c = 0; c < 4; ++c)
      CHECK(t.split.children[c].attrs[0] ==
            t.plan.pieces[0].attrs[0] + 2 * static_cast<int64_t>(c));
    check_decomposed(in, mem, levels);
  }
}
