#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "compiler/workload.h"
#include "isa/reference.h"
#include "tests/common/compile_helpers.h"
#include "tests/compiler/onnx_model_builder.h"

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

// A YAML workload compiled with the given passes (the residual block by default).
isa::Program compile(bool fuse, bool fold, const char* text = kBlock,
                     const char* file = "block.yaml") {
  compiler::CompileOptions o;
  o.fuse = fuse;
  o.fold_batchnorm = fold;
  return compiler::compile(compiler::parse_workload(text, file, o), ops());
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

const std::string kRoot = FRACSIM_SOURCE_DIR;

std::string op_name(const isa::Instruction& in) { return ops().get(in.opcode).name; }

std::vector<std::string> op_names(const isa::Program& p) {
  std::vector<std::string> v;
  for (const isa::Instruction& in : p.instructions) v.push_back(op_name(in));
  return v;
}

// The value of enum attribute `attr` of an instruction.
std::string enum_attr(const isa::Instruction& in, const std::string& attr) {
  const isa::OpDef& op = ops().get(in.opcode);
  return op.enum_value(attr, in.attrs);
}

isa::Program bert_small(const compiler::CompileOptions& o = {}) {
  return compiler::compile(compiler::load_onnx(kRoot + "/workloads/bert-small.onnx", o), ops());
}

// The bytes of every output, in symbol order, element by element (row-major).
std::vector<uint8_t> output_bytes(const isa::Program& p) {
  std::vector<uint8_t> mem = isa::run_reference(p, ops());
  std::vector<uint8_t> out;
  for (const isa::Symbol& s : p.symbols) {
    if (s.role != isa::SymbolRole::output) continue;
    const size_t size = isa::dtype_size(s.tensor.dtype) * static_cast<size_t>(s.tensor.elements());
    std::vector<uint8_t> dense(size);
    isa::TensorRef d = s.tensor;
    d.address = 0;
    d.strides = isa::contiguous_strides(d.shape);
    isa::copy_tensor(s.tensor, isa::MemoryView{mem.data(), mem.size()}, d,
                     isa::MemoryView{dense.data(), dense.size()});
    out.insert(out.end(), dense.begin(), dense.end());
  }
  return out;
}

// A GELU in the tanh form as scripts/make_workloads writes it, on x = x0 * 4 (x0 random in
// [-1, 1), so that tanh saturates on some elements): y = (x * 0.5) * (tanh((x + x^3 c) k) + 1).
struct GeluGraph {
  float c = isa::kGeluTanhC;
  bool swapped = false;       // every Mul and Add with its operands the other way round
  std::string second_reader;  // an intermediate that an Add with y also reads (z = y + it)
  std::string extra_output;   // an intermediate that is also a graph output
};

compiler::Workload gelu_workload(const GeluGraph& g, const compiler::CompileOptions& o = {}) {
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  OnnxModelBuilder b;
  b.input("x0", kF, {4, 8});
  b.floats("four", {}, {4.0f}).floats("gelu_c", {}, {g.c}).floats("k", {}, {isa::kGeluTanhK});
  b.floats("one", {}, {1.0f}).floats("half", {}, {0.5f});
  auto bin = [&](const char* op, const std::string& a, const std::string& c,
                 const std::string& out) {
    b.node(op, g.swapped ? std::vector<std::string>{c, a} : std::vector<std::string>{a, c}, {out},
           out);
  };
  bin("Mul", "x0", "four", "x");
  bin("Mul", "x", "x", "x2");
  bin("Mul", "x2", "x", "x3");
  bin("Mul", "x3", "gelu_c", "cx3");
  bin("Add", "x", "cx3", "inner");
  bin("Mul", "inner", "k", "arg");
  b.node("Tanh", {"arg"}, {"t"}, "t");
  bin("Add", "t", "one", "one_plus");
  bin("Mul", "x", "half", "half_x");
  bin("Mul", "half_x", "one_plus", "y");
  if (!g.second_reader.empty()) {
    bin("Add", "y", g.second_reader, "z");
    b.output("z", kF, {4, 8});
  } else {
    b.output("y", kF, {4, 8});
  }
  if (!g.extra_output.empty()) b.output(g.extra_output, kF, {4, 8});
  return compiler::import_onnx(b.model(), "gelu.onnx", {}, o);
}

// Attention's scores [1, 2, 8, 8] divided by sqrt(8), plus a causal mask [8, 8] (0 on and below
// the diagonal, -1e9 above), then Softmax along the last axis, as scripts/make_workloads writes
// GPT-2's attention.
struct AttentionGraph {
  bool masked = true;
  bool mask_first = false;            // Add(mask, scaled)
  std::vector<int64_t> divisor_dims;  // the divisor's shape: {} a scalar
  std::vector<int64_t> mask_dims = {8, 8};
  std::string second_reader;  // an intermediate an Add with the softmax also reads
  int64_t axis = -1;
};

compiler::Workload attention_workload(const AttentionGraph& g,
                                      const compiler::CompileOptions& o = {}) {
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  OnnxModelBuilder b;
  b.input("scores", kF, {1, 2, 8, 8});
  std::vector<float> s(static_cast<size_t>(g.divisor_dims.empty() ? 1 : g.divisor_dims[0]),
                       std::sqrt(8.0f));
  b.floats("sqrt_8", g.divisor_dims, s);
  // Element (i, j) of each [8, 8] block: 0 for j <= i, -1e9 above the diagonal.
  int64_t count = 1;
  for (int64_t d : g.mask_dims) count *= d;
  std::vector<float> mask;
  for (int64_t e = 0; e < count; ++e) mask.push_back(e % 8 > e / 8 % 8 ? -1e9f : 0.0f);
  b.floats("causal_mask", g.mask_dims, mask);
  b.node("Div", {"scores", "sqrt_8"}, {"scaled"}, "scaled");
  std::string in = "scaled";
  if (g.masked) {
    b.node("Add",
           g.mask_first ? std::vector<std::string>{"causal_mask", "scaled"}
                        : std::vector<std::string>{"scaled", "causal_mask"},
           {"masked"}, "masked");
    in = "masked";
  }
  testing::set_attr(b.node("Softmax", {in}, {"probs"}, "probs"), "axis", g.axis);
  if (!g.second_reader.empty()) {
    b.node("Add", {"probs", g.second_reader}, {"z"}, "z");
    b.output("z", kF, {1, 2, 8, 8});
  } else {
    b.output("probs", kF, {1, 2, 8, 8});
  }
  return compiler::import_onnx(b.model(), "attention.onnx", {}, o);
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

TEST_CASE("fusion: bert-small's GELU is fc1's epilogue, its scaled softmax one op") {
  const isa::Program p = bert_small();
  // q, k, v; the scores, the scaled softmax, the context (written in the layout of the heads
  // merged, no copy); the output projection with the residual, layernorm; fc1 with the GELU;
  // fc2 with the residual; layernorm.
  CHECK(op_names(p) ==
        std::vector<std::string>{"matmul_bias_act", "matmul_bias_act", "matmul_bias_act", "matmul",
                                 "softmax_scaled", "matmul", "matmul_bias_add_act", "layernorm",
                                 "matmul_bias_act", "matmul_bias_add_act", "layernorm"});
  REQUIRE(p.instruction_names.size() == 11);
  CHECK(p.instruction_names[4] == "attn.probs");
  const isa::Instruction& softmax = p.instructions[4];
  // The scores [1, 2 heads, 16, 16] as 32 rows of 16, divided by sqrt(32) in f32.
  CHECK(softmax.operands[0].shape == isa::Shape{32, 16});
  const isa::OpDef& softmax_op = ops().get(softmax.opcode);
  CHECK(isa::attr_to_real(softmax.attrs.at(static_cast<size_t>(softmax_op.attr_index("scale")))) ==
        static_cast<double>(std::sqrt(32.0f)));
  CHECK(p.instruction_names[8] == "ffn.fc1.matmul");
  CHECK(enum_attr(p.instructions[8], "act") == "gelu_tanh");
  for (const std::string& name : p.instruction_names) {
    CHECK(name.rfind("ffn.gelu", 0) != 0);
    CHECK(name != "attn.scaled");
  }
  // Unfused: the GELU's nine element-wise layers, one instruction each, and the scaling.
  const isa::Program u = bert_small(testing::unfused());
  CHECK(u.instructions.size() == 30);
  int gelu = 0, scaled = 0;
  for (const std::string& name : u.instruction_names) {
    gelu += name.rfind("ffn.gelu", 0) == 0;
    scaled += name == "attn.scaled";
  }
  CHECK(gelu == 9);
  CHECK(scaled == 1);
}

TEST_CASE("fusion keeps bert-small's outputs bit for bit") {
  const std::vector<uint8_t> fused = output_bytes(bert_small()),
                             plain = output_bytes(bert_small(testing::unfused()));
  CHECK(fused.size() == 16 * 64 * 4);
  CHECK(fused == plain);
}

TEST_CASE("fusion: a GELU's chain becomes gelu_tanh only when it matches exactly") {
  auto program = [](const GeluGraph& g, const compiler::CompileOptions& o = {}) {
    return compiler::compile(gelu_workload(g, o), ops());
  };
  const isa::Program plain = program({}, testing::unfused());
  REQUIRE(plain.instructions.size() == 10);
  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    GeluGraph g;
    g.swapped = swapped;
    const isa::Program p = program(g);
    REQUIRE(op_names(p) == std::vector<std::string>{"eltwise", "activation"});
    CHECK(enum_attr(p.instructions[1], "fn") == "gelu_tanh");
    CHECK(p.instruction_names == std::vector<std::string>{"x", "y"});
    const std::vector<uint8_t> out = output_bytes(p);
    CHECK(out == output_bytes(program(g, testing::unfused())));
    CHECK(out == output_bytes(plain));  // Mul and Add commute bit for bit
  }
  // c one ulp above 0.044715f: the chain stays as it is.
  GeluGraph off;
  off.c = std::nextafter(isa::kGeluTanhC, 1.0f);
  CHECK(program(off).instructions.size() == 10);
  off.c = std::nextafter(isa::kGeluTanhC, 0.0f);
  CHECK(program(off).instructions.size() == 10);
  // An intermediate with a second reader, or that is a graph output: unfused (10 and the add).
  for (const char* t : {"x2", "x3", "cx3", "inner", "arg", "t", "one_plus", "half_x"}) {
    CAPTURE(std::string(t));
    GeluGraph g;
    g.second_reader = t;
    CHECK(program(g).instructions.size() == 11);
    GeluGraph h;
    h.extra_output = t;
    CHECK(program(h).instructions.size() == 10);
  }
  // x read outside the pattern too: it still fuses (x stays in memory for its other reader).
  GeluGraph x;
  x.second_reader = "x";
  CHECK(op_names(program(x)) == std::vector<std::string>{"eltwise", "activation", "eltwise"});
}

TEST_CASE("fusion: a scaled, masked softmax is one op, bit for bit the unfused chain") {
  auto program = [](const AttentionGraph& g, const compiler::CompileOptions& o = {}) {
    return compiler::compile(attention_workload(g, o), ops());
  };
  auto scale = [](const isa::Instruction& in) {
    const isa::OpDef& op = ops().get(in.opcode);
    return isa::attr_to_real(in.attrs.at(static_cast<size_t>(op.attr_index("scale"))));
  };
  for (bool mask_first : {false, true})
    for (const std::vector<int64_t>& mask_dims :
         {std::vector<int64_t>{8, 8}, std::vector<int64_t>{1, 1, 8, 8}}) {
      CAPTURE(mask_first);
      CAPTURE(mask_dims.size());
      AttentionGraph g;
      g.mask_first = mask_first;
      g.mask_dims = mask_dims;
      const isa::Program p = program(g), plain = program(g, testing::unfused());
      REQUIRE(op_names(p) == std::vector<std::string>{"softmax_scaled_masked"});
      CHECK(op_names(plain) == std::vector<std::string>{"eltwise", "eltwise", "softmax"});
      CHECK(p.instruction_names == std::vector<std::string>{"probs"});
      CHECK(scale(p.instructions[0]) == static_cast<double>(std::sqrt(8.0f)));
      // x [B = 2 heads, M = 8, N = 8] against the mask [8, 8].
      CHECK(p.instructions[0].operands[0].shape == isa::Shape{2, 8, 8});
      CHECK(p.instructions[0].operands[1].shape == isa::Shape{8, 8});
      CHECK(output_bytes(p) == output_bytes(plain));
    }
  AttentionGraph unmasked;
  unmasked.masked = false;
  const isa::Program p = program(unmasked);
  REQUIRE(op_names(p) == std::vector<std::string>{"softmax_scaled"});
  CHECK(p.instructions[0].operands[0].shape == isa::Shape{16, 8});
  CHECK(output_bytes(p) == output_bytes(program(unmasked, testing::unfused())));
}

TEST_CASE("fusion: a softmax stays unfused when its chain is not a scaling by a scalar") {
  // Unfused: the same instructions as the program compiled without fusion.
  auto unfused_as_plain = [](const AttentionGraph& g) {
    const std::vector<std::string> fused =
        op_names(compiler::compile(attention_workload(g), ops()));
    CHECK(fused == op_names(compiler::compile(attention_workload(g, testing::unfused()), ops())));
    return fused;
  };
  AttentionGraph divisor;  // a divisor [1] is one element: a scalar
  divisor.divisor_dims = {1};
  CHECK(op_names(compiler::compile(attention_workload(divisor), ops())) ==
        std::vector<std::string>{"softmax_scaled_masked"});
  divisor.divisor_dims = {8};  // a row of divisors
  CHECK(unfused_as_plain(divisor) == std::vector<std::string>{"eltwise", "eltwise", "softmax"});
  AttentionGraph per_head;  // a mask [2, 1, 8] varies along the heads: no one [M, N] block
  per_head.mask_dims = {2, 1, 8};
  CHECK(unfused_as_plain(per_head) == std::vector<std::string>{"eltwise", "eltwise", "softmax"});
  AttentionGraph axis;  // softmax along another axis
  axis.axis = 2;
  // The div, the add, a copy of the scores with axis 2 last, the softmax.
  CHECK(unfused_as_plain(axis) ==
        std::vector<std::string>{"eltwise", "eltwise", "eltwise", "softmax"});
  for (const char* t : {"scaled", "masked"}) {
    CAPTURE(std::string(t));
    AttentionGraph g;
    g.second_reader = t;
    CHECK(unfused_as_plain(g) ==
          std::vector<std::string>{"eltwise", "eltwise", "softmax", "eltwise"});
  }
  AttentionGraph unmasked;  // the scaled scores read twice, without a mask
  unmasked.masked = false;
  unmasked.second_reader = "scaled";
  CHECK(unfused_as_plain(unmasked) == std::vector<std::string>{"eltwise", "softmax", "eltwise"});
}

TEST_CASE("a strided 1x1 conv reads every s-th pixel through its input view, bit for bit") {
  // x [1, 4, 5, 5], a 1x1 conv of stride 2 to 6 channels with bias and ReLU: Ho = Wo =
  // (5 - 1) / 2 + 1 = 3.
  const char* text = R"(
workload: strided
inputs:
  x: {shape: [1, 4, 5, 5], dtype: f32}
layers:
  - {name: c, type: conv2d, input: x, filters: 6, kernel: 1, stride: 2, bias: true}
  - {name: r, type: relu, input: c}
)";
  const isa::Program fused = compile(true, true, text, "strided.yaml"),
                     plain = compile(false, true, text, "strided.yaml");
  REQUIRE(fused.instructions.size() == 1);
  const isa::Instruction& in = fused.instructions[0];
  const isa::OpDef& op = ops().get(in.opcode);
  CHECK(op.name == "conv2d_bias_act");
  // [N, G, Ci, H, W] over x's bytes at 0: rows and columns 0, 2, 4 of each channel.
  CHECK(in.operands[0] ==
        isa::TensorRef{0, isa::DType::f32, {1, 1, 4, 3, 3}, {100, 100, 25, 10, 2}});
  CHECK(in.attrs[op.attr_index("stride_h")] == 1);
  CHECK(in.attrs[op.attr_index("stride_w")] == 1);
  // Without the compiler's rewrites: the dense input at stride 2.
  REQUIRE(plain.instructions.size() == 3);  // conv2d, the bias add, relu
  const isa::Instruction& conv = plain.instructions[0];
  CHECK(conv.operands[0] ==
        isa::TensorRef{0, isa::DType::f32, {1, 1, 4, 5, 5}, {100, 100, 25, 5, 1}});
  CHECK(conv.attrs[ops().get(conv.opcode).attr_index("stride_h")] == 2);
  const std::vector<float> a = output(fused), b = output(plain);
  REQUIRE(a.size() == 54);
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST_CASE(
    "attention's head layouts: a head split re-views its slice, the context writes the heads "
    "merged") {
  // x [3, 8]: columns 0-3 split into 2 heads of 2 ([3, 2, 2], then [2, 3, 2]); per head times w
  // [2, 2, 5]; the product [2, 3, 5] moved back to [3, 2, 5], merged to [3, 10], then ReLU.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  auto program = [](const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    b.input("x", kF, {3, 8}).input("w", kF, {2, 2, 5}).output("y", kF, {3, 10});
    b.ints("starts", {0}).ints("ends", {4}).ints("axes", {1});
    b.ints("split", {3, 2, 2}).ints("merged", {3, 10});
    b.node("Slice", {"x", "starts", "ends", "axes"}, {"xs"}, "xs");
    b.node("Reshape", {"xs", "split"}, {"heads"}, "heads");
    testing::set_attr(b.node("Transpose", {"heads"}, {"h"}, "h"), "perm",
                      std::vector<int64_t>{1, 0, 2});
    b.node("MatMul", {"h", "w"}, {"c"}, "c");
    testing::set_attr(b.node("Transpose", {"c"}, {"ct"}, "ct"), "perm",
                      std::vector<int64_t>{1, 0, 2});
    b.node("Reshape", {"ct", "merged"}, {"m"}, "m");
    b.node("Relu", {"m"}, {"y"}, "y");
    return compiler::compile(compiler::import_onnx(b.model(), "heads.onnx", {}, o), ops());
  };
  const isa::Program p = program({}), plain = program(testing::unfused());
  // Unfused: the slice copied dense to be split, the product, its copy into the merged layout.
  CHECK(op_names(plain) == std::vector<std::string>{"eltwise", "matmul", "eltwise", "activation"});
  REQUIRE(op_names(p) == std::vector<std::string>{"matmul", "activation"});
  const isa::Instruction& mm = p.instructions[0];
  const isa::Symbol* x = nullptr;
  for (const isa::Symbol& s : p.symbols)
    if (s.name == "x") x = &s;
  REQUIRE(x);
  // Head i, token t, dim d of the split is x[t, 2 i + d]: strides 2, 8, 1 (elements) over x.
  CHECK(mm.operands[0] == isa::TensorRef{x->tensor.address, isa::DType::f32, {2, 3, 2}, {2, 8, 1}});
  // Head i, token t, column n of the product lands at m[t, 5 i + n]: strides 5, 10, 1; the
  // ReLU reads that buffer as [3, 10], dense.
  const isa::TensorRef& out = mm.operands[2];
  CHECK(out.shape == isa::Shape{2, 3, 5});
  CHECK(out.strides == isa::Shape{5, 10, 1});
  CHECK(p.instructions[1].operands[0] ==
        isa::TensorRef{out.address, isa::DType::f32, {1, 1, 1, 1, 3, 10}, {0, 0, 0, 0, 10, 1}});
  CHECK(output_bytes(p) == output_bytes(plain));
}

TEST_CASE("a fused conv whose weight is a slice of a graph input reads that slice") {
  // w2 [2, 1, 1, 1] = {2, 3}; the conv's 1x1 weight is w2[1:2] = 3, so y = relu(3 x) for x =
  // {1, -1, 2, 0.5}: {3, 0, 6, 1.5} (the slice's offset kept, not w2's first element).
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  auto floats = [](std::vector<int64_t> dims, std::vector<float> v) {
    onnx::TensorProto t;
    t.set_data_type(kF);
    for (int64_t d : dims) t.add_dims(d);
    for (float x : v) t.add_float_data(x);
    return t;
  };
  for (const bool fuse : {true, false}) {
    CAPTURE(fuse);
    OnnxModelBuilder b;
    b.input("x", kF, {1, 1, 2, 2}).input("w2", kF, {2, 1, 1, 1}).output("y", kF, {1, 1, 2, 2});
    b.ints("starts", {1}).ints("ends", {2}).ints("axes", {0});
    b.node("Slice", {"w2", "starts", "ends", "axes"}, {"w"}, "w");
    b.node("Conv", {"x", "w"}, {"c"}, "c");
    b.node("Relu", {"c"}, {"y"}, "y");
    compiler::CompileOptions o;
    o.fuse = fuse;
    const isa::Program p = compiler::compile(
        compiler::import_onnx(
            b.model(), "slice.onnx",
            {{"x", floats({1, 1, 2, 2}, {1, -1, 2, 0.5f})}, {"w2", floats({2, 1, 1, 1}, {2, 3})}},
            o),
        ops());
    CHECK(output(p) == std::vector<float>{3, 0, 6, 1.5f});
  }
}

TEST_CASE("fusion: ONNX's Clip after a conv is the epilogue's clip, bit for bit") {
  // x [1, 2, 3, 3] random in [-1, 1); a 1x1 conv to 4 channels with weights of +-5, so that the
  // sums fall below 0 and above 6; then Clip(0, 6) (ReLU6 as PyTorch exports it: a max with the
  // min constant, then a min with the max constant) or Clip with a lower bound only.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  auto program = [](bool upper, const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    b.input("x", kF, {1, 2, 3, 3}).output("y", kF, {1, 4, 3, 3});
    b.floats("w", {4, 2, 1, 1}, {5, -5, -5, 5, 5, 5, -5, -5});
    b.floats("lo", {}, {0.0f});
    if (upper) b.floats("hi", {}, {6.0f});
    b.node("Conv", {"x", "w"}, {"c"}, "c");
    b.node("Clip",
           upper ? std::vector<std::string>{"c", "lo", "hi"} : std::vector<std::string>{"c", "lo"},
           {"y"}, "y");
    return compiler::compile(compiler::import_onnx(b.model(), "clip.onnx", {}, o), ops());
  };
  const isa::Program p = program(true, {}), plain = program(true, testing::unfused());
  REQUIRE(op_names(p) == std::vector<std::string>{"conv2d_bias_act"});
  CHECK(op_names(plain) == std::vector<std::string>{"conv2d", "eltwise", "eltwise"});
  CHECK(enum_attr(p.instructions[0], "act") == "clip");
  const isa::OpDef& op = ops().get(p.instructions[0].opcode);
  CHECK(isa::attr_to_real(p.instructions[0].attrs.at(static_cast<size_t>(op.attr_index("lo")))) ==
        0.0);
  CHECK(isa::attr_to_real(p.instructions[0].attrs.at(static_cast<size_t>(op.attr_index("hi")))) ==
        6.0);
  const std::vector<float> y = output(p);
  REQUIRE(y.size() == 36);
  CHECK(std::count(y.begin(), y.end(), 0.0f) > 0);  // clipped below and above: the test bites
  CHECK(std::count(y.begin(), y.end(), 6.0f) > 0);
  CHECK(output_bytes(p) == output_bytes(plain));
  // A lower bound alone is no clip: the max stays its own instruction, after the plain conv
  // (no bias, nothing else to fuse).
  CHECK(op_names(program(false, {})) == std::vector<std::string>{"conv2d", "eltwise"});
}

TEST_CASE(
    "fusion: a GELU's erf chain as PyTorch exports it is fc's epilogue gelu_erf, bit for bit") {
  // x [4, 8] random in [-1, 1); a MatMul by w (+-12, so that the GELU sees |h| up to 96, where
  // erf saturates) and an Add of a bias row, then nn.GELU as PyTorch exports it: d = h / sqrt 2,
  // e = Erf(d), a = e + 1, m = h * a, y = m * 0.5.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  struct Graph {
    float s = isa::kGeluErfS;
    bool swapped = false;     // Add(1, e), Mul(a, h), Mul(0.5, m)
    bool half_first = false;  // y = (h * 0.5) * a, which rounds otherwise near 0 and overflow
  };
  auto program = [](const Graph& g, const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    b.input("x", kF, {4, 8}).output("y", kF, {4, 8});
    std::vector<float> w, bias;
    for (int i = 0; i < 64; ++i) w.push_back(i % 3 == 0 ? -12.0f : 12.0f);
    for (int i = 0; i < 8; ++i) bias.push_back(0.25f * static_cast<float>(i) - 1.0f);
    b.floats("w", {8, 8}, w).floats("bias", {8}, bias);
    b.floats("s", {}, {g.s}).floats("one", {}, {1.0f}).floats("half", {}, {0.5f});
    auto bin = [&](const char* op, const std::string& a, const std::string& c,
                   const std::string& out) {
      b.node(op, g.swapped ? std::vector<std::string>{c, a} : std::vector<std::string>{a, c}, {out},
             out);
    };
    b.node("MatMul", {"x", "w"}, {"p"}, "fc");
    b.node("Add", {"p", "bias"}, {"h"}, "fc_bias");
    b.node("Div", {"h", "s"}, {"d"}, "d");
    b.node("Erf", {"d"}, {"e"}, "e");
    bin("Add", "e", "one", "a");
    if (g.half_first) {
      bin("Mul", "h", "half", "m");
      bin("Mul", "m", "a", "y");
    } else {
      bin("Mul", "h", "a", "m");
      bin("Mul", "m", "half", "y");
    }
    return compiler::compile(compiler::import_onnx(b.model(), "gelu_erf.onnx", {}, o), ops());
  };
  for (bool swapped : {false, true}) {
    CAPTURE(swapped);
    Graph g;
    g.swapped = swapped;
    const isa::Program p = program(g, {}), plain = program(g, testing::unfused());
    REQUIRE(op_names(p) == std::vector<std::string>{"matmul_bias_act"});
    CHECK(enum_attr(p.instructions[0], "act") == "gelu_erf");
    CHECK(p.instruction_names == std::vector<std::string>{"fc"});
    // Unfused: the matmul, its bias add and the five nodes of the GELU.
    CHECK(op_names(plain) == std::vector<std::string>{"matmul", "eltwise", "eltwise", "activation",
                                                      "eltwise", "eltwise", "eltwise"});
    const std::vector<float> y = output(p);
    REQUIRE(y.size() == 32);
    // Saturated on both sides (erf = -1 gives -0 or 0, erf = 1 gives h): the test bites there too.
    CHECK(std::count_if(y.begin(), y.end(), [](float v) { return v == 0.0f; }) > 0);
    CHECK(std::count_if(y.begin(), y.end(), [](float v) { return v > 10.0f; }) > 0);
    CHECK(output_bytes(p) == output_bytes(plain));
  }
  // s one ulp off sqrt 2 in f32, or 0.5 taken first: the chain stays (seven instructions, the
  // bias add fused into the matmul, the rest as they are).
  for (float s : {std::nextafter(isa::kGeluErfS, 2.0f), std::nextafter(isa::kGeluErfS, 1.0f)}) {
    Graph off;
    off.s = s;
    CHECK(op_names(program(off, {})) == std::vector<std::string>{"matmul_bias_act", "eltwise",
                                                                 "activation", "eltwise", "eltwise",
                                                                 "eltwise"});
  }
  Graph half_first;
  half_first.half_first = true;
  CHECK(program(half_first, {}).instructions.size() == 6);
}

TEST_CASE("fusion: a LayerNorm spelt as ONNX nodes is one layernorm op, bit for bit") {
  // x [3, 8] random in [-1, 1), normalised over its last axis as PyTorch exports nn.LayerNorm
  // before opset 17: mean = ReduceMean(x), d = x - mean, var = ReduceMean(Pow(d, 2)),
  // n = d / Sqrt(var + eps), y = n * gamma + beta. The op's `divide` takes the sqrt and the
  // division, so each step rounds as the chain's does.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  struct Graph {
    float two = 2.0f;
    bool swapped = false;       // Add(eps, var), Mul(gamma, n), Add(beta, scaled)
    std::string second_reader;  // an intermediate an Add with y also reads
  };
  auto program = [](const Graph& g, const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    b.input("x", kF, {3, 8});
    b.floats("gamma", {8}, {0.5f, 1.5f, -1.0f, 2.0f, 0.25f, 1.0f, 3.0f, -0.75f});
    b.floats("beta", {8}, {0.1f, -0.2f, 0.3f, 0.0f, 1.0f, -1.0f, 0.5f, 0.25f});
    b.floats("two", {}, {g.two}).floats("eps", {}, {1e-6f});
    testing::set_attr(b.node("ReduceMean", {"x"}, {"mean"}, "mean"), "axes",
                      std::vector<int64_t>{-1});
    b.node("Sub", {"x", "mean"}, {"d"}, "d");
    b.node("Pow", {"d", "two"}, {"sq"}, "sq");
    testing::set_attr(b.node("ReduceMean", {"sq"}, {"var"}, "var"), "axes",
                      std::vector<int64_t>{-1});
    auto bin = [&](const char* op, const std::string& a, const std::string& c,
                   const std::string& out) {
      b.node(op, g.swapped ? std::vector<std::string>{c, a} : std::vector<std::string>{a, c}, {out},
             out);
    };
    bin("Add", "var", "eps", "ve");
    b.node("Sqrt", {"ve"}, {"sd"}, "sd");
    b.node("Div", {"d", "sd"}, {"n"}, "n");
    bin("Mul", "n", "gamma", "scaled");
    bin("Add", "scaled", "beta", "y");
    if (!g.second_reader.empty()) {
      b.node("Add", {"y", g.second_reader}, {"z"}, "z");
      b.output("z", kF, {3, 8});
    } else {
      b.output("y", kF, {3, 8});
    }
    return compiler::compile(compiler::import_onnx(b.model(), "layernorm.onnx", {}, o), ops());
  };
  Graph swapped;
  swapped.swapped = true;
  const isa::Program p = program({}, {}), plain = program({}, testing::unfused());
  REQUIRE(op_names(p) == std::vector<std::string>{"layernorm"});
  const isa::Program p_swapped = program(swapped, {});
  CHECK(op_names(p_swapped) == std::vector<std::string>{"layernorm"});
  CHECK(output_bytes(p_swapped) == output_bytes(program(swapped, testing::unfused())));
  CHECK(p.instruction_names == std::vector<std::string>{"y"});
  const isa::Instruction& ln = p.instructions[0];
  const isa::OpDef& op = ops().get(ln.opcode);
  CHECK(ln.attrs.at(static_cast<size_t>(op.attr_index("divide"))) == 1);
  CHECK(isa::attr_to_real(ln.attrs.at(static_cast<size_t>(op.attr_index("epsilon")))) ==
        static_cast<double>(1e-6f));
  CHECK(plain.instructions.size() == 9);
  const std::vector<float> y = output(p);
  REQUIRE(y.size() == 24);
  CHECK(output_bytes(p) == output_bytes(plain));
  // The op's other form (rsqrt, then a product) rounds otherwise: on these rows it differs.
  isa::Program rsqrt = p;
  rsqrt.instructions[0].attrs.at(static_cast<size_t>(op.attr_index("divide"))) = 0;
  CHECK(output_bytes(rsqrt) != output_bytes(plain));
  // A square that is not Pow(d, 2): the chain stays (the bias add after the product aside,
  // nine instructions).
  Graph cube;
  cube.two = 3.0f;
  CHECK(program(cube, {}).instructions.size() == 9);
  // An intermediate with a reader outside the chain: unfused (the nine and the reader's add).
  for (const char* t : {"mean", "d", "sq", "var", "ve", "sd", "n", "scaled"}) {
    CAPTURE(std::string(t));
    Graph g;
    g.second_reader = t;
    CHECK(program(g, {}).instructions.size() == 10);
  }
}

TEST_CASE("fusion: a bias seen through ONNX's Identity is the matmul's epilogue bias") {
  // PyTorch's exporter keeps one of two equal parameters and writes an Identity for the other
  // (torchvision's ViT-B/16, its parameters graph inputs: an Identity of an input is no constant
  // the importer folds): the second MatMul's bias add reads that Identity. Both bias adds fuse,
  // reading the one bias in memory, bit for bit.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  auto program = [](const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    b.input("x", kF, {2, 4}).input("bias", kF, {4}).output("z", kF, {2, 4});
    std::vector<float> w;
    for (int i = 0; i < 16; ++i) w.push_back(0.25f * static_cast<float>(i % 5) - 0.5f);
    b.floats("w", {4, 4}, w);
    b.node("Identity", {"bias"}, {"bias_again"}, "bias_again");
    b.node("MatMul", {"x", "w"}, {"p"}, "fc1");
    b.node("Add", {"bias", "p"}, {"y"}, "fc1_bias");
    b.node("MatMul", {"y", "w"}, {"q"}, "fc2");
    b.node("Add", {"bias_again", "q"}, {"z"}, "fc2_bias");
    return compiler::compile(compiler::import_onnx(b.model(), "identity_bias.onnx", {}, o), ops());
  };
  const isa::Program p = program({}), plain = program(testing::unfused());
  CHECK(op_names(p) == std::vector<std::string>{"matmul_bias_act", "matmul_bias_act"});
  CHECK(p.instruction_names == std::vector<std::string>{"fc1", "fc2"});
  CHECK(isa::tensor_str(p.instructions[1].operands[2]) ==
        isa::tensor_str(p.instructions[0].operands[2]));
  CHECK(op_names(plain) == std::vector<std::string>{"matmul", "eltwise", "matmul", "eltwise"});
  CHECK(output_bytes(p) == output_bytes(plain));
}

TEST_CASE("fusion: a residual add after a matmul's order-keeping views is the epilogue's") {
  // PyTorch's multi-head attention ends in Gemm [L, E], Reshape [L, 1, E], Transpose to
  // [1, L, E], then the block's residual Add: the views keep the element order, so the add is
  // the Gemm's epilogue residual, bit for bit. After a transpose that moves a dim of extent > 1
  // ([L, 1, E] to [E, 1, L]) the add stays its own instruction, reading the transposed view.
  using testing::OnnxModelBuilder;
  constexpr int32_t kF = onnx::TensorProto::FLOAT;
  auto program = [](bool keeps_order, const compiler::CompileOptions& o) {
    OnnxModelBuilder b;
    const std::vector<int64_t> out =
        keeps_order ? std::vector<int64_t>{1, 4, 8} : std::vector<int64_t>{8, 1, 4};
    b.input("x", kF, {4, 8}).input("r", kF, out).output("y", kF, out);
    std::vector<float> w;
    for (int i = 0; i < 64; ++i) w.push_back(0.125f * static_cast<float>(i % 7) - 0.375f);
    b.floats("w", {8, 8}, w).floats("bias", {8}, {1, -1, 2, -2, 0.5f, -0.5f, 0.25f, 0});
    b.ints("shape", {4, 1, 8});
    b.node("Gemm", {"x", "w", "bias"}, {"g"}, "proj");
    b.node("Reshape", {"g", "shape"}, {"g3"}, "g3");
    testing::set_attr(b.node("Transpose", {"g3"}, {"gt"}, "gt"), "perm",
                      keeps_order ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{2, 1, 0});
    b.node("Add", {"gt", "r"}, {"y"}, "y");
    return compiler::compile(compiler::import_onnx(b.model(), "views.onnx", {}, o), ops());
  };
  const isa::Program p = program(true, {}), plain = program(true, testing::unfused());
  CHECK(op_names(p) == std::vector<std::string>{"matmul_bias_add_act"});
  CHECK(p.instruction_names == std::vector<std::string>{"proj"});
  CHECK(op_names(plain) == std::vector<std::string>{"matmul", "eltwise", "eltwise"});
  CHECK(output_bytes(p) == output_bytes(plain));
  const isa::Program moved = program(false, {});
  CHECK(op_names(moved) == std::vector<std::string>{"matmul_bias_act", "eltwise"});
  CHECK(output_bytes(moved) == output_bytes(program(false, testing::unfused())));
  // Flattened to [32], the rows are no longer the matmul's: the add stays apart.
  OnnxModelBuilder b;
  b.input("x", kF, {4, 8}).input("w", kF, {8, 8}).input("r", kF, {32}).output("y", kF, {32});
  b.ints("flat", {32});
  b.node("MatMul", {"x", "w"}, {"g"}, "proj");
  b.node("Reshape", {"g", "flat"}, {"gf"}, "gf");
  b.node("Add", {"gf", "r"}, {"y"}, "y");
  auto flat = [&](const compiler::CompileOptions& o) {
    return compiler::compile(compiler::import_onnx(b.model(), "flat.onnx", {}, o), ops());
  };
  CHECK(op_names(flat({})) == std::vector<std::string>{"matmul", "eltwise"});
  CHECK(output_bytes(flat({})) == output_bytes(flat(testing::unfused())));
}
