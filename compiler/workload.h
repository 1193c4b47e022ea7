// The workload format v1 (workloads/*.yaml) and the graph IR it becomes: named tensors, layers in
// execution order, each producing one tensor named after the layer. Parsing checks everything the
// later passes rely on (known names, shapes, dtypes), so lowering never meets a bad graph.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile_options.h"
#include "isa/dtype.h"
#include "isa/tensor.h"

namespace fracsim::compiler {

// A tensor of the graph: a workload input or the output of a layer.
struct TensorDesc {
  std::string name;
  isa::DType dtype = isa::DType::f32;
  isa::Shape shape;

  bool operator==(const TensorDesc& o) const {
    return name == o.name && dtype == o.dtype && shape == o.shape;
  }
};

enum class LayerKind {
  dense,
  relu,
  add,
  matmul,  // v1
  conv2d,
  maxpool,
  avgpool,
  global_avgpool,
  batchnorm,
  softmax,
  layernorm,
  gelu,
  sigmoid,
  tanh,
  flatten,
  reshape,
  transpose,
  concat,
  lrn,
  // The ONNX front end's layers; YAML workloads do not name them (yet).
  eltwise,     // n-ary, numpy broadcast: fn is add, sub, mul, div, max or min
  leaky_relu,  // alpha
  exp,
  log_softmax,  // axis
  global_maxpool,
  gemm,         // alpha, beta, trans_a, trans_b; inputs a, b and optionally c
  reduce,       // fn is sum, mean, max, min or prod over `axes`
  topk,         // k, axis, largest; second output: the indices (i32)
  zero_insert,  // the input spread out by `stride` into a zero tensor, from the offsets
                // `padding` (one per spatial dim): a transposed convolution's input
  activation,   // the activation op's `fn` (with `alpha`) on any shape
  slice,        // a strided view: output index i reads input index starts + i * steps
  gather,       // copies along `axis` of the input at the constant `indices`
  pad,          // the input in a tensor filled with `alpha`, from the offsets `padding`
  convert,      // the input converted to the output's dtype
  compare,      // fn is eq, ne, lt, gt, le or ge over two inputs broadcast: a u8 of 0 or 1
  select,       // inputs cond (u8), a, b broadcast: a where cond != 0, else b
  gather_index  // inputs x and indices (data): along `axis` of x, ONNX's Gather when `flat_axis`
                // (the indices' dims replace the axis), else GatherElements (same rank)
};

std::string_view layer_kind_name(LayerKind k);

// A layer's weights are implicit (YAML: the lowering makes them, with random contents) unless
// the layer lists them after its data inputs (ONNX: conv2d [x, w, b], batchnorm [x, scale, bias,
// mean, var], layernorm [x, gamma, beta], gemm [a, b, c]).
struct Layer {
  std::string name;
  // What the instructions lowered from this layer are named (Program::instruction_names): the
  // ONNX node it comes from (its name, or "OpType_K" for the unnamed node K of the graph);
  // empty for a YAML layer, whose instructions carry `name`.
  std::string node;
  LayerKind kind = LayerKind::dense;
  std::vector<std::string> inputs;  // tensor names: one for dense/relu, two (a, b) for add/matmul
  int64_t units = 0;                // dense only
  bool bias = false;                // dense and conv2d
  // conv2d and pooling: one entry per spatial dim ([h, w] for 2-D); padding is [begins...,
  // ends...] as in ONNX ([h_begin, w_begin, h_end, w_end]). Pools have 1 to 3 spatial dims.
  int64_t filters = 0;  // conv2d: output channels
  int64_t groups = 1;   // conv2d
  std::vector<int64_t> kernel = {1, 1}, stride = {1, 1}, dilation = {1, 1};
  std::vector<int64_t> padding = {0, 0, 0, 0};
  bool count_include_pad = false;  // avgpool
  int64_t storage_order = 0;       // maxpool with indices: 0 row major, 1 column major
  double epsilon = 1e-5;           // batchnorm, layernorm
  bool training = false;           // batchnorm: the batch's statistics (ONNX training_mode)
  double momentum = 0.9;           // batchnorm training: of the running statistics
  std::vector<int64_t> perm;       // transpose: output dim i is input dim perm[i]
  // reshape: the leading entry of its shape when that is an extent of its own, -1 when dim 0
  // follows the input's (ONNX 0, "copy", or -1, "infer"): whether a batch can pass (batch.h).
  int64_t reshape_leading = -1;
  // concat and flatten: the axis; softmax, log_softmax, layernorm, topk: the axis (-1: the last),
  // softmax and log_softmax over the rows [prod(dims before axis), prod(the rest)] when `flat_axis`
  // (ONNX before opset 13); layernorm normalises over the dims from axis on.
  int64_t axis = 1;
  bool flat_axis = false;
  // softmax along the last axis made by fusion (layer_fusion.h): its input is first divided by
  // `divisor` and, when the layer has a second input (a mask), added that input broadcast over
  // the leading dims.
  bool divided = false;
  float divisor = 1;
  // layernorm made by fusion (layer_fusion.h): divides by sqrt(var + epsilon), as its chain does.
  bool sqrt_divide = false;
  int64_t size = 0;                                  // lrn: channels summed over
  double alpha = 1e-4, beta = 0.75, lrn_bias = 1.0;  // lrn; alpha also leaky_relu's and gemm's
  std::string fn;                                    // eltwise, reduce
  std::vector<int64_t> axes;                         // reduce: the reduced dims, ascending
  bool trans_a = false, trans_b = false;             // gemm
  double gemm_beta = 1.0;                            // gemm: the factor of c
  int64_t k = 0;                                     // topk
  bool largest = true;                               // topk
  std::vector<int64_t> starts, steps;                // slice: per input dim
  std::vector<int64_t> indices;                      // gather
  TensorDesc output;                                 // inferred; output.name == name
  // More outputs, named by the graph: topk's indices; layernorm's mean and inverse standard
  // deviation (ONNX), when used; maxpool's indices (i32); batchnorm training's running mean
  // and variance (unnamed when unused).
  std::vector<TensorDesc> more_outputs;
};

struct Workload {
  std::string name;
  std::string file;   // where it was read from, for messages
  uint64_t seed = 1;  // seeds the random inputs and weights
  std::vector<TensorDesc> inputs;
  std::vector<Layer> layers;         // in execution order
  std::vector<std::string> outputs;  // layer names (or names of layers' more_outputs)
  // Inputs that are the model's weights (ONNX initializers and constants): symbols of role
  // weight rather than input.
  std::set<std::string> weights;
  // Inputs with given contents (little-endian, dtype-sized elements, row-major); the others get
  // seeded random contents.
  std::map<std::string, std::vector<uint8_t>> contents;
  // Inputs whose random contents need another range than [-1, 1) (integers: [-8, 8]): an
  // ONNX BatchNormalization's variance without data gets [0.5, 1.5), as YAML batchnorm does.
  std::map<std::string, std::pair<double, double>> random_ranges;
  // The passes the compiler runs on it (CompileOptions::fuse and fold_batchnorm, which declare
  // their defaults).
  bool fuse = CompileOptions{}.fuse;
  bool fold_batchnorm = CompileOptions{}.fold_batchnorm;

  // The input or layer output called `name`; nullptr when there is none.
  const TensorDesc* find_tensor(const std::string& name) const;
  // Same, but the name must exist (InternalError otherwise).
  const TensorDesc& tensor(const std::string& name) const;
  // The layer whose output is `name`; nullptr for an input or an unknown name.
  const Layer* find_layer(const std::string& name) const;
  // The value of an f32 weight of one element with given contents, when `name` is one.
  std::optional<float> scalar_constant(const std::string& name) const;
  bool is_output(const std::string& name) const;
};

// Layers that only re-view their input's bytes (no instruction, no buffer of their own).
bool is_view_layer(LayerKind k);

// Reads and checks a workload; every mistake is a ConfigError "file:line: key.path: message"
// naming the layer at fault. With options.batch, every input's dim 0 is the batch (batch.h): a
// layer it cannot pass is such an error too.
Workload load_workload(const std::string& path, const CompileOptions& options = {});
Workload parse_workload(const std::string& text, const std::string& file,
                        const CompileOptions& options = {});

}  // namespace fracsim::compiler
