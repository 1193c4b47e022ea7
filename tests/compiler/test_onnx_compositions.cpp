// ONNX ops imported as compositions of existing layers (onnx_resize_nodes.cpp,
// onnx_layout_nodes.cpp) and ReduceProd: the instructions they lower to, the interpolation
// weights Resize builds, the values the reference semantics give (worked out by hand), and the
// errors for what they refuse.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "isa/error.h"
#include "isa/op_def.h"
#include "isa/reference.h"
#include "tests/common/program_inspect.h"
#include "tests/compiler/onnx_model_builder.h"

using namespace fracsim;
using testing::OnnxModelBuilder;
using testing::op_names;
using testing::set_attr;
using testing::symbol;
using testing::values;

namespace {

constexpr int32_t kFloat = onnx::TensorProto::FLOAT;
constexpr int32_t kInt32 = onnx::TensorProto::INT32;
constexpr int32_t kInt64 = onnx::TensorProto::INT64;

const isa::OpTable& ops() { return isa::OpTable::builtin(); }

onnx::TensorProto tensor(int32_t type, std::vector<int64_t> dims, const std::vector<double>& v) {
  onnx::TensorProto t;
  t.set_data_type(type);
  for (int64_t d : dims) t.add_dims(d);
  for (double x : v) {
    if (type == kFloat) t.add_float_data(static_cast<float>(x));
    if (type == kInt32) t.add_int32_data(static_cast<int32_t>(x));
    if (type == kInt64) t.add_int64_data(static_cast<int64_t>(x));
  }
  return t;
}

isa::Program compile(const OnnxModelBuilder& b,
                     const std::map<std::string, onnx::TensorProto>& given) {
  return compiler::compile(compiler::import_onnx(b.model(), "m.onnx", given), ops());
}

std::string import_error(const OnnxModelBuilder& b,
                         const std::map<std::string, onnx::TensorProto>& given) {
  try {
    compiler::import_onnx(b.model(), "m.onnx", given);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("Resize linear: a matmul per axis with ONNX's half_pixel weights") {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {});
  b.floats("scales", {4}, {1, 1, 2, 2});
  set_attr(b.node("Resize", {"x", "", "scales"}, {"y"}, "r"), "mode", std::string("linear"));
  const isa::Program p = compile(b, {{"x", tensor(kFloat, {1, 1, 2, 2}, {1, 2, 3, 4})}});
  CHECK(op_names(p) == std::vector<std::string>{"matmul", "matmul"});
  const std::vector<uint8_t> image = isa::run_reference(p, ops());
  // Along W (in 2, out 4), x_original = (x + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25: the
  // outer two clamp to the edge; stored transposed, [in, out].
  CHECK(values<float>(p, image, "y.axis3.weights") ==
        std::vector<float>{1, 0.75f, 0.25f, 0, 0, 0.25f, 0.75f, 1});
  // Along H the same weights, [out, in].
  CHECK(values<float>(p, image, "y.axis2.weights") ==
        std::vector<float>{1, 0, 0.75f, 0.25f, 0.25f, 0.75f, 0, 1});
  // ONNX's expected output of test_resize_upsample_scales_linear.
  CHECK(values<float>(p, image, "y") == std::vector<float>{1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f,
                                                           2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f,
                                                           3.75f, 4});
}

TEST_CASE("Resize nearest and Upsample: copies per resized axis, any dtype") {
  for (bool upsample : {false, true}) {
    CAPTURE(upsample);
    OnnxModelBuilder b(upsample ? 9 : 13);
    b.input("x", kInt32, {1, 1, 2, 2}).output("y", kInt32, {});
    b.floats("scales", {4}, {1, 1, 2, 1.5f});
    b.node(upsample ? "Upsample" : "Resize",
           upsample ? std::vector<std::string>{"x", "scales"}
                    : std::vector<std::string>{"x", "", "scales"},
           {"y"}, "r");
    const isa::Program p = compile(b, {{"x", tensor(kInt32, {1, 1, 2, 2}, {1, 2, 3, 4})}});
    // W first, one copy per output column; then H, each row twice: one broadcast copy.
    CHECK(op_names(p) == std::vector<std::string>(4, "eltwise max"));
    // The H copy reads the [1, 2, 3] input with stride 0 along the repeat.
    CHECK(isa::shape_str(p.instructions[3].operands[0].shape) == "[1,1,1,2,2,3]");
    CHECK(isa::shape_str(p.instructions[3].operands[0].strides) == "[0,0,6,3,0,1]");
    // W: 2 -> 3. Resize (half_pixel, round_prefer_floor): x_original = (x + 0.5) / 1.5 - 0.5 =
    // -0.17, 0.5, 1.17, so 0, 0, 1 (0.5 rounds down). Upsample (x / 1.5, floor): 0, 0.67, 1.33,
    // so 0, 0, 1 as well. H: 2 -> 4, 0 0 1 1 either way.
    CHECK(values<int32_t>(p, isa::run_reference(p, ops()), "y") ==
          std::vector<int32_t>{1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4});
  }
}

TEST_CASE("Resize refuses what it cannot do, naming the node") {
  OnnxModelBuilder none(13);
  none.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {});
  none.node("Resize", {"x"}, {"y"}, "r");
  CHECK(import_error(none, {}) ==
        "m.onnx: node 'r' (Resize): exactly one of scales and sizes must be given");
  OnnxModelBuilder ints(13);
  ints.input("x", kInt32, {1, 1, 2, 2}).output("y", kInt32, {});
  ints.floats("scales", {4}, {1, 1, 1.5f, 1});
  set_attr(ints.node("Resize", {"x", "", "scales"}, {"y"}, "r"), "mode", std::string("cubic"));
  CHECK(import_error(ints, {}) ==
        "m.onnx: node 'r' (Resize): input 'x' has dtype i32; mode cubic takes f32 (nearest takes "
        "any)");
  OnnxModelBuilder antialias(13);
  antialias.input("x", kFloat, {1, 1, 2, 2}).output("y", kFloat, {});
  antialias.floats("scales", {4}, {1, 1, 2, 2});
  set_attr(antialias.node("Resize", {"x", "", "scales"}, {"y"}, "r"),
           "coordinate_transformation_mode", std::string("half_pixel_symmetric"));
  CHECK(import_error(antialias, {}) ==
        "m.onnx: node 'r' (Resize): attribute 'coordinate_transformation_mode' = "
        "'half_pixel_symmetric' is not supported");
}

TEST_CASE("Pad edge and reflect copy along the padded axis, Tile broadcasts") {
  for (const std::string mode : {"edge", "reflect"}) {
    CAPTURE(mode);
    OnnxModelBuilder b(13);
    b.input("x", kInt32, {3}).ints("pads", {2, 2}).output("y", kInt32, {});
    set_attr(b.node("Pad", {"x", "pads"}, {"y"}, "p"), "mode", mode);
    const isa::Program p = compile(b, {{"x", tensor(kInt32, {3}, {1, 2, 3})}});
    CHECK(op_names(p) == std::vector<std::string>(7, "eltwise max"));  // one per output element
    CHECK(values<int32_t>(p, isa::run_reference(p, ops()), "y") ==
          (mode == "edge" ? std::vector<int32_t>{1, 1, 1, 2, 3, 3, 3}
                          : std::vector<int32_t>{3, 2, 1, 2, 3, 2, 1}));
  }
  OnnxModelBuilder tile(13);
  tile.input("x", kInt32, {2, 2}).ints("reps", {1, 3}).output("y", kInt32, {});
  tile.node("Tile", {"x", "reps"}, {"y"}, "t");
  const isa::Program p = compile(tile, {{"x", tensor(kInt32, {2, 2}, {1, 2, 3, 4})}});
  CHECK(op_names(p) == std::vector<std::string>{"eltwise max"});
  CHECK(values<int32_t>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<int32_t>{1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4});
  OnnxModelBuilder wrap(13);
  wrap.input("x", kInt32, {3}).ints("pads", {2, 2}).output("y", kInt32, {});
  set_attr(wrap.node("Pad", {"x", "pads"}, {"y"}, "p"), "mode", std::string("wrap"));
  CHECK(import_error(wrap, {}) ==
        "m.onnx: node 'p' (Pad): attribute 'mode' = 'wrap' is not supported (constant, edge, "
        "reflect)");
}

TEST_CASE("CumSum: a masked select and a reduce sum, reverse exclusive on i32") {
  OnnxModelBuilder b(14);
  b.input("x", kInt32, {2, 3}).ints("axis", {1}).output("y", kInt32, {});
  onnx::NodeProto& n = b.node("CumSum", {"x", "axis"}, {"y"}, "c");
  set_attr(n, "reverse", int64_t{1});
  set_attr(n, "exclusive", int64_t{1});
  const isa::Program p = compile(b, {{"x", tensor(kInt32, {2, 3}, {1, 2, 3, 10, 20, 30})}});
  CHECK(op_names(p) == std::vector<std::string>{"select", "reduce sum"});
  // Row {1, 2, 3}: the sums of the terms after each, {5, 3, 0}.
  CHECK(values<int32_t>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<int32_t>{5, 3, 0, 50, 30, 0});
}

TEST_CASE("OneHot: negative indices count from the end, out-of-range ones set nothing") {
  OnnxModelBuilder b(11);
  b.input("i", kInt64, {4}).floats("depth", {}, {4}).floats("values", {2}, {-1, 9});
  b.output("y", kFloat, {});
  b.node("OneHot", {"i", "depth", "values"}, {"y"}, "o");
  const isa::Program p = compile(b, {{"i", tensor(kInt64, {4}, {0, -1, 5, 3})}});
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<float>{9, -1, -1, -1, -1, -1, -1, 9, -1, -1, -1, -1, -1, -1, -1, 9});
}

TEST_CASE("Hardmax: 1 at the first of equal maxima") {
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {2, 3}).output("y", kFloat, {});
  b.node("Hardmax", {"x"}, {"y"}, "h");
  const isa::Program p = compile(b, {{"x", tensor(kFloat, {2, 3}, {3, 3, 1, -2, 0, 0})}});
  CHECK(op_names(p) == std::vector<std::string>{"topk", "compare eq", "select"});
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<float>{1, 0, 0, 0, 1, 0});
}

TEST_CASE("ReduceProd is the reduce op's fn prod, i32 wrapping") {
  OnnxModelBuilder b(13);
  b.input("x", kInt32, {2, 2}).output("y", kInt32, {});
  set_attr(b.node("ReduceProd", {"x"}, {"y"}, "rp"), "axes", std::vector<int64_t>{1});
  const isa::Program p = compile(b, {{"x", tensor(kInt32, {2, 2}, {65536, 65537, 4, -5})}});
  CHECK(op_names(p) == std::vector<std::string>{"reduce prod"});
  // 65536 * 65537 = 2^32 + 2^16 wraps to 65536.
  CHECK(values<int32_t>(p, isa::run_reference(p, ops()), "y") == std::vector<int32_t>{65536, -20});
}
