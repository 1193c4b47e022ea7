// The dtypes beyond f32/i32/i16/i8 (u8, u16, u32, u64, i64, f16, f64): codes and names, f16
// conversion, random data segments, the eltwise and pool2d rows that take them (with exact
// expected bytes) and the `only:` limit of a dtype row.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "isa/encoding.h"
#include "isa/error.h"
#include "isa/reference.h"
#include "tests/common/instruction_helpers.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

using fracsim::testing::get;
using fracsim::testing::instruction;
using fracsim::testing::put;
using fracsim::testing::rank6;
const OpTable& ops() { return OpTable::builtin(); }

// eltwise fn indices, in isa/ops/eltwise.yaml order (pinned in test_reference.cpp).
enum EltFn : int64_t { kAdd, kSub, kMul, kDiv, kMax, kMin, kPow };

// Runs an eltwise of n elements of `dt`: a at 0, b at 64, out at 128.
void eltwise(DType dt, int64_t n, EltFn fn, std::vector<uint8_t>& mem) {
  const Instruction in =
      instruction("eltwise", {rank6(0, dt, {n}), rank6(64, dt, {n}), rank6(128, dt, {n})}, {fn});
  bind_dims(ops().get("eltwise"), in, "test");  // the dtype row accepts it
  execute_reference(ops().get("eltwise"), in, MemoryView{mem.data(), mem.size()});
}

std::string bind_error(const Instruction& in) {
  try {
    bind_dims(ops().get(in.opcode), in, "t");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("dtype codes are stable, new ones appended, names and sizes") {
  // The .fbin code of each dtype is its enumerator: the first six never change.
  const std::vector<std::pair<std::string, int>> codes = {
      {"f32", 0}, {"f16", 1}, {"bf16", 2}, {"i32", 3}, {"i16", 4},  {"i8", 5},
      {"u8", 6},  {"u16", 7}, {"u32", 8},  {"u64", 9}, {"i64", 10}, {"f64", 11}};
  REQUIRE(kDTypeCount == 12);
  for (const auto& [name, code] : codes) {
    CAPTURE(name);
    REQUIRE(parse_dtype(name).has_value());
    CHECK(static_cast<int>(*parse_dtype(name)) == code);
    CHECK(dtype_from_code(static_cast<uint8_t>(code)) == parse_dtype(name));
    CHECK(dtype_name(*parse_dtype(name)) == name);
  }
  CHECK_FALSE(dtype_from_code(12).has_value());
  CHECK(dtype_size(DType::u8) == 1);
  CHECK(dtype_size(DType::u16) == 2);
  CHECK(dtype_size(DType::u32) == 4);
  CHECK(dtype_size(DType::u64) == 8);
  CHECK(dtype_size(DType::i64) == 8);
  CHECK(dtype_size(DType::f64) == 8);
  CHECK(is_integer(DType::u64));
  CHECK(is_unsigned(DType::u8));
  CHECK_FALSE(is_unsigned(DType::i64));
  CHECK_FALSE(is_integer(DType::f64));
  CHECK(dtype_names() == "f32, f16, bf16, i32, i16, i8, u8, u16, u32, u64, i64, f64");
}

TEST_CASE("f16 conversion rounds to nearest even, overflows to infinity, keeps subnormals") {
  CHECK(half_from_double(1.0) == 0x3c00);
  CHECK(half_from_double(-2.0) == 0xc000);
  CHECK(half_from_double(65504.0) == 0x7bff);  // the largest f16
  CHECK(half_from_double(65519.99) == 0x7bff);
  CHECK(half_from_double(65520.0) == 0x7c00);  // half an ulp above: infinity
  CHECK(half_from_double(-1e300) == 0xfc00);
  CHECK(half_from_double(1.0 + std::ldexp(1.0, -11)) == 0x3c00);      // a tie: to even
  CHECK(half_from_double(1.0 + 3 * std::ldexp(1.0, -11)) == 0x3c02);  // a tie: to even (up)
  CHECK(half_from_double(std::ldexp(1.0, -24)) == 0x0001);            // the smallest subnormal
  CHECK(half_from_double(std::ldexp(1.0, -25)) == 0x0000);            // a tie: to even (zero)
  CHECK(half_from_double(std::ldexp(1023.5, -24)) == 0x0400);  // rounds up to the smallest normal
  CHECK(half_from_double(-0.0) == 0x8000);
  CHECK((half_from_double(std::nan("")) & 0x7c00) == 0x7c00);
  CHECK(half_to_double(0x3555) == 0x1.554p-2);
  CHECK(half_to_double(0x0001) == std::ldexp(1.0, -24));
  CHECK(half_to_double(0xfc00) == -HUGE_VAL);
  CHECK(std::isnan(half_to_double(0x7e00)));
  for (uint32_t b = 0; b < 0x10000; ++b) {  // every finite f16 converts there and back
    const auto h = static_cast<uint16_t>(b);
    if ((h & 0x7c00) != 0x7c00) REQUIRE(half_from_double(half_to_double(h)) == h);
  }
}

TEST_CASE("random data segments of the new dtypes stay inside their bounds") {
  std::vector<uint8_t> mem(1024, 0);
  MemoryView m{mem.data(), mem.size()};
  auto segment = [&](DType dt, double lo, double hi) {
    DataSegment d;
    d.kind = DataSegment::Kind::random;
    d.dtype = dt;
    d.count = 64;
    d.seed = 7;
    d.lo = lo;
    d.hi = hi;
    std::fill(mem.begin(), mem.end(), 0);
    fill_data_segment(d, m);
    return make_tensor(0, dt, {64});
  };
  auto all_within = [&](const TensorRef& t, double lo, double hi) {
    bool ok = true, varied = false;
    for (int64_t i = 0; i < 64; ++i) {
      const double v = load_element(t, i, m);
      ok = ok && v >= lo && v <= hi;
      varied = varied || v != load_element(t, 0, m);
    }
    return ok && varied;
  };
  CHECK(all_within(segment(DType::u8, 0, 255), 0, 255));
  CHECK(all_within(segment(DType::u8, -8, 8), 0, 8));  // the bounds clamped to u8's range
  CHECK(all_within(segment(DType::u16, 1000, 2000), 1000, 2000));
  CHECK(all_within(segment(DType::u32, 0, 4e9), 0, 4e9));
  CHECK(all_within(segment(DType::i64, -1e12, 1e12), -1e12, 1e12));
  CHECK(all_within(segment(DType::f16, -1, 1), -1, 1));
  CHECK(all_within(segment(DType::f64, -1, 1), -1, 1));
  // The whole u64 range (the span wraps to 0: the raw bits).
  CHECK(all_within(segment(DType::u64, 0, 1.9e19), 0, 1.9e19));
  // f16 elements are the double rounded once to f16.
  const TensorRef f16 = segment(DType::f16, -1, 1);
  for (int64_t i = 0; i < 64; ++i) {
    const double v = load_element(f16, i, m);
    CHECK(half_to_double(half_from_double(v)) == v);
  }
}

TEST_CASE("eltwise u8 is numpy's uint8: add, sub, mul wrap modulo 2^8, div floors") {
  std::vector<uint8_t> mem(256, 0);
  put<uint8_t>(mem, 0, {200, 3, 16, 255, 7, 0});
  put<uint8_t>(mem, 64, {100, 5, 16, 255, 0, 0});
  eltwise(DType::u8, 6, kAdd, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{44, 8, 32, 254, 7, 0});
  eltwise(DType::u8, 6, kSub, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{100, 254, 0, 0, 7, 0});
  eltwise(DType::u8, 6, kMul, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{32, 15, 0, 1, 0, 0});
  // 200/100, 3/5 (floor), 16/16, 255/255; x/0 is 255 for x > 0 and 0 for 0.
  eltwise(DType::u8, 6, kDiv, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{2, 0, 1, 1, 255, 0});
  eltwise(DType::u8, 6, kMax, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{200, 5, 16, 255, 7, 0});
  eltwise(DType::u8, 6, kMin, mem);
  CHECK(get<uint8_t>(mem, 128, 6) == std::vector<uint8_t>{100, 3, 16, 255, 0, 0});
}

TEST_CASE("eltwise i32 and i64 pow multiply out with wrap-around and i64 add, sub, mul wrap") {
  // By hand: 3^4 = 81, (-2)^3 = -8, 2^31 wraps to -2^31 in i32, 7^0 = 1; a negative exponent
  // truncates toward zero: 5^-1 = 0, 1^-5 = 1, (-1)^-3 = -1, (-1)^-2 = 1.
  std::vector<uint8_t> mem(256, 0);
  put<int32_t>(mem, 0, {3, -2, 2, 7, 5, 1, -1, -1});
  put<int32_t>(mem, 64, {4, 3, 31, 0, -1, -5, -3, -2});
  eltwise(DType::i32, 8, kPow, mem);
  CHECK(get<int32_t>(mem, 128, 8) ==
        std::vector<int32_t>{81, -8, INT32_MIN, 1, 0, 1, -1, 1});
  // i64: 2^63 wraps to -2^63, 10^18 is exact, 3^40 = 12157665459056928801 is past 2^63: it
  // reads as 3^40 - 2^64.
  put<int64_t>(mem, 0, {2, 10, 3});
  put<int64_t>(mem, 64, {63, 18, 40});
  eltwise(DType::i64, 3, kPow, mem);
  CHECK(get<int64_t>(mem, 128, 3) ==
        std::vector<int64_t>{INT64_MIN, 1000000000000000000, -6289078614652622815});
  // i64 add, sub and mul wrap around as numpy's int64.
  put<int64_t>(mem, 0, {INT64_MAX, INT64_MIN, 4294967296});
  put<int64_t>(mem, 64, {1, 1, 4294967296});
  eltwise(DType::i64, 3, kAdd, mem);
  CHECK(get<int64_t>(mem, 128, 3) == std::vector<int64_t>{INT64_MIN, INT64_MIN + 1, 8589934592});
  eltwise(DType::i64, 3, kSub, mem);
  CHECK(get<int64_t>(mem, 128, 3) == std::vector<int64_t>{INT64_MAX - 1, INT64_MAX, 0});
  eltwise(DType::i64, 3, kMul, mem);
  CHECK(get<int64_t>(mem, 128, 3) == std::vector<int64_t>{INT64_MAX, INT64_MIN, 0});
}

TEST_CASE("eltwise max and min of u16, u32, u64 and i64 compare the whole width, unsigned") {
  std::vector<uint8_t> mem(256, 0);
  put<uint16_t>(mem, 0, {65535, 1, 32768});
  put<uint16_t>(mem, 64, {2, 65534, 32767});
  eltwise(DType::u16, 3, kMax, mem);
  CHECK(get<uint16_t>(mem, 128, 3) == std::vector<uint16_t>{65535, 65534, 32768});
  put<uint32_t>(mem, 0, {0xffffffffu, 0x80000000u});
  put<uint32_t>(mem, 64, {1, 0x7fffffffu});
  eltwise(DType::u32, 2, kMin, mem);
  CHECK(get<uint32_t>(mem, 128, 2) == std::vector<uint32_t>{1, 0x7fffffffu});
  // 2^64 - 1 and 2^63 + 1 differ only below double's precision.
  put<uint64_t>(mem, 0, {0xffffffffffffffffull, 0x8000000000000001ull});
  put<uint64_t>(mem, 64, {0xfffffffffffffffeull, 0x8000000000000000ull});
  eltwise(DType::u64, 2, kMax, mem);
  CHECK(get<uint64_t>(mem, 128, 2) ==
        std::vector<uint64_t>{0xffffffffffffffffull, 0x8000000000000001ull});
  eltwise(DType::u64, 2, kMin, mem);
  CHECK(get<uint64_t>(mem, 128, 2) ==
        std::vector<uint64_t>{0xfffffffffffffffeull, 0x8000000000000000ull});
  put<int64_t>(mem, 0, {std::numeric_limits<int64_t>::min(), 9007199254740993});
  put<int64_t>(mem, 64, {-1, 9007199254740992});
  eltwise(DType::i64, 2, kMax, mem);
  CHECK(get<int64_t>(mem, 128, 2) == std::vector<int64_t>{-1, 9007199254740993});
  eltwise(DType::i64, 2, kMin, mem);
  CHECK(get<int64_t>(mem, 128, 2) ==
        std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 9007199254740992});
}

TEST_CASE("eltwise max and min of f16 and f64 are exact, NaN propagating as in f32") {
  std::vector<uint8_t> mem(256, 0);
  // f16: 1.0, -2.0, NaN, 0.1 (0x2e66), the largest, -0
  put<uint16_t>(mem, 0, {0x3c00, 0xc000, 0x7e00, 0x2e66, 0x7bff, 0x8000});
  // 0x3c01 (1 + 2^-10), -inf, 1.0, 0.1 + an ulp (0x2e67), NaN, +0
  put<uint16_t>(mem, 64, {0x3c01, 0xfc00, 0x3c00, 0x2e67, 0x7e00, 0x0000});
  eltwise(DType::f16, 6, kMax, mem);
  CHECK(get<uint16_t>(mem, 128, 6) ==
        std::vector<uint16_t>{0x3c01, 0xc000, 0x7e00, 0x2e67, 0x7e00, 0x0000});
  eltwise(DType::f16, 6, kMin, mem);
  // -0 and +0 compare equal: min keeps b, as f32 does.
  CHECK(get<uint16_t>(mem, 128, 6) ==
        std::vector<uint16_t>{0x3c00, 0xfc00, 0x7e00, 0x2e66, 0x7e00, 0x0000});
  const double nan = std::nan("");
  put<double>(mem, 0, {1.0, 1.0 + 0x1p-52, nan});
  put<double>(mem, 64, {1.0 + 0x1p-52, 1.0, 2.0});
  eltwise(DType::f64, 3, kMax, mem);
  std::vector<double> r = get<double>(mem, 128, 3);
  CHECK(r[0] == 1.0 + 0x1p-52);
  CHECK(r[1] == 1.0 + 0x1p-52);
  CHECK(std::isnan(r[2]));
  eltwise(DType::f64, 3, kMin, mem);
  r = get<double>(mem, 128, 3);
  CHECK(r[0] == 1.0);
  CHECK(r[1] == 1.0);
  CHECK(std::isnan(r[2]));
}

TEST_CASE("a dtype row with `only:` holds for its fn values alone, messages say which") {
  const std::vector<TensorRef> u16 = {rank6(0, DType::u16, {2}), rank6(64, DType::u16, {2}),
                                      rank6(128, DType::u16, {2})};
  CHECK(bind_error(instruction("eltwise", u16, {kMax})) == "no error");
  CHECK(bind_error(instruction("eltwise", u16, {kAdd})) ==
        "t: eltwise: dtype combination (u16,u16,u16) is accepted only with fn = max or min or mod "
        "or fmod");
  const std::vector<TensorRef> f64 = {rank6(0, DType::f64, {2}), rank6(64, DType::f64, {2}),
                                      rank6(128, DType::f64, {2})};
  CHECK(bind_error(instruction("eltwise", f64, {kAdd})) == "no error");
  CHECK(bind_error(instruction("eltwise", f64, {kMul})) == "no error");
  CHECK(bind_error(instruction("eltwise", f64, {kDiv})) ==
        "t: eltwise: dtype combination (f64,f64,f64) is accepted only with fn = add or mul or max "
        "or min or fmod");
  const std::vector<TensorRef> bf16 = {rank6(0, DType::bf16, {2}), rank6(64, DType::bf16, {2}),
                                       rank6(128, DType::bf16, {2})};
  CHECK(bind_error(instruction("eltwise", bf16, {kMax})) ==
        "t: eltwise: dtype combination (bf16,bf16,bf16) is not accepted");
  // pool2d takes u8 for max only (attributes: fn, kernels, strides, dilations, pads, cip,
  // accumulate, final, the taps' and the input's frame).
  const std::vector<int64_t> max_attrs = {0, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0,
                                          0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};
  std::vector<int64_t> avg_attrs = max_attrs;
  avg_attrs[0] = 1;
  const std::vector<TensorRef> pool = {make_tensor(0, DType::u8, {1, 1, 2, 2}),
                                       make_tensor(64, DType::u8, {1, 1, 1, 1})};
  CHECK(bind_error(instruction("pool2d", pool, max_attrs)) == "no error");
  CHECK(bind_error(instruction("pool2d", pool, avg_attrs)) ==
        "t: pool2d: dtype combination (u8,u8) is accepted only with fn = max");
}

TEST_CASE("`only:` is validated when an op is loaded, naming file, line and key") {
  const std::string head =
      "op: x\nopcode: 0x7f0\nunit: vector\nsummary: s\ndims: {D: parallel}\n"
      "operands:\n  - {name: a, role: in, dims: [D]}\n  - {name: o, role: out, dims: [D]}\n"
      "attributes:\n  - {name: fn, type: enum, values: [p, q], default: p}\n"
      "  - {name: k, type: int, default: 0}\n";
  auto error_of = [&](const std::string& rows) {
    OpTable t;
    try {
      t.add_yaml(head + "dtypes:\n" + rows + "work: D\ncycles: D\n", "x.yaml");
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(error_of("  - {row: [u8, u8], only: {fn: [q]}}\n") == "no error");
  CHECK(error_of("  - {row: [u8, u8], only: {fn: [r]}}\n") ==
        "x.yaml:13: dtypes.only.fn: op x: 'r' is not a value of fn");
  CHECK(error_of("  - {row: [u8, u8], only: {k: [1]}}\n") ==
        "x.yaml:13: dtypes.only.k: op x: 'k' is not an enum attribute");
  CHECK(error_of("  - {row: [u8, u8], only: {fn: [p], k: [1]}}\n") ==
        "x.yaml:13: dtypes.only: op x: name one enum attribute");
  CHECK(error_of("  - {row: [u8, u8], when: {fn: [p]}}\n") ==
        "x.yaml:13: dtypes.only: missing required key");
}

TEST_CASE("pool2d max of u8 compares unsigned") {
  std::vector<uint8_t> mem(128, 0);
  put<uint8_t>(mem, 0, {200, 100, 127, 128, 0, 255, 1, 2, 3});  // [1,1,3,3]
  const Instruction in = instruction(
      "pool2d", {make_tensor(0, DType::u8, {1, 1, 3, 3}), make_tensor(64, DType::u8, {1, 1, 2, 2})},
      {0, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
  bind_dims(ops().get("pool2d"), in, "test");
  execute_reference(ops().get("pool2d"), in, MemoryView{mem.data(), mem.size()});
  CHECK(get<uint8_t>(mem, 64, 4) == std::vector<uint8_t>{200, 255, 128, 255});
}
