// FRISA extension ops: definitions are validated on loading, with messages naming file, line and
// op; the shipped ones compute what a direct implementation computes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "isa/error.h"
#include "isa/extension.h"
#include "isa/reference.h"
#include "isa/unit_cycles.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

std::string load_error(const std::string& yaml) {
  OpTable t = OpTable::builtin();  // primitives to build on
  try {
    t.add_yaml(yaml, "ext.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

// A valid extension op; each bad one below changes one line of it.
const std::string kScale = R"(op: scale_rows
opcode: 0x1ff
summary: "out[M,N] = x * s[M]"
dims:
  M: parallel
  N: parallel
operands:
  - {name: x, role: in, dims: [M, N]}
  - {name: s, role: in, dims: [M]}
  - {name: out, role: out, dims: [M, N]}
temporaries:
  - {name: t, dims: [M, N]}
dtypes:
  - [f32, f32, f32]
work: M*N
sequence:
  - eltwise: {a: "x[1,1,1,1,M,N]", b: "s[1,1,1,1,M,N]", out: "t[1,1,1,1,M,N]", fn: mul}
  - activation: {in: "t[1,1,1,1,M,N]", out: "out[1,1,1,1,M,N]", fn: relu}
)";

std::string with(const std::string& from, const std::string& to) {
  std::string s = kScale;
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a valid extension op loads with its sequence") {
  CHECK(load_error(kScale) == "no error");
  OpTable t = OpTable::builtin();
  t.add_yaml(kScale, "ext.yaml");
  const OpDef& op = t.get("scale_rows");
  CHECK(op.is_extension());
  REQUIRE(op.sequence.size() == 2);
  CHECK(op.sequence[0].prim->name == "eltwise");
  CHECK(op.sequence[1].line == 18);
}

TEST_CASE("broken extension ops name file, line and op") {
  CHECK(load_error(with("  - activation:", "  - frobnicate:")) ==
        "ext.yaml:18: sequence[1]: op scale_rows: unknown primitive 'frobnicate'");
  CHECK(load_error(with("  M: parallel\n  N: parallel\n",
                        "  M: parallel\n  N: parallel\n  Q: parallel\n")) ==
        "ext.yaml:5: dims: op scale_rows: dim Q is never bound by an operand");
  CHECK(load_error(with("out: \"t[1,1,1,1,M,N]\", fn: mul", "out: \"t[1,1,1,1,M,Z]\", fn: mul")) ==
        "ext.yaml:17: sequence[0]: op scale_rows: operand out: unknown dim 'Z'");
  CHECK(load_error(with("b: \"s[1,1,1,1,M,N]\"", "b: \"q[1,1,1,1,M,N]\"")) ==
        "ext.yaml:17: sequence[0]: op scale_rows: operand b: 'q[1,1,1,1,M,N]' is neither an "
        "operand nor a temporary written as name[axes]");
  CHECK(load_error(
            with("out: \"out[1,1,1,1,M,N]\", fn: relu", "out: \"x[1,1,1,1,M,N]\", fn: relu")) ==
        "ext.yaml:18: sequence[1]: op scale_rows: operand out: writes the input x");
  CHECK(load_error(with("in: \"t[1,1,1,1,M,N]\"", "in: \"t[1,1,1,1,1,N]\"")) ==
        "ext.yaml:18: sequence[1]: op scale_rows: operand in: the view of t drops its dim M");
  // N is declared parallel, but this step reduces over it: the split rule contradicts the
  // sequence.
  CHECK(load_error(
            with("  - activation: {in: \"t[1,1,1,1,M,N]\", out: \"out[1,1,1,1,M,N]\", fn: relu}",
                 "  - reduce: {in: \"t[M,1,1,N,1,1]\", out: \"out[M,N,1]\", fn: sum}")) ==
        "ext.yaml:18: sequence[1]: op scale_rows: dim N is declared parallel but reduce does not "
        "treat it as parallel (its dim R0)");
  CHECK(load_error(with("fn: mul}", "fn: exp}")) ==
        "ext.yaml:17: sequence[0]: op scale_rows: attribute fn: 'exp' is not one of add, sub, "
        "mul, div, max, min, pow, mod, fmod");
}

TEST_CASE("softmax runs its sequence: exactly what a direct f32 implementation gives") {
  const OpDef& op = OpTable::builtin().get("softmax");
  const int64_t M = 3, N = 5;
  std::vector<float> x = {1, 2, 3, 4, 5, -1, 0, 1, 0, -1, 10, 10, 10, 10, 10};
  std::vector<uint8_t> mem(1024, 0);
  std::memcpy(mem.data(), x.data(), x.size() * 4);
  Instruction in{
      op.opcode, {make_tensor(0, DType::f32, {M, N}), make_tensor(512, DType::f32, {M, N})}, {}};
  execute_reference(op, in, MemoryView{mem.data(), mem.size()});
  for (int64_t m = 0; m < M; ++m) {
    float mx = x[m * N];
    for (int64_t n = 1; n < N; ++n) mx = x[m * N + n] > mx ? x[m * N + n] : mx;
    std::vector<float> e(N);
    float s = 0;
    for (int64_t n = 0; n < N; ++n) {
      e[n] = static_cast<float>(std::exp(static_cast<double>(x[m * N + n] - mx)));
      s = s + e[n];
    }
    for (int64_t n = 0; n < N; ++n) {
      float got;
      std::memcpy(&got, &mem[512 + 4 * (m * N + n)], 4);
      CHECK(got == e[n] / s);
    }
  }
}

TEST_CASE("bayes_step is the marginal of the product of beliefs and table") {
  const OpDef& op = OpTable::builtin().get("bayes_step");
  // phi[1,2] = {0.25, 0.75}; cpt[2,3] rows {0.5, 0.25, 0.25}, {0.125, 0.375, 0.5}:
  // out = {0.25*0.5 + 0.75*0.125, 0.25*0.25 + 0.75*0.375, 0.25*0.25 + 0.75*0.5}
  //     = {0.21875, 0.34375, 0.4375} (all exact in binary).
  std::vector<uint8_t> mem(1024, 0);
  std::vector<float> phi = {0.25f, 0.75f}, cpt = {0.5f, 0.25f, 0.25f, 0.125f, 0.375f, 0.5f};
  std::memcpy(mem.data(), phi.data(), 8);
  std::memcpy(mem.data() + 64, cpt.data(), 24);
  Instruction in{op.opcode,
                 {make_tensor(0, DType::f32, {1, 2}), make_tensor(64, DType::f32, {2, 3}),
                  make_tensor(128, DType::f32, {1, 3})},
                 {0}};
  execute_reference(op, in, MemoryView{mem.data(), mem.size()});
  std::vector<float> out(3);
  std::memcpy(out.data(), mem.data() + 128, 12);
  CHECK(out == std::vector<float>{0.21875f, 0.34375f, 0.4375f});
}

TEST_CASE("an extension piece reserves its temporaries in local memory") {
  const OpDef& op = OpTable::builtin().get("softmax");
  Instruction in{
      op.opcode, {make_tensor(0, DType::f32, {4, 16}), make_tensor(256, DType::f32, {4, 16})}, {}};
  // mx[4] 16 B -> 64, e[4,16] 256 B, s[4] 16 B -> 64.
  CHECK(temporaries_bytes(op, in) == 64 + 256 + 64);
  Expansion x = expand_sequence(op, in);
  CHECK(x.arena_bytes == 256 + 256 + 64 + 256 + 64);
  REQUIRE(x.steps.size() == 5);
  CHECK(tensor_str(x.steps[1].operands[1]) == "f32@0x200[1,1,1,1,4,16:0,0,0,0,1,0]");
}

TEST_CASE("a fused epilogue overlapped with the MAC array adds the last block's share only") {
  // relu(a[1,8,K] x b[1,K,8] + bias[8]) on a 4x4 array with 8 vector lanes. The matrix step:
  // 1 * cdiv(8, 4) * cdiv(8, 4) * K + 4 + 4 - 1 cycles; the epilogue: the bias add and the relu
  // over 64 outputs, 64 / 8 = 8 cycles each, 16 in all; the outputs are 64 / (4 * 4) = 4
  // blocks of the array.
  const OpTable& ops = OpTable::builtin();
  const OpDef& op = ops.get("matmul_bias_act");
  LeafParams leaf;
  for (auto& m : leaf.matrix) m = {4, 4};
  leaf.lanes = 8;
  auto mm = [&](int64_t k, int64_t epilogue) {
    return Instruction{
        op.opcode,
        {make_tensor(0, DType::f32, {1, 8, k}), make_tensor(1 << 20, DType::f32, {1, k, 8}),
         make_tensor(2 << 20, DType::f32, {8}), make_tensor(3 << 20, DType::f32, {1, 8, 8})},
        {0, epilogue, 1, 0, 0, 0}};
  };
  // K = 16: the array's 4 * 16 + 7 = 71 cycles, the epilogue after it: 87.
  CHECK(leaf_cycles(op, mm(16, 1), leaf) == 71 + 16);
  leaf.overlapped_epilogue = true;
  // Each block's 16 / 4 = 4 cycles of epilogue while the array computes the next: 71 + 4.
  CHECK(leaf_cycles(op, mm(16, 1), leaf) == 71 + 4);
  // K = 1: the array's 4 + 7 = 11 cycles are the shorter; the epilogue's 16 then bound it, and
  // the first block's share of the array, ceil(11 / 4) = 3, comes before: 19 (27 serial).
  CHECK(leaf_cycles(op, mm(1, 1), leaf) == 16 + 3);
  // A piece that does not complete the sum has no epilogue: the array alone.
  CHECK(leaf_cycles(op, mm(16, 0), leaf) == 71);
  leaf.overlapped_epilogue = false;
  CHECK(leaf_cycles(op, mm(1, 1), leaf) == 11 + 16);
}
