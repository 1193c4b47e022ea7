// The workload format v1: parsing, defaults, shape and dtype inference, and the exact message of
// every kind of bad input.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/workload.h"
#include "isa/error.h"

using fracsim::ConfigError;
using fracsim::compiler::Layer;
using fracsim::compiler::LayerKind;
using fracsim::compiler::load_workload;
using fracsim::compiler::parse_workload;
using fracsim::compiler::TensorDesc;
using fracsim::compiler::Workload;
using fracsim::isa::DType;
using fracsim::isa::Shape;

namespace {

// One string per line, so that line numbers in expected messages are the index + 1.
std::string lines(const std::vector<std::string>& ls) {
  std::string s;
  for (const std::string& l : ls) s += l + "\n";
  return s;
}

// The message of the ConfigError the text raises, or a marker that fails every comparison.
std::string error_of(const std::string& text) {
  try {
    parse_workload(text, "w.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

// The small valid workload the error cases modify: lines 1-5.
std::vector<std::string> base() {
  return {"workload: w", "inputs:", "  x: {shape: [4, 3], dtype: f32}",
          "layers:", "  - {name: fc, type: dense, input: x, units: 2}"};
}

std::vector<std::string> with(std::vector<std::string> ls, size_t line, const std::string& text) {
  ls.at(line - 1) = text;
  return ls;
}

std::vector<std::string> plus(std::vector<std::string> ls, const std::vector<std::string>& more) {
  ls.insert(ls.end(), more.begin(), more.end());
  return ls;
}

void check_layer(const Layer& l, const std::string& name, LayerKind kind,
                 const std::vector<std::string>& inputs, DType dtype, const Shape& shape) {
  INFO("layer ", name);
  CHECK(l.name == name);
  CHECK(l.kind == kind);
  CHECK(l.inputs == inputs);
  CHECK(l.output == TensorDesc{name, dtype, shape});
}

}  // namespace

TEST_CASE("workloads/mlp.yaml: every inferred shape") {
  Workload w = load_workload(std::string(FRACSIM_SOURCE_DIR) + "/workloads/mlp.yaml");
  CHECK(w.name == "mlp");
  CHECK(w.seed == 1);
  REQUIRE(w.inputs.size() == 1);
  CHECK(w.inputs[0] == TensorDesc{"x", DType::f32, {64, 784}});
  REQUIRE(w.layers.size() == 5);
  check_layer(w.layers[0], "fc1", LayerKind::dense, {"x"}, DType::f32, {64, 1024});
  check_layer(w.layers[1], "relu1", LayerKind::relu, {"fc1"}, DType::f32, {64, 1024});
  check_layer(w.layers[2], "fc2", LayerKind::dense, {"relu1"}, DType::f32, {64, 1024});
  check_layer(w.layers[3], "relu2", LayerKind::relu, {"fc2"}, DType::f32, {64, 1024});
  check_layer(w.layers[4], "fc3", LayerKind::dense, {"relu2"}, DType::f32, {64, 10});
  CHECK(w.layers[0].units == 1024);
  CHECK(w.layers[2].units == 1024);
  CHECK(w.layers[4].units == 10);
  for (int i : {0, 2, 4}) CHECK(w.layers[i].bias);
  CHECK(w.outputs == std::vector<std::string>{"fc3"});
  CHECK(w.tensor("relu2").shape == Shape{64, 1024});
  CHECK(w.find_tensor("fc1.weight") == nullptr);
  CHECK(fracsim::compiler::layer_kind_name(w.layers[0].kind) == "dense");
  CHECK(fracsim::compiler::layer_kind_name(w.layers[1].kind) == "relu");
}

TEST_CASE("defaults: seed 1, bias true, the last layer as output") {
  Workload w = parse_workload(lines(plus(base(), {"  - {name: r, type: relu, input: fc}"})), "w");
  CHECK(w.seed == 1);
  CHECK(w.layers[0].bias);
  CHECK(w.outputs == std::vector<std::string>{"r"});
  CHECK(w.file == "w");

  Workload v = parse_workload(
      lines({"workload: v", "seed: 42", "inputs:", "  x: {shape: [4, 3], dtype: f32}",
             "layers:", "  - {name: fc, type: dense, input: x, units: 5, bias: false}",
             "  - {name: r, type: relu, input: fc}", "outputs: [fc, r]"}),
      "v");
  CHECK(v.seed == 42);
  CHECK_FALSE(v.layers[0].bias);
  CHECK(v.outputs == std::vector<std::string>{"fc", "r"});
  CHECK(v.is_output("fc"));
  CHECK_FALSE(v.is_output("x"));
}

TEST_CASE("shape and dtype inference of add, matmul and relu") {
  Workload w = parse_workload(
      lines({"workload: shapes", "inputs:", "  a: {shape: [2, 3, 4], dtype: f32}",
             "  row: {shape: [4], dtype: f32}", "  p8: {shape: [5, 6], dtype: i8}",
             "  q8: {shape: [6, 7], dtype: i8}", "  p16: {shape: [5, 6], dtype: i16}",
             "  q16: {shape: [6, 2], dtype: i16}", "  m: {shape: [6, 7], dtype: f32}",
             "  n: {shape: [7, 3], dtype: f32}",
             "layers:", "  - {name: s, type: add, inputs: [a, row]}",
             "  - {name: s2, type: add, inputs: [s, a]}", "  - {name: r, type: relu, input: s2}",
             "  - {name: r1, type: relu, input: row}",
             "  - {name: mm8, type: matmul, inputs: [p8, q8]}",
             "  - {name: mm16, type: matmul, inputs: [p16, q16]}",
             "  - {name: mmf, type: matmul, inputs: [m, n]}"}),
      "shapes.yaml");
  REQUIRE(w.layers.size() == 7);
  check_layer(w.layers[0], "s", LayerKind::add, {"a", "row"}, DType::f32, {2, 3, 4});
  check_layer(w.layers[1], "s2", LayerKind::add, {"s", "a"}, DType::f32, {2, 3, 4});
  check_layer(w.layers[2], "r", LayerKind::relu, {"s2"}, DType::f32, {2, 3, 4});
  check_layer(w.layers[3], "r1", LayerKind::relu, {"row"}, DType::f32, {4});
  check_layer(w.layers[4], "mm8", LayerKind::matmul, {"p8", "q8"}, DType::i32, {5, 7});
  check_layer(w.layers[5], "mm16", LayerKind::matmul, {"p16", "q16"}, DType::i32, {5, 2});
  check_layer(w.layers[6], "mmf", LayerKind::matmul, {"m", "n"}, DType::f32, {6, 3});
  CHECK(w.outputs == std::vector<std::string>{"mmf"});
}

TEST_CASE("unknown keys are rejected everywhere") {
  CHECK(error_of(lines(plus(base(), {"sed: 3"}))) ==
        "w.yaml:6: sed: unknown key (expected one of: workload, seed, inputs, layers, outputs)");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [4, 3], dtype: f32, layout: nc}"))) ==
        "w.yaml:3: inputs.x.layout: unknown key (expected one of: shape, dtype)");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, type: dense, input: x, unit: 2}"))) ==
        "w.yaml:5: layers[0].unit: layer 'fc': unknown key for type dense (expected one of: "
        "name, type, input, units, bias)");
  CHECK(error_of(lines(with(base(), 5, "  - {name: r, type: relu, input: x, bias: true}"))) ==
        "w.yaml:5: layers[0].bias: layer 'r': unknown key for type relu (expected one of: name, "
        "type, input)");
  CHECK(error_of(lines(with(base(), 5, "  - {name: s, type: add, input: x}"))) ==
        "w.yaml:5: layers[0].input: layer 's': unknown key for type add (expected one of: name, "
        "type, inputs)");
}

TEST_CASE("missing keys") {
  auto b = base();
  CHECK(error_of(lines({b[1], b[2], b[3], b[4]})) == "w.yaml:1: workload: missing required key");
  CHECK(error_of(lines({b[0], b[1], b[2]})) == "w.yaml:1: layers: missing required key");
  CHECK(error_of(lines({b[0], b[3], b[4]})) == "w.yaml:1: inputs: missing required key");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [4, 3]}"))) ==
        "w.yaml:3: inputs.x.dtype: missing required key");
  CHECK(error_of(lines(with(base(), 3, "  x: {dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape: missing required key");
  CHECK(error_of(lines(with(base(), 5, "  - {type: relu, input: x}"))) ==
        "w.yaml:5: layers[0].name: missing required key");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, input: x}"))) ==
        "w.yaml:5: layers[0].type: layer 'fc': missing required key");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, type: dense, input: x}"))) ==
        "w.yaml:5: layers[0].units: layer 'fc': missing required key");
  CHECK(error_of(lines(with(base(), 5, "  - {name: r, type: relu}"))) ==
        "w.yaml:5: layers[0].input: layer 'r': missing required key");
  CHECK(error_of(lines(with(base(), 5, "  - {name: mm, type: matmul}"))) ==
        "w.yaml:5: layers[0].inputs: layer 'mm': missing required key");
}

TEST_CASE("unknown layer type") {
  CHECK(error_of(lines(with(base(), 5, "  - {name: c, type: conv, input: x}"))) ==
        "w.yaml:5: layers[0].type: layer 'c': unknown layer type 'conv' (expected one of: "
        "add, avgpool, batchnorm, concat, conv2d, dense, flatten, gelu, global_avgpool, "
        "layernorm, lrn, matmul, maxpool, relu, reshape, sigmoid, softmax, tanh, transpose)");
}

TEST_CASE("unknown tensor names") {
  CHECK(error_of(lines(with(base(), 5, "  - {name: r, type: relu, input: y}"))) ==
        "w.yaml:5: layers[0].input: layer 'r': unknown tensor 'y' (not an input nor an earlier "
        "layer)");
  // A layer may only read tensors defined before it, itself excluded.
  CHECK(error_of(lines(plus(with(base(), 5, "  - {name: r, type: relu, input: fc}"),
                            {"  - {name: fc, type: dense, input: x, units: 2}"}))) ==
        "w.yaml:5: layers[0].input: layer 'r': unknown tensor 'fc' (not an input nor an earlier "
        "layer)");
  CHECK(error_of(lines(with(base(), 5, "  - {name: r, type: relu, input: r}"))) ==
        "w.yaml:5: layers[0].input: layer 'r': unknown tensor 'r' (not an input nor an earlier "
        "layer)");
  CHECK(error_of(lines(plus(base(), {"  - {name: s, type: add, inputs: [fc, z]}"}))) ==
        "w.yaml:6: layers[1].inputs[1]: layer 's': unknown tensor 'z' (not an input nor an "
        "earlier layer)");
  CHECK(error_of(lines(plus(base(), {"outputs: [fcc]"}))) ==
        "w.yaml:6: outputs[0]: unknown layer 'fcc'");
  CHECK(error_of(lines(plus(base(), {"outputs: [fc, x]"}))) ==
        "w.yaml:6: outputs[1]: 'x' is an input; outputs must be layers");
  CHECK(error_of(lines(plus(base(), {"outputs: [fc, fc]"}))) ==
        "w.yaml:6: outputs[1]: layer 'fc' is listed twice");
  CHECK(error_of(lines(plus(base(), {"outputs: []"}))) ==
        "w.yaml:6: outputs: expected a non-empty list of layer names");
}

TEST_CASE("duplicate and malformed names") {
  CHECK(error_of(lines(plus(base(), {"  - {name: fc, type: relu, input: x}"}))) ==
        "w.yaml:6: layers[1].name: layer 'fc': the name is already used by layers[0] at line 5");
  CHECK(error_of(lines(with(base(), 5, "  - {name: x, type: relu, input: x}"))) ==
        "w.yaml:5: layers[0].name: layer 'x': the name is already used by the input at line 3");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc.weight, type: relu, input: x}"))) ==
        "w.yaml:5: layers[0].name: layer 'fc.weight': the name must not contain '.' (reserved "
        "for weights such as fc.weight)");
  CHECK(error_of(lines(with(base(), 3, "  x.y: {shape: [4, 3], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.y: the name must not contain '.' (reserved for weights such as "
        "x.weight)");
  CHECK(error_of(lines(with(base(), 5, "  - {name: '', type: relu, input: x}"))) ==
        "w.yaml:5: layers[0].name: the name must not be empty");
  CHECK(error_of(lines(with(base(), 1, "workload: ''"))) ==
        "w.yaml:1: workload: the name must not be empty");
}

TEST_CASE("shape mismatches") {
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [2, 4, 3], dtype: f32}"))) ==
        "w.yaml:5: layers[0].input: layer 'fc': dense needs a rank-2 input [M,K], got 'x' "
        "[2,4,3]");
  auto two = [](const std::string& y, const std::string& layer) {
    return lines({"workload: w", "inputs:", "  x: {shape: [4, 3], dtype: f32}", "  y: " + y,
                  "layers:", "  - " + layer});
  };
  CHECK(error_of(two("{shape: [4, 3], dtype: f32}", "{name: mm, type: matmul, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 'mm': matmul needs a [M,K] and b [K,N], got 'x' "
        "[4,3] and 'y' [4,3]");
  CHECK(error_of(two("{shape: [3], dtype: f32}", "{name: mm, type: matmul, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 'mm': matmul needs a [M,K] and b [K,N], got 'x' "
        "[4,3] and 'y' [3]");
  CHECK(error_of(two("{shape: [3, 4], dtype: f32}", "{name: s, type: add, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 's': add needs equal shapes or b of shape [N] with a "
        "of shape [M,N], got 'x' [4,3] and 'y' [3,4]");
  CHECK(error_of(two("{shape: [4], dtype: f32}", "{name: s, type: add, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 's': add needs equal shapes or b of shape [N] with a "
        "of shape [M,N], got 'x' [4,3] and 'y' [4]");
  // The broadcast operand is b, never a.
  CHECK(error_of(two("{shape: [3], dtype: f32}", "{name: s, type: add, inputs: [y, x]}")) ==
        "w.yaml:6: layers[0].inputs: layer 's': add needs equal shapes or b of shape [N] with a "
        "of shape [M,N], got 'y' [3] and 'x' [4,3]");
  CHECK(error_of(two("{shape: [3], dtype: f32}", "{name: s, type: add, inputs: [x]}")) ==
        "w.yaml:6: layers[0].inputs: layer 's': add expects a list of two tensor names [a, b]");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [16777216, 3], dtype: f32}")) +
                 "  - {name: big, type: dense, input: x, units: 16777217}\n") ==
        "w.yaml:6: layers[1].units: layer 'big': the output shape [16777216,16777217] has more "
        "than 2^48 elements");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [16777216, 3], dtype: f32}")) +
                 "  - {name: big, type: dense, input: x, units: 16777216}\n") == "(no error)");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [65536, 65536, 65537], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape: [65536,65536,65537] has more than 2^48 elements");
}

TEST_CASE("non-positive units and extents") {
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, type: dense, input: x, units: 0}"))) ==
        "w.yaml:5: layers[0].units: layer 'fc': expected a positive integer, got '0'");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, type: dense, input: x, units: -3}"))) ==
        "w.yaml:5: layers[0].units: layer 'fc': expected a positive integer, got '-3'");
  CHECK(error_of(lines(with(base(), 5, "  - {name: fc, type: dense, input: x, units: 2.5}"))) ==
        "w.yaml:5: layers[0].units: layer 'fc': expected a positive integer, got '2.5'");
  CHECK(error_of(lines(with(base(), 5,
                            "  - {name: fc, type: dense, input: x, units: 2, "
                            "bias: yes please}"))) ==
        "w.yaml:5: layers[0].bias: layer 'fc': expected true or false, got 'yes please'");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [4, 0], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape[1]: extent must be positive, got 0");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [-4, 3], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape[0]: extent must be positive, got -4");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape: expected a non-empty list of extents");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [four, 3], dtype: f32}"))) ==
        "w.yaml:3: inputs.x.shape[0]: expected an integer, got 'four'");
}

TEST_CASE("dtypes: unknown names and unsupported combinations") {
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [4, 3], dtype: f128}"))) ==
        "w.yaml:3: inputs.x.dtype: unknown dtype 'f128' (expected one of: f32, f16, bf16, i32, "
        "i16, i8, u8, u16, u32, u64, i64, f64)");
  CHECK(error_of(lines(with(base(), 3, "  x: {shape: [4, 3], dtype: i8}"))) ==
        "w.yaml:5: layers[0].input: layer 'fc': dense supports only f32 in v1, got 'x' of "
        "dtype i8");
  CHECK(error_of(lines({"workload: w", "inputs:", "  h: {shape: [8], dtype: f16}",
                        "layers:", "  - {name: r, type: relu, input: h}"})) ==
        "w.yaml:5: layers[0].input: layer 'r': relu supports only f32 in v1, got 'h' of dtype "
        "f16");
  auto two = [](const std::string& x, const std::string& y, const std::string& layer) {
    return lines({"workload: w", "inputs:", "  x: {shape: [4, 4], dtype: " + x + "}",
                  "  y: {shape: [4, 4], dtype: " + y + "}", "layers:", "  - " + layer});
  };
  CHECK(error_of(two("i8", "i16", "{name: mm, type: matmul, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 'mm': matmul accepts f32 x f32, i8 x i8 or i16 x i16, "
        "got i8 x i16");
  CHECK(error_of(two("i32", "i32", "{name: mm, type: matmul, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 'mm': matmul accepts f32 x f32, i8 x i8 or i16 x i16, "
        "got i32 x i32");
  CHECK(error_of(two("f32", "f16", "{name: s, type: add, inputs: [x, y]}")) ==
        "w.yaml:6: layers[0].inputs: layer 's': add supports only f32 in v1, got f32 and f16");
  // An i8 matmul gives i32, which relu does not take in v1.
  CHECK(error_of(two("i8", "i8", "{name: mm, type: matmul, inputs: [x, y]}") +
                 "  - {name: r, type: relu, input: mm}\n") ==
        "w.yaml:7: layers[1].input: layer 'r': relu supports only f32 in v1, got 'mm' of dtype "
        "i32");
}

TEST_CASE("document structure errors") {
  CHECK(error_of(lines(plus({"seed: -1"}, base()))) ==
        "w.yaml:1: seed: expected a non-negative integer, got -1");
  CHECK(error_of(lines({"workload: w", "inputs:", "  x: {shape: [4, 3], dtype: f32}",
                        "layers: []"})) == "w.yaml:4: layers: expected a non-empty list of layers");
  CHECK(error_of(lines({"workload: w", "inputs: {}",
                        "layers:", "  - {name: fc, type: dense, input: x, units: 2}"})) ==
        "w.yaml:2: inputs: expected at least one input");
  CHECK(error_of(lines(with(base(), 5, "  - fc"))) ==
        "w.yaml:5: layers[0]: expected a mapping of keys");
  CHECK(error_of("- a\n- b\n") == "w.yaml:1: (document): expected a mapping of keys");
  CHECK(error_of("workload: [\n") == "w.yaml:2: YAML syntax error: end of sequence flow not found");
  CHECK_THROWS_WITH_AS(load_workload("/nonexistent/w.yaml"),
                       "/nonexistent/w.yaml: cannot open file", ConfigError);
}
