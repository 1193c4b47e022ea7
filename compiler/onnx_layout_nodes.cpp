// Compositions of the ONNX front end over existing layers, each exact:
// - Pad (edge, reflect) and Tile: one gather per changed axis with constant indices (a copy;
//   a repeat of the whole axis or of each element, one broadcast copy).
// - DepthToSpace, SpaceToDepth: a view of rank 6, a transpose, a view.
// - Hardmax: the first index of the largest (topk with K = 1, ties to the first index), compared
//   with an iota along the axis, selecting 1 or 0.
// - Shrink: two compares and two selects of x + bias, x - bias and 0.
// - IsInf: compares with +inf and -inf (or'ed as max on u8).
// - InstanceNormalization, MeanVarianceNormalization: reduce means, eltwise steps and a sqrt, as
//   ONNX's reference computes them.
// - EyeLike: a constant of the input's shape (only the shape is read).
// - OneHot: the indices compared with an iota of the depth (and with iota - depth, the negative
//   indices), selecting on_value or off_value.
// - CumSum: x viewed [P, 1, L, S] selected by a constant [L, L] mask into [P, L, L, S] (x[j] where
//   j <= i, or j < i exclusive, j >= i / j > i reverse, else 0), reduced over j.
// The steps are layers "<output>.<step>", their instructions named by the node.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

int64_t normalize_axis(const OnnxImporter& im, const onnx::NodeProto& n, int64_t axis,
                       int64_t rank) {
  if (axis < -rank || axis >= rank)
    throw im.error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<DType> gather_dtypes() { return isa_input_dtypes("eltwise", "fn", "max"); }

}  // namespace

// Two index patterns are one broadcast copy (an eltwise max of one input) instead of one copy
// per index: each element repeated k times (nearest upsampling by k), the input viewed
// [P, in, 1, S] and broadcast to [P, in, k, S]; the whole axis repeated r times (Tile), viewed
// [P, 1, in, S] and broadcast to [P, r, in, S] (P, S: the extents before and after the axis).
std::string OnnxImporter::gather_axis(const Node& n, const std::string& input, size_t axis,
                                      const std::vector<int64_t>& indices,
                                      const std::string& name) {
  const TensorDesc x = w_.tensor(input);
  Shape out = x.shape;
  const int64_t in = x.shape[axis], count = static_cast<int64_t>(indices.size());
  out[axis] = count;
  bool repeat = count % in == 0, tile = count % in == 0;
  for (int64_t j = 0; j < count && (repeat || tile); ++j) {
    repeat = repeat && indices[j] == j / (count / in);
    tile = tile && indices[j] == j % in;
  }
  if (repeat || tile) {
    int64_t P = 1, S = 1;
    for (size_t i = 0; i < axis; ++i) P *= x.shape[i];
    for (size_t i = axis + 1; i < x.shape.size(); ++i) S *= x.shape[i];
    const int64_t times = count / in;
    const std::string base = name.empty() ? n.output(0) : name;
    const Shape viewed = repeat ? Shape{P, in, 1, S} : Shape{P, 1, in, S};
    const Shape spread = repeat ? Shape{P, in, times, S} : Shape{P, times, in, S};
    add_layer(n, LayerKind::reshape, {input}, x.dtype, viewed, base + ".viewed");
    add_layer(n, LayerKind::eltwise, {base + ".viewed"}, x.dtype, spread, base + ".spread").fn =
        "max";
    return add_layer(n, LayerKind::reshape, {base + ".spread"}, x.dtype, out, name).name;
  }
  Layer& l = add_layer(n, LayerKind::gather, {input}, x.dtype, out, name);
  l.axis = static_cast<int64_t>(axis);
  l.indices = indices;
  return l.name;
}

// Pad edge: output j of an axis reads input clamp(j - begin); reflect: j - begin mirrored at
// the ends without repeating the edge (numpy's reflect, repeatedly for pads past the extent).
void OnnxImporter::import_pad_gather(const Node& n, const TensorDesc& x,
                                     const std::vector<int64_t>& pads, const std::string& mode) {
  const size_t rank = x.shape.size();
  std::vector<size_t> axes;
  for (size_t i = 0; i < rank; ++i)
    if (pads[i] != 0 || pads[rank + i] != 0) axes.push_back(i);
  if (axes.empty()) {
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
    return;
  }
  std::string cur = x.name;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t i = axes[k];
    const int64_t in = x.shape[i], begin = pads[i], out = in + pads[i] + pads[rank + i];
    std::vector<int64_t> idx;
    for (int64_t j = 0; j < out; ++j) {
      int64_t s = j - begin;
      if (mode == "edge" || in == 1) {
        s = std::clamp<int64_t>(s, 0, in - 1);
      } else {
        while (s < 0 || s >= in) s = s < 0 ? -s : 2 * (in - 1) - s;
      }
      idx.push_back(s);
    }
    const bool last = k + 1 == axes.size();
    cur =
        gather_axis(n, cur, i, idx, last ? n.output(0) : fmt::format("{}.axis{}", n.output(0), i));
  }
}

// Tile: along each axis repeated r times, the indices 0 .. in-1 r times over.
void OnnxImporter::import_tile(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  if (opset_ < 6) throw error(n, "Tile before opset 6 (tiles and axis inputs) is not supported");
  const TensorDesc x = data(n, 0, gather_dtypes());
  const std::vector<int64_t> reps = constant_ints(n, 1, "repeats");
  const size_t rank = x.shape.size();
  if (reps.size() != rank)
    throw error(n, fmt::format("repeats {} must have {} entries (the input's rank)", reps, rank));
  std::vector<size_t> axes;
  for (size_t i = 0; i < rank; ++i) {
    if (reps[i] < 1)
      throw error(n, fmt::format("repeats {}: a repeat of {} is not supported (an empty output)",
                                 reps, reps[i]));
    if (reps[i] > 1) axes.push_back(i);
  }
  if (axes.empty()) {
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
    return;
  }
  std::string cur = x.name;
  for (size_t k = 0; k < axes.size(); ++k) {
    const size_t i = axes[k];
    std::vector<int64_t> idx;
    for (int64_t r = 0; r < reps[i]; ++r)
      for (int64_t j = 0; j < x.shape[i]; ++j) idx.push_back(j);
    const bool last = k + 1 == axes.size();
    cur =
        gather_axis(n, cur, i, idx, last ? n.output(0) : fmt::format("{}.axis{}", n.output(0), i));
  }
}

// DepthToSpace [N, C, H, W] -> [N, C/b^2, H b, W b]: DCR views the input [N, b, b, C/b^2, H, W]
// and transposes it to [N, C/b^2, H, b, W, b]; CRD views it [N, C/b^2, b, b, H, W]. SpaceToDepth
// views [N, C, H/b, b, W/b, b] and transposes to [N, b, b, C, H/b, W/b] (DCR order).
void OnnxImporter::import_depth_to_space(const Node& n, bool to_space) {
  NodeAttrs a(*this, n,
              to_space && opset_ >= 11 ? std::set<std::string>{"blocksize", "mode"}
                                       : std::set<std::string>{"blocksize"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, gather_dtypes());
  require_rank(n, x, 4, 4);
  const int64_t b = a.get_int("blocksize", 0);
  if (b < 1) throw error(n, "attribute 'blocksize' must be a positive integer");
  const std::string mode = a.get_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    throw error(n, fmt::format("attribute 'mode' = '{}' is not DCR or CRD", mode));
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  Shape viewed, out;
  std::vector<int64_t> perm;
  if (to_space) {
    if (C % (b * b) != 0)
      throw error(n,
                  fmt::format("the channels {} are not a multiple of blocksize^2 = {}", C, b * b));
    if (mode == "DCR") {
      viewed = {N, b, b, C / (b * b), H, W};
      perm = {0, 3, 4, 1, 5, 2};
    } else {
      viewed = {N, C / (b * b), b, b, H, W};
      perm = {0, 1, 4, 2, 5, 3};
    }
    out = {N, C / (b * b), H * b, W * b};
  } else {
    if (H % b != 0 || W % b != 0)
      throw error(n, fmt::format("the extents {} x {} are not multiples of blocksize {}", H, W, b));
    viewed = {N, C, H / b, b, W / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {N, C * b * b, H / b, W / b};
  }
  const std::string y = n.output(0);
  add_layer(n, LayerKind::reshape, {x.name}, x.dtype, viewed, y + ".viewed");
  Shape moved;
  for (int64_t p : perm) moved.push_back(viewed[p]);
  Layer& t = add_layer(n, LayerKind::transpose, {y + ".viewed"}, x.dtype, moved, y + ".moved");
  t.perm = perm;
  add_layer(n, LayerKind::reshape, {y + ".moved"}, x.dtype, out);
}

// Hardmax: 1 at the first index of the largest element along the axis (before opset 13: of the
// input flattened to 2-D at the axis), 0 elsewhere. A NaN is the largest (topk's order).
void OnnxImporter::import_hardmax(const Node& n) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  const bool flat = opset_ < 13;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalize_axis(*this, n, a.get_int("axis", flat ? 1 : -1), rank);
  const std::string y = n.output(0);
  std::string in = x.name;
  Shape shape = x.shape;
  int64_t ax = axis;
  if (flat) {
    int64_t rows = 1, cols = 1;
    for (int64_t i = 0; i < rank; ++i) (i < axis ? rows : cols) *= x.shape[i];
    shape = {rows, cols};
    ax = 1;
    in = y + ".rows";
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, shape, in);
  }
  Shape kept = shape;
  kept[ax] = 1;
  Layer& l = add_layer(n, LayerKind::topk, {in}, x.dtype, kept, y + ".largest");
  l.axis = ax;
  l.k = 1;
  l.largest = true;
  l.more_outputs = {{y + ".argmax", DType::i32, kept}};
  HostTensor iota{onnx::TensorProto::INT32, Shape(shape.size() - ax, 1), {}};
  iota.shape[0] = shape[ax];
  for (int64_t k = 0; k < shape[ax]; ++k) iota.v.push_back(static_cast<long double>(k));
  const std::string at =
      step(n, "at", LayerKind::compare, "eq", {y + ".argmax", constant_tensor(n, "indices", iota)});
  const std::string one = data_by_name(n, scalar_constant(n, "one", 1, x.dtype)).name;
  const std::string zero = data_by_name(n, scalar_constant(n, "zero", 0, x.dtype)).name;
  if (!flat) {
    step(n, "", LayerKind::select, "", {at, one, zero});
    return;
  }
  step(n, "picked", LayerKind::select, "", {at, one, zero});
  add_layer(n, LayerKind::reshape, {y + ".picked"}, x.dtype, x.shape);
}

// Shrink: x + bias where x < -lambd, x - bias where x > lambd, else 0 (f32).
void OnnxImporter::import_shrink(const Node& n) {
  NodeAttrs a(*this, n, {"bias", "lambd"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  const double bias = a.get_float("bias", 0), lambd = a.get_float("lambd", 0.5);
  const auto c = [&](const std::string& s, double v) {
    return data_by_name(n, scalar_constant(n, s, v, x.dtype)).name;
  };
  const std::string below =
      step(n, "below", LayerKind::compare, "lt", {x.name, c("neg_lambd", -lambd)});
  const std::string above = step(n, "above", LayerKind::compare, "gt", {x.name, c("lambd", lambd)});
  const std::string up = step(n, "raised", LayerKind::eltwise, "add", {x.name, c("bias", bias)});
  const std::string down =
      step(n, "lowered", LayerKind::eltwise, "sub", {x.name, c("bias_again", bias)});
  const std::string upper = step(n, "upper", LayerKind::select, "", {above, down, c("zero", 0)});
  step(n, "", LayerKind::select, "", {below, up, upper});
}

// IsInf: x == +inf (detect_positive), x == -inf (detect_negative), or'ed: a bool (u8).
void OnnxImporter::import_isinf(const Node& n) {
  NodeAttrs a(*this, n, {"detect_negative", "detect_positive"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, isa_input_dtypes("compare", "fn", "eq"));
  if (isa::is_integer(x.dtype))
    throw error(n, fmt::format("input '{}' has dtype {}; this op takes floats", x.name,
                               isa::dtype_name(x.dtype)));
  const bool pos = a.get_bool("detect_positive", true), neg = a.get_bool("detect_negative", true);
  const double inf = std::numeric_limits<double>::infinity();
  const auto c = [&](const std::string& s, double v) {
    return data_by_name(n, scalar_constant(n, s, v, x.dtype)).name;
  };
  if (!pos && !neg) {
    // Neither: all false (x != x is true only for NaN, so compare with a NaN-free test).
    const std::string t = step(n, "nan", LayerKind::compare, "ne", {x.name, x.name});
    step(n, "", LayerKind::compare, "lt",
         {t, data_by_name(n, scalar_constant(n, "zero", 0, DType::u8)).name});
    return;
  }
  if (pos != neg) {
    step(n, "", LayerKind::compare, "eq", {x.name, c(pos ? "inf" : "neg_inf", pos ? inf : -inf)});
    return;
  }
  const std::string p = step(n, "positive", LayerKind::compare, "eq", {x.name, c("inf", inf)});
  const std::string m = step(n, "negative", LayerKind::compare, "eq", {x.name, c("neg_inf", -inf)});
  step(n, "", LayerKind::eltwise, "max", {p, m});
}

// InstanceNormalization: per sample and channel over the spatial dims, (x - mean) /
// sqrt(var + epsilon) * scale + B, var the mean of (x - mean)^2.
void OnnxImporter::import_instancenorm(const Node& n) {
  NodeAttrs a(*this, n, {"epsilon"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 3, 5);
  const TensorDesc s = data(n, 1), b = data(n, 2);
  const int64_t C = x.shape[1];
  for (const TensorDesc* t : {&s, &b})
    if (t->shape != Shape{C})
      throw error(n, fmt::format("input '{}' {} must have the shape [{}] (the channels)", t->name,
                                 isa::shape_str(t->shape), C));
  const std::string y = n.output(0);
  const size_t rank = x.shape.size();
  std::vector<int64_t> axes;
  Shape kept = x.shape, chan(rank - 1, 1);
  for (size_t i = 2; i < rank; ++i) {
    axes.push_back(static_cast<int64_t>(i));
    kept[i] = 1;
  }
  chan[0] = C;
  auto mean_of = [&](const std::string& in, const std::string& name) {
    Layer& l = add_layer(n, LayerKind::reduce, {in}, x.dtype, kept, y + "." + name);
    l.fn = "mean";
    l.axes = axes;
    return l.name;
  };
  const std::string mean = mean_of(x.name, "mean");
  const std::string d = step(n, "centered", LayerKind::eltwise, "sub", {x.name, mean});
  const std::string sq = step(n, "squared", LayerKind::eltwise, "mul", {d, d});
  const std::string var = mean_of(sq, "var");
  const std::string ve = step(
      n, "var_eps", LayerKind::eltwise, "add",
      {var,
       data_by_name(n, scalar_constant(n, "epsilon", a.get_float("epsilon", 1e-5), x.dtype)).name});
  Layer& r = add_layer(n, LayerKind::activation, {ve}, x.dtype, kept, y + ".std");
  r.fn = "sqrt";
  const std::string norm = step(n, "normalized", LayerKind::eltwise, "div", {d, r.name});
  add_layer(n, LayerKind::reshape, {s.name}, s.dtype, chan, y + ".scale_c");
  add_layer(n, LayerKind::reshape, {b.name}, b.dtype, chan, y + ".bias_c");
  const std::string scaled = step(n, "scaled", LayerKind::eltwise, "mul", {norm, y + ".scale_c"});
  step(n, "", LayerKind::eltwise, "add", {scaled, y + ".bias_c"});
}

// MeanVarianceNormalization over `axes` (default [0, 2, 3]), as ONNX's reference: (x - E[x]) /
// (sqrt(E[x^2] - E[x]^2) + 1e-9).
void OnnxImporter::import_mvn(const Node& n) {
  NodeAttrs a(*this, n, {"axes"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes = a.get_ints("axes").value_or(std::vector<int64_t>{0, 2, 3});
  for (int64_t& ax : axes) ax = normalize_axis(*this, n, ax, rank);
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (axes.size() > 3)
    throw error(n, fmt::format("axes {}: at most three axes are supported", axes));
  Shape kept = x.shape;
  for (int64_t ax : axes) kept[ax] = 1;
  const std::string y = n.output(0);
  auto mean_of = [&](const std::string& in, const std::string& name) {
    Layer& l = add_layer(n, LayerKind::reduce, {in}, x.dtype, kept, y + "." + name);
    l.fn = "mean";
    l.axes = axes;
    return l.name;
  };
  const std::string mean = mean_of(x.name, "mean");
  const std::string msq = step(n, "mean_squared", LayerKind::eltwise, "mul", {mean, mean});
  const std::string sq = step(n, "squared", LayerKind::eltwise, "mul", {x.name, x.name});
  const std::string sqm = mean_of(sq, "squared_mean");
  const std::string var = step(n, "var", LayerKind::eltwise, "sub", {sqm, msq});
  Layer& r = add_layer(n, LayerKind::activation, {var}, x.dtype, kept, y + ".std");
  r.fn = "sqrt";
  const std::string se =
      step(n, "std_eps", LayerKind::eltwise, "add",
           {r.name, data_by_name(n, scalar_constant(n, "epsilon", 1e-9, x.dtype)).name});
  const std::string d = step(n, "centered", LayerKind::eltwise, "sub", {x.name, mean});
  step(n, "", LayerKind::eltwise, "div", {d, se});
}

// EyeLike: ones on the diagonal k of a 2-D tensor of the input's shape, zeros elsewhere, of the
// attribute dtype (default the input's): a constant (the input's values are not read).
void OnnxImporter::import_eyelike(const Node& n) {
  NodeAttrs a(*this, n, {"dtype", "k"});
  check_outputs(n, 1);
  Shape shape;
  int32_t type = 0;
  if (const TensorDesc* t = w_.find_tensor(n.input(0))) {
    shape = t->shape;
    type = onnx_type_of(t->dtype);
  } else if (auto c = constants_.find(n.input(0)); c != constants_.end()) {
    shape = tensor_shape(c->second);
    type = c->second.data_type();
  } else if (auto g = graph_inputs_.find(n.input(0)); g != graph_inputs_.end()) {
    type = g->second->type().tensor_type().elem_type();
    for (const auto& d : g->second->type().tensor_type().shape().dim())
      shape.push_back(d.dim_value());
  } else {
    throw error(n, fmt::format("input '{}' is not defined before the node", n.input(0)));
  }
  if (shape.size() != 2)
    throw error(n, fmt::format("the input {} must have rank 2", isa::shape_str(shape)));
  type = static_cast<int32_t>(a.get_int("dtype", type));
  if (!dtype_from_onnx(type))
    throw error(n, fmt::format("dtype {} is not supported (the ISA has {})", onnx_type_name(type),
                               isa::dtype_names()));
  const int64_t k = a.get_int("k", 0);
  HostTensor eye{type, shape,
                 std::vector<long double>(static_cast<size_t>(shape[0] * shape[1]), 0)};
  for (int64_t i = 0; i < shape[0]; ++i)
    if (i + k >= 0 && i + k < shape[1]) eye.v[static_cast<size_t>(i * shape[1] + i + k)] = 1;
  if (w_.find_tensor(n.output(0)) || constants_.count(n.output(0)))
    throw error(n, fmt::format("output '{}' is already defined", n.output(0)));
  constants_[n.output(0)] = to_proto(eye, n.output(0));
}

// OneHot: out[..., p, ...] = on_value where index == p or index == p - depth (a negative index
// counts from the end), else off_value; an index outside [-depth, depth - 1] (or not integral)
// matches nothing. depth and values are constants; the indices data (any dtype the compare op
// takes).
void OnnxImporter::import_onehot(const Node& n) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  const TensorDesc idx = data(n, 0, isa_input_dtypes("compare", "fn", "eq"));
  auto depth_t = optional_constant(n, 1, "depth");
  auto values = optional_constant(n, 2, "values");
  if (!depth_t || depth_t->v.size() != 1) throw error(n, "input 1 (depth) must be one number");
  if (!values || values->v.size() != 2)
    throw error(n, "input 2 (values) must be two values: off_value, on_value");
  const int64_t depth = static_cast<int64_t>(depth_t->v[0]);
  if (depth < 1) throw error(n, fmt::format("depth {} must be positive", depth));
  auto vt = dtype_from_onnx(values->type);
  if (!vt)
    throw error(
        n, fmt::format("values have dtype {}, which the ISA lacks", onnx_type_name(values->type)));
  const int64_t rank = static_cast<int64_t>(idx.shape.size()) + 1;
  const int64_t axis = normalize_axis(*this, n, a.get_int("axis", -1), rank);
  const std::string y = n.output(0);
  Shape viewed = idx.shape;
  viewed.insert(viewed.begin() + axis, 1);
  add_layer(n, LayerKind::reshape, {idx.name}, idx.dtype, viewed, y + ".indices");
  HostTensor iota{onnx_type_of(idx.dtype), Shape(static_cast<size_t>(rank - axis), 1), {}},
      back = iota;
  iota.shape[0] = back.shape[0] = depth;
  for (int64_t p = 0; p < depth; ++p) {
    iota.v.push_back(static_cast<long double>(p));
    back.v.push_back(static_cast<long double>(p - depth));
  }
  const std::string at = step(n, "at", LayerKind::compare, "eq",
                              {y + ".indices", constant_tensor(n, "positions", iota)});
  const std::string from_end =
      step(n, "at_from_end", LayerKind::compare, "eq",
           {y + ".indices", constant_tensor(n, "positions_from_end", back)});
  const std::string hit = step(n, "hit", LayerKind::eltwise, "max", {at, from_end});
  const std::string off =
      data_by_name(n, scalar_constant(n, "off", static_cast<double>(values->v[0]), *vt)).name;
  const std::string on =
      data_by_name(n, scalar_constant(n, "on", static_cast<double>(values->v[1]), *vt)).name;
  step(n, "", LayerKind::select, "", {hit, on, off});
}

// CumSum along the constant `axis`: y[.., i, ..] = the sum over j of x[.., j, ..] for j <= i
// (exclusive: j < i; reverse: j >= i, or j > i), as a select of x or 0 by a constant mask and a
// reduce sum over j, in ascending j: the terms in numpy's order for the forward sum (the zeros
// after the last term change nothing), ascending where reverse sums descend (so within rounding
// of ONNX's reference there). f32, f64 and i32 (wrapping, as ONNX's int32).
void OnnxImporter::import_cumsum(const Node& n) {
  NodeAttrs a(*this, n, {"exclusive", "reverse"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, {DType::f32, DType::f64, DType::i32});
  const std::vector<int64_t> ax = constant_ints(n, 1, "axis");
  if (ax.size() != 1) throw error(n, fmt::format("axis {} must be one integer", ax));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalize_axis(*this, n, ax[0], rank);
  const bool exclusive = a.get_bool("exclusive", false), reverse = a.get_bool("reverse", false);
  int64_t P = 1, S = 1;
  for (int64_t i = 0; i < axis; ++i) P *= x.shape[i];
  for (int64_t i = axis + 1; i < rank; ++i) S *= x.shape[i];
  const int64_t L = x.shape[axis];
  const std::string y = n.output(0);
  add_layer(n, LayerKind::reshape, {x.name}, x.dtype, {P, 1, L, S}, y + ".terms");
  HostTensor mask{onnx::TensorProto::UINT8, {L, L, 1}, {}};
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < L; ++j) {
      const bool in = reverse ? (exclusive ? j > i : j >= i) : (exclusive ? j < i : j <= i);
      mask.v.push_back(in ? 1 : 0);
    }
  const std::string m = constant_tensor(n, "mask", mask);
  const std::string zero = data_by_name(n, scalar_constant(n, "zero", 0, x.dtype)).name;
  const std::string picked = step(n, "picked", LayerKind::select, "", {m, y + ".terms", zero});
  Layer& r = add_layer(n, LayerKind::reduce, {picked}, x.dtype, {P, L, 1, S}, y + ".sums");
  r.fn = "sum";
  r.axes = {2};
  add_layer(n, LayerKind::reshape, {y + ".sums"}, x.dtype, x.shape);
}

}  // namespace fracsim::compiler
