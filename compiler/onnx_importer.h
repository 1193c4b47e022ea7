// The ONNX importer itself (internal to compiler/): graph tensors, constants, attribute access
// with messages naming the node, and one import_* method per op type. onnx_import.cpp holds the
// model walk, tensors and constants; onnx_nodes.cpp and onnx_window_nodes.cpp the ops.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/batch.h"
#include "compiler/onnx_fold.h"
#include "compiler/onnx_import.h"
#include "isa/error.h"

namespace fracsim::compiler {

class OnnxImporter;

// The recurrent ops, unrolled over the sequence at import (onnx_recurrent_nodes.cpp).
enum class Recurrent { rnn, gru, lstm };

// The dtypes of the first operand of `op`'s dtype rows (isa/ops/*.yaml) that hold with the enum
// attribute `attr` = `value`, in row order: what a layer lowered to that op can take.
std::vector<isa::DType> isa_input_dtypes(const std::string& op, const std::string& attr,
                                         const std::string& value);

// The dtypes the convert op converts between (isa/ops/convert.yaml: every pair of them).
const std::vector<isa::DType>& convert_dtypes();

// The attributes of one node: every attribute must be read through this (or listed as
// ignored), so that an attribute fracsim does not handle is an error rather than skipped.
class NodeAttrs {
 public:
  NodeAttrs(const OnnxImporter& im, const onnx::NodeProto& node, std::set<std::string> known);

  bool has(const std::string& name) const { return find(name) != nullptr; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  // A flag: 0 or 1 (ONNX's shape inference reads other values as 0 for some ops and as 1 for
  // others, so they are refused).
  bool get_bool(const std::string& name, bool fallback) const;
  double get_float(const std::string& name, double fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<int64_t>> get_ints(const std::string& name) const;
  const onnx::AttributeProto* find(const std::string& name) const;

 private:
  const OnnxImporter& im_;
  const onnx::NodeProto& node_;
};

class OnnxImporter {
 public:
  // With `tracker`, run() also records which tensors carry the batch and refuses the nodes it
  // cannot pass (batch.h).
  OnnxImporter(const onnx::ModelProto& model, std::string file,
               const std::map<std::string, onnx::TensorProto>& input_values,
               BatchTracker* tracker = nullptr);
  Workload run();

  // "FILE: node 'NAME' (OP): message" (the node's index when it has no name).
  ConfigError error(const onnx::NodeProto& node, const std::string& message) const;
  const std::string& file() const { return file_; }
  int64_t opset() const { return opset_; }

 private:
  using Node = onnx::NodeProto;

  void read_inputs();
  // Follows the batch through the imported graph, in node order (tracker_).
  void track_batch();
  void add_constant_output(const onnx::TensorProto& c);
  void import_node(const Node& n);
  // ONNX's own shape inference of the model's first `nodes` nodes (those the import accepted:
  // libonnx 1.12 crashes on some it refuses, e.g. a ConvTranspose of a weight of rank < 2), as
  // a check of the shapes the import worked out for their layers (it cannot see the values
  // given to inputs, so it leaves some shapes open). Returns why it rejects the model, if it
  // does: an error too, reported after the import's own checks.
  std::string check_shapes(int nodes);
  // Compares one of a layer's output shapes with what ONNX's own shape inference found.
  void check_inferred(const Node& n, const TensorDesc& t) const;

  // Input i of the node as a tensor of the workload (a constant becomes a weight on first use);
  // its dtype must be one of `dtypes` (f32 when empty). A tensor with a zero extent is an error
  // unless `allow_empty` (the ops that handle empty tensors: Reshape).
  const TensorDesc& data(const Node& n, int i, std::vector<isa::DType> dtypes = {},
                         bool allow_empty = false);
  bool has_input(const Node& n, int i) const { return i < n.input_size() && !n.input(i).empty(); }
  // Input i of the node as a compile-time value: its integers (int64, int32).
  std::vector<int64_t> constant_ints(const Node& n, int i, const std::string& what) const;
  // Only output 0 (and the first `allowed` outputs) may be used.
  void check_outputs(const Node& n, int allowed) const;
  // The layer of node `n` producing output 0; `inputs` are tensor names. An output with a zero
  // extent is an error unless the layer is a reshape (a view, which emits nothing).
  Layer& add_layer(const Node& n, LayerKind kind, std::vector<std::string> inputs, isa::DType dtype,
                   isa::Shape shape, const std::string& name = "");
  void require_rank(const Node& n, const TensorDesc& t, size_t lo, size_t hi) const;

  void import_conv(const Node& n);
  void import_conv_transpose(const Node& n);
  void import_pool(const Node& n, LayerKind kind);
  void import_global_pool(const Node& n, LayerKind kind);
  void import_gemm(const Node& n);
  void import_matmul(const Node& n);
  void import_eltwise(const Node& n, const std::string& fn, int min_inputs, int max_inputs);
  void import_activation(const Node& n, LayerKind kind);
  void import_softmax(const Node& n, LayerKind kind);
  void import_batchnorm(const Node& n);
  void import_lrn(const Node& n);
  void import_flatten(const Node& n);
  void import_reshape(const Node& n);
  void import_transpose(const Node& n);
  void import_concat(const Node& n);
  // Over `input` (default: the node's input 0) into the layer `layer` (default: its output).
  void import_reduce(const Node& n, const std::string& fn, const std::string& input = "",
                     const std::string& layer = "", bool axes_as_input = true);
  void import_reduce_composite(const Node& n, const std::string& pre, const std::string& post);
  void import_topk(const Node& n);
  void import_layernorm(const Node& n);
  void import_constant(const Node& n);
  // onnx_shape_nodes.cpp: aliases and views.
  void import_identity(const Node& n);
  void import_dropout(const Node& n);
  void import_squeeze(const Node& n, bool unsqueeze);

  // onnx_math_nodes.cpp.
  void import_unary(const Node& n, const std::string& fn, double alpha = 0.01);
  void import_clip(const Node& n);
  void import_hard_sigmoid(const Node& n, bool swish);
  void import_selu(const Node& n);
  void import_prelu(const Node& n);
  void import_binary_fn(const Node& n, const std::string& fn);
  void import_mean(const Node& n);
  void import_expand(const Node& n);
  void import_slice(const Node& n);
  void import_gather(const Node& n);
  void import_pad(const Node& n);
  void import_arg(const Node& n, bool largest);
  void import_arg_last(const Node& n, const NodeAttrs& a, bool largest);
  // onnx_logic_nodes.cpp.
  void import_cast(const Node& n, bool like);
  void import_compare(const Node& n, const std::string& fn);
  void import_logic(const Node& n, const std::string& op);
  void import_where(const Node& n);
  void import_gather_index(const Node& n, bool elements);
  void import_trilu(const Node& n);
  void import_split(const Node& n);
  // onnx_loss_nodes.cpp: NegativeLogLikelihoodLoss, with softmax SoftmaxCrossEntropyLoss.
  void import_nll(const Node& n, bool softmax);
  // onnx_resize_nodes.cpp: Resize and Upsample as per-axis gathers and matmuls.
  void import_resize(const Node& n, bool upsample);
  // onnx_layout_nodes.cpp: compositions of gathers, views, compares and selects.
  // Along `axis` of `input` (shape `shape`) the elements `indices`, as the layer `name`.
  std::string gather_axis(const Node& n, const std::string& input, size_t axis,
                          const std::vector<int64_t>& indices, const std::string& name);
  void import_pad_gather(const Node& n, const TensorDesc& x, const std::vector<int64_t>& pads,
                         const std::string& mode);
  void import_tile(const Node& n);
  void import_depth_to_space(const Node& n, bool to_space);
  void import_hardmax(const Node& n);
  void import_shrink(const Node& n);
  void import_isinf(const Node& n);
  void import_instancenorm(const Node& n);
  void import_mvn(const Node& n);
  void import_eyelike(const Node& n);
  void import_onehot(const Node& n);
  void import_cumsum(const Node& n);
  // onnx_einsum_nodes.cpp: the contraction forms as transposes, views, reduce sums and matmuls.
  void import_einsum(const Node& n);
  // onnx_recurrent_nodes.cpp: RNN, GRU and LSTM, one cell per step and direction.
  void import_recurrent(const Node& n, Recurrent kind);
  // Along `axis` of the tensor `input`, `count` elements from `start` (a strided view named
  // `name`); with `drop`, that view is "<name>.slice" and `name` the view without the axis
  // (count 1).
  std::string slice_axis(const Node& n, const std::string& input, size_t axis, int64_t start,
                         int64_t count, const std::string& name, bool drop = false);
  // What the steps of a composition are named after: the node's first named output (output 0
  // but for the recurrent ops, whose outputs are all optional).
  std::string composite_base(const Node& n) const;
  std::optional<HostTensor> optional_constant(const Node& n, int i, const std::string& what) const;
  // A composition's pieces: a constant scalar "<output>.<suffix>" of `dtype`; a layer
  // "<output>.<suffix>" (the node's output itself when suffix is empty) of kind/fn over
  // `inputs` broadcast; the tensor `name`, input of the node or constant, as a workload tensor.
  std::string scalar_constant(const Node& n, const std::string& suffix, double value,
                              isa::DType dtype);
  // (A compare's dtype is u8, a select's its second input's, others the first input's, unless
  // `dtype` says.) constant_tensor: the constant "<output>.<suffix>" as a weight; its name.
  std::string step(const Node& n, const std::string& suffix, LayerKind kind, const std::string& fn,
                   std::vector<std::string> inputs, std::optional<isa::DType> dtype = {});
  std::string constant_tensor(const Node& n, const std::string& suffix, const HostTensor& value);
  const TensorDesc& data_by_name(const Node& n, const std::string& name);

  // Evaluates the node on the host when its inputs are constants (onnx_fold.h); whether it did.
  bool fold(const Node& n);
  // A legacy binary op (opset < 7) with broadcast = 1 and `axis`: input 1 viewed with the
  // trailing 1s that numpy broadcasting needs; the name of that view (input 1 unchanged otherwise).
  std::string legacy_broadcast(const Node& n, const NodeAttrs& a, const TensorDesc& x,
                               const TensorDesc& y);

  // The window parameters of Conv and the pools: kernel, strides, dilations and pads (explicit
  // or from auto_pad), and the output's spatial extents.
  struct Window {
    std::vector<int64_t> kernel, stride, dilation, padding;
    isa::Shape out;
  };
  Window window(const Node& n, const NodeAttrs& a, const isa::Shape& spatial,
                const std::vector<int64_t>& kernel, bool ceil_mode) const;
  // The ints attribute `name` with `count` values (default: `fallback` each), for an input of
  // `spatial_dims` spatial dims.
  std::vector<int64_t> spatial_ints(const Node& n, const NodeAttrs& a, const std::string& name,
                                    size_t count, int64_t fallback, size_t spatial_dims) const;
  // Conv and ConvTranspose: appends the optional bias (input 2, shape [filters]) to `inputs`.
  void add_bias(const Node& n, int64_t filters, std::vector<std::string>& inputs);

  const onnx::ModelProto& model_;
  std::string file_;
  const std::map<std::string, onnx::TensorProto>& input_values_;
  int64_t opset_ = 1;
  int node_index_ = 0;
  Workload w_;
  std::map<std::string, onnx::TensorProto> constants_;  // initializers, Constant outputs, given
  std::map<std::string, const onnx::ValueInfoProto*> graph_inputs_;  // without a value
  std::map<std::string, isa::Shape> inferred_;  // static shapes from ONNX shape inference
  // The shapes the model declares (graph inputs, outputs, value_info), and as what.
  std::map<std::string, std::pair<isa::Shape, const char*>> declared_;
  BatchTracker* tracker_;
  std::vector<int> layer_nodes_;
  std::string fold_refusal_;  // why the last node on constants did not fold  // per layer of w_,
                              // the index of its node (-1: none)
};

}  // namespace fracsim::compiler
