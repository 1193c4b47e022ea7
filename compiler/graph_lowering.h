// The lowering pass itself (internal to compiler/): buffers in the root memory, strided views of
// them that name the graph's tensors, and one lower_* method per layer type. lowering.cpp holds
// the v1 layers, planning and emission; lower_cnn.cpp the CNN layers, views and concat.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/lowering.h"

namespace fracsim::compiler {

enum class BufferRole { input, weight, intermediate };

// A tensor's bytes in the root memory.
struct Buffer {
  TensorDesc desc;
  BufferRole role = BufferRole::intermediate;
  bool output = false;         // a workload output lives in it: it lives throughout
  double lo = 0, hi = 0;       // inputs and weights: the range of their random contents
  std::vector<uint8_t> bytes;  // inputs and weights with given contents (else random)
  // Inputs and weights: the index of their random segment's seed (segment_seed), in order of
  // creation; -1 for a constant only fusion makes, so that it shifts no other seed.
  int64_t seed_slot = -1;
  bool dropped = false;  // folded away: no segment, no symbol, no bytes of memory
};

// A strided view of a buffer: how an operand, or a tensor of the graph, sees it. `offset` is in
// elements from the buffer's start.
struct View {
  int buffer = 0;
  isa::Shape shape;
  isa::Shape strides;
  int64_t offset = 0;

  // Dense in row-major order; the stride of a dim of extent 1 does not matter.
  bool contiguous() const {
    const isa::Shape c = isa::contiguous_strides(shape);
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i] != 1 && strides[i] != c[i]) return false;
    return true;
  }
};

// A conv2d or matmul layer and the layers fused into its epilogue (lower_fused.cpp).
struct FusedChain {
  const Layer* head = nullptr;
  const Layer* batchnorm = nullptr;  // folded into the head's weight and bias
  const Layer* bias_add = nullptr;   // ONNX: an Add of a constant row after a matmul
  std::string bias_input;
  const Layer* residual = nullptr;  // an add of another tensor of the output's shape
  std::string residual_input;
  std::vector<const Layer*> views;  // between a matmul and its residual add: order-keeping views
  const Layer* act = nullptr;
  // A clip spelled as two layers (ONNX Clip: an eltwise max with a scalar constant `lo`, then
  // an eltwise min with `hi`): the epilogue's clip activation; `act` is then the min.
  const Layer* clip_lower = nullptr;
  double lo = 0, hi = 0;
  const Layer* tail = nullptr;  // the last layer: the chain's output is its tensor
};

using AttrValues = std::vector<std::pair<std::string, std::string>>;

// What a fused instruction does after the sum: the residual and the activation.
struct Epilogue {
  std::string act = "none";
  double alpha = 0.01;
  double lo = 0, hi = 0;  // clip's bounds
  const View* res = nullptr;
  // The op's attributes for the activation: act, alpha, and clip's bounds.
  AttrValues attrs() const;
};

struct PendingInstruction {
  const isa::OpDef* op = nullptr;
  std::vector<View> operands;
  std::vector<int64_t> attrs;
  std::string name;  // the layer or ONNX node it lowers
};

class GraphLowering {
 public:
  GraphLowering(const Workload& w, const isa::OpTable& ops) : w_(w), ops_(ops) {}
  Compilation run();

 private:
  int add_buffer(const TensorDesc& desc, BufferRole role, double lo = 0, double hi = 0);
  // A weight of layer `l`, "<layer>.<suffix>", with contents uniform in [lo, hi).
  int add_weight(const Layer& l, const std::string& suffix, isa::Shape shape, double lo, double hi);
  // Allocates the output buffer of `l` and names it as the tensor `l.name`.
  View output_of(const Layer& l);
  View whole(int b) const;
  // The tensor `name` as a contiguous view; a strided one (a transpose) is copied first, once.
  View dense(const std::string& name);
  // A contiguous view [d0, ..., dn-1] as [d0*...*dn-2, dn-1]; a rank-1 [N] as [1, N], a
  // scalar (rank 0) as [1, 1].
  static View as_matrix(View v);
  // A contiguous view as [prod(dims before l.axis), prod(the rest)] (as_matrix for the last).
  static View flat_rows(const View& v, const Layer& l);
  // The bytes of `v` from element `offset` on, under another shape; `v` must be contiguous.
  static View reshaped(View v, const isa::Shape& shape, int64_t offset = 0);
  // A copy of `src` into `dst` (eltwise max of src with itself: exact for every value).
  void copy(const View& src, const View& dst);
  // Appends an instruction named by the layer being lowered (layer_name_).
  void emit(const std::string& op_name, std::vector<View> operands, const AttrValues& values);

  void lower_layer(const Layer& l);
  // lower_fused.cpp: finds the chains, lowers one at its tail, folds batchnorm.
  void plan_fusion();
  void lower_fused(const FusedChain& c);
  void fold_batchnorm(const Layer& bn, int weight, int& bias, const std::vector<int>& stats,
                      const std::string& bias_name);
  // The contents of an f32 input or weight: its bytes, or its seeded random values; as floats,
  // as bytes, or written to `out` (its size in bytes).
  std::vector<float> values_of(int buffer) const;
  std::vector<uint8_t> bytes_of(int buffer) const;
  void contents_into(int buffer, uint8_t* out) const;
  // The conv2d of `l` (x [N, G*Ci, ...], its weight [F, Ci, k...] and bias [F]) into y; with an
  // epilogue the fused op, else the conv and an eltwise add of the bias (bias < 0: none).
  void emit_conv(const Layer& l, const View& x, const View& wsrc, int bias, const View* bias_view,
                 const View& y, const Epilogue* e);
  void lower_dense(const Layer& l);
  void lower_activation(const Layer& l, const std::string& fn);
  void lower_add(const Layer& l);
  void lower_matmul(const Layer& l);
  void lower_conv2d(const Layer& l);
  void lower_pool(const Layer& l);
  void lower_batchnorm(const Layer& l);
  void lower_softmax(const Layer& l);
  void lower_layernorm(const Layer& l);
  void lower_view(const Layer& l);
  void lower_concat(const Layer& l);
  void lower_lrn(const Layer& l);
  // The ONNX layers (lower_onnx.cpp).
  void lower_eltwise(const Layer& l, const std::string& fn);
  void lower_gemm(const Layer& l);
  void lower_batched_matmul(const Layer& l);
  void lower_reduce(const Layer& l);
  void lower_log_softmax(const Layer& l);
  void lower_topk(const Layer& l);
  void lower_zero_insert(const Layer& l);
  // lower_views.cpp: slice (a view), gather (copies), pad (a fill and a copy).
  void lower_slice(const Layer& l);
  void lower_gather(const Layer& l);
  void lower_pad(const Layer& l);
  // convert, compare and select: one instruction over the inputs broadcast to the output.
  void lower_elementwise(const Layer& l);
  // The gather op over the input seen [P0, P1, A, Q0, Q1] around the axis.
  void lower_gather_index(const Layer& l);
  void lower_layernorm_stats(const Layer& l, const View& x);

  // A weight with given contents: a constant the lowering needs (gemm's alpha, a zero bias).
  int add_constant(const std::string& name, isa::DType dtype, isa::Shape shape,
                   std::vector<uint8_t> bytes);
  int add_scalar(const std::string& name, float value);
  // `v` seen with the shape `shape` by numpy broadcasting (leading dims and dims of extent 1
  // get stride 0).
  static View broadcast_to(View v, const isa::Shape& shape);
  // Output dim i is dim perm[i] of `v`.
  static View permuted(const View& v, const std::vector<int64_t>& perm);
  // The permutation that undoes `perm`.
  static std::vector<int64_t> inverse(const std::vector<int64_t>& perm);
  // The dims of a contiguous view `v` split at `axis` as rows [M, N] (N: the extent of axis,
  // M: every other dim) when that is one strided matrix; `v` otherwise unchanged and false.
  static bool rows_of(const View& v, int64_t axis, View& rows);
  // Allocates the output buffer of `l` (or a more_outputs tensor) so that the dim `axis` is
  // last in memory; returns the rows [M, N] and names the tensor as the graph sees it.
  View output_rows(const Layer& l, const TensorDesc& t, int64_t axis);
  // The contiguous view `x` as rows along `axis`, copied into a layout with axis last when the
  // rows are not one strided matrix.
  View input_rows(const std::string& layer, const View& x, int64_t axis);
  // Concat by layout: chooses which producers write straight into their slice of a concat.
  void plan_concat_slices();
  // With fuse: a batched matmul whose output is read only by a transpose that a reshape alone
  // reads, and that the reshape would copy, writes its output in the transposed layout.
  void plan_permuted_outputs();
  // `v` under another shape with the same elements in row-major order, as a strided view of the
  // same bytes, when its strides allow that (numpy's reshape without a copy); false otherwise.
  static bool reshaped_view(const View& v, const isa::Shape& shape, View& out);
  int concat_buffer(const std::string& concat);

  std::vector<TensorLifetime> lifetimes() const;
  // The program; the buffers' given bytes move into its data segments (run() ends with it).
  isa::Program materialize(const MemoryPlan& plan);

  const Workload& w_;
  const isa::OpTable& ops_;
  std::vector<Buffer> buffers_;          // inputs, then per layer its weights and its output
  std::map<std::string, View> tensors_;  // every tensor of the graph, by name
  // A producer whose output is a slice of a concat's buffer: the concat and the offset in it.
  std::map<std::string, std::pair<std::string, int64_t>> slices_;
  std::map<std::string, int> concat_buffers_;  // concat layer -> its buffer, made on first use
  // A producer that writes its output transposed (plan_permuted_outputs): the transpose's perm.
  std::map<std::string, std::vector<int64_t>> permuted_outputs_;
  std::vector<PendingInstruction> pending_;
  int64_t next_seed_slot_ = 0;
  std::map<std::string, FusedChain> chains_;  // by the name of the chain's tail
  std::set<std::string> fused_away_;          // the other layers of chains
  // The name of the layer lower_layer is lowering: every instruction emit appends carries it.
  std::string layer_name_;
};

}  // namespace fracsim::compiler
