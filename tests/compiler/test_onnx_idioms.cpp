// The ONNX front end on the idioms exporters write: shape subgraphs on constants folded at
// import, Identity and inference Dropout as views, the attribute forms of old opsets.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_fold.h"
#include "compiler/onnx_import.h"
#include "isa/error.h"
#include "isa/op_def.h"
#include "tests/compiler/onnx_model_builder.h"

using namespace fracsim;
using compiler::LayerKind;
using compiler::Workload;
using isa::DType;
using isa::Shape;
using testing::OnnxModelBuilder;
using testing::set_attr;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

std::string import_error(const OnnxModelBuilder& b) {
  try {
    compiler::import_onnx(b.model(), "m.onnx");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a flatten as PyTorch exports it (Shape, Gather, Unsqueeze, Concat, Reshape) folds") {
  OnnxModelBuilder b;
  b.input("x", kFloat, {2, 3, 4, 4}).ints("zero", {0}).ints("minus1", {-1});
  onnx::NodeProto& zero = b.node("Constant", {}, {"i0"});
  onnx::AttributeProto* v = zero.add_attribute();
  v->set_name("value");
  v->set_type(onnx::AttributeProto::TENSOR);
  v->mutable_t()->set_data_type(kInt64);
  v->mutable_t()->add_int64_data(0);
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "i0"}, {"batch"});
  b.node("Unsqueeze", {"batch", "zero"}, {"batch1"});
  onnx::NodeProto& cat = b.node("Concat", {"batch1", "minus1"}, {"shape"});
  set_attr(cat, "axis", int64_t{0});
  b.node("Reshape", {"x", "shape"}, {"y"}, "flat");
  b.output("y", kFloat, {2, 48});
  const Workload w = compiler::import_onnx(b.model(), "m.onnx");
  // Only the Reshape is a layer: the shape subgraph became the constant [2, -1].
  REQUIRE(w.layers.size() == 1);
  CHECK(w.layers[0].kind == LayerKind::reshape);
  CHECK(w.layers[0].output.shape == Shape{2, 48});
  CHECK(w.layers[0].reshape_leading == 2);
}

TEST_CASE("folding: Slice, ConstantOfShape, Equal, Where, Expand, Range, Cast on the host") {
  auto fold = [](const std::string& op, std::vector<std::optional<compiler::HostTensor>> in,
                 std::vector<std::pair<std::string, int64_t>> attrs = {}) {
    onnx::NodeProto n;
    n.set_op_type(op);
    for (auto& [k, val] : attrs) set_attr(n, k, val);
    return compiler::fold_node(n, 13, in).at(0);
  };
  using H = compiler::HostTensor;
  const H shape{kInt64, {4}, {1, 3, 224, 224}};
  H s = fold("Slice", {shape, H{kInt64, {1}, {-2}}, H{kInt64, {1}, {9223372036854775807.0L}}});
  CHECK(s.shape == Shape{2});
  CHECK(s.v == std::vector<long double>{224, 224});
  H r = fold("Range", {H{kInt64, {}, {0}}, H{kInt64, {}, {10}}, H{kInt64, {}, {3}}});
  CHECK(r.v == std::vector<long double>{0, 3, 6, 9});
  H e = fold("Equal", {r, H{kInt64, {1}, {6}}});
  CHECK(e.type == onnx::TensorProto::BOOL);
  CHECK(e.v == std::vector<long double>{0, 0, 1, 0});
  H wh = fold("Where", {e, H{kInt64, {1}, {-1}}, r});
  CHECK(wh.v == std::vector<long double>{0, 3, -1, 9});
  H c = fold("ConstantOfShape", {H{kInt64, {1}, {3}}});
  CHECK(c.type == kFloat);
  CHECK(c.v == std::vector<long double>{0, 0, 0});
  H x = fold("Expand", {H{kFloat, {2, 1}, {1.5, -2}}, H{kInt64, {2}, {2, 2}}});
  CHECK(x.shape == Shape{2, 2});
  CHECK(x.v == std::vector<long double>{1.5, 1.5, -2, -2});
  // Cast to an integer truncates toward zero; to float rounds once.
  H i = fold("Cast", {H{kFloat, {2}, {2.7L, -2.7L}}}, {{"to", kInt64}});
  CHECK(i.v == std::vector<long double>{2, -2});
  H f = fold("Cast", {H{kInt64, {1}, {16777217}}}, {{"to", kFloat}});
  CHECK(f.v == std::vector<long double>{16777216});
  // Integer division truncates; Mod follows the divisor's sign unless fmod.
  H d = fold("Div", {H{kInt64, {2}, {7, -7}}, H{kInt64, {1}, {2}}});
  CHECK(d.v == std::vector<long double>{3, -3});
  H m = fold("Mod", {H{kInt64, {2}, {7, -7}}, H{kInt64, {1}, {3}}});
  CHECK(m.v == std::vector<long double>{1, 2});
}

TEST_CASE("a fold op on data, Identity and Dropout as views, old opsets' attributes") {
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 3}).ints("i", {1});
    b.node("Range", {"i", "x", "i"}, {"y"}, "g");
    b.output("y", kFloat, {});
    CHECK(import_error(b) ==
          "m.onnx: node 'g' (Range): op Range is supported on constant inputs only (folded "
          "at import); input 'x' is data");
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 3});
    b.node("Identity", {"x"}, {"a"});
    onnx::NodeProto& d = b.node("Dropout", {"a"}, {"y"});
    set_attr(d, "ratio", 0.5f);
    b.output("y", kFloat, {2, 3});
    const Workload w = compiler::import_onnx(b.model(), "m.onnx");
    REQUIRE(w.layers.size() == 2);
    CHECK(w.layers[0].kind == LayerKind::reshape);
    CHECK(w.layers[1].kind == LayerKind::reshape);
    // Views only: no instruction.
    CHECK(compiler::compile(w, isa::OpTable::builtin()).instructions.empty());
  }
  {
    OnnxModelBuilder b;
    b.input("x", kFloat, {2, 3}).floats("r", {}, {0.5f});
    onnx::NodeProto& t = b.node("Constant", {}, {"t"});
    onnx::AttributeProto* v = t.add_attribute();
    v->set_name("value");
    v->set_type(onnx::AttributeProto::TENSOR);
    v->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
    v->mutable_t()->add_int32_data(1);
    b.node("Dropout", {"x", "r", "t"}, {"y"}, "drop");
    b.output("y", kFloat, {2, 3});
    CHECK(import_error(b) ==
          "m.onnx: node 'drop' (Dropout): training_mode = true is not supported: only inference");
  }
  {
    // Opset 5: Add with broadcast = 1 and axis = 1 adds B [3] along dim 1 of A [2, 3, 4];
    // BatchNormalization's is_test and spatial, consumed_inputs anywhere.
    OnnxModelBuilder b(5);
    b.input("x", kFloat, {2, 3, 4}).floats("bias", {3}, {1, 2, 3});
    onnx::NodeProto& add = b.node("Add", {"x", "bias"}, {"y"}, "add");
    set_attr(add, "broadcast", int64_t{1});
    set_attr(add, "axis", int64_t{1});
    onnx::NodeProto& relu = b.node("Relu", {"y"}, {"z"}, "relu");
    set_attr(relu, "consumed_inputs", std::vector<int64_t>{0});
    b.output("z", kFloat, {2, 3, 4});
    const Workload w = compiler::import_onnx(b.model(), "m.onnx");
    REQUIRE(w.layers.size() == 3);
    CHECK(w.layers[0].name == "y.broadcast_b");
    CHECK(w.layers[0].output.shape == Shape{3, 1});
    CHECK(w.layers[1].inputs == std::vector<std::string>{"x", "y.broadcast_b"});
    CHECK(w.layers[1].output.shape == Shape{2, 3, 4});
  }
}
