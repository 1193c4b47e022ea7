// The ONNX front end: models built in code, imported into the graph IR and lowered; exact
// programs for small cases, exact error messages for what is not supported, and the fracsim
// binary on .onnx files (exit 2 on bad input).
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "isa/error.h"
#include "isa/op_def.h"
#include "tests/common/compile_helpers.h"
#include "tests/common/cli_runner.h"
#include "tests/compiler/onnx_model_builder.h"

using namespace fracsim;
using compiler::LayerKind;
using compiler::Workload;
using isa::DType;
using isa::Shape;
using testing::OnnxModelBuilder;
using testing::run_fracsim;
using testing::set_attr;
using testing::temp_dir;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

std::vector<uint8_t> bytes_of(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

const isa::Symbol& symbol(const isa::Program& p, const std::string& name) {
  for (const isa::Symbol& s : p.symbols)
    if (s.name == name) return s;
  FAIL("no symbol ", name);
  return p.symbols.front();
}

isa::TensorRef ref(uint64_t address, Shape shape, Shape strides) {
  return isa::TensorRef{address, DType::f32, std::move(shape), std::move(strides)};
}

std::string import_error(const OnnxModelBuilder& b) {
  try {
    compiler::import_onnx(b.model(), "m.onnx");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

const char* kSupported =
    "Abs, Acos, Acosh, Add, And, ArgMax, ArgMin, Asin, Asinh, Atan, Atanh, AveragePool, "
    "BatchNormalization, Cast, CastLike, Ceil, Celu, Clip, Concat, Constant, Conv, ConvTranspose, "
    "Cos, Cosh, CumSum, DepthToSpace, Div, Dropout, Einsum, Elu, Equal, Erf, Exp, Expand, "
    "EyeLike, Flatten, Floor, GRU, Gather, GatherElements, Gemm, GlobalAveragePool, "
    "GlobalMaxPool, Greater, GreaterOrEqual, HardSigmoid, HardSwish, Hardmax, Identity, "
    "InstanceNormalization, IsInf, LRN, LSTM, LayerNormalization, LeakyRelu, Less, LessOrEqual, "
    "Log, LogSoftmax, MatMul, Max, MaxPool, Mean, MeanVarianceNormalization, Min, Mod, Mul, Neg, "
    "NegativeLogLikelihoodLoss, Not, OneHot, Or, PRelu, Pad, Pow, RNN, Reciprocal, ReduceL1, "
    "ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceMax, ReduceMean, ReduceMin, ReduceProd, "
    "ReduceSum, ReduceSumSquare, Relu, Reshape, Resize, Round, Selu, Shrink, Sigmoid, Sign, Sin, "
    "Sinh, Slice, Softmax, SoftmaxCrossEntropyLoss, Softplus, Softsign, SpaceToDepth, Split, "
    "Sqrt, Squeeze, Sub, Sum, Tan, Tanh, ThresholdedRelu, Tile, TopK, Transpose, Trilu, "
    "Unsqueeze, Upsample, Where, Xor";

}  // namespace

TEST_CASE("Gemm with alpha, beta, transB and a bias row: weights as bytes, the exact program") {
  OnnxModelBuilder b;
  b.input("a", kFloat, {2, 3})
      .floats("w", {4, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
      .floats("c", {4}, {0.5f, -1, 2, 0})
      .output("y", kFloat, {2, 4});
  onnx::NodeProto& g = b.node("Gemm", {"a", "w", "c"}, {"y"}, "fc");
  set_attr(g, "alpha", 0.5f);
  set_attr(g, "beta", 2.0f);
  set_attr(g, "transB", int64_t{1});
  const Workload w = compiler::import_onnx(b.model(), "m.onnx");
  REQUIRE(w.layers.size() == 1);
  CHECK(w.layers[0].kind == LayerKind::gemm);
  CHECK(w.layers[0].inputs == std::vector<std::string>{"a", "w", "c"});
  CHECK(w.layers[0].output == compiler::TensorDesc{"y", DType::f32, {2, 4}});
  CHECK(w.weights == std::set<std::string>{"w", "c"});
  CHECK(w.outputs == std::vector<std::string>{"y"});

  const isa::Program p = compiler::compile(w, ops());
  const uint64_t a = symbol(p, "a").tensor.address, wt = symbol(p, "w").tensor.address;
  const uint64_t c = symbol(p, "c").tensor.address, y = symbol(p, "y").tensor.address;
  const uint64_t alpha = symbol(p, "y.alpha").tensor.address;
  const uint64_t beta = symbol(p, "y.beta").tensor.address;
  CHECK(symbol(p, "w").role == isa::SymbolRole::weight);
  CHECK(symbol(p, "a").role == isa::SymbolRole::input);
  // The input is random; the initializers and the two scalars are their bytes.
  REQUIRE(p.data.size() == 5);
  CHECK(p.data[0].kind == isa::DataSegment::Kind::random);
  CHECK(p.data[1].kind == isa::DataSegment::Kind::bytes);
  CHECK(p.data[1].address == wt);
  CHECK(p.data[1].bytes == bytes_of({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
  CHECK(p.data[2].bytes == bytes_of({0.5f, -1, 2, 0}));
  CHECK(p.data[3].bytes == bytes_of({0.5f}));
  CHECK(p.data[4].bytes == bytes_of({2.0f}));
  const isa::OpDef& elt = ops().get("eltwise");
  const int64_t mul = 2, add = 0;
  REQUIRE(p.instructions.size() == 4);
  CHECK(p.instruction_names == std::vector<std::string>(4, "fc"));  // all four lower node fc
  // y = a x w^T: w [4,3] seen [3,4] with strides [1,3].
  CHECK(p.instructions[0] ==
        isa::Instruction{ops().get("matmul").opcode,
                         {ref(a, {1, 2, 3}, {0, 3, 1}), ref(wt, {1, 3, 4}, {0, 1, 3}),
                          ref(y, {1, 2, 4}, {0, 4, 1})},
                         {0}});
  const Shape six{1, 1, 1, 1, 2, 4}, dense{0, 0, 0, 0, 4, 1}, spread{0, 0, 0, 0, 0, 0};
  CHECK(p.instructions[1] ==
        isa::Instruction{
            elt.opcode, {ref(y, six, dense), ref(alpha, six, spread), ref(y, six, dense)}, {mul}});
  // beta * c, c a row broadcast over the 2 rows, into a temporary; then y += it.
  const uint64_t t = p.instructions[2].operands[2].address;
  CHECK(p.instructions[2] == isa::Instruction{elt.opcode,
                                              {ref(c, six, {0, 0, 0, 0, 0, 1}),
                                               ref(beta, six, spread), ref(t, six, dense)},
                                              {mul}});
  CHECK(p.instructions[3] ==
        isa::Instruction{
            elt.opcode, {ref(y, six, dense), ref(t, six, dense), ref(y, six, dense)}, {add}});
}

TEST_CASE("instructions are named by their node, an unnamed node K by OpType_K") {
  OnnxModelBuilder b;
  b.input("x", kFloat, {2, 8}).floats("w", {8, 4}, std::vector<float>(32, 0.5f));
  b.node("MatMul", {"x", "w"}, {"h"});      // node 0, no name
  b.node("Flatten", {"h"}, {"f"}, "flat");  // a view: no instruction
  b.node("Relu", {"f"}, {"r"}, "act");      // named
  b.node("Add", {"r", "r"}, {"y"});         // node 3, no name
  b.floats("v", {4, 3}, std::vector<float>(12, 0.25f)).floats("c", {3}, {1, 2, 3});
  b.node("Gemm", {"y", "v", "c"}, {"z"});  // node 4, no name: several instructions
  b.output("z", kFloat, {2, 3});
  const isa::Program p =
      compiler::compile(compiler::import_onnx(b.model(), "m.onnx", {}, testing::unfused()), ops());
  REQUIRE(p.instructions.size() == 5);  // matmul, relu, add, Gemm's matmul and bias add
  CHECK(p.instruction_names ==
        std::vector<std::string>{"MatMul_0", "act", "Add_3", "Gemm_4", "Gemm_4"});
}

TEST_CASE("Conv with SAME_UPPER padding and MaxPool with ceil_mode: pads and shapes") {
  OnnxModelBuilder b;
  b.input("x", kFloat, {1, 2, 7, 7}).floats("k", {4, 1, 3, 3}, std::vector<float>(36, 0.25f));
  onnx::NodeProto& conv = b.node("Conv", {"x", "k"}, {"c"}, "conv1");
  set_attr(conv, "auto_pad", std::string("SAME_UPPER"));
  set_attr(conv, "strides", std::vector<int64_t>{2, 2});
  set_attr(conv, "group", int64_t{2});
  onnx::NodeProto& pool = b.node("MaxPool", {"c"}, {"p"});
  set_attr(pool, "kernel_shape", std::vector<int64_t>{2, 2});
  set_attr(pool, "strides", std::vector<int64_t>{2, 2});
  set_attr(pool, "ceil_mode", int64_t{1});
  b.node("Flatten", {"p"}, {"f"});
  b.output("f", kFloat, {1, 16});
  const Workload w = compiler::import_onnx(b.model(), "m.onnx");
  REQUIRE(w.layers.size() == 3);
  const compiler::Layer& c = w.layers[0];
  // ceil(7 / 2) = 4 outputs; (4 - 1) * 2 + 3 - 7 = 2 pad rows, 1 before and 1 after.
  CHECK(c.kind == LayerKind::conv2d);
  CHECK(c.output.shape == Shape{1, 4, 4, 4});
  CHECK(c.padding == std::vector<int64_t>{1, 1, 1, 1});
  CHECK(c.groups == 2);
  CHECK(c.filters == 4);
  CHECK_FALSE(c.bias);
  // ceil((4 - 2) / 2) + 1 = 2 windows: no extra pad needed.
  CHECK(w.layers[1].output.shape == Shape{1, 4, 2, 2});
  CHECK(w.layers[1].padding == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(w.layers[2].kind == LayerKind::flatten);
  const isa::Program p = compiler::compile(w, ops());
  REQUIRE(p.instructions.size() == 2);
  CHECK(p.instructions[0].opcode == ops().get("conv2d").opcode);
  // stride_h, stride_w, dilation_h, dilation_w, pad_h0, pad_h1, pad_w0, pad_w1, accumulate.
  CHECK(p.instructions[0].attrs == std::vector<int64_t>{2, 2, 1, 1, 1, 1, 1, 1, 0});
  CHECK(p.instructions[0].operands[1].shape == Shape{2, 2, 1, 3, 3});
}

TEST_CASE("AveragePool with ceil_mode gets the extra end pad the last window needs") {
  OnnxModelBuilder b;
  b.input("x", kFloat, {1, 1, 4, 4});
  onnx::NodeProto& pool = b.node("AveragePool", {"x"}, {"p"});
  set_attr(pool, "kernel_shape", std::vector<int64_t>{3, 3});
  set_attr(pool, "strides", std::vector<int64_t>{2, 2});
  set_attr(pool, "ceil_mode", int64_t{1});
  b.output("p", kFloat, {1, 1, 2, 2});
  const Workload w = compiler::import_onnx(b.model(), "m.onnx");
  // ceil((4 - 3) / 2) + 1 = 2 windows; the second covers rows 2..4, one past the input.
  CHECK(w.layers[0].output.shape == Shape{1, 1, 2, 2});
  CHECK(w.layers[0].padding == std::vector<int64_t>{0, 0, 1, 1});
  CHECK_FALSE(w.layers[0].count_include_pad);
}

TEST_CASE("input values: Reshape's shape and TopK's K as constants, data inputs as bytes") {
  OnnxModelBuilder b;
  b.input("x", kFloat, {2, 6}).input("shape", kInt64, {3}).ints("k", {2});
  b.node("Reshape", {"x", "shape"}, {"r"});
  onnx::NodeProto& t = b.node("TopK", {"r", "k"}, {"v", "i"}, "top");
  set_attr(t, "axis", int64_t{1});
  b.output("v", kFloat, {2, 2, 3}).output("i", kInt64, {2, 2, 3});
  std::map<std::string, onnx::TensorProto> given;
  onnx::TensorProto& s = given["shape"];
  s.set_data_type(kInt64);
  s.add_dims(3);
  for (int64_t v : {0, -1, 3}) s.add_int64_data(v);
  onnx::TensorProto& x = given["x"];
  x.set_data_type(kFloat);
  x.add_dims(2);
  x.add_dims(6);
  for (int i = 0; i < 12; ++i) x.add_float_data(static_cast<float>(i));
  const Workload w = compiler::import_onnx(b.model(), "m.onnx", given);
  REQUIRE(w.layers.size() == 2);
  // [0, -1, 3]: dim 0 copied (2), -1 inferred (2).
  CHECK(w.layers[0].output.shape == Shape{2, 2, 3});
  const compiler::Layer& top = w.layers[1];
  CHECK(top.kind == LayerKind::topk);
  CHECK(top.k == 2);
  CHECK(top.axis == 1);
  CHECK(top.output.shape == Shape{2, 2, 3});
  REQUIRE(top.more_outputs.size() == 1);
  CHECK(top.more_outputs[0] == compiler::TensorDesc{"i", DType::i32, {2, 2, 3}});
  CHECK(w.outputs == std::vector<std::string>{"v", "i"});
  // x is an input given a value: its bytes, role input; the shape never becomes a tensor.
  REQUIRE(w.inputs.size() == 1);
  CHECK(w.inputs[0] == compiler::TensorDesc{"x", DType::f32, {2, 6}});
  CHECK(w.contents.at("x") == bytes_of({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}));
  CHECK(w.weights.empty());
  const isa::Program p = compiler::compile(w, ops());
  // TopK along the middle axis of [2, 2, 3]: the other dims (2 and 3, strides 6 and 1) are no
  // single strided row dim, so the input is copied with the axis last ([2, 3, 2]), then one
  // topk; the outputs are laid out [2, 3, K] and seen [2, K, 3].
  REQUIRE(p.instructions.size() == 2);
  CHECK(p.instructions[1].opcode == ops().get("topk").opcode);
  CHECK(p.instructions[1].operands[3].dtype == DType::i32);
  CHECK(symbol(p, "i").tensor.dtype == DType::i32);
  CHECK(symbol(p, "i").tensor.strides == Shape{6, 1, 2});
}

TEST_CASE("what the front end does not support is an error naming file, node, op and attribute") {
  auto unary = [](const std::string& op, const std::string& name = "n1") {
    OnnxModelBuilder b;
    b.input("x", kFloat, {1, 2, 4, 4}).output("y", kFloat, {});
    b.node(op, {"x"}, {"y"}, name);
    return b;
  };
  CHECK(import_error(unary("Foo")) ==
        std::string("m.onnx: node 'n1' (Foo): op Foo is not supported (fracsim imports ") +
            kSupported + ")");
  // An unnamed node is named by its index.
  CHECK(import_error(unary("StringNormalizer", ""))
            .rfind("m.onnx: node 0 (StringNormalizer): op StringNormalizer is not supported", 0) ==
        0);
  {
    OnnxModelBuilder b = unary("MaxPool", "pool1");
    auto& n = *b.model().graph().node().begin();
    set_attr(const_cast<onnx::NodeProto&>(n), "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(const_cast<onnx::NodeProto&>(n), "auto_pad", std::string("FULL"));
    CHECK(import_error(b) ==
          "m.onnx: node 'pool1' (MaxPool): attribute 'auto_pad' = 'FULL' is not supported");
  }
  {
    OnnxModelBuilder b = unary("Relu", "r");
    set_attr(const_cast<onnx::NodeProto&>(b.model().graph().node(0)), "shift", int64_t{1});
    CHECK(import_error(b) == "m.onnx: node 'r' (Relu): attribute 'shift' is not supported");
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {1, 2, 2}).floats("s", {2}, {1, 1}).output("y", kFloat, {1, 2, 2});
    onnx::NodeProto& n = b.node("BatchNormalization", {"x", "s", "s", "s", "s"}, {"y"}, "bn");
    set_attr(n, "training_mode", int64_t{2});
    CHECK(import_error(b) ==
          "m.onnx: node 'bn' (BatchNormalization): attribute 'training_mode' = 2 is not 0 or 1");
  }
  auto binary = [](int32_t type, const std::string& op) {
    OnnxModelBuilder b;
    b.input("x", type, {4}).input("z", type, {4});
    b.node(op, {"x", "z"}, {"y"}, "e");
    b.output("y", type, {4});
    return b;
  };
  CHECK(import_error(binary(onnx::TensorProto::STRING, "Add")) ==
        "m.onnx: node 'e' (Add): input 'x' has dtype STRING, which the ISA lacks (it has f32, "
        "f16, bf16, i32, i16, i8, u8, u16, u32, u64, i64, f64)");
  // Bool is a u8 of 0 or 1: the comparisons and logic ops take it.
  CHECK(import_error(binary(onnx::TensorProto::BOOL, "Xor")) == "no error");
  CHECK(import_error(binary(onnx::TensorProto::FLOAT, "And")) ==
        "m.onnx: node 'e' (And): input 'x' has dtype f32; this op takes u8");
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {4}).output("y", onnx::TensorProto::STRING, {4});
    onnx::NodeProto& n = b.node("Cast", {"x"}, {"y"}, "c");
    set_attr(n, "to", int64_t{onnx::TensorProto::STRING});
    CHECK(import_error(b) ==
          "m.onnx: node 'c' (Cast): a cast to STRING is not supported (the convert op has f32, "
          "f16, f64, i32, i64, i8, i16, u8 and bool)");
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 3}).input("i", onnx::TensorProto::INT64, {2, 4});
    b.node("GatherElements", {"x", "i"}, {"y"}, "g");
    b.output("y", kFloat, {2, 4});
    CHECK(import_error(b) ==
          "m.onnx: node 'g' (GatherElements): indices [2,4] exceed the input [2,3] in dim 1");
  }
  // The ISA's eltwise has u16 rows for max and min only, and i8 add saturates where ONNX wraps.
  CHECK(import_error(binary(onnx::TensorProto::UINT16, "Add")) ==
        "m.onnx: node 'e' (Add): input 'x' has dtype u16; this op takes f32, i32, u8, i64, f64");
  CHECK(import_error(binary(onnx::TensorProto::INT8, "Mul")) ==
        "m.onnx: node 'e' (Mul): input 'x' has dtype i8; this op takes f32, i32, u8, i64, f64");
  CHECK(import_error(binary(onnx::TensorProto::UINT16, "Max")) == "no error");
  {
    // Empty tensors pass through Reshape only.
    OnnxModelBuilder b;
    b.floats("x", {0, 3}, {}).output("y", kFloat, {});
    b.node("Relu", {"x"}, {"y"}, "r");
    CHECK(import_error(b) ==
          "m.onnx: node 'r' (Relu): input 'x' has an empty shape [0,3] (fracsim takes empty "
          "tensors in Reshape only)");
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 6}).input("shape", kInt64, {2}).output("y", kFloat, {3, 4});
    b.node("Reshape", {"x", "shape"}, {"y"}, "rs");
    CHECK(import_error(b) ==
          "m.onnx: node 'rs' (Reshape): input 'shape' (shape) must be a "
          "constant: an initializer, a Constant node's output or an input "
          "given a value");
  }
  {
    OnnxModelBuilder b;
    b.dynamic_input("x", "batch").output("y", kFloat, {});
    b.node("Relu", {"x"}, {"y"});
    CHECK(import_error(b) ==
          "m.onnx: input 'x' has a dynamic or empty dim 'batch' (fracsim "
          "needs static shapes of positive extents)");
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {1, 2, 4}).output("y", kFloat, {}).output("z", kInt64, {});
    onnx::NodeProto& n = b.node("MaxPool", {"x"}, {"y", "z"}, "mp");
    set_attr(n, "kernel_shape", std::vector<int64_t>{2});
    CHECK(import_error(b) ==
          "m.onnx: node 'mp' (MaxPool): output 1 ('z', the indices) is supported for 2-D pooling "
          "only, not for the input [1,2,4]");
  }
  {
    OnnxModelBuilder b;
    b.input("x", onnx::TensorProto::UINT8, {1, 2, 4}).output("y", onnx::TensorProto::UINT8, {});
    onnx::NodeProto& n = b.node("MaxPool", {"x"}, {"y"}, "mp");
    set_attr(n, "kernel_shape", std::vector<int64_t>{2});
    CHECK(import_error(b) ==
          "m.onnx: node 'mp' (MaxPool): input 'x' [1,2,4] has dtype u8, which the ISA's pool1d "
          "does not take");
  }
}

TEST_CASE("a file that is not an ONNX model is a ConfigError naming it") {
  const std::string dir = temp_dir("onnx-bad");
  {
    std::ofstream out(dir + "/junk.onnx");
    out << "workload: not protobuf\n\xff\xff\xff";
  }
  try {
    compiler::load_onnx(dir + "/junk.onnx");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) == dir +
                                       "/junk.onnx: not an ONNX model (the file does not parse "
                                       "as an ONNX ModelProto)");
  }
}

TEST_CASE("fracsim compile and run take .onnx, bad models exit 2 naming node and op") {
  const std::string dir = temp_dir("onnx-cli");
  OnnxModelBuilder good;
  good.input("x", kFloat, {2, 8}).floats("w", {8, 4}, std::vector<float>(32, 0.5f));
  good.node("MatMul", {"x", "w"}, {"h"});
  good.node("Relu", {"h"}, {"y"});
  good.output("y", kFloat, {2, 4});
  good.save(dir + "/good.onnx");
  testing::CliResult r = run_fracsim("compile " + dir + "/good.onnx -o " + dir + "/good.fbin");
  CHECK(r.code == 0);
  // The matmul with its ReLU fused: one instruction.
  CHECK(r.out == "g: 1 instruction, root-memory footprint 320 bytes -> " + dir + "/good.fbin\n");
  r = run_fracsim("run -m configs/tiny.yaml -w " + dir + "/good.onnx --mode functional --out " +
                  dir + "/run");
  CHECK(r.code == 0);
  CHECK(r.out.find("outputs match the reference") != std::string::npos);

  OnnxModelBuilder bad;
  bad.input("x", kFloat, {4}).output("y", kFloat, {4});
  bad.node("StringNormalizer", {"x"}, {"y"}, "strnorm1");
  bad.save(dir + "/bad.onnx");
  r = run_fracsim("compile " + dir + "/bad.onnx -o " + dir + "/bad.fbin");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir + "/bad.onnx: node 'strnorm1' (StringNormalizer): op StringNormalizer is not supported " +
                     "(fracsim imports " + kSupported + ")\n");
  r = run_fracsim("run -m configs/tiny.yaml -w " + dir + "/bad.onnx");
  CHECK(r.code == 2);

  {
    std::ofstream out(dir + "/junk.onnx");
    out << "\x08\x96\x01 not a model \xff";
  }
  r = run_fracsim("compile " + dir + "/junk.onnx -o " + dir + "/junk.fbin");
  CHECK(r.code == 2);
  CHECK(r.out == "error: " + dir +
                     "/junk.onnx: not an ONNX model (the file does not parse as an "
                     "ONNX ModelProto)\n");
}

TEST_CASE("a network larger than the root memory is an error with needed and available bytes") {
  // x [4096, 2048] f32 is 32 MiB; y = x + x another 32 MiB: 64 MiB, tiny.yaml's whole root.
  const std::string dir = temp_dir("onnx-big");
  OnnxModelBuilder b;
  b.input("x", kFloat, {4096, 2048}).output("y", kFloat, {4096, 2048});
  b.node("Add", {"x", "x"}, {"y"});
  b.save(dir + "/big.onnx");
  testing::CliResult r = run_fracsim("compile " + dir + "/big.onnx -o " + dir + "/big.fbin");
  CHECK(r.code == 0);
  CHECK(r.out.find("root-memory footprint 67108864 bytes") != std::string::npos);
  r = run_fracsim("run -m configs/tiny.yaml -w " + dir + "/big.onnx");
  CHECK(r.code == 2);
  CHECK(r.out ==
        "error: configs/tiny.yaml: program g needs 67108864 bytes of main memory (plus "
        "room for partial results) but the machine's root memory holds 67108864\n");
}

TEST_CASE("a BatchNormalization variance without data gets positive random contents") {
  // workloads/mobilenetv2.onnx declares its weights as graph inputs without data.
  const isa::Program p = compiler::compile(
      compiler::load_onnx(std::string(FRACSIM_SOURCE_DIR) + "/workloads/mobilenetv2.onnx",
                          testing::unfused()),
      isa::OpTable::builtin());
  int checked = 0;
  for (size_t i = 0; i < p.symbols.size(); ++i) {
    const isa::Symbol& s = p.symbols[i];
    const isa::DataSegment* seg = nullptr;
    for (const isa::DataSegment& d : p.data)
      if (d.address == s.tensor.address) seg = &d;
    if (seg == nullptr) continue;  // an output
    CAPTURE(s.name);
    if (s.name == "conv1_bn.var") {
      CHECK(seg->kind == isa::DataSegment::Kind::random);
      CHECK(seg->lo == 0.5);
      CHECK(seg->hi == 1.5);
      ++checked;
    }
    if (s.name == "conv1_bn.mean") {
      CHECK(seg->lo == -1.0);
      CHECK(seg->hi == 1.0);
      ++checked;
    }
  }
  CHECK(checked == 2);
}
