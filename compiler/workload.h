// The workload format v1 (workloads/*.yaml) and the graph IR it becomes: named tensors, layers in
// execution order, each producing one tensor named after the layer. Parsing checks everything the
// later passes rely on (known names, shapes, dtypes), so lowering never meets a bad graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  lrn
};

std::string_view layer_kind_name(LayerKind k);

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::dense;
  std::vector<std::string> inputs;  // tensor names: one for dense/relu, two (a, b) for add/matmul
  int64_t units = 0;                // dense only
  bool bias = false;                // dense and conv2d
  // conv2d and pooling: [h, w] pairs; padding is [h_begin, w_begin, h_end, w_end] as in ONNX.
  int64_t filters = 0;  // conv2d: output channels
  int64_t groups = 1;   // conv2d
  std::vector<int64_t> kernel = {1, 1}, stride = {1, 1}, dilation = {1, 1};
  std::vector<int64_t> padding = {0, 0, 0, 0};
  bool count_include_pad = false;                    // avgpool
  double epsilon = 1e-5;                             // batchnorm, layernorm
  std::vector<int64_t> perm;                         // transpose: output dim i is input dim perm[i]
  int64_t axis = 1;                                  // concat
  int64_t size = 0;                                  // lrn: channels summed over
  double alpha = 1e-4, beta = 0.75, lrn_bias = 1.0;  // lrn
  TensorDesc output;                                 // inferred; output.name == name
};

struct Workload {
  std::string name;
  std::string file;   // where it was read from, for messages
  uint64_t seed = 1;  // seeds the random inputs and weights
  std::vector<TensorDesc> inputs;
  std::vector<Layer> layers;         // in execution order
  std::vector<std::string> outputs;  // layer names

  // The input or layer output called `name`; nullptr when there is none.
  const TensorDesc* find_tensor(const std::string& name) const;
  // Same, but the name must exist (InternalError otherwise).
  const TensorDesc& tensor(const std::string& name) const;
  bool is_output(const std::string& name) const;
};

// Layers that only re-view their input's bytes (no instruction, no buffer of their own).
bool is_view_layer(LayerKind k);

// Reads and checks a workload; every mistake is a ConfigError "file:line: key.path: message"
// naming the layer at fault.
Workload load_workload(const std::string& path);
Workload parse_workload(const std::string& text, const std::string& file);

}  // namespace fracsim::compiler
