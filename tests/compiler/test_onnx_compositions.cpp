// ONNX ops imported as compositions of existing layers (onnx_resize_nodes.cpp,
// onnx_layout_nodes.cpp, onnx_einsum_nodes.cpp, onnx_recurrent_nodes.cpp) and ReduceProd: the
// instructions they lower to, the interpolation weights Resize builds, the values the reference
// semantics give (worked out by hand, or ONNX's reference where it says so), and the errors for
// what they refuse.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "compiler/lowering.h"
#include "compiler/onnx_import.h"
#include "isa/error.h"
#include "isa/op_def.h"
#include "isa/reference.h"
#include "tests/common/compile_helpers.h"
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
                     const std::map<std::string, onnx::TensorProto>& given,
                     const compiler::CompileOptions& options = {}) {
  return compiler::compile(compiler::import_onnx(b.model(), "m.onnx", given, options), ops());
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

TEST_CASE("LSTM unrolled: one projection gemm, then per step the gates as activations on slices") {
  // S = 2 steps, batch 1, input 2, hidden 2; gates i, o, f, c of 2 rows each.
  OnnxModelBuilder b(14);
  b.input("X", kFloat, {2, 1, 2}).output("Y", kFloat, {}).output("Y_h", kFloat, {});
  std::vector<float> w, r, bias;
  for (int k = 0; k < 16; ++k) w.push_back(static_cast<float>(k - 8) / 20);
  for (int k = 0; k < 16; ++k) r.push_back(static_cast<float>(k % 5 - 2) / 10);
  for (int k = 0; k < 16; ++k) bias.push_back(k < 8 ? 0.1f : -0.05f);  // Wb, then Rb
  b.floats("W", {1, 8, 2}, w).floats("R", {1, 8, 2}, r).floats("B", {1, 16}, bias);
  set_attr(b.node("LSTM", {"X", "W", "R", "B"}, {"Y", "Y_h"}, "lstm"), "hidden_size", int64_t{2});
  const isa::Program p =
      compile(b, {{"X", tensor(kFloat, {2, 1, 2}, {1, 2, 3, -1})}}, testing::unfused());
  // Wb + Rb once; X [2, 2] W^T + bias for both steps; step 0 (no initial state: no recurrent
  // gemm, C = i c~): sigmoid of i, o, f at once, tanh of c~, i c~, tanh C, o tanh C; step 1: H R^T
  // onto its projection (matmul, add), the same activations, C = f C + i c~ (mul, mul, add) and
  // H. Each H is written in place into its slice of Y (a concat); Y_h is a view of the last.
  CHECK(op_names(p) ==
        std::vector<std::string>{"eltwise add",            // bias
                                 "matmul", "eltwise add",  // projection
                                 "activation sigmoid", "activation tanh", "eltwise mul",  // step 0
                                 "activation tanh", "eltwise mul",                        //
                                 "matmul", "eltwise add",                                 // step 1
                                 "activation sigmoid", "activation tanh", "eltwise mul",  //
                                 "eltwise mul", "eltwise add", "activation tanh", "eltwise mul"});
  CHECK(symbol(p, "Y_h").tensor.address == symbol(p, "Y").tensor.address + 2 * 4);
  const std::vector<uint8_t> image = isa::run_reference(p, ops());
  // ONNX's reference (onnx.backend.test.case.node.lstm's LSTM_Helper, in double): the f32
  // steps agree to 1e-6 relative.
  const std::vector<double> y = {0.06353385001420975, 0.11364860087633133, 0.07962287962436676,
                                 0.14109131693840027};
  const std::vector<float> got = values<float>(p, image, "Y");
  REQUIRE(got.size() == y.size());
  for (size_t i = 0; i < y.size(); ++i) CHECK(got[i] == doctest::Approx(y[i]).epsilon(1e-6));
  CHECK(values<float>(p, image, "Y_h") == std::vector<float>(got.begin() + 2, got.end()));
}

TEST_CASE("LSTM, GRU and RNN refuse what they cannot unroll, naming the node") {
  auto model = [](int64_t gates) {
    OnnxModelBuilder b(14);
    b.input("X", kFloat, {2, 1, 2}).output("Y_h", kFloat, {});
    b.floats("W", {1, 2 * gates, 2}, std::vector<float>(4 * gates, 0.1f));
    b.floats("R", {1, 2 * gates, 2}, std::vector<float>(4 * gates, 0.1f));
    return b;
  };
  {
    OnnxModelBuilder b = model(4);
    b.ints("lens", {1});
    b.node("LSTM", {"X", "W", "R", "", "lens"}, {"", "Y_h"}, "l");
    CHECK(import_error(b, {}) ==
          "m.onnx: node 'l' (LSTM): sequence_lens [1] is not the sequence length 2 for each of "
          "the 1 batch entries (fracsim unrolls the whole sequence)");
  }
  {
    OnnxModelBuilder b = model(3);
    set_attr(b.node("GRU", {"X", "W", "R"}, {"", "Y_h"}, "g"), "clip", 1.0f);
    CHECK(import_error(b, {}) == "m.onnx: node 'g' (GRU): attribute 'clip' is not supported");
  }
  {
    OnnxModelBuilder b = model(1);
    onnx::NodeProto& n = b.node("RNN", {"X", "W", "R"}, {"", "Y_h"}, "r");
    onnx::AttributeProto* a = n.add_attribute();
    a->set_name("activations");
    a->set_type(onnx::AttributeProto::STRINGS);
    a->add_strings("HardSigmoid");
    CHECK(import_error(b, {}) ==
          "m.onnx: node 'r' (RNN): activation 'HardSigmoid' is not supported (fracsim has Elu, "
          "LeakyRelu, Relu, Sigmoid, Softplus, Softsign, Tanh, ThresholdedRelu)");
  }
  {
    // Every output of the recurrent ops is optional, but one must be used.
    OnnxModelBuilder b = model(1);
    b.node("RNN", {"X", "W", "R"}, {"", ""}, "r");
    CHECK(import_error(b, {}) == "m.onnx: node 'r' (RNN): the node has no output");
  }
}

TEST_CASE("Einsum: a batched matmul with b transposed by a view, f64 as a mul and a reduce sum") {
  OnnxModelBuilder b(12);
  b.input("x", kFloat, {2, 1, 2}).input("w", kFloat, {2, 3, 2}).output("y", kFloat, {});
  set_attr(b.node("Einsum", {"x", "w"}, {"y"}, "e"), "equation", std::string("bij, bkj -> bik"));
  const isa::Program p =
      compile(b, {{"x", tensor(kFloat, {2, 1, 2}, {1, 2, -1, 3})},
                  {"w", tensor(kFloat, {2, 3, 2}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 2, 1, -1})}});
  // w seen [b, j, k] through strides: one matmul over both batches.
  CHECK(op_names(p) == std::vector<std::string>{"matmul"});
  // Batch 0: [1, 2] . rows [1, 0], [0, 1], [1, 1]; batch 1: [-1, 3] . [2, 0], [0, 2], [1, -1].
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<float>{1, 2, 3, -2, 6, -4});

  // ONNX's test_einsum_batch_matmul in miniature (f64): [1, 2, 2] x [1, 2, 1].
  OnnxModelBuilder d(12);
  d.input("x", onnx::TensorProto::DOUBLE, {1, 2, 2})
      .input("y", onnx::TensorProto::DOUBLE, {1, 2, 1});
  d.output("z", onnx::TensorProto::DOUBLE, {});
  set_attr(d.node("Einsum", {"x", "y"}, {"z"}, "e"), "equation", std::string("bij,bjk->bik"));
  auto doubles = [](std::vector<int64_t> dims, const std::vector<double>& v) {
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::DOUBLE);
    for (int64_t e : dims) t.add_dims(e);
    for (double x : v) t.add_double_data(x);
    return t;
  };
  const isa::Program q = compile(
      d, {{"x", doubles({1, 2, 2}, {0.5, 0.25, 3, -1})}, {"y", doubles({1, 2, 1}, {0.1, 0.2})}});
  CHECK(op_names(q) == std::vector<std::string>{"eltwise mul", "reduce sum"});
  // 0.5 * 0.1 + 0.25 * 0.2 and 3 * 0.1 - 1 * 0.2, each product and sum rounded once in double.
  CHECK(values<double>(q, isa::run_reference(q, ops()), "z") ==
        std::vector<double>{0.5 * 0.1 + 0.25 * 0.2, 3 * 0.1 + -1 * 0.2});
}

TEST_CASE("Einsum: a batch diagonal is a strided view, a trace its reduce sum") {
  OnnxModelBuilder b(12);
  b.input("x", kFloat, {2, 3, 3}).output("y", kFloat, {}).output("t", kFloat, {});
  set_attr(b.node("Einsum", {"x"}, {"y"}, "diag"), "equation", std::string("...ii->...i"));
  set_attr(b.node("Einsum", {"x"}, {"t"}, "trace"), "equation", std::string("bii"));
  std::vector<double> x;
  for (int k = 0; k < 18; ++k) x.push_back(k);
  const isa::Program p = compile(b, {{"x", tensor(kFloat, {2, 3, 3}, x)}});
  // The diagonal needs no instruction of its own: the output copies it ("bii" implicitly keeps b
  // only, the letter used once).
  CHECK(op_names(p) == std::vector<std::string>{"eltwise max", "reduce sum"});
  const std::vector<uint8_t> image = isa::run_reference(p, ops());
  CHECK(values<float>(p, image, "y") == std::vector<float>{0, 4, 8, 9, 13, 17});
  CHECK(values<float>(p, image, "t") == std::vector<float>{12, 39});
}

TEST_CASE("Einsum refuses what it cannot do, naming the node") {
  auto einsum = [](const std::string& eq, std::vector<std::vector<int64_t>> shapes) {
    OnnxModelBuilder b(12);
    std::vector<std::string> ins;
    for (size_t i = 0; i < shapes.size(); ++i) {
      ins.push_back("x" + std::to_string(i));
      b.input(ins.back(), kFloat, shapes[i]);
    }
    b.output("y", kFloat, {});
    set_attr(b.node("Einsum", ins, {"y"}, "e"), "equation", eq);
    return b;
  };
  CHECK(import_error(einsum("ij,jk,kl->il", {{2, 2}, {2, 2}, {2, 2}}), {}) ==
        "m.onnx: node 'e' (Einsum): equation 'ij,jk,kl->il': an Einsum of 3 operands is not "
        "supported (one or two)");
  CHECK(import_error(einsum("ij,j->i", {{2, 3}, {1}}), {}) ==
        "m.onnx: node 'e' (Einsum): equation 'ij,j->i': 'j' has the extents 3 and 1 "
        "(broadcasting is not supported)");
  CHECK(import_error(einsum("i1->i", {{2, 3}}), {}) ==
        "m.onnx: node 'e' (Einsum): equation 'i1->i': '1' is no subscript (letters and one "
        "'...' per term)");
  CHECK(import_error(einsum("ij->k", {{2, 3}}), {}) ==
        "m.onnx: node 'e' (Einsum): equation 'ij->k': output subscript 'k' is in no operand");
  CHECK(import_error(einsum("ijk->i", {{2, 3}}), {}) ==
        "m.onnx: node 'e' (Einsum): equation 'ijk->i': operand 0 has 3 subscripts for input "
        "'x0' [2,3]");
}

TEST_CASE(
    "MatMul: a batch dim the weight is broadcast along folds into M, a batched weight "
    "keeps it") {
  // Sequence first, as torchvision's attention projects its input: the tokens [1, 3, 2] seen
  // [3, 1, 2] through a Transpose, times a weight [2, 4] shared by the 3 tokens.
  OnnxModelBuilder b(13);
  b.input("x", kFloat, {1, 3, 2}).input("w", kFloat, {2, 4}).output("y", kFloat, {});
  set_attr(b.node("Transpose", {"x"}, {"t"}, "seq_first"), "perm", std::vector<int64_t>{1, 0, 2});
  b.node("MatMul", {"t", "w"}, {"y"}, "proj");
  const isa::Program p = compile(b, {{"x", tensor(kFloat, {1, 3, 2}, {1, 2, 3, 4, 5, 6})},
                                     {"w", tensor(kFloat, {2, 4}, {1, 0, 1, 2, 0, 1, 1, -1})}});
  REQUIRE(op_names(p) == std::vector<std::string>{"matmul"});
  // One product of 3 rows, not 3 products of one row: a [3, 2] by its token stride (2 floats),
  // the weight without its batch dim, the output [3, 4] (each under the op's batch dim of 1).
  const isa::Instruction& mm = p.instructions[0];
  REQUIRE(mm.operands.size() == 3);
  CHECK(mm.operands[0].shape == isa::Shape{1, 3, 2});
  CHECK(mm.operands[0].strides == isa::Shape{0, 2, 1});
  CHECK(mm.operands[1].shape == isa::Shape{1, 2, 4});
  CHECK(mm.operands[1].strides == isa::Shape{0, 4, 1});
  CHECK(mm.operands[2].shape == isa::Shape{1, 3, 4});
  CHECK(mm.operands[2].strides == isa::Shape{0, 4, 1});
  // Row i of x times w: [1, 2] -> 1, 2, 3, 0; [3, 4] -> 3, 4, 7, 2; [5, 6] -> 5, 6, 11, 4.
  CHECK(values<float>(p, isa::run_reference(p, ops()), "y") ==
        std::vector<float>{1, 2, 3, 0, 3, 4, 7, 2, 5, 6, 11, 4});

  // A weight per batch index: the batch dim stays, one instruction over both.
  OnnxModelBuilder c(13);
  c.input("x", kFloat, {2, 1, 2}).input("w", kFloat, {2, 2, 3}).output("y", kFloat, {});
  c.node("MatMul", {"x", "w"}, {"y"}, "bmm");
  const isa::Program q =
      compile(c, {{"x", tensor(kFloat, {2, 1, 2}, {1, 2, -1, 3})},
                  {"w", tensor(kFloat, {2, 2, 3}, {1, 0, 1, 0, 1, 1, 2, 0, 1, 0, 2, -1})}});
  REQUIRE(op_names(q) == std::vector<std::string>{"matmul"});
  CHECK(q.instructions[0].operands[0].shape == isa::Shape{2, 1, 2});
  CHECK(q.instructions[0].operands[1].shape == isa::Shape{2, 2, 3});
  CHECK(q.instructions[0].operands[2].shape == isa::Shape{2, 1, 3});
  // [1, 2] x [[1, 0, 1], [0, 1, 1]] = 1, 2, 3; [-1, 3] x [[2, 0, 1], [0, 2, -1]] = -2, 6, -4.
  CHECK(values<float>(q, isa::run_reference(q, ops()), "y") ==
        std::vector<float>{1, 2, 3, -2, 6, -4});
}
