// Lowering of the layers the ONNX front end adds: n-ary eltwise with numpy broadcasting, gemm,
// batched matmul, reductions over any axes, log-softmax, topk, and the statistics outputs of
// layer normalisation.
//
// - eltwise: out = in0 fn in1, then out = out fn ink for every further input, each input seen
//   broadcast to the output's shape (stride 0); a single input is copied.
// - gemm: matmul over a and b (transposes are strided views), then out *= alpha (a scalar
//   weight seen with stride 0) and out += beta * c (c broadcast).
// - matmul of rank > 2 or with a rank-1 operand: one matmul instruction per index of the batch
//   dims before the last one; broadcast batch dims have stride 0, but for the last ones that
//   b is broadcast along, folded into M where a and the output allow.
// - reduce: one reduce instruction: the kept dims first, the reduced ones last, adjacent dims
//   merged where their strides allow; at most 3 of each remain.
// - log_softmax: x - max - log(sum(exp(x - max))) along the axis, by primitives (reduce max,
//   eltwise sub, exp, reduce sum, log, eltwise sub).
// - topk: the topk extension op over rows [M, N] with N the axis (a full sort whose indices are
//   not read: the sort op), the element indices an i32
//   weight [N] seen [M, N] with stride 0 along M; indices are i32.
// - zero_insert: a fill of the output with 0, then a copy of the input into the strided view
//   [N, C, spatial...] of it with strides `stride` times the output's, from the offsets
//   `padding`.
// - a layer that works on rows along an axis whose rows are no strided matrix (a middle axis
//   of rank 3 or more) copies its input into a layout with the axis last, and its output is a
//   strided view of a buffer in that layout (as a transpose's).
#include <algorithm>
#include <cstring>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/graph_lowering.h"
#include "isa/error.h"

namespace fracsim::compiler {

using isa::Shape;

namespace {

// (extent, stride) pairs of the dims of a view, merged where adjacent dims form one stride.
struct Dim {
  int64_t extent;
  int64_t stride;
  int64_t out_stride = 0;
};

// Drops dims of extent 1 and merges dim i with i + 1 when stride_i == extent_i+1 * stride_i+1
// (for out_stride too).
std::vector<Dim> merged(const std::vector<Dim>& dims) {
  std::vector<Dim> out;
  for (const Dim& d : dims) {
    if (d.extent == 1) continue;
    if (!out.empty() && out.back().stride == d.extent * d.stride &&
        out.back().out_stride == d.extent * d.out_stride) {
      out.back().extent *= d.extent;
      out.back().stride = d.stride;
      out.back().out_stride = d.out_stride;
      continue;
    }
    out.push_back(d);
  }
  return out;
}

// The dims other than `axis`, in order, then `axis`.
std::vector<int64_t> axis_last(size_t rank, int64_t axis) {
  std::vector<int64_t> perm;
  for (size_t i = 0; i < rank; ++i)
    if (static_cast<int64_t>(i) != axis) perm.push_back(static_cast<int64_t>(i));
  perm.push_back(axis);
  return perm;
}

int64_t norm_axis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

}  // namespace

int GraphLowering::add_constant(const std::string& name, isa::DType dtype, Shape shape,
                                std::vector<uint8_t> bytes) {
  int b = add_buffer({name, dtype, std::move(shape)}, BufferRole::weight);
  buffers_[b].bytes = std::move(bytes);
  return b;
}

int GraphLowering::add_scalar(const std::string& name, float value) {
  std::vector<uint8_t> bytes(4);
  std::memcpy(bytes.data(), &value, 4);
  return add_constant(name, isa::DType::f32, {1}, std::move(bytes));
}

std::vector<int64_t> GraphLowering::inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

View GraphLowering::broadcast_to(View v, const Shape& shape) {
  FRACSIM_ASSERT(v.shape.size() <= shape.size(), "broadcast of {} to {}", isa::shape_str(v.shape),
                 isa::shape_str(shape));
  View out{v.buffer, shape, Shape(shape.size(), 0), v.offset};
  const size_t lead = shape.size() - v.shape.size();
  for (size_t i = 0; i < v.shape.size(); ++i) {
    FRACSIM_ASSERT(v.shape[i] == shape[lead + i] || v.shape[i] == 1, "broadcast of {} to {}",
                   isa::shape_str(v.shape), isa::shape_str(shape));
    if (v.shape[i] == shape[lead + i]) out.strides[lead + i] = v.strides[i];
  }
  return out;
}

View GraphLowering::permuted(const View& v, const std::vector<int64_t>& perm) {
  View t = v;
  for (size_t i = 0; i < perm.size(); ++i) {
    t.shape[i] = v.shape[perm[i]];
    t.strides[i] = v.strides[perm[i]];
  }
  return t;
}

bool GraphLowering::rows_of(const View& v, int64_t axis, View& rows) {
  std::vector<Dim> others;
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (static_cast<int64_t>(i) != axis) others.push_back({v.shape[i], v.strides[i]});
  std::vector<Dim> m = merged(others);
  if (m.size() > 1) return false;
  const Dim row = m.empty() ? Dim{1, 0} : m[0];
  rows = View{v.buffer, {row.extent, v.shape[axis]}, {row.stride, v.strides[axis]}, v.offset};
  return true;
}

View GraphLowering::input_rows(const std::string& layer, const View& x, int64_t axis) {
  View rows;
  if (rows_of(x, axis, rows)) return rows;
  const std::vector<int64_t> perm = axis_last(x.shape.size(), axis);
  const Shape laid = permuted(x, perm).shape;
  int t =
      add_buffer({layer + ".rows", buffers_[x.buffer].desc.dtype, laid}, BufferRole::intermediate);
  copy(x, permuted(whole(t), inverse(perm)));
  const int64_t n = x.shape[axis];
  return reshaped(whole(t), {isa::num_elements(laid) / n, n});
}

View GraphLowering::output_rows(const Layer& l, const TensorDesc& t, int64_t axis) {
  const bool main = &t == &l.output;
  const View natural{-1, t.shape, isa::contiguous_strides(t.shape), 0};
  View rows;
  if (rows_of(natural, axis, rows)) {
    View y = main ? output_of(l) : whole(add_buffer(t, BufferRole::intermediate));
    tensors_[t.name] = y;
    rows_of(y, axis, rows);
    return rows;
  }
  // The output is laid out with the axis last: a concat cannot take it in place.
  if (main) slices_.erase(l.name);
  const std::vector<int64_t> perm = axis_last(t.shape.size(), axis);
  View laid =
      whole(add_buffer({t.name, t.dtype, permuted(natural, perm).shape}, BufferRole::intermediate));
  tensors_[t.name] = permuted(laid, inverse(perm));
  const int64_t n = t.shape[axis];
  return reshaped(laid, {isa::num_elements(t.shape) / n, n});
}

void GraphLowering::lower_eltwise(const Layer& l, const std::string& fn) {
  View y = output_of(l);
  std::vector<View> xs;
  for (const std::string& name : l.inputs) xs.push_back(broadcast_to(tensors_.at(name), y.shape));
  if (xs.size() == 1) return copy(xs[0], y);
  emit("eltwise", {xs[0], xs[1], y}, {{"fn", fn}});
  for (size_t k = 2; k < xs.size(); ++k) emit("eltwise", {y, xs[k], y}, {{"fn", fn}});
}

void GraphLowering::lower_gemm(const Layer& l) {
  View a = tensors_.at(l.inputs[0]);
  View b = tensors_.at(l.inputs[1]);
  if (l.trans_a) a = permuted(a, {1, 0});
  if (l.trans_b) b = permuted(b, {1, 0});
  View y = output_of(l);
  const Shape& s = y.shape;
  emit("matmul", {a, b, y}, {{"accumulate", "0"}});
  if (l.alpha != 1.0) {
    View alpha{add_scalar(l.name + ".alpha", static_cast<float>(l.alpha)), s, {0, 0}, 0};
    emit("eltwise", {y, alpha, y}, {{"fn", "mul"}});
  }
  if (l.inputs.size() < 3 || l.gemm_beta == 0.0) return;
  View c = broadcast_to(tensors_.at(l.inputs[2]), s);
  if (l.gemm_beta != 1.0) {
    View beta{add_scalar(l.name + ".beta", static_cast<float>(l.gemm_beta)), s, {0, 0}, 0};
    View scaled = whole(add_buffer({l.name + ".c", isa::DType::f32, s}, BufferRole::intermediate));
    emit("eltwise", {c, beta, scaled}, {{"fn", "mul"}});
    c = scaled;
  }
  emit("eltwise", {y, c, y}, {{"fn", "add"}});
}

void GraphLowering::lower_batched_matmul(const Layer& l) {
  View a = tensors_.at(l.inputs[0]);
  View b = tensors_.at(l.inputs[1]);
  // A rank-1 a [K] is a row [1, K]; a rank-1 b [K] a column [K, 1].
  if (a.shape.size() == 1) a = View{a.buffer, {1, a.shape[0]}, {0, a.strides[0]}, a.offset};
  if (b.shape.size() == 1) b = View{b.buffer, {b.shape[0], 1}, {b.strides[0], 0}, b.offset};
  const int64_t m = a.shape[a.shape.size() - 2], k = a.shape.back(), n = b.shape.back();
  const Shape ba(a.shape.begin(), a.shape.end() - 2), bb(b.shape.begin(), b.shape.end() - 2);
  Shape batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const size_t ia = i + ba.size(), ib = i + bb.size();
    const int64_t ea = ia >= batch.size() ? ba[ia - batch.size()] : 1;
    const int64_t eb = ib >= batch.size() ? bb[ib - batch.size()] : 1;
    batch[i] = std::max(ea, eb);
  }
  View y = output_of(l);
  auto with = [&](int64_t r, int64_t c) {
    Shape s = batch;
    s.push_back(r);
    s.push_back(c);
    return s;
  };
  View av = broadcast_to(a, with(m, k)), bv = broadcast_to(b, with(k, n));
  // A permuted output (plan_permuted_outputs) already has this shape.
  View yv = y.shape == with(m, n) ? y : reshaped(y, with(m, n));
  // A last batch dim along which b is broadcast (stride 0), and along which a and the output
  // step over whole blocks of M rows, is more rows of one product: fold it into M, so that
  // the leaves see batch x M rows instead of a product of M rows per batch index (a
  // sequence-first attention's input projection, [L, 1, E] x [E, 3E], is L products of one
  // row otherwise). Each output element sums the same terms in the same order.
  while (!batch.empty()) {
    const size_t d = batch.size() - 1, rows = d + 1;
    auto folds = [&](const View& v) {
      return v.shape[rows] == 1 || v.strides[d] == v.shape[rows] * v.strides[rows];
    };
    if (bv.strides[d] != 0 || !folds(av) || !folds(yv)) break;
    for (View* v : {&av, &yv}) {
      if (v->shape[rows] == 1) v->strides[rows] = v->strides[d];
      v->shape[rows] *= v->shape[d];
    }
    for (View* v : {&av, &bv, &yv}) {
      v->shape.erase(v->shape.begin() + static_cast<std::ptrdiff_t>(d));
      v->strides.erase(v->strides.begin() + static_cast<std::ptrdiff_t>(d));
    }
    batch.pop_back();
  }
  if (batch.size() <= 1) {
    emit("matmul", {av, bv, yv}, {{"accumulate", "0"}});
    return;
  }
  // One instruction per index of the batch dims before the last.
  const size_t outer = batch.size() - 1;
  const Shape outer_shape(batch.begin(), batch.begin() + static_cast<std::ptrdiff_t>(outer));
  const int64_t count = isa::num_elements(outer_shape);
  for (int64_t flat = 0; flat < count; ++flat) {
    View pa = av, pb = bv, py = yv;
    int64_t rest = flat;
    for (size_t d = outer; d-- > 0;) {
      const int64_t i = rest % outer_shape[d];
      rest /= outer_shape[d];
      pa.offset += i * av.strides[d];
      pb.offset += i * bv.strides[d];
      py.offset += i * yv.strides[d];
    }
    for (View* v : {&pa, &pb, &py}) {
      v->shape.erase(v->shape.begin(), v->shape.begin() + static_cast<std::ptrdiff_t>(outer));
      v->strides.erase(v->strides.begin(), v->strides.begin() + static_cast<std::ptrdiff_t>(outer));
    }
    emit("matmul", {pa, pb, py}, {{"accumulate", "0"}});
  }
}

void GraphLowering::lower_reduce(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  View y = output_of(l);
  std::vector<Dim> kept, reduced;
  Shape kept_shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    if (std::find(l.axes.begin(), l.axes.end(), static_cast<int64_t>(i)) != l.axes.end())
      reduced.push_back({x.shape[i], x.strides[i]});
    else
      kept.push_back({x.shape[i], x.strides[i]});
  }
  // The output holds the kept dims contiguously, whether or not the reduced ones stay as 1s.
  int64_t step = 1;
  for (size_t i = kept.size(); i-- > 0;) {
    kept[i].out_stride = step;
    step *= kept[i].extent;
  }
  int64_t divisor = 1;
  for (const Dim& d : reduced) divisor *= d.extent;
  kept = merged(kept);
  reduced = merged(reduced);
  if (kept.size() > 3 || reduced.size() > 3)
    throw ConfigError(fmt::format(
        "{}: layer '{}' (reduce over axes {} of {}): the reduce op takes at most 3 kept and 3 "
        "reduced dims after merging adjacent ones, this needs {} and {}",
        w_.file, l.name, l.axes, isa::shape_str(x.shape), kept.size(), reduced.size()));
  kept.resize(3, Dim{1, 0, 0});
  reduced.resize(3, Dim{1, 0, 0});
  View in{x.buffer, {}, {}, x.offset};
  View out{y.buffer, {}, {}, y.offset};
  for (const Dim& d : kept) {
    in.shape.push_back(d.extent);
    in.strides.push_back(d.stride);
    out.shape.push_back(d.extent);
    out.strides.push_back(d.out_stride);
  }
  for (const Dim& d : reduced) {
    in.shape.push_back(d.extent);
    in.strides.push_back(d.stride);
  }
  AttrValues a = {{"fn", l.fn}};
  if (l.fn == "mean") a.emplace_back("divisor", std::to_string(divisor));
  emit("reduce", {in, out}, a);
}

void GraphLowering::lower_log_softmax(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t axis = norm_axis(l.axis, x.shape.size());
  View rows, yrows;
  if (l.flat_axis || axis == static_cast<int64_t>(x.shape.size()) - 1) {
    rows = flat_rows(x, l);
    yrows = flat_rows(output_of(l), l);
  } else {
    rows = input_rows(l.name, x, axis);
    yrows = output_rows(l, l.output, axis);
  }
  const int64_t m = rows.shape[0], n = rows.shape[1];
  auto temp = [&](const std::string& suffix, Shape s) {
    return whole(add_buffer({l.name + "." + suffix, isa::DType::f32, std::move(s)},
                            BufferRole::intermediate));
  };
  // A row-reduction of rows [M, N] into [M], and [M] seen as [M, N].
  auto reduce_rows = [&](const View& r, const View& out, const std::string& fn) {
    emit("reduce",
         {View{r.buffer, {m, 1, 1, n, 1, 1}, {r.strides[0], 0, 0, r.strides[1], 0, 0}, r.offset},
          View{out.buffer, {m, 1, 1}, {1, 0, 0}, out.offset}},
         {{"fn", fn}});
  };
  auto spread = [&](const View& v) { return View{v.buffer, {m, n}, {1, 0}, v.offset}; };
  View mx = temp("max", {m}), e = temp("exp", {m, n}), s = temp("sum", {m});
  reduce_rows(rows, mx, "max");
  emit("eltwise", {rows, spread(mx), yrows}, {{"fn", "sub"}});
  emit("activation", {yrows, e}, {{"fn", "exp"}});
  reduce_rows(e, s, "sum");
  emit("activation", {s, s}, {{"fn", "log"}});
  emit("eltwise", {yrows, spread(s), yrows}, {{"fn", "sub"}});
}

void GraphLowering::lower_topk(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  const int64_t axis = norm_axis(l.axis, x.shape.size());
  View rows = input_rows(l.name, x, axis);
  const int64_t m = rows.shape[0], n = rows.shape[1];
  if (l.more_outputs.empty()) {  // a full sort, values only (onnx_nodes.cpp)
    emit("sort", {rows, output_rows(l, l.output, axis)}, {{"descending", l.largest ? "1" : "0"}});
    return;
  }
  std::vector<uint8_t> iota(static_cast<size_t>(n) * 4);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t v = static_cast<int32_t>(i);
    std::memcpy(iota.data() + 4 * i, &v, 4);
  }
  View idx{
      add_constant(l.name + ".index", isa::DType::i32, {n}, std::move(iota)), {m, n}, {0, 1}, 0};
  View values = output_rows(l, l.output, axis);
  View indices = output_rows(l, l.more_outputs.at(0), axis);
  emit("topk", {rows, idx, values, indices}, {{"largest", l.largest ? "1" : "0"}});
}

void GraphLowering::lower_zero_insert(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  View y = output_of(l);
  emit("fill", {y}, {{"value", "0"}});
  View spread = y;
  spread.shape = x.shape;
  for (size_t i = 0; i < l.stride.size(); ++i) {
    spread.offset += l.padding[i] * y.strides[2 + i];
    spread.strides[2 + i] *= l.stride[i];
  }
  copy(x, spread);
}

// Mean and 1 / sqrt(var + epsilon) of each row, as the layernorm op computes them.
void GraphLowering::lower_layernorm_stats(const Layer& l, const View& x) {
  const int64_t m = x.shape[0], n = x.shape[1];
  auto stat = [&](size_t i, const std::string& suffix) {
    const TensorDesc& t = l.more_outputs[i];
    View v =
        whole(add_buffer(t.name.empty() ? TensorDesc{l.name + "." + suffix, t.dtype, t.shape} : t,
                         BufferRole::intermediate));
    if (!t.name.empty()) tensors_[t.name] = v;
    return reshaped(v, {m});
  };
  View mean = stat(0, "mean"), inv = stat(1, "inv_std_dev");
  View d =
      whole(add_buffer({l.name + ".centered", isa::DType::f32, {m, n}}, BufferRole::intermediate));
  auto row_mean = [&](const View& r, const View& out) {
    emit("reduce",
         {View{r.buffer, {m, 1, 1, n, 1, 1}, {r.strides[0], 0, 0, r.strides[1], 0, 0}, r.offset},
          View{out.buffer, {m, 1, 1}, {1, 0, 0}, out.offset}},
         {{"fn", "mean"}, {"divisor", std::to_string(n)}});
  };
  row_mean(x, mean);
  emit("eltwise", {x, View{mean.buffer, {m, n}, {1, 0}, mean.offset}, d}, {{"fn", "sub"}});
  emit("eltwise", {d, d, d}, {{"fn", "mul"}});
  row_mean(d, inv);
  View eps{add_scalar(l.name + ".epsilon", static_cast<float>(l.epsilon)), {m}, {0}, 0};
  emit("eltwise", {inv, eps, inv}, {{"fn", "add"}});
  emit("activation", {inv, inv}, {{"fn", "rsqrt"}});
}

}  // namespace fracsim::compiler
