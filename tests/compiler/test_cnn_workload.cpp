// The CNN layer types of the workload format: keys, defaults, shape inference, and the exact
// message of every kind of bad input.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "compiler/workload.h"
#include "isa/error.h"

using fracsim::ConfigError;
using fracsim::compiler::is_view_layer;
using fracsim::compiler::LayerKind;
using fracsim::compiler::parse_workload;
using fracsim::compiler::Workload;
using fracsim::isa::Shape;

namespace {

// An image x [2, 4, 8, 8] (line 3), an i8 matrix q (line 4), a matrix m [3, 5] (line 5), then
// the layers given, from line 7.
std::string with_layers(const std::vector<std::string>& layers) {
  std::string s =
      "workload: w\ninputs:\n  x: {shape: [2, 4, 8, 8], dtype: f32}\n"
      "  q: {shape: [2, 3], dtype: i8}\n  m: {shape: [3, 5], dtype: f32}\nlayers:\n";
  for (const std::string& l : layers) s += "  - " + l + "\n";
  return s;
}

std::string error_of(const std::vector<std::string>& layers) {
  try {
    parse_workload(with_layers(layers), "w.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

Shape shape_of(const std::vector<std::string>& layers, const std::string& name) {
  return parse_workload(with_layers(layers), "w.yaml").tensor(name).shape;
}

}  // namespace

TEST_CASE("conv2d: defaults and inferred shapes") {
  Workload w = parse_workload(with_layers({"{name: c, type: conv2d, input: x, filters: 6, "
                                           "kernel: 3}"}),
                              "w.yaml");
  const auto& l = w.layers[0];
  CHECK(l.kind == LayerKind::conv2d);
  CHECK(l.output.shape == Shape{2, 6, 6, 6});
  CHECK(l.stride == std::vector<int64_t>{1, 1});
  CHECK(l.dilation == std::vector<int64_t>{1, 1});
  CHECK(l.padding == std::vector<int64_t>{0, 0, 0, 0});
  CHECK(l.groups == 1);
  CHECK(l.bias);
  // (8 + 1 + 2 - 2*(3-1) - 1) / 2 + 1 = 4 along H; (8 + 0 + 0 - 2 - 1) / 1 + 1 = 6 along W
  Workload v = parse_workload(
      with_layers({"{name: c, type: conv2d, input: x, filters: 8, kernel: 3, stride: [2, 1], "
                   "dilation: [2, 1], padding: [1, 0, 2, 0], groups: 4, bias: false}"}),
      "w.yaml");
  CHECK(v.layers[0].output.shape == Shape{2, 8, 4, 6});
  CHECK(v.layers[0].padding == std::vector<int64_t>{1, 0, 2, 0});
  CHECK_FALSE(v.layers[0].bias);
}

TEST_CASE("pooling, normalisation, activations and views: inferred shapes") {
  CHECK(shape_of({"{name: p, type: maxpool, input: x, kernel: 3, stride: 2, padding: 1}"}, "p") ==
        Shape{2, 4, 4, 4});
  CHECK(shape_of({"{name: p, type: avgpool, input: x, kernel: [2, 4]}"}, "p") == Shape{2, 4, 4, 2});
  CHECK(shape_of({"{name: g, type: global_avgpool, input: x}"}, "g") == Shape{2, 4, 1, 1});
  for (const char* t : {"batchnorm", "softmax", "layernorm", "gelu", "sigmoid", "tanh"})
    CHECK(shape_of({std::string("{name: n, type: ") + t + ", input: x}"}, "n") ==
          Shape{2, 4, 8, 8});
  CHECK(shape_of({"{name: f, type: flatten, input: x}"}, "f") == Shape{2, 256});
  Workload n = parse_workload(with_layers({"{name: n, type: lrn, input: x, size: 3}"}), "w.yaml");
  CHECK(n.layers[0].output.shape == Shape{2, 4, 8, 8});
  CHECK(n.layers[0].alpha == 1e-4);
  CHECK(n.layers[0].beta == 0.75);
  CHECK(n.layers[0].lrn_bias == 1.0);
  CHECK(shape_of({"{name: r, type: reshape, input: x, shape: [4, -1, 16]}"}, "r") ==
        Shape{4, 8, 16});
  CHECK(shape_of({"{name: t, type: transpose, input: x, perm: [0, 2, 3, 1]}"}, "t") ==
        Shape{2, 8, 8, 4});
  CHECK(shape_of({"{name: a, type: relu, input: x}", "{name: c, type: concat, inputs: [x, a, x]}"},
                 "c") == Shape{2, 12, 8, 8});
  CHECK(shape_of({"{name: c, type: concat, inputs: [m, m], axis: 0}"}, "c") == Shape{6, 5});
  Workload w = parse_workload(with_layers({"{name: n, type: layernorm, input: m, epsilon: 1e-3}"}),
                              "w.yaml");
  CHECK(w.layers[0].epsilon == 1e-3);
  CHECK(is_view_layer(LayerKind::flatten));
  CHECK(is_view_layer(LayerKind::transpose));
  CHECK_FALSE(is_view_layer(LayerKind::concat));
}

TEST_CASE("conv2d and pooling: exact messages for bad input") {
  const std::string at = "w.yaml:7: layers[0].";
  CHECK(error_of({"{name: c, type: conv2d, input: x, kernel: 3}"}) ==
        at + "filters: layer 'c': missing required key");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2}"}) ==
        at + "kernel: layer 'c': missing required key");
  CHECK(error_of({"{name: c, type: conv2d, input: m, filters: 2, kernel: 1}"}) ==
        at + "input: layer 'c': conv2d needs a rank-4 input [N,C,H,W], got 'm' [3,5]");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: 0}"}) ==
        at + "kernel: layer 'c': expected a positive integer, got '0'");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: [1, 2, 3]}"}) ==
        at + "kernel: layer 'c': expected an integer or [h, w]");
  CHECK(
      error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: 1, padding: [1, 2, 3]}"}) ==
      at + "padding: layer 'c': expected an integer, [h, w] or [h_begin, w_begin, h_end, w_end]");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: 1, padding: -1}"}) ==
        at + "padding: layer 'c': expected a non-negative integer, got '-1'");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: [1, x]}"}) ==
        at + "kernel[1]: layer 'c': expected a positive integer, got 'x'");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 6, kernel: 1, groups: 3}"}) ==
        at + "groups: layer 'c': 3 groups must divide the 4 input channels of 'x' [2,4,8,8] and "
             "the 6 filters");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: 5, dilation: 2}"}) ==
        at + "kernel: layer 'c': the kernel spans 9 along H but the padded input has 8");
  CHECK(error_of({"{name: c, type: conv2d, input: x, filters: 2, kernel: 1, pad: 1}"}) ==
        at + "pad: layer 'c': unknown key for type conv2d (expected one of: name, type, input, "
             "filters, kernel, stride, padding, dilation, groups, bias)");
  CHECK(error_of({"{name: p, type: maxpool, input: x, kernel: 2, padding: 2}"}) ==
        at + "padding: layer 'p': padding 2 must be smaller than the kernel 2");
  CHECK(error_of({"{name: p, type: maxpool, input: x, kernel: [2, 9]}"}) ==
        at + "kernel: layer 'p': the kernel spans 9 along W but the padded input has 8");
  CHECK(error_of({"{name: p, type: maxpool, input: x, kernel: 2, count_include_pad: true}"}) ==
        at + "count_include_pad: layer 'p': unknown key for type maxpool (expected one of: "
             "name, type, input, kernel, stride, padding)");
  CHECK(error_of({"{name: p, type: avgpool, input: q, kernel: 1}"}) ==
        at + "input: layer 'p': avgpool needs a rank-4 input [N,C,H,W], got 'q' [2,3]");
  CHECK(error_of({"{name: g, type: global_avgpool, input: m}"}) ==
        at + "input: layer 'g': global_avgpool needs a rank-4 input [N,C,H,W], got 'm' [3,5]");
}

TEST_CASE("normalisation, activations, views and concat: exact messages for bad input") {
  const std::string at = "w.yaml:7: layers[0].";
  CHECK(error_of({"{name: n, type: batchnorm, input: x, epsilon: 0}"}) ==
        at + "epsilon: layer 'n': expected a positive number, got '0'");
  CHECK(error_of({"{name: n, type: layernorm, input: x, epsilon: [1]}"}) ==
        at + "epsilon: layer 'n': expected a positive number, got 'a list or map'");
  CHECK(error_of({"{name: n, type: softmax, input: x, epsilon: 1}"}) ==
        at + "epsilon: layer 'n': unknown key for type softmax (expected one of: name, type, "
             "input)");
  CHECK(error_of({"{name: n, type: sigmoid, input: q}"}) ==
        at + "input: layer 'n': sigmoid supports only f32, got 'q' of dtype i8");
  CHECK(error_of({"{name: r, type: reshape, input: x, shape: [3, -1]}"}) ==
        at + "shape: layer 'r': 'x' [2,4,8,8] cannot be viewed as [3,-1] (512 elements)");
  CHECK(error_of({"{name: r, type: reshape, input: x, shape: [-1, -1]}"}) ==
        at + "shape[1]: layer 'r': expected a positive extent or one -1, got '-1'");
  CHECK(error_of({"{name: r, type: reshape, input: x, shape: [2, 4, 8]}"}) ==
        at + "shape: layer 'r': 'x' [2,4,8,8] cannot be viewed as [2,4,8] (512 elements)");
  CHECK(error_of({"{name: t, type: transpose, input: m, perm: [0, 0]}"}) ==
        at + "perm: layer 't': expected a permutation of 0..1 for 'm' [3,5]");
  CHECK(error_of({"{name: t, type: transpose, input: m}"}) ==
        at + "perm: layer 't': missing required key");
  CHECK(error_of({"{name: n, type: lrn, input: x}"}) ==
        at + "size: layer 'n': missing required key");
  CHECK(error_of({"{name: n, type: lrn, input: x, size: 5, beta: -1}"}) ==
        at + "beta: layer 'n': expected a positive number, got '-1'");
  CHECK(error_of({"{name: n, type: lrn, input: m, size: 5}"}) ==
        at + "input: layer 'n': lrn needs a rank-4 input [N,C,H,W], got 'm' [3,5]");
  CHECK(parse_workload("workload: w\ninputs:\n  y: {shape: [1, 1, 1, 1, 1, 1, 2], dtype: f32}\n"
                       "layers:\n  - {name: r, type: relu, input: y}\n",
                       "w.yaml")
            .layers.size() == 1);
  try {
    parse_workload(
        "workload: w\ninputs:\n  y: {shape: [1, 1, 1, 1, 1, 1, 2], dtype: f32}\n"
        "layers:\n  - {name: t, type: transpose, input: y, perm: [0, 1, 2, 3, 4, 6, 5]}\n",
        "w.yaml");
    FAIL("no error");
  } catch (const ConfigError& e) {
    CHECK(std::string(e.what()) ==
          "w.yaml:5: layers[0].input: layer 't': transpose supports tensors of rank 6 or less, "
          "got 'y' [1,1,1,1,1,1,2]");
  }
  CHECK(error_of({"{name: c, type: concat, inputs: [x]}"}) ==
        at + "inputs: layer 'c': concat expects a list of two or more tensor names");
  CHECK(error_of({"{name: c, type: concat, inputs: [x, m]}"}) ==
        at + "inputs: layer 'c': concat along axis 1 needs the same dtype and equal extents "
             "elsewhere, got 'x' [2,4,8,8] and 'm' [3,5]");
  CHECK(error_of({"{name: c, type: concat, inputs: [m, m], axis: 2}"}) ==
        at + "axis: layer 'c': axis 2 is out of range for 'm' [3,5]");
  CHECK(error_of({"{name: c, type: concat, inputs: [q, q]}"}) ==
        at + "inputs: layer 'c': concat supports only f32, got 'q' of dtype i8");
  CHECK(error_of({"{name: c, type: concat, inputs: [m, y]}"}) ==
        at + "inputs[1]: layer 'c': unknown tensor 'y' (not an input nor an earlier layer)");
}
