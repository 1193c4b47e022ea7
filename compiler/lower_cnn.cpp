// Lowering of the CNN layers (NCHW) and of the layers that only re-view bytes.
//
// - conv2d: one conv2d instruction (conv1d, conv3d for 1 or 3 spatial dims); the input
//   [N, G*Ci, H, W] is seen as [N, G, Ci, H, W], the weight [G*Co, Ci, Kh, Kw] as
//   [G, Co, Ci, Kh, Kw] and the output likewise, by strides only; the bias [F] is added by an
//   eltwise over [N, F, Ho*Wo] with strides [0, 1, 0].
// - maxpool/avgpool: pool1d/2d/3d; the global pools: the pool with the kernel the whole plane.
// - lrn: the lrn op, with the channel window centred as in ONNX.
// - batchnorm: the batchnorm extension op over [N, C, prod(rest)]; softmax and layernorm: their
//   extension ops over [prod(leading), last]; a softmax fusion divided (layer_fusion.h):
//   softmax_scaled, or with a mask softmax_scaled_masked over [B, M, N] and the mask [M, N].
// - flatten/reshape: a new shape over the same bytes (a strided input is made contiguous by one
//   copy first, unless fuse is on and its strides allow the shape); transpose: permuted shape
//   and strides, no instruction. With fuse, a batched matmul read only through a transpose and
//   a reshape that would copy writes its output in the transposed layout instead.
// - concat: by layout where the slices are contiguous (every dim before the axis of extent 1,
//   as channels at batch 1): a layer output read by the concat is written straight into its
//   slice of the concat's buffer (the first concat that reads it); every other input (a workload
//   input, a view, a tensor already placed, slices that are not contiguous) is copied into its
//   slice by one eltwise max of the input with itself.
#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "compiler/graph_lowering.h"
#include "isa/error.h"

namespace fracsim::compiler {

namespace {

std::string str(int64_t v) { return std::to_string(v); }

// The attribute names of the spatial dims of the window ops: w; h, w; d, h, w.
std::vector<std::string> spatial_names(size_t n) {
  static const std::vector<std::string> kAll = {"d", "h", "w"};
  return std::vector<std::string>(kAll.end() - static_cast<std::ptrdiff_t>(n), kAll.end());
}

// stride_*, dilation_* and pad_*0/1 of a window op with the layer's spatial parameters.
AttrValues window_attrs(const Layer& l, bool dilation = true) {
  const size_t n = l.kernel.size();
  const std::vector<std::string> names = spatial_names(n);
  AttrValues a;
  for (size_t i = 0; i < n; ++i) {
    a.emplace_back("stride_" + names[i], str(l.stride[i]));
    if (dilation) a.emplace_back("dilation_" + names[i], str(l.dilation[i]));
    a.emplace_back("pad_" + names[i] + "0", str(l.padding[i]));
    a.emplace_back("pad_" + names[i] + "1", str(l.padding[n + i]));
  }
  return a;
}

}  // namespace

// conv1d, conv2d or conv3d by the number of spatial dims; x is [N, G*Ci, spatial...].
void GraphLowering::lower_conv2d(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t kk = isa::num_elements(l.kernel);
  const int64_t ci = x.shape[1] / l.groups, f = l.filters;
  int weight = -1, bias = -1;
  View wsrc;
  if (l.inputs.size() > 1) {
    wsrc = dense(l.inputs[1]);
    if (l.inputs.size() > 2) bias = -2;
  } else {
    // Uniform in +-1/sqrt(fan-in), as for dense.
    const double range = 1.0 / std::sqrt(static_cast<double>(ci * kk));
    isa::Shape ws = {f, ci};
    ws.insert(ws.end(), l.kernel.begin(), l.kernel.end());
    weight = add_weight(l, "weight", ws, -range, range);
    wsrc = whole(weight);
    if (l.bias) bias = add_weight(l, "bias", {f}, -range, range);
  }
  View y = output_of(l);
  emit_conv(l, x, wsrc, bias, bias == -2 ? &tensors_.at(l.inputs[2]) : nullptr, y, nullptr);
}

void GraphLowering::emit_conv(const Layer& l, const View& x, const View& wsrc, int bias,
                              const View* bias_view, const View& y, const Epilogue* e) {
  const size_t nsp = l.kernel.size();
  const int64_t n = x.shape[0], c = x.shape[1];
  const isa::Shape in_sp(x.shape.begin() + 2, x.shape.end());
  const isa::Shape out_sp(l.output.shape.begin() + 2, l.output.shape.end());
  const int64_t s_out = isa::num_elements(out_sp);
  const int64_t g = l.groups, ci = c / g, f = l.filters, co = f / g;
  auto grouped = [](const View& v, int64_t groups, int64_t per, const isa::Shape& rest) {
    // [A, groups*per, rest...] as [A, groups, per, rest...], by strides.
    const int64_t r = isa::num_elements(rest);
    View g5{v.buffer, {v.shape[0], groups, per}, {groups * per * r, per * r, r}, v.offset};
    const isa::Shape rs = isa::contiguous_strides(rest);
    g5.shape.insert(g5.shape.end(), rest.begin(), rest.end());
    g5.strides.insert(g5.strides.end(), rs.begin(), rs.end());
    return g5;
  };
  View in = grouped(x, g, ci, in_sp);
  View out = grouped(y, g, co, out_sp);
  // With the compiler's rewrites on (fuse), a 1x1 conv of stride s > 1 without padding reads
  // its input through a view of every s-th pixel, as a conv of stride 1: the same products in
  // the same order, and its pieces load only the pixels it uses.
  Layer unit = l;
  bool strided_view = w_.fuse;
  for (size_t i = 0; i < nsp; ++i)
    strided_view = strided_view && l.kernel[i] == 1 && l.padding[i] == 0 && l.padding[nsp + i] == 0;
  if (strided_view &&
      std::any_of(l.stride.begin(), l.stride.end(), [](int64_t s) { return s > 1; })) {
    for (size_t i = 0; i < nsp; ++i) {
      in.shape[3 + i] = out_sp[i];
      in.strides[3 + i] *= l.stride[i];
      unit.stride[i] = 1;
    }
  }
  // The weight [G*Co, Ci, k...] as [G, Co, Ci, k...]: one more leading dim than [F, Ci, k...].
  isa::Shape wrest = {ci};
  wrest.insert(wrest.end(), l.kernel.begin(), l.kernel.end());
  View wv = grouped(View{wsrc.buffer, {1, f}, {0, 1}, wsrc.offset}, g, co, wrest);
  wv.shape.erase(wv.shape.begin());
  wv.strides.erase(wv.strides.begin());
  if (e) {
    // The fused op: the bias [F] seen as [G, Co], the residual grouped as the output.
    const View b = bias_view ? *bias_view : whole(bias);
    std::vector<View> operands = {
        in, wv, View{b.buffer, {g, co}, {co * b.strides[0], b.strides[0]}, b.offset}};
    if (e->res) operands.push_back(grouped(*e->res, g, co, out_sp));
    operands.push_back(out);
    AttrValues a = window_attrs(unit);
    for (auto& v : e->attrs()) a.push_back(std::move(v));
    emit(e->res ? "conv2d_bias_add_act" : "conv2d_bias_act", operands, a);
    return;
  }
  emit(fmt::format("conv{}d", nsp), {in, wv, out}, window_attrs(unit));
  if (bias == -1) return;
  View b = bias_view ? *bias_view : whole(bias);
  View flat = reshaped(y, {n, f, s_out});
  emit("eltwise", {flat, View{b.buffer, {n, f, s_out}, {0, b.strides[0], 0}, b.offset}, flat},
       {{"fn", "add"}});
}

// pool1d, pool2d or pool3d by the number of spatial dims; the global pools' kernel is the
// whole input plane.
void GraphLowering::lower_pool(const Layer& l) {
  View x = dense(l.inputs[0]);
  View y = output_of(l);
  const bool max = l.kind == LayerKind::maxpool || l.kind == LayerKind::global_maxpool;
  const size_t nsp = l.kernel.size();
  const std::vector<std::string> names = spatial_names(nsp);
  AttrValues a = {{"fn", max ? "max" : "avg"}};
  for (size_t i = 0; i < nsp; ++i) a.emplace_back("kernel_" + names[i], str(l.kernel[i]));
  // Dilation is left at its default for the layers that have none (the YAML pools).
  const bool dilated = l.dilation.size() == nsp && std::any_of(l.dilation.begin(), l.dilation.end(),
                                                               [](int64_t d) { return d != 1; });
  for (auto& kv : window_attrs(l, dilated)) a.push_back(kv);
  a.emplace_back("count_include_pad", l.count_include_pad ? "1" : "0");
  emit(fmt::format("pool{}d", nsp), {x, y}, a);
  if (l.more_outputs.empty()) return;
  // MaxPool's indices (2-D): pool2d_argmax over the same windows, with the element strides of
  // the flattened input, row major or (storage_order 1) column major in each plane.
  const TensorDesc& t = l.more_outputs[0];
  View idx = whole(add_buffer(t, BufferRole::intermediate));
  tensors_[t.name] = idx;
  const int64_t c = x.shape[1], h = x.shape[2], w = x.shape[3];
  AttrValues ia;
  for (auto& kv : window_attrs(l, dilated)) ia.push_back(kv);
  ia.emplace_back("index_stride_n", str(c * h * w));
  ia.emplace_back("index_stride_c", str(h * w));
  ia.emplace_back("index_stride_h", str(l.storage_order == 0 ? w : 1));
  ia.emplace_back("index_stride_w", str(l.storage_order == 0 ? 1 : h));
  for (size_t i = 0; i < nsp; ++i) ia.emplace_back("kernel_" + names[i], str(l.kernel[i]));
  emit("pool2d_argmax", {x, idx}, ia);
}

// scale and var in [0.5, 1.5) (var positive), bias and mean in [-0.5, 0.5).
// Training (ONNX training_mode = 1): the batch's mean and population variance over every dim but
// the channel, by reduce mean over [C | N, S] (the variance as the mean of the squared
// deviations: two passes), normalise x with them through the same batchnorm op, and, when the
// graph uses them, running = given * momentum + batch * (1 - momentum) (momentum and
// 1 - momentum rounded to f32 once).
void GraphLowering::lower_batchnorm(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t n = x.shape[0], c = x.shape[1], s = isa::num_elements(x.shape) / (n * c);
  std::vector<View> stats;
  if (l.inputs.size() == 5) {
    for (size_t i = 1; i < 5; ++i) stats.push_back(tensors_.at(l.inputs[i]));
  } else {
    stats = {
        whole(add_weight(l, "scale", {c}, 0.5, 1.5)), whole(add_weight(l, "bias", {c}, -0.5, 0.5)),
        whole(add_weight(l, "mean", {c}, -0.5, 0.5)), whole(add_weight(l, "var", {c}, 0.5, 1.5))};
  }
  View y = output_of(l);
  View mean = stats[2], var = stats[3];
  if (l.training) {
    auto temp = [&](const std::string& suffix, isa::Shape shape) {
      return whole(add_buffer({l.name + "." + suffix, isa::DType::f32, std::move(shape)},
                              BufferRole::intermediate));
    };
    // [N, C, S] seen as reduce's [C, 1, 1 | N, S, 1], and [C] spread over [N, C, S].
    auto channel_mean = [&](const View& v, const View& out) {
      emit("reduce",
           {View{v.buffer, {c, 1, 1, n, s, 1}, {s, 0, 0, c * s, 1, 0}, v.offset},
            View{out.buffer, {c, 1, 1}, {1, 0, 0}, out.offset}},
           {{"fn", "mean"}, {"divisor", str(n * s)}});
    };
    auto spread = [&](const View& v) { return View{v.buffer, {n, c, s}, {0, 1, 0}, v.offset}; };
    const View batch_mean = temp("batch_mean", {c}), batch_var = temp("batch_var", {c});
    const View centered = temp("centered", {n, c, s});
    channel_mean(x, batch_mean);
    emit("eltwise", {reshaped(x, {n, c, s}), spread(batch_mean), centered}, {{"fn", "sub"}});
    emit("eltwise", {centered, centered, centered}, {{"fn", "mul"}});
    channel_mean(centered, batch_var);
    const View given_mean = mean, given_var = var;
    mean = batch_mean;
    var = batch_var;
    View keep{add_scalar(l.name + ".momentum", static_cast<float>(l.momentum)), {c}, {0}, 0};
    View take{add_scalar(l.name + ".one_minus_momentum", static_cast<float>(1.0 - l.momentum)),
              {c},
              {0},
              0};
    const std::pair<View, View> running[] = {{given_mean, batch_mean}, {given_var, batch_var}};
    for (size_t i = 0; i < 2; ++i) {
      const TensorDesc& t = l.more_outputs.at(i);
      if (t.name.empty()) continue;
      View r = whole(add_buffer(t, BufferRole::intermediate));
      tensors_[t.name] = r;
      View part = temp(i == 0 ? "batch_mean_part" : "batch_var_part", {c});
      emit("eltwise", {running[i].first, keep, r}, {{"fn", "mul"}});
      emit("eltwise", {running[i].second, take, part}, {{"fn", "mul"}});
      emit("eltwise", {r, part, r}, {{"fn", "add"}});
    }
  }
  emit("batchnorm", {reshaped(x, {n, c, s}), stats[0], stats[1], mean, var, reshaped(y, {n, c, s})},
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

// Softmax along the last axis of [prod(leading), last]; along another axis over rows that are
// strided views (or a copy with that axis last, see input_rows).
void GraphLowering::lower_softmax(const Layer& l) {
  View x = dense(l.inputs[0]);
  if (l.divided) {
    // Fused (layer_fusion.h): rows along the last axis, x [B, M, N] against a mask [M, N].
    const AttrValues scale = {{"scale", fmt::format("{}", static_cast<double>(l.divisor))}};
    const View y = output_of(l);
    if (l.inputs.size() == 1) return emit("softmax_scaled", {as_matrix(x), as_matrix(y)}, scale);
    const View mask = dense(l.inputs[1]);
    const int64_t n = x.shape.back(), mn = isa::num_elements(mask.shape), m = mn / n,
                  b = isa::num_elements(x.shape) / mn;
    return emit("softmax_scaled_masked",
                {reshaped(x, {b, m, n}), reshaped(mask, {m, n}), reshaped(y, {b, m, n})}, scale);
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
  if (l.flat_axis || axis == rank - 1) {
    View y = output_of(l);
    emit("softmax", {flat_rows(x, l), flat_rows(y, l)}, {});
    return;
  }
  View rows = input_rows(l.name, x, axis);
  emit("softmax", {rows, output_rows(l, l.output, axis)}, {});
}

// Normalises over the dims from `axis` on: rows [prod(dims before axis), prod(the rest)].
// Implicit gamma in [0.5, 1.5), beta in [-0.5, 0.5); an explicit gamma without beta gets a zero
// beta.
void GraphLowering::lower_layernorm(const Layer& l) {
  View x = dense(l.inputs[0]);
  View rows = flat_rows(x, l);
  const int64_t n = rows.shape[1];
  View gamma, beta;
  if (l.inputs.size() > 1) {
    gamma = reshaped(dense(l.inputs[1]), {n});
    beta = l.inputs.size() > 2
               ? reshaped(dense(l.inputs[2]), {n})
               : whole(add_constant(l.name + ".beta", isa::DType::f32, {n},
                                    std::vector<uint8_t>(static_cast<size_t>(n) * 4, 0)));
  } else {
    gamma = whole(add_weight(l, "gamma", {n}, 0.5, 1.5));
    beta = whole(add_weight(l, "beta", {n}, -0.5, 0.5));
  }
  View y = output_of(l);
  AttrValues attrs = {{"epsilon", fmt::format("{}", l.epsilon)}};
  if (l.sqrt_divide) attrs.emplace_back("divide", "1");
  emit("layernorm", {rows, gamma, beta, flat_rows(y, l)}, attrs);
  if (!l.more_outputs.empty()) lower_layernorm_stats(l, rows);
}

// [prod(dims before axis), prod(the rest)] of a contiguous view; the last axis gives
// as_matrix's view.
View GraphLowering::flat_rows(const View& v, const Layer& l) {
  const int64_t rank = static_cast<int64_t>(v.shape.size());
  const int64_t axis = l.axis < 0 ? l.axis + rank : l.axis;
  if (axis == rank - 1) return as_matrix(v);
  int64_t m = 1;
  for (int64_t i = 0; i < axis; ++i) m *= v.shape[i];
  return reshaped(v, {m, isa::num_elements(v.shape) / m});
}

bool GraphLowering::reshaped_view(const View& v, const isa::Shape& shape, View& out) {
  if (isa::num_elements(v.shape) != isa::num_elements(shape) || isa::num_elements(shape) == 0)
    return false;
  // The dims of extent > 1; runs of them that multiply to one run of the new dims must be one
  // strided block, whose stride the new dims then split.
  isa::Shape od, os;
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] != 1) {
      od.push_back(v.shape[i]);
      os.push_back(v.strides[i]);
    }
  out = View{v.buffer, shape, isa::Shape(shape.size(), 0), v.offset};
  size_t oi = 0, ni = 0;
  while (oi < od.size() && ni < shape.size()) {
    size_t oj = oi + 1, nj = ni + 1;
    int64_t op = od[oi], np = shape[ni];
    while (np != op) {
      if (np < op)
        np *= shape[nj++];
      else
        op *= od[oj++];
    }
    for (size_t k = oi; k + 1 < oj; ++k)
      if (os[k] != od[k + 1] * os[k + 1]) return false;
    out.strides[nj - 1] = os[oj - 1];
    for (size_t k = nj - 1; k > ni; --k) out.strides[k - 1] = out.strides[k] * shape[k];
    oi = oj;
    ni = nj;
  }
  return true;
}

void GraphLowering::lower_view(const Layer& l) {
  if (l.kind != LayerKind::transpose) {
    // With fuse, a strided input whose strides allow the new shape is re-viewed, not copied
    // (a workload output still gets its own dense bytes).
    View v;
    if (!w_.fuse || w_.is_output(l.name) || tensors_.at(l.inputs[0]).contiguous() ||
        !reshaped_view(tensors_.at(l.inputs[0]), l.output.shape, v))
      v = reshaped(dense(l.inputs[0]), l.output.shape);
    tensors_[l.name] = v;
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

void GraphLowering::plan_permuted_outputs() {
  if (!w_.fuse) return;
  std::map<std::string, std::vector<const Layer*>> readers;
  for (const Layer& l : w_.layers)
    for (const std::string& in : l.inputs) readers[in].push_back(&l);
  auto sole_reader = [&](const std::string& name) -> const Layer* {
    auto r = readers.find(name);
    return r == readers.end() || r->second.size() != 1 || w_.is_output(name) ? nullptr
                                                                             : r->second[0];
  };
  for (const Layer& p : w_.layers) {
    // lower_batched_matmul's products: both operands of rank 2 or more, not both of rank 2.
    if (p.kind != LayerKind::matmul || chains_.count(p.name) || fused_away_.count(p.name) ||
        slices_.count(p.name) || !p.more_outputs.empty())
      continue;
    const size_t ra = w_.tensor(p.inputs[0]).shape.size(), rb = w_.tensor(p.inputs[1]).shape.size();
    if (ra < 2 || rb < 2 || (ra == 2 && rb == 2)) continue;
    const Layer* t = sole_reader(p.name);
    if (!t || t->kind != LayerKind::transpose) continue;
    const Layer* r = sole_reader(t->name);
    if (!r || (r->kind != LayerKind::reshape && r->kind != LayerKind::flatten)) continue;
    // Only where the reshape would copy the transposed view.
    const isa::Shape& s = p.output.shape;
    View seen = permuted(View{0, s, isa::contiguous_strides(s), 0}, t->perm), unused;
    if (seen.contiguous() || reshaped_view(seen, r->output.shape, unused)) continue;
    permuted_outputs_[p.name] = t->perm;
  }
}

void GraphLowering::plan_concat_slices() {
  for (const Layer& l : w_.layers) {
    if (l.kind != LayerKind::concat) continue;
    const isa::Shape& s = l.output.shape;
    bool contiguous_slices = true;
    for (int64_t i = 0; i < l.axis; ++i) contiguous_slices = contiguous_slices && s[i] == 1;
    const int64_t step = isa::contiguous_strides(s)[l.axis];
    int64_t at = 0;
    for (const std::string& name : l.inputs) {
      const Layer* p = w_.find_layer(name);
      // A concat's own output is placed by its buffer, so a nested concat input is copied.
      if (contiguous_slices && p && !is_view_layer(p->kind) && p->kind != LayerKind::concat &&
          !slices_.count(name))
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
