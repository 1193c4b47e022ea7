// Lowering of the CNN layers (NCHW) and of the layers that only re-view bytes.
//
// - conv2d: one conv2d instruction; the input [N, G*Ci, H, W] is seen as [N, G, Ci, H, W], the
//   weight [G*Co, Ci, Kh, Kw] as [G, Co, Ci, Kh, Kw] and the output likewise, by strides only;
//   the bias [F] is added by an eltwise over [N, F, Ho*Wo] with strides [0, 1, 0].
// - maxpool/avgpool: pool2d; global_avgpool: pool2d avg with the kernel the whole plane.
// - lrn: the lrn op, with the channel window centred as in ONNX.
// - batchnorm: the batchnorm extension op over [N, C, prod(rest)]; softmax and layernorm: their
//   extension ops over [prod(leading), last].
// - flatten/reshape: a new shape over the same bytes (a strided input is made contiguous by one
//   copy first); transpose: permuted shape and strides, no instruction.
// - concat: by layout where the slices are contiguous (every dim before the axis of extent 1,
//   as channels at batch 1): a layer output read by the concat is written straight into its
//   slice of the concat's buffer (the first concat that reads it); every other input (a workload
//   input, a view, a tensor already placed, slices that are not contiguous) is copied into its
//   slice by one eltwise max of the input with itself.
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "compiler/graph_lowering.h"
#include "isa/error.h"

namespace fracsim::compiler {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

}  // namespace

void GraphLowering::lower_conv2d(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t n = x.shape[0], c = x.shape[1], h = x.shape[2], w = x.shape[3];
  const int64_t g = l.groups, ci = c / g, f = l.filters, co = f / g;
  const int64_t kh = l.kernel[0], kw = l.kernel[1];
  const int64_t ho = l.output.shape[2], wo = l.output.shape[3];
  // Uniform in +-1/sqrt(fan-in), as for dense.
  const double range = 1.0 / std::sqrt(static_cast<double>(ci * kh * kw));
  int weight = add_weight(l, "weight", {f, ci, kh, kw}, -range, range);
  int bias = l.bias ? add_weight(l, "bias", {f}, -range, range) : -1;
  View y = output_of(l);
  View in{x.buffer, {n, g, ci, h, w}, {c * h * w, ci * h * w, h * w, w, 1}, x.offset};
  View wv{weight, {g, co, ci, kh, kw}, {co * ci * kh * kw, ci * kh * kw, kh * kw, kw, 1}, 0};
  View out{y.buffer, {n, g, co, ho, wo}, {f * ho * wo, co * ho * wo, ho * wo, wo, 1}, y.offset};
  emit("conv2d", {in, wv, out},
       {{"stride_h", str(l.stride[0])},
        {"stride_w", str(l.stride[1])},
        {"dilation_h", str(l.dilation[0])},
        {"dilation_w", str(l.dilation[1])},
        {"pad_h0", str(l.padding[0])},
        {"pad_w0", str(l.padding[1])},
        {"pad_h1", str(l.padding[2])},
        {"pad_w1", str(l.padding[3])}});
  if (bias < 0) return;
  View flat = reshaped(y, {n, f, ho * wo});
  emit("eltwise", {flat, View{bias, {n, f, ho * wo}, {0, 1, 0}, 0}, flat}, {{"fn", "add"}});
}

void GraphLowering::lower_pool(const Layer& l) {
  View x = dense(l.inputs[0]);
  View y = output_of(l);
  const bool max = l.kind == LayerKind::maxpool;
  emit("pool2d", {x, y},
       {{"fn", max ? "max" : "avg"},
        {"kernel_h", str(l.kernel[0])},
        {"kernel_w", str(l.kernel[1])},
        {"stride_h", str(l.stride[0])},
        {"stride_w", str(l.stride[1])},
        {"pad_h0", str(l.padding[0])},
        {"pad_w0", str(l.padding[1])},
        {"pad_h1", str(l.padding[2])},
        {"pad_w1", str(l.padding[3])},
        {"count_include_pad", l.count_include_pad ? "1" : "0"}});
}

// scale and var in [0.5, 1.5) (var positive), bias and mean in [-0.5, 0.5).
void GraphLowering::lower_batchnorm(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t n = x.shape[0], c = x.shape[1], s = isa::num_elements(x.shape) / (n * c);
  int scale = add_weight(l, "scale", {c}, 0.5, 1.5);
  int bias = add_weight(l, "bias", {c}, -0.5, 0.5);
  int mean = add_weight(l, "mean", {c}, -0.5, 0.5);
  int var = add_weight(l, "var", {c}, 0.5, 1.5);
  View y = output_of(l);
  emit("batchnorm",
       {reshaped(x, {n, c, s}), whole(scale), whole(bias), whole(mean), whole(var),
        reshaped(y, {n, c, s})},
       {{"epsilon", fmt::format("{}", l.epsilon)}});
}

// The window of `size` channels starts (size - 1) / 2 before c, as in ONNX.
void GraphLowering::lower_lrn(const Layer& l) {
  View x = dense(l.inputs[0]);
  View y = output_of(l);
  const int64_t before = (l.size - 1) / 2;
  emit("lrn", {x, y},
       {{"size", str(l.size)},
        {"alpha", fmt::format("{}", l.alpha)},
        {"beta", fmt::format("{}", l.beta)},
        {"bias", fmt::format("{}", l.lrn_bias)},
        {"pad_c0", str(before)},
        {"pad_c1", str(l.size - 1 - before)}});
}

void GraphLowering::lower_softmax(const Layer& l) {
  View x = dense(l.inputs[0]);
  View y = output_of(l);
  emit("softmax", {as_matrix(x), as_matrix(y)}, {});
}

// gamma in [0.5, 1.5), beta in [-0.5, 0.5).
void GraphLowering::lower_layernorm(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t last = x.shape.back();
  int gamma = add_weight(l, "gamma", {last}, 0.5, 1.5);
  int beta = add_weight(l, "beta", {last}, -0.5, 0.5);
  View y = output_of(l);
  emit("layernorm", {as_matrix(x), whole(gamma), whole(beta), as_matrix(y)},
       {{"epsilon", fmt::format("{}", l.epsilon)}});
}

void GraphLowering::lower_view(const Layer& l) {
  if (l.kind != LayerKind::transpose) {
    tensors_[l.name] = reshaped(dense(l.inputs[0]), l.output.shape);
    return;
  }
  View x = tensors_.at(l.inputs[0]);
  View t = x;
  for (size_t i = 0; i < l.perm.size(); ++i) {
    t.shape[i] = x.shape[l.perm[i]];
    t.strides[i] = x.strides[l.perm[i]];
  }
  tensors_[l.name] = t;
}

void GraphLowering::plan_concat_slices() {
  std::map<std::string, const Layer*> producer;
  for (const Layer& l : w_.layers) producer[l.name] = &l;
  for (const Layer& l : w_.layers) {
    if (l.kind != LayerKind::concat) continue;
    const isa::Shape& s = l.output.shape;
    bool contiguous_slices = true;
    for (int64_t i = 0; i < l.axis; ++i) contiguous_slices = contiguous_slices && s[i] == 1;
    const int64_t step = isa::contiguous_strides(s)[l.axis];
    int64_t at = 0;
    for (const std::string& name : l.inputs) {
      auto p = producer.find(name);
      // A concat's own output is placed by its buffer, so a nested concat input is copied.
      if (contiguous_slices && p != producer.end() && !is_view_layer(p->second->kind) &&
          p->second->kind != LayerKind::concat && !slices_.count(name))
        slices_[name] = {l.name, at * step};
      at += w_.tensor(name).shape[l.axis];
    }
  }
}

int GraphLowering::concat_buffer(const std::string& concat) {
  auto it = concat_buffers_.find(concat);
  if (it != concat_buffers_.end()) return it->second;
  int b = add_buffer(w_.tensor(concat), BufferRole::intermediate);
  concat_buffers_[concat] = b;
  return b;
}

void GraphLowering::lower_concat(const Layer& l) {
  View y = whole(concat_buffer(l.name));
  tensors_[l.name] = y;
  int64_t at = 0;
  for (const std::string& name : l.inputs) {
    View src = tensors_.at(name);
    View dst = y;
    dst.shape = src.shape;
    dst.offset = at * y.strides[l.axis];
    at += src.shape[l.axis];
    auto slice = slices_.find(name);
    const bool written = slice != slices_.end() && slice->second.first == l.name &&
                         slice->second.second == dst.offset;
    if (!written) copy(src, dst);
  }
}

}  // namespace fracsim::compiler
