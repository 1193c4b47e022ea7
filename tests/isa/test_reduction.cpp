// Reference semantics of reduce and distance on small cases computed by hand, and the rules
// that make their decompositions exact: integer wrap-around, mean term by term, max/min from
// the first term, NaN propagation, empty reductions.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "isa/decompose/execute.h"
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

using fracsim::testing::bits_of;
using fracsim::testing::float_of;
using fracsim::testing::get;
using fracsim::testing::put;

// reduce's attributes in declaration order (pinned by the first test): fn, divisor, accumulate.
enum Fn : int64_t { kSum, kMean, kMax, kMin, kProd };
std::vector<int64_t> red(Fn fn, int64_t accumulate = 0, int64_t divisor = 1) {
  return {fn, divisor, accumulate};
}

// A reduction of `n` contiguous terms into each of `rows` outputs: in[rows,1,1,n,1,1] at 0,
// out[rows,1,1] at 256.
Instruction row_reduce(DType in_t, DType out_t, int64_t rows, int64_t n,
                       std::vector<int64_t> attrs) {
  return instruction(
      "reduce",
      {make_tensor(0, in_t, {rows, 1, 1, n, 1, 1}), make_tensor(256, out_t, {rows, 1, 1})},
      std::move(attrs));
}
}  // namespace

TEST_CASE("reduce: the attribute layout the hand cases rely on") {
  const OpDef& op = ops().get("reduce");
  REQUIRE(op.attributes.size() == 3);
  CHECK(op.attributes[0].values == std::vector<std::string>{"sum", "mean", "max", "min", "prod"});
  CHECK(op.attributes[0].float_only == std::vector<std::string>{"mean"});
  CHECK(op.attributes[1].name == "divisor");
  CHECK(op.attributes[2].name == "accumulate");
  CHECK(has_reference("reduce"));
  CHECK(has_reference("distance"));
}

TEST_CASE("reduce sum: integers widen to i32 and wrap around") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("i32 past INT32_MAX") {
    put<int32_t>(mem, 0, {std::numeric_limits<int32_t>::max(), 1, 5});
    run_reference(row_reduce(DType::i32, DType::i32, 1, 3, red(kSum)), mem);
    CHECK(get<int32_t>(mem, 256, 1)[0] == std::numeric_limits<int32_t>::min() + 5);
  }
  SUBCASE("i8 does not saturate at the input's range") {
    put<int8_t>(mem, 0, {127, 127, 127, 127, -128, -128, -128, 1});
    run_reference(row_reduce(DType::i8, DType::i32, 2, 4, red(kSum)), mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{508, -383});
  }
  SUBCASE("i16 with accumulate starts from the old output") {
    put<int16_t>(mem, 0, {-300, 200});
    put<int32_t>(mem, 256, {10});
    run_reference(row_reduce(DType::i16, DType::i32, 1, 2, red(kSum, 1)), mem);
    CHECK(get<int32_t>(mem, 256, 1)[0] == -90);
  }
}

TEST_CASE("reduce prod from 1 or the old output, i32 wrapping, and an f64 sum in double") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("f32") {
    put<float>(mem, 0, {1.5f, -2.0f, 4.0f, 0.5f, 3.0f, -1.0f});
    put<float>(mem, 256, {-7.0f, -7.0f});  // overwritten: accumulate is off
    run_reference(row_reduce(DType::f32, DType::f32, 2, 3, red(kProd)), mem);
    CHECK(get<float>(mem, 256, 2) == std::vector<float>{-12.0f, -1.5f});
  }
  SUBCASE("f32 with accumulate multiplies onto the old output") {
    put<float>(mem, 0, {2.0f, 3.0f});
    put<float>(mem, 256, {0.5f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 2, red(kProd, 1)), mem);
    CHECK(get<float>(mem, 256, 1)[0] == 3.0f);
  }
  SUBCASE("i8 widens to i32 and wraps around") {
    // 127^5 = 33038369407 wraps modulo 2^32.
    put<int8_t>(mem, 0, {127, 127, 127, 127, 127});
    run_reference(row_reduce(DType::i8, DType::i32, 1, 5, red(kProd)), mem);
    CHECK(get<int32_t>(mem, 256, 1)[0] ==
          static_cast<int32_t>(static_cast<uint32_t>(33038369407ull & 0xffffffffull)));
  }
  SUBCASE("f64 sum keeps double precision") {
    put<double>(mem, 0, {1.0, 1e-12, 1e-12});
    run_reference(row_reduce(DType::f64, DType::f64, 1, 3, red(kSum)), mem);
    CHECK(get<double>(mem, 256, 1)[0] == 1.0 + 1e-12 + 1e-12);
  }
}

TEST_CASE("reduce sum and mean in f32") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("sum") {
    put<float>(mem, 0, {1.5f, -0.25f, 4.0f});
    put<float>(mem, 256, {100.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(kSum, 1)), mem);
    CHECK(get<float>(mem, 256, 1)[0] == 105.25f);
  }
  SUBCASE("mean of 1,2,3,4 over 4") {
    put<float>(mem, 0, {1.0f, 2.0f, 3.0f, 4.0f});
    put<float>(mem, 256, {-7.0f});  // overwritten: accumulate is off
    run_reference(row_reduce(DType::f32, DType::f32, 1, 4, red(kMean, 0, 4)), mem);
    CHECK(get<float>(mem, 256, 1)[0] == 2.5f);
  }
  SUBCASE("mean divides term by term, so serial pieces give the same bits") {
    // mean of 1, 2, 4 over 3: 1/3 + 2/3 + 4/3 rounds to 2.33333349 (0x40155556), whereas
    // (1 + 2 + 4) / 3 would round to 2.33333325 (0x40155555).
    put<float>(mem, 0, {1.0f, 2.0f, 4.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(kMean, 0, 3)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x40155556u);
    // Terms 0..1, then 2 accumulating: what a serial split of R0 runs.
    std::vector<uint8_t> split(512, 0);
    put<float>(split, 0, {1.0f, 2.0f, 4.0f});
    Instruction first = row_reduce(DType::f32, DType::f32, 1, 2, red(kMean, 0, 3));
    Instruction rest = row_reduce(DType::f32, DType::f32, 1, 1, red(kMean, 1, 3));
    rest.operands[0].address = 2 * sizeof(float);
    run_reference(first, split);
    run_reference(rest, split);
    CHECK(bits_of(get<float>(split, 256, 1)[0]) == 0x40155556u);
  }
}

TEST_CASE("reduce max and min start from the first term, or the old output") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("i8, all negative") {
    put<int8_t>(mem, 0, {-5, -2, -9, -7, -8, -1});
    run_reference(row_reduce(DType::i8, DType::i32, 2, 3, red(kMax)), mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{-2, -1});
    run_reference(row_reduce(DType::i8, DType::i32, 2, 3, red(kMin)), mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{-9, -8});
  }
  SUBCASE("i8 with accumulate") {
    put<int8_t>(mem, 0, {-5, -2, -9, -7, -8, -1});
    put<int32_t>(mem, 256, {-3, 4});
    run_reference(row_reduce(DType::i8, DType::i32, 2, 3, red(kMax, 1)), mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{-2, 4});
    put<int32_t>(mem, 256, {-10, 0});
    run_reference(row_reduce(DType::i8, DType::i32, 2, 3, red(kMin, 1)), mem);
    CHECK(get<int32_t>(mem, 256, 2) == std::vector<int32_t>{-10, -8});
  }
  SUBCASE("i32 extremes") {
    put<int32_t>(mem, 0,
                 {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()});
    run_reference(row_reduce(DType::i32, DType::i32, 1, 2, red(kMin)), mem);
    CHECK(get<int32_t>(mem, 256, 1)[0] == std::numeric_limits<int32_t>::min());
  }
  SUBCASE("f32, with and without accumulate") {
    put<float>(mem, 0, {-1.5f, -0.25f, -3.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(kMax)), mem);
    CHECK(get<float>(mem, 256, 1)[0] == -0.25f);
    put<float>(mem, 256, {-3.5f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(kMin, 1)), mem);
    CHECK(get<float>(mem, 256, 1)[0] == -3.5f);
  }
}

TEST_CASE("reduce max and min in f32: NaN propagates, the first NaN wins, ties keep the later") {
  std::vector<uint8_t> mem(512, 0);
  const float nan_a = float_of(0x7fc00001u), nan_b = float_of(0x7fc00002u);
  for (Fn fn : {kMax, kMin}) {
    CAPTURE(fn);
    put<float>(mem, 0, {1.0f, nan_a, 3.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(fn)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x7fc00001u);
    put<float>(mem, 0, {nan_a, 2.0f, nan_b});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(fn)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x7fc00001u);
    put<float>(mem, 0, {1.0f, 2.0f, nan_b});  // the last term
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(fn)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x7fc00002u);
    put<float>(mem, 0, {1.0f, 2.0f, 3.0f});  // a NaN in the old output stays
    put<float>(mem, 256, {nan_b});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 3, red(fn, 1)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x7fc00002u);
    put<float>(mem, 0, {0.0f, -0.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 2, red(fn)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0x80000000u);
    put<float>(mem, 0, {-0.0f, 0.0f});
    run_reference(row_reduce(DType::f32, DType::f32, 1, 2, red(fn)), mem);
    CHECK(bits_of(get<float>(mem, 256, 1)[0]) == 0u);
  }
}

TEST_CASE("reduce over axes 0 and 2 of a [2,3,4] tensor, seen through strides") {
  // t[i][j][k] = 100i + 10j + k, contiguous (strides 12, 4, 1), seen as in[P0=3,1,1,R0=2,R1=4,1].
  std::vector<uint8_t> mem(512, 0);
  std::vector<int16_t> t;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) t.push_back(static_cast<int16_t>(100 * i + 10 * j + k));
  put<int16_t>(mem, 0, t);
  TensorRef in = make_tensor(0, DType::i16, {3, 1, 1, 2, 4, 1});
  in.strides = {4, 0, 0, 12, 1, 0};
  const TensorRef out = make_tensor(256, DType::i32, {3, 1, 1});
  // sum over i, k of 100i + 10j + k = 4 * 100 + 8 * 10j + 2 * (0+1+2+3) = 412 + 80j.
  run_reference(instruction("reduce", {in, out}, red(kSum)), mem);
  CHECK(get<int32_t>(mem, 256, 3) == std::vector<int32_t>{412, 492, 572});
  run_reference(instruction("reduce", {in, out}, red(kMax)), mem);
  CHECK(get<int32_t>(mem, 256, 3) == std::vector<int32_t>{103, 113, 123});
  run_reference(instruction("reduce", {in, out}, red(kMin)), mem);
  CHECK(get<int32_t>(mem, 256, 3) == std::vector<int32_t>{0, 10, 20});
  // The same in f32, averaged over the 8 terms: (412 + 80j) / 8, exact in binary.
  std::vector<float> tf(t.begin(), t.end());
  put<float>(mem, 0, tf);
  in.dtype = DType::f32;
  TensorRef outf = out;
  outf.dtype = DType::f32;
  run_reference(instruction("reduce", {in, outf}, red(kMean, 0, 8)), mem);
  CHECK(get<float>(mem, 256, 3) == std::vector<float>{51.5f, 61.5f, 71.5f});
}

TEST_CASE("reduce over nothing leaves the start value: 0, or the old output") {
  std::vector<uint8_t> mem(512, 0);
  const Instruction empty = instruction(
      "reduce",
      {make_tensor(0, DType::f32, {2, 1, 1, 3, 0, 1}), make_tensor(256, DType::f32, {2, 1, 1})},
      {});
  for (Fn fn : {kSum, kMean, kMax, kMin}) {
    CAPTURE(fn);
    Instruction in = empty;
    in.attrs = red(fn, 0, 3);
    put<float>(mem, 256, {7.0f, -7.0f});
    run_reference(in, mem);
    CHECK(get<float>(mem, 256, 2) == std::vector<float>{0.0f, 0.0f});
    in.attrs = red(fn, 1, 3);
    put<float>(mem, 256, {7.0f, -7.0f});
    run_reference(in, mem);
    CHECK(get<float>(mem, 256, 2) == std::vector<float>{7.0f, -7.0f});
  }
}

TEST_CASE("reduce rejects an integer mean and a mean divisor below 1") {
  const OpDef& op = ops().get("reduce");
  Instruction in = row_reduce(DType::i8, DType::i32, 1, 4, red(kMean, 0, 4));
  CHECK_THROWS_WITH_AS(bind_dims(op, in, "prog.fasm:3"),
                       "prog.fasm:3: reduce: fn mean is defined for f32 operands only",
                       ConfigError);
  in = row_reduce(DType::f32, DType::f32, 1, 4, red(kMean, 0, 0));
  std::vector<uint8_t> mem(512, 0);
  CHECK_THROWS_WITH_AS(run_reference(in, mem), "reduce: mean needs a divisor of at least 1, got 0",
                       ConfigError);
}

// The LFU combines partial maxima of children with eltwise max(out, partial); the decomposition
// equals the whole only if that combine keeps a NaN in `out` as reduce does. Skipped until
// eltwise max/min (isa/semantics/elementwise.cpp) propagate a NaN first operand.
TEST_CASE("reduce max with a NaN, split across children, equals the whole") {
  const OpDef& op = ops().get("reduce");
  std::vector<uint8_t> mem(4096, 0);
  put<float>(mem, 0, {5.0f, std::nanf(""), 1.0f, 2.0f});
  for (Fn fn : {kMax, kMin}) {
    CAPTURE(fn);
    const Instruction in = row_reduce(DType::f32, DType::f32, 1, 4, red(fn));
    std::vector<uint8_t> want = mem, got = mem;
    run_reference(in, want);
    DecompositionStats st;
    execute_decomposed(op, ops(), in, MemoryView{got.data(), got.size()},
                       {NodeBudget{2048, 4, "level 0"}, NodeBudget{2048, 1, "leaf"}}, &st);
    CHECK(st.reductions > 0);
    CHECK(bits_of(get<float>(got, 256, 1)[0]) == bits_of(get<float>(want, 256, 1)[0]));
  }
}

TEST_CASE("distance by hand") {
  std::vector<uint8_t> mem(512, 0);
  SUBCASE("f32, then accumulating") {
    // a: points (0,0), (1,2); b: points (3,4), (1,0).
    put<float>(mem, 0, {0, 0, 1, 2});
    put<float>(mem, 64, {3, 4, 1, 0});
    Instruction in =
        instruction("distance",
                    {make_tensor(0, DType::f32, {1, 2, 2}), make_tensor(64, DType::f32, {1, 2, 2}),
                     make_tensor(128, DType::f32, {1, 2, 2})},
                    {0});
    run_reference(in, mem);
    CHECK(get<float>(mem, 128, 4) == std::vector<float>{25, 1, 8, 4});
    in.attrs = {1};
    run_reference(in, mem);
    CHECK(get<float>(mem, 128, 4) == std::vector<float>{50, 2, 16, 8});
  }
  SUBCASE("f32 rounds the difference to f32 before squaring") {
    const float x = 0.1f, y = 0.3f, d = x - y;
    put<float>(mem, 0, {x});
    put<float>(mem, 64, {y});
    run_reference(
        instruction("distance",
                    {make_tensor(0, DType::f32, {1, 1, 1}), make_tensor(64, DType::f32, {1, 1, 1}),
                     make_tensor(128, DType::f32, {1, 1, 1})},
                    {0}),
        mem);
    CHECK(bits_of(get<float>(mem, 128, 1)[0]) == bits_of(0.0f + d * d));
  }
  SUBCASE("i8 exact in i32, b shared by both batches (stride 0)") {
    // Batch 0: a = (-128, 127), batch 1: a = (1, -1); b = (127, -128) for both.
    put<int8_t>(mem, 0, {-128, 127, 1, -1});
    put<int8_t>(mem, 64, {127, -128});
    TensorRef b = make_tensor(64, DType::i8, {2, 1, 2});
    b.strides[0] = 0;
    run_reference(instruction("distance",
                              {make_tensor(0, DType::i8, {2, 1, 2}), b,
                               make_tensor(128, DType::i32, {2, 1, 1})},
                              {0}),
                  mem);
    // 255^2 + 255^2 = 130050; 126^2 + 127^2 = 15876 + 16129 = 32005.
    CHECK(get<int32_t>(mem, 128, 2) == std::vector<int32_t>{130050, 32005});
  }
  SUBCASE("i16: a square past 2^31 wraps around in i32") {
    put<int16_t>(mem, 0, {-32768});
    put<int16_t>(mem, 64, {32767});
    run_reference(
        instruction("distance",
                    {make_tensor(0, DType::i16, {1, 1, 1}), make_tensor(64, DType::i16, {1, 1, 1}),
                     make_tensor(128, DType::i32, {1, 1, 1})},
                    {0}),
        mem);
    // 65535^2 = 4294836225 = 2^32 - 131071.
    CHECK(get<int32_t>(mem, 128, 1)[0] == -131071);
  }
}
