// Reference semantics on small cases computed by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "isa/reference.h"
#include "tests/common/instruction_helpers.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim::isa;

namespace {

using fracsim::testing::get;
using fracsim::testing::put;
using fracsim::testing::rank6;
const OpTable& ops() { return OpTable::builtin(); }

// A contiguous tensor seen at rank 6 (eltwise, activation): `shape` is the trailing dims, the
// leading ones have extent 1 and stride 0. Written out here rather than taken from the library,
// so that the test does not lean on the code it checks.

void run(const std::string& op, std::vector<TensorRef> operands, std::vector<int64_t> attrs,
         std::vector<uint8_t>& mem) {
  Instruction in;
  in.opcode = ops().get(op).opcode;
  in.operands = std::move(operands);
  in.attrs = std::move(attrs);
  execute_reference(ops().get(op), in, MemoryView{mem.data(), mem.size()});
}

// eltwise fn indices, in isa/ops/eltwise.yaml order (pinned by the first test below).
enum EltFn : int64_t { kAdd, kSub, kMul, kDiv, kMax, kMin };
// activation fn indices, in isa/ops/activation.yaml order.
enum ActFn : int64_t { kRelu, kLeakyRelu, kSigmoid, kTanh, kGelu, kExp };

// The activation attributes in declaration order: fn, alpha, frac_bits.
std::vector<int64_t> act(ActFn fn, double alpha = 0.01, int64_t frac_bits = 0) {
  return {fn, real_to_attr(alpha), frac_bits};
}

// An element-wise chain's f32 tensors of n elements: dense at `at`; a scalar at `at` broadcast
// over the n; the chain's i-th intermediate (at 256 + 64 i).
TensorRef f32_vector(uint64_t at, int64_t n) { return rank6(at, DType::f32, {n}); }
TensorRef f32_broadcast(uint64_t at, int64_t n) {
  TensorRef r = rank6(at, DType::f32, {n});
  r.strides.back() = 0;
  return r;
}
uint64_t scratch(int i) { return static_cast<uint64_t>(256 + 64 * i); }

using fracsim::testing::bits_of;
}  // namespace

TEST_CASE("the attribute layout the hand cases below rely on") {
  const OpDef& elt = ops().get("eltwise");
  REQUIRE(elt.attributes.size() == 1);
  CHECK(elt.attributes[0].values ==
        std::vector<std::string>{"add", "sub", "mul", "div", "max", "min", "pow", "mod", "fmod"});
  const OpDef& a = ops().get("activation");
  REQUIRE(a.attributes.size() == 3);
  CHECK(a.attributes[0].values == std::vector<std::string>{"relu",       "leaky_relu",
                                                           "sigmoid",    "tanh",
                                                           "gelu",       "exp",
                                                           "log",        "sqrt",
                                                           "rsqrt",      "erf",
                                                           "abs",        "neg",
                                                           "floor",      "ceil",
                                                           "round",      "sign",
                                                           "reciprocal", "softplus",
                                                           "softsign",   "elu",
                                                           "celu",       "thresholded_relu",
                                                           "sin",        "cos",
                                                           "tan",        "asin",
                                                           "acos",       "atan",
                                                           "sinh",       "cosh",
                                                           "asinh",      "acosh",
                                                           "atanh",      "gelu_tanh",
                                                           "gelu_erf"});
  CHECK(a.attributes[1].name == "alpha");
  CHECK(a.attributes[1].type == AttrType::real);
  CHECK(attr_to_real(a.attributes[1].default_value) == 0.01);
  CHECK(a.attributes[2].name == "frac_bits");
  CHECK(a.attributes[2].type == AttrType::integer);
  CHECK(a.attributes[2].default_value == 0);
  CHECK(act(kRelu) == std::vector<int64_t>{0, a.attributes[1].default_value, 0});
}

TEST_CASE("matmul f32 by hand, with and without accumulate") {
  std::vector<uint8_t> mem(256, 0);
  put<float>(mem, 0, {1, 2, 3, 4, 5, 6});   // a [1,2,3]
  put<float>(mem, 64, {1, 0, 0, 1, 1, 1});  // b [1,3,2]
  put<float>(mem, 128, {10, 20, 30, 40});   // out [1,2,2]
  const std::vector<TensorRef> operands = {make_tensor(0, DType::f32, {1, 2, 3}),
                                           make_tensor(64, DType::f32, {1, 3, 2}),
                                           make_tensor(128, DType::f32, {1, 2, 2})};
  run("matmul", operands, {1}, mem);
  // [1 2 3; 4 5 6] x [1 0; 0 1; 1 1] = [4 5; 10 11], plus the old out.
  CHECK(get<float>(mem, 128, 4) == std::vector<float>{14, 25, 40, 51});
  run("matmul", operands, {0}, mem);
  CHECK(get<float>(mem, 128, 4) == std::vector<float>{4, 5, 10, 11});
}

TEST_CASE("matmul f32 batched: per-batch b, and b shared through stride 0 along B") {
  std::vector<uint8_t> mem(256, 0);
  put<float>(mem, 0, {1, 2, 3, 4, 5, 6, 0, 1, 0, 1, 0, -1});  // a [2,2,3]
  put<float>(mem, 64, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 0, 0});  // b [2,3,2]
  put<float>(mem, 128, {9, 9, 9, 9, 9, 9, 9, 9});             // out [2,2,2]
  TensorRef b = make_tensor(64, DType::f32, {2, 3, 2});
  run("matmul", {make_tensor(0, DType::f32, {2, 2, 3}), b, make_tensor(128, DType::f32, {2, 2, 2})},
      {0}, mem);
  // Batch 0 as above; batch 1: [0 1 0; 1 0 -1] x [2 0; 0 2; 0 0] = [0 2; 2 0].
  CHECK(get<float>(mem, 128, 8) == std::vector<float>{4, 5, 10, 11, 0, 2, 2, 0});
  b.strides[0] = 0;  // every batch reads b's first matrix
  run("matmul", {make_tensor(0, DType::f32, {2, 2, 3}), b, make_tensor(128, DType::f32, {2, 2, 2})},
      {1}, mem);
  // Batch 1 with the shared b: [0 1 0; 1 0 -1] x [1 0; 0 1; 1 1] = [0 1; 0 -1], plus the old out.
  CHECK(get<float>(mem, 128, 8) == std::vector<float>{8, 10, 20, 22, 0, 3, 2, -1});
}

TEST_CASE("matmul i8 accumulates in i32 with wrap-around") {
  std::vector<uint8_t> mem(256, 0);
  put<int8_t>(mem, 0, {-128, -128});   // a [1,1,2]
  put<int8_t>(mem, 64, {-128, -128});  // b [1,2,1]
  put<int32_t>(mem, 128, {2147483647 - 32768 + 1});
  run("matmul",
      {make_tensor(0, DType::i8, {1, 1, 2}), make_tensor(64, DType::i8, {1, 2, 1}),
       make_tensor(128, DType::i32, {1, 1, 1})},
      {1}, mem);
  // old = 2^31 - 32768; adding 2 x 16384 gives 2^31, which wraps to -2^31.
  CHECK(get<int32_t>(mem, 128, 1)[0] == -2147483647 - 1);
}

TEST_CASE("eltwise saturates integers, broadcasts with stride 0, relu clamps") {
  std::vector<uint8_t> mem(256, 0);
  put<int8_t>(mem, 0, {100, -100, 5, 7});  // a [2,2]
  put<int8_t>(mem, 64, {100, -100});       // b row, broadcast over rows
  TensorRef b = rank6(64, DType::i8, {2, 2});
  b.strides = {0, 0, 0, 0, 0, 1};
  const std::vector<TensorRef> operands = {rank6(0, DType::i8, {2, 2}), b,
                                           rank6(128, DType::i8, {2, 2})};
  // Pairs: (100,100) (-100,-100) (5,100) (7,-100).
  run("eltwise", operands, {kAdd}, mem);
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{127, -128, 105, -93});
  run("eltwise", operands, {kSub}, mem);
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{0, 0, -95, 107});
  run("eltwise", operands, {kMul}, mem);
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{127, 127, 127, -128});
  run("eltwise", operands, {kDiv}, mem);  // truncates toward zero: 5/100 and 7/-100 are 0
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{1, 1, 0, 0});
  run("eltwise", operands, {kMax}, mem);
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{100, -100, 100, 7});
  run("eltwise", operands, {kMin}, mem);
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{100, -100, 5, -100});

  put<float>(mem, 0, {-1.5f, 0.0f, 2.25f, -0.0f});
  run("activation", {rank6(0, DType::f32, {2, 2}), rank6(128, DType::f32, {2, 2})}, act(kRelu),
      mem);
  const std::vector<float> r = get<float>(mem, 128, 4);
  CHECK(r == std::vector<float>{0, 0, 2.25f, 0});
  CHECK_FALSE(std::signbit(r[3]));  // relu(-0) is +0
}

TEST_CASE("eltwise f32 broadcasts along a leading dim: sub, div, min") {
  std::vector<uint8_t> mem(512, 0);
  put<float>(mem, 0, {1, 2, 3, 4, 5, 6});  // a [2,1,1,1,1,3]
  put<float>(mem, 64, {0.5f, 2.5f, -1});   // b [3], the same for both D0
  TensorRef a = make_tensor(0, DType::f32, {2, 1, 1, 1, 1, 3});
  TensorRef b = make_tensor(64, DType::f32, {2, 1, 1, 1, 1, 3});
  b.strides[0] = 0;
  const TensorRef out = make_tensor(128, DType::f32, {2, 1, 1, 1, 1, 3});
  run("eltwise", {a, b, out}, {kSub}, mem);
  CHECK(get<float>(mem, 128, 6) == std::vector<float>{0.5f, -0.5f, 4, 3.5f, 2.5f, 7});
  run("eltwise", {a, b, out}, {kMin}, mem);
  CHECK(get<float>(mem, 128, 6) == std::vector<float>{0.5f, 2, -1, 0.5f, 2.5f, -1});
  run("eltwise", {a, b, out}, {kDiv}, mem);
  // IEEE single division: 1/0.5, 2/2.5, 3/-1, 4/0.5, 5/2.5, 6/-1; 2/2.5 is 0.8 rounded to f32.
  const std::vector<float> q = get<float>(mem, 128, 6);
  CHECK(q == std::vector<float>{2, 0x1.99999ap-1f, -3, 8, 2, -6});
  CHECK(bits_of(q[1]) == 0x3f4ccccdu);

  // Division by zero follows IEEE: +-inf, and NaN for 0/0.
  put<float>(mem, 0, {1, -1, 0, 1});
  put<float>(mem, 64, {0, 0, 0, 3});
  run("eltwise",
      {rank6(0, DType::f32, {4}), rank6(64, DType::f32, {4}), rank6(128, DType::f32, {4})}, {kDiv},
      mem);
  const std::vector<float> d = get<float>(mem, 128, 4);
  CHECK(d[0] == std::numeric_limits<float>::infinity());
  CHECK(d[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(d[2]));
  CHECK(bits_of(d[3]) == 0x3eaaaaabu);  // 1/3 rounded to nearest f32
}

TEST_CASE("eltwise integer div: truncation, division by zero, MIN / -1 saturation") {
  std::vector<uint8_t> mem(512, 0);
  // i8, [3,4]: x / 0 is the max for x > 0, the min for x < 0, 0 for 0; -128 / -1 saturates.
  put<int8_t>(mem, 0, {7, -7, 7, -7, 0, -128, -128, 127, 5, -5, 0, 100});
  put<int8_t>(mem, 64, {2, 2, -2, -2, 0, -1, 0, 0, 0, 0, 1, 3});
  run("eltwise",
      {rank6(0, DType::i8, {3, 4}), rank6(64, DType::i8, {3, 4}), rank6(128, DType::i8, {3, 4})},
      {kDiv}, mem);
  CHECK(get<int8_t>(mem, 128, 12) ==
        std::vector<int8_t>{3, -3, -3, 3, 0, 127, -128, 127, 127, -128, 0, 33});

  // i32: INT_MIN / -1 saturates to INT_MAX rather than trapping.
  const int32_t kMin32 = std::numeric_limits<int32_t>::min();
  const int32_t kMax32 = std::numeric_limits<int32_t>::max();
  put<int32_t>(mem, 0, {kMin32, kMin32, kMax32, -1, 9, 0});
  put<int32_t>(mem, 64, {-1, 0, 0, 0, -4, 0});
  run("eltwise",
      {rank6(0, DType::i32, {6}), rank6(64, DType::i32, {6}), rank6(128, DType::i32, {6})}, {kDiv},
      mem);
  CHECK(get<int32_t>(mem, 128, 6) == std::vector<int32_t>{kMax32, kMin32, kMax32, kMin32, -2, 0});

  // i16: the same rules at 16 bits; sub saturates too.
  put<int16_t>(mem, 0, {-32768, -32768, 32767, -30000});
  put<int16_t>(mem, 64, {-1, 0, -1, 10000});
  const std::vector<TensorRef> i16 = {rank6(0, DType::i16, {4}), rank6(64, DType::i16, {4}),
                                      rank6(128, DType::i16, {4})};
  run("eltwise", i16, {kDiv}, mem);
  CHECK(get<int16_t>(mem, 128, 4) == std::vector<int16_t>{32767, -32768, -32767, -3});
  run("eltwise", i16, {kSub}, mem);
  CHECK(get<int16_t>(mem, 128, 4) == std::vector<int16_t>{-32767, -32768, 32767, -32768});
  run("eltwise", i16, {kMin}, mem);
  CHECK(get<int16_t>(mem, 128, 4) == std::vector<int16_t>{-32768, -32768, -1, -30000});
}

TEST_CASE("activation leaky_relu: f32 with alpha, i16 rounded half to even and saturated") {
  std::vector<uint8_t> mem(512, 0);
  const std::vector<TensorRef> f = {rank6(0, DType::f32, {2, 3}), rank6(128, DType::f32, {2, 3})};
  put<float>(mem, 0, {-3, -100, -1.5f, -7, 2, -0.0f});
  run("activation", f, act(kLeakyRelu), mem);  // the default alpha, 0.01
  // 0.01 x rounded to f32 (the same whether the product is taken in f32 or in double).
  std::vector<float> r = get<float>(mem, 128, 6);
  CHECK(r == std::vector<float>{-0x1.eb851ep-6f, -1, -0x1.eb851ep-7f, -0x1.1eb852p-4f, 2, 0});
  CHECK(std::signbit(r[5]));  // alpha x -0 is -0
  run("activation", f, act(kLeakyRelu, 0.25), mem);
  CHECK(get<float>(mem, 128, 6) == std::vector<float>{-0.75f, -25, -0.375f, -1.75f, 2, 0});

  // i16, frac_bits 0, alpha 0.5: -1.5 -> -2, -2.5 -> -2, -0.5 -> 0, -3.5 -> -4 (ties to even).
  const std::vector<TensorRef> i = {rank6(0, DType::i16, {8}), rank6(128, DType::i16, {8})};
  put<int16_t>(mem, 0, {-3, -5, -1, -7, 5, 32767, -32768, 0});
  run("activation", i, act(kLeakyRelu, 0.5), mem);
  CHECK(get<int16_t>(mem, 128, 8) == std::vector<int16_t>{-2, -2, 0, -4, 5, 32767, -16384, 0});
  // Saturation: 3 x -20000 = -60000 -> -32768; -2 x -32768 = 65536 -> 32767.
  put<int16_t>(mem, 0, {-20000, -32768, 100, -1, 0, 0, 0, 0});
  run("activation", i, act(kLeakyRelu, 3), mem);
  CHECK(get<int16_t>(mem, 128, 8) == std::vector<int16_t>{-32768, -32768, 100, -3, 0, 0, 0, 0});
  run("activation", i, act(kLeakyRelu, -2), mem);
  CHECK(get<int16_t>(mem, 128, 8) == std::vector<int16_t>{32767, 32767, 100, 2, 0, 0, 0, 0});
  // frac_bits 8, alpha 0.25: x/256 x 0.25 x 256 = x/4; -6/4 = -1.5 -> -2, -10/4 = -2.5 -> -2,
  // -14/4 = -3.5 -> -4, -2/4 = -0.5 -> 0, -3/4 -> -1, 1000 stays.
  put<int16_t>(mem, 0, {-6, -10, -14, -2, -3, 1000, -32768, 32767});
  run("activation", i, act(kLeakyRelu, 0.25, 8), mem);
  CHECK(get<int16_t>(mem, 128, 8) == std::vector<int16_t>{-2, -2, -4, 0, -1, 1000, -8192, 32767});
}

TEST_CASE("activation sigmoid, tanh, gelu, exp in f32: the double result rounded once") {
  const std::vector<double> xs = {-3.5, -1, -0.25, 0, 0.5, 1, 2.75, 10};
  // Each function in double, written independently of isa/semantics.
  auto sigmoid = [](double x) { return 0.5 * (1.0 + std::tanh(0.5 * x)); };
  auto tanh_ = [](double x) { return std::tanh(x); };
  auto gelu = [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); };
  auto exp_ = [](double x) { return std::exp(x); };
  // The same values correctly rounded to f32 from a 300-bit evaluation (mpmath), as literals.
  struct Case {
    ActFn fn;
    std::function<double(double)> f;
    std::vector<float> expect;
  };
  const std::vector<Case> cases = {
      {kSigmoid,
       sigmoid,
       {0x1.e04068p-6f, 0x1.136562p-2f, 0x1.c054cep-2f, 0.5f, 0x1.3eb2fep-1f, 0x1.764d5p-1f,
        0x1.e13c52p-1f, 0x1.fffa0cp-1f}},
      {kTanh,
       tanh_,
       {-0x1.ff112cp-1f, -0x1.85efacp-1f, -0x1.f597eap-3f, 0, 0x1.d9353ep-2f, 0x1.85efacp-1f,
        0x1.fbd50ap-1f, 1}},
      {kGelu,
       gelu,
       {-0x1.aae05p-11f, -0x1.44ed0cp-3f, -0x1.9aecbap-4f, 0, 0x1.62075ep-2f, 0x1.aec4bep-1f,
        0x1.5ef37cp+1f, 10}},
      {kExp,
       exp_,
       {0x1.eec102p-6f, 0x1.78b564p-2f, 0x1.8ebefap-1f, 1, 0x1.a61298p+0f, 0x1.5bf0a8p+1f,
        0x1.f4907p+3f, 0x1.5829dcp+14f}},
  };
  std::vector<uint8_t> mem(256, 0);
  std::vector<float> in(xs.begin(), xs.end());
  put<float>(mem, 0, in);
  for (const Case& c : cases) {
    INFO("fn ", ops().get("activation").attributes[0].values.at(c.fn));
    std::vector<float> independent;
    for (double x : xs) independent.push_back(static_cast<float>(c.f(x)));
    CHECK(independent == c.expect);
    run("activation", {rank6(0, DType::f32, {2, 4}), rank6(128, DType::f32, {2, 4})}, act(c.fn),
        mem);
    const std::vector<float> got = get<float>(mem, 128, 8);
    CHECK(got == c.expect);
    for (size_t k = 0; k < got.size(); ++k) CHECK(bits_of(got[k]) == bits_of(c.expect[k]));
  }
}

TEST_CASE("activation gelu_tanh in f32 equals its element-wise chain bit for bit") {
  // The chain an exporter writes (scripts/make_workloads' gelu), run as the eltwise and
  // activation instructions it lowers to: x2 = x*x, x3 = x2*x, cx3 = x3*c, inner = x + cx3,
  // arg = inner*k, t = tanh(arg), one_plus = t + 1, half_x = x*0.5, out = half_x*one_plus.
  // -10 gives -0 (t = -1), -inf gives NaN (-inf * 0), 1e-20 underflows x3 to 0.
  const std::vector<float> xs = {-10, -3.5f,  -1,     -0.25f, 0,    0.5f,  1,        2.75f,
                                 10,  1e-20f, -1e-3f, 3.0e5f, 0.7f, -0.7f, INFINITY, -INFINITY};
  const size_t n = xs.size();
  const int64_t extent = static_cast<int64_t>(n);
  const uint64_t kX = 0, kC = 64, kK = 68, kOne = 72, kHalf = 76, kOut = 128;
  // Scratch tensors of the chain at 256 + 64 i; out of the fused op at kOut.
  std::vector<uint8_t> mem(1024, 0);
  put<float>(mem, kX, xs);
  put<float>(mem, kC, {0.044715f, 0x1.988454p-1f, 1.0f, 0.5f});  // c, k = sqrt(2/pi) in f32, 1, 0.5
  CHECK(bits_of(fracsim::isa::kGeluTanhK) == bits_of(0x1.988454p-1f));
  auto t = [&](uint64_t at) { return f32_vector(at, extent); };
  auto s = [&](uint64_t at) { return f32_broadcast(at, extent); };
  auto tmp = scratch;
  run("eltwise", {t(kX), t(kX), t(tmp(0))}, {kMul}, mem);          // x2
  run("eltwise", {t(tmp(0)), t(kX), t(tmp(1))}, {kMul}, mem);      // x3
  run("eltwise", {t(tmp(1)), s(kC), t(tmp(2))}, {kMul}, mem);      // cx3
  run("eltwise", {t(kX), t(tmp(2)), t(tmp(3))}, {kAdd}, mem);      // inner
  run("eltwise", {t(tmp(3)), s(kK), t(tmp(4))}, {kMul}, mem);      // arg
  run("activation", {t(tmp(4)), t(tmp(5))}, act(kTanh), mem);      // t
  run("eltwise", {t(tmp(5)), s(kOne), t(tmp(6))}, {kAdd}, mem);    // one_plus
  run("eltwise", {t(kX), s(kHalf), t(tmp(7))}, {kMul}, mem);       // half_x
  run("eltwise", {t(tmp(7)), t(tmp(6)), t(tmp(8))}, {kMul}, mem);  // out
  const int64_t gelu_tanh = 33;  // its index among the fns, pinned by the first test
  run("activation", {t(kX), t(kOut)}, {gelu_tanh, real_to_attr(0.01), 0}, mem);
  const std::vector<float> chain = get<float>(mem, tmp(8), n), fused = get<float>(mem, kOut, n);
  for (size_t i = 0; i < n; ++i) {
    INFO("x = ", xs[i]);
    CHECK(bits_of(fused[i]) == bits_of(chain[i]));
  }
  CHECK(bits_of(fused[0]) == bits_of(-0.0f));
  CHECK(std::isnan(fused[n - 1]));
  CHECK(bits_of(fused[8]) == bits_of(10.0f));
  // The same steps in plain f32 arithmetic, written out here.
  for (size_t i = 0; i < n; ++i) {
    const float x = xs[i];
    const float inner = x + ((x * x) * x) * 0.044715f;
    const float th = static_cast<float>(std::tanh(static_cast<double>(inner * 0x1.988454p-1f)));
    const float want = (x * 0.5f) * (th + 1.0f);
    INFO("x = ", x);
    CHECK(bits_of(fused[i]) == bits_of(want));
  }
}

TEST_CASE("activation gelu_erf in f32 equals its element-wise chain bit for bit") {
  // The chain PyTorch exports for nn.GELU, run as the eltwise and activation instructions it
  // lowers to: d = x / s, e = erf(d), a = e + 1, m = x * a, out = m * 0.5 (s = sqrt 2 in f32).
  // -10 gives -0 (e = -1), 10 gives 10 (e = 1), -inf gives NaN (-inf * 0), 1e-30 stays above 0,
  // 3e38 overflows m to inf.
  const std::vector<float> xs = {-10, -3.5f,  -1,     -0.25f,  0,    0.5f,  1,        2.75f,
                                 10,  1e-30f, -1e-3f, 3.0e38f, 0.7f, -0.7f, INFINITY, -INFINITY};
  const size_t n = xs.size();
  const int64_t extent = static_cast<int64_t>(n);
  const uint64_t kX = 0, kS = 64, kOne = 68, kHalf = 72, kOut = 128;
  std::vector<uint8_t> mem(1024, 0);
  put<float>(mem, kX, xs);
  put<float>(mem, kS, {0x1.6a09e6p+0f, 1.0f, 0.5f});  // sqrt 2 in f32, 1, 0.5
  CHECK(bits_of(fracsim::isa::kGeluErfS) == bits_of(0x1.6a09e6p+0f));
  auto t = [&](uint64_t at) { return f32_vector(at, extent); };
  auto s = [&](uint64_t at) { return f32_broadcast(at, extent); };
  auto tmp = scratch;
  const int64_t erf = 9, gelu_erf = 34;  // their indices among the fns, pinned above
  run("eltwise", {t(kX), s(kS), t(tmp(0))}, {kDiv}, mem);                        // d
  run("activation", {t(tmp(0)), t(tmp(1))}, {erf, real_to_attr(0.01), 0}, mem);  // e
  run("eltwise", {t(tmp(1)), s(kOne), t(tmp(2))}, {kAdd}, mem);                  // a
  run("eltwise", {t(kX), t(tmp(2)), t(tmp(3))}, {kMul}, mem);                    // m
  run("eltwise", {t(tmp(3)), s(kHalf), t(tmp(4))}, {kMul}, mem);                 // out
  run("activation", {t(kX), t(kOut)}, {gelu_erf, real_to_attr(0.01), 0}, mem);
  const std::vector<float> chain = get<float>(mem, tmp(4), n), fused = get<float>(mem, kOut, n);
  for (size_t i = 0; i < n; ++i) {
    INFO("x = ", xs[i]);
    CHECK(bits_of(fused[i]) == bits_of(chain[i]));
  }
  CHECK(bits_of(fused[0]) == bits_of(-0.0f));
  CHECK(bits_of(fused[8]) == bits_of(10.0f));
  CHECK(fused[9] > 0.0f);
  CHECK(fused[11] == INFINITY);
  CHECK(std::isnan(fused[n - 1]));
  // The same steps in plain f32 arithmetic, written out here.
  for (size_t i = 0; i < n; ++i) {
    const float x = xs[i];
    const float e = static_cast<float>(std::erf(static_cast<double>(x / 0x1.6a09e6p+0f)));
    const float want = (x * (e + 1.0f)) * 0.5f;
    INFO("x = ", x);
    CHECK(bits_of(fused[i]) == bits_of(want));
  }
}

TEST_CASE("activation on integers: fixed point with frac_bits, half to even, saturated") {
  std::vector<uint8_t> mem(256, 0);
  // i16 sigmoid, frac_bits 8: out = saturate(round_half_even(sigmoid(x / 256) x 256)).
  //   -32768: 6.6e-54 -> 0;  -512: 30.516 -> 31;  -256: 68.849 -> 69;  -1: 127.75 -> 128;
  //   0: 128 exactly;  1: 128.25 -> 128;  128: 159.350 -> 159;  256: 187.151 -> 187;
  //   512: 225.484 -> 225;  32767: 256.000 -> 256.
  put<int16_t>(mem, 0, {-32768, -512, -256, -1, 0, 1, 128, 256, 512, 32767});
  const std::vector<TensorRef> i16 = {rank6(0, DType::i16, {2, 5}), rank6(64, DType::i16, {2, 5})};
  run("activation", i16, act(kSigmoid, 0.01, 8), mem);
  CHECK(get<int16_t>(mem, 64, 10) ==
        std::vector<int16_t>{0, 31, 69, 128, 128, 128, 159, 187, 225, 256});
  // The same input read as an integer (frac_bits 0): sigmoid(x) rounded is 0, 1 or (at 0) 0.5 -> 0.
  run("activation", i16, act(kSigmoid, 0.01, 0), mem);
  CHECK(get<int16_t>(mem, 64, 10) == std::vector<int16_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1});

  // i16 tanh, frac_bits 8: -256 x tanh(128) -> -256; -194.968 -> -195; -62.699 -> -63; 0;
  // 62.699 -> 63; 162.598 -> 163; 256.
  put<int16_t>(mem, 0, {-32768, -256, -64, 0, 64, 192, 32767});
  run("activation", {rank6(0, DType::i16, {7}), rank6(64, DType::i16, {7})}, act(kTanh, 0.01, 8),
      mem);
  CHECK(get<int16_t>(mem, 64, 7) == std::vector<int16_t>{-256, -195, -63, 0, 63, 163, 256});

  // i8 exp, frac_bits 4: 0.005 -> 0; 5.886 -> 6; 16; 26.380 -> 26; 43.493 -> 43;
  // 125.850 -> 126; 133.966 saturates to 127, as does 44805.6.
  put<int8_t>(mem, 0, {-128, -16, 0, 8, 16, 33, 34, 127});
  run("activation", {rank6(0, DType::i8, {8}), rank6(64, DType::i8, {8})}, act(kExp, 0.01, 4), mem);
  CHECK(get<int8_t>(mem, 64, 8) == std::vector<int8_t>{0, 6, 16, 26, 43, 126, 127, 127});

  // i32 gelu, frac_bits 16: -10397.63 -> -10398; -10110.16 -> -10110; 0; 22657.84 -> 22658;
  // 55138.37 -> 55138; 2^31 - 1 stays.
  put<int32_t>(mem, 0, {-65536, -32768, 0, 32768, 65536, 2147483647});
  run("activation", {rank6(0, DType::i32, {6}), rank6(64, DType::i32, {6})}, act(kGelu, 0.01, 16),
      mem);
  CHECK(get<int32_t>(mem, 64, 6) ==
        std::vector<int32_t>{-10398, -10110, 0, 22658, 55138, 2147483647});
}

TEST_CASE("random data segments are deterministic and in range") {
  DataSegment s;
  s.kind = DataSegment::Kind::random;
  s.dtype = DType::i8;
  s.count = 1000;
  s.seed = 42;
  s.lo = -8;
  s.hi = 8;
  std::vector<uint8_t> a(1000), b(1000);
  fill_data_segment(s, MemoryView{a.data(), a.size()});
  fill_data_segment(s, MemoryView{b.data(), b.size()});
  CHECK(a == b);
  int lo = 0, hi = 0;
  for (uint8_t v : a) {
    lo = std::min<int>(lo, static_cast<int8_t>(v));
    hi = std::max<int>(hi, static_cast<int8_t>(v));
  }
  CHECK(lo == -8);
  CHECK(hi == 8);
}
