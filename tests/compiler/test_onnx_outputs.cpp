// ONNX features lowered with the ISA's own primitives: BatchNormalization in training mode (the
// batch statistics by reduce, and the running statistics), MaxPool's indices (pool2d_argmax) and
// an empty tensor through Reshape. Exact programs and exact values.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "isa/op_def.h"
#include "isa/reference.h"
#include "tests/common/program_inspect.h"
#include "tests/compiler/onnx_model_builder.h"

using namespace fracsim;
using isa::DType;
using isa::Shape;
using testing::OnnxModelBuilder;
using testing::op_names;
using testing::set_attr;
using testing::symbol;
using testing::values;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

onnx::TensorProto floats(std::vector<int64_t> dims, const std::vector<float>& v) {
  onnx::TensorProto t;
  t.set_data_type(kFloat);
  for (int64_t d : dims) t.add_dims(d);
  for (float f : v) t.add_float_data(f);
  return t;
}

}  // namespace

TEST_CASE("BatchNormalization training: batch statistics, Y and the running statistics") {
  OnnxModelBuilder b(15);
  b.input("x", kFloat, {2, 2, 1, 2}).output("y", kFloat, {2, 2, 1, 2});
  b.output("rm", kFloat, {2}).output("rv", kFloat, {2});
  b.floats("s", {2}, {2, 4}).floats("bias", {2}, {0.5f, -1}).floats("mean", {2}, {0, 8});
  b.floats("var", {2}, {3, 1});
  onnx::NodeProto& n =
      b.node("BatchNormalization", {"x", "s", "bias", "mean", "var"}, {"y", "rm", "rv"}, "bn");
  set_attr(n, "training_mode", int64_t{1});
  set_attr(n, "epsilon", 0.0f);
  set_attr(n, "momentum", 0.5f);
  // x[n, c, 0, s]: channel 0 is {1, 3, 1, 3} (mean 2, population variance 1), channel 1
  // {0, 4, 0, 4} (mean 2, variance 4): every step below is exact in f32.
  const compiler::Workload w = compiler::import_onnx(
      b.model(), "m.onnx", {{"x", floats({2, 2, 1, 2}, {1, 3, 0, 4, 1, 3, 0, 4})}});
  const isa::Program p = compiler::compile(w, ops());
  CHECK(op_names(p) ==
        std::vector<std::string>{"reduce mean", "eltwise sub", "eltwise mul", "reduce mean",
                                 "eltwise mul", "eltwise mul", "eltwise add",  // running mean
                                 "eltwise mul", "eltwise mul", "eltwise add",  // running variance
                                 "batchnorm"});
  // The batch mean: reduce over [C | N, S] with divisor N*S.
  const isa::Instruction& mean = p.instructions[0];
  CHECK(mean.operands[0].shape == Shape{2, 1, 1, 2, 2, 1});
  CHECK(mean.operands[0].strides == Shape{2, 0, 0, 4, 1, 0});
  CHECK(mean.attrs[ops().get("reduce").attr_index("divisor")] == 4);
  const std::vector<uint8_t> image = isa::run_reference(p, ops());
  // Y = (x - mean) / sqrt(var) * scale + bias.
  CHECK(values<float>(p, image, "y") == std::vector<float>{-1.5f, 2.5f, -5, 3, -1.5f, 2.5f, -5, 3});
  // running = given * 0.5 + batch * 0.5.
  CHECK(values<float>(p, image, "rm") == std::vector<float>{1, 5});
  CHECK(values<float>(p, image, "rv") == std::vector<float>{2, 2.5f});
}

TEST_CASE("BatchNormalization training without the running outputs computes Y alone") {
  OnnxModelBuilder b(15);
  b.input("x", kFloat, {2, 2}).output("y", kFloat, {2, 2});
  b.floats("s", {2}, {1, 1}).floats("z", {2}, {0, 0});
  onnx::NodeProto& n = b.node("BatchNormalization", {"x", "s", "z", "z", "s"}, {"y"}, "bn");
  set_attr(n, "training_mode", int64_t{1});
  set_attr(n, "epsilon", 0.0f);
  const isa::Program p = compiler::compile(
      compiler::import_onnx(b.model(), "m.onnx", {{"x", floats({2, 2}, {1, 10, 3, 6})}}), ops());
  CHECK(op_names(p) == std::vector<std::string>{"reduce mean", "eltwise sub", "eltwise mul",
                                                "reduce mean", "batchnorm"});
  // Channel 0 {1, 3}: mean 2, variance 1; channel 1 {10, 6}: mean 8, variance 4.
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") == std::vector<float>{-1, 1, 1, -1});
}

TEST_CASE("MaxPool's indices: pool2d_argmax with the flattened input's strides") {
  for (int64_t order : {0, 1}) {
    CAPTURE(order);
    OnnxModelBuilder b(12);
    b.input("x", kFloat, {1, 2, 3, 4})
        .output("y", kFloat, {})
        .output("i", onnx::TensorProto::INT64, {});
    onnx::NodeProto& n = b.node("MaxPool", {"x"}, {"y", "i"}, "mp");
    set_attr(n, "kernel_shape", std::vector<int64_t>{2, 2});
    set_attr(n, "strides", std::vector<int64_t>{1, 2});
    set_attr(n, "storage_order", order);
    std::vector<float> x(24);
    for (int k = 0; k < 24; ++k) x[k] = static_cast<float>((k * 7) % 24);  // a permutation
    const isa::Program p = compiler::compile(
        compiler::import_onnx(b.model(), "m.onnx", {{"x", floats({1, 2, 3, 4}, x)}}), ops());
    REQUIRE(op_names(p) == std::vector<std::string>{"pool2d max", "pool2d_argmax"});
    const isa::OpDef& am = ops().get("pool2d_argmax");
    const isa::Instruction& in = p.instructions[1];
    CHECK(in.attrs[am.attr_index("index_stride_n")] == 24);
    CHECK(in.attrs[am.attr_index("index_stride_c")] == 12);
    CHECK(in.attrs[am.attr_index("index_stride_h")] == (order == 0 ? 4 : 1));
    CHECK(in.attrs[am.attr_index("index_stride_w")] == (order == 0 ? 1 : 3));
    CHECK(symbol(p, "i").tensor.dtype == DType::i32);
    const std::vector<uint8_t> image = isa::run_reference(p, ops());
    const std::vector<float> y = values<float>(p, image, "y");
    const std::vector<int32_t> idx = values<int32_t>(p, image, "i");
    // Each index points at its window's max, read back through the storage order.
    REQUIRE(idx.size() == 8);
    for (size_t k = 0; k < idx.size(); ++k) {
      const int32_t c = idx[k] / 12, r = idx[k] % 12;
      const int32_t h = order == 0 ? r / 4 : r % 3, w = order == 0 ? r % 4 : r / 3;
      CHECK(x[c * 12 + h * 4 + w] == y[k]);
    }
    if (order == 0) CHECK(idx == std::vector<int32_t>{5, 3, 9, 10, 17, 19, 17, 23});
  }
}

TEST_CASE("an empty tensor through Reshape: no instruction, an empty output") {
  OnnxModelBuilder b(14);
  b.input("data", kFloat, {0, 3, 4}).ints("shape", {3, 4, 0}).output("r", kFloat, {3, 4, 0});
  onnx::NodeProto& n = b.node("Reshape", {"data", "shape"}, {"r"}, "rs");
  set_attr(n, "allowzero", int64_t{1});
  const compiler::Workload w =
      compiler::import_onnx(b.model(), "m.onnx", {{"data", floats({0, 3, 4}, {})}});
  REQUIRE(w.layers.size() == 1);
  CHECK(w.layers[0].output.shape == Shape{3, 4, 0});
  const isa::Program p = compiler::compile(w, ops());
  CHECK(p.instructions.empty());
  CHECK(symbol(p, "r").tensor.shape == Shape{3, 4, 0});
  CHECK(isa::num_elements(symbol(p, "r").tensor.shape) == 0);
}

// Found by fuzzing: the lowering of a unary op read the last dim of a scalar's empty shape.
TEST_CASE("a unary op of a scalar: one activation of one element, a rank-0 output") {
  OnnxModelBuilder b(13);
  b.scalar_input("x", kFloat).output("y", kFloat, {});
  b.node("Neg", {"x"}, {"y"}, "neg");
  const isa::Program p = compiler::compile(
      compiler::import_onnx(b.model(), "m.onnx", {{"x", floats({}, {2.5f})}}), ops());
  REQUIRE(op_names(p) == std::vector<std::string>{"activation neg"});
  CHECK(p.instructions[0].operands[0].shape == Shape{1, 1, 1, 1, 1, 1});
  CHECK(p.instructions[0].operands[1].shape == Shape{1, 1, 1, 1, 1, 1});
  CHECK(symbol(p, "y").tensor.shape == Shape{});
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") == std::vector<float>{-2.5f});
}
