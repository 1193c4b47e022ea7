#include <doctest/doctest.h>

#include <cmath>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/reference.h"

using namespace fracsim;

namespace {

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

// A residual block: conv -> bn -> relu -> conv -> bn -> add (the block's input) -> relu, and a
// dense layer with bias and ReLU.
const char* kBlock = R"(
workload: block
inputs:
  x: {shape: [1, 8, 6, 6], dtype: f32}
layers:
  - {name: c1, type: conv2d, input: x, filters: 8, kernel: 3, padding: 1, bias: false}
  - {name: c1_bn, type: batchnorm, input: c1}
  - {name: c1_relu, type: relu, input: c1_bn}
  - {name: c2, type: conv2d, input: c1_relu, filters: 8, kernel: 3, padding: 1, bias: true}
  - {name: c2_bn, type: batchnorm, input: c2}
  - {name: sum, type: add, inputs: [c2_bn, x]}
  - {name: sum_relu, type: relu, input: sum}
  - {name: f, type: flatten, input: sum_relu}
  - {name: fc, type: dense, input: f, units: 10, bias: true}
  - {name: fc_relu, type: relu, input: fc}
)";

isa::Program compile(bool fuse, bool fold) {
  compiler::CompileOptions o;
  o.fuse = fuse;
  o.fold_batchnorm = fold;
  return compiler::compile(compiler::parse_workload(kBlock, "block.yaml", o), ops());
}

std::vector<float> output(const isa::Program& p) {
  const std::vector<uint8_t> mem = isa::run_reference(p, ops());
  for (const isa::Symbol& s : p.symbols)
    if (s.role == isa::SymbolRole::output) {
      std::vector<float> v;
      isa::MemoryView m{const_cast<uint8_t*>(mem.data()), mem.size()};
      for (int64_t i = 0; i < s.tensor.elements(); ++i)
        v.push_back(static_cast<float>(isa::load_element(s.tensor, i, m)));
      return v;
    }
  return {};
}

}  // namespace

TEST_CASE("fusion: one epilogue op per chain, named by the conv or dense layer") {
  const isa::Program p = compile(true, true);
  std::vector<std::string> ops_seen;
  for (const isa::Instruction& in : p.instructions) ops_seen.push_back(ops().get(in.opcode).name);
  CHECK(ops_seen ==
        std::vector<std::string>{"conv2d_bias_act", "conv2d_bias_add_act", "matmul_bias_act"});
  CHECK(p.instruction_names == std::vector<std::string>{"c1", "c2", "fc"});
  // Unfused: every layer an instruction, a bias add of its own (c2, fc).
  CHECK(compile(false, false).instructions.size() == 11);
  // Folding alone: c1 gains a bias add, both batchnorms go.
  const isa::Program folded = compile(false, true);
  CHECK(folded.instructions.size() == 10);
  for (const isa::Instruction& in : folded.instructions)
    CHECK(ops().get(in.opcode).name != "batchnorm");
}

TEST_CASE("fusion keeps the results bit for bit, folding within the rounding of the weights") {
  const std::vector<float> plain = output(compile(false, false));
  // Fusion without folding: the batchnorms stay, the fused ops' adds run in the unfused order.
  CHECK(output(compile(true, false)) == plain);
  const std::vector<float> folded = output(compile(false, true));
  CHECK(output(compile(true, true)) == folded);  // fusing the folded program: bit for bit
  // Folding rounds w * k and the bias once to f32: a relative error of a few 2^-24 per term.
  REQUIRE(folded.size() == plain.size());
  for (size_t i = 0; i < plain.size(); ++i)
    CHECK(std::fabs(folded[i] - plain[i]) <= 1e-4 * (1 + std::fabs(plain[i])));
}
