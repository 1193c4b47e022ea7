// The ONNX front end's element-wise math and data movement on data: unary functions as the
// activation op's fns, compositions of eltwise layers (Clip, HardSigmoid, HardSwish, Selu, PRelu,
// Mean), Pow and Mod as eltwise fns, and Expand, Slice, Gather (constant indices) and Pad
// (constant mode) as copies and views. The steps of a composition are layers named
// "<output>.<step>", their instructions all named by the node.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

}  // namespace

std::string OnnxImporter::scalar_constant(const Node& n, const std::string& suffix, double value,
                                          DType dtype) {
  const std::string name = composite_base(n) + "." + suffix;
  HostTensor h{onnx_type_of(dtype), {}, {static_cast<long double>(value)}};
  constants_[name] = to_proto(h, name);
  return name;
}

std::string OnnxImporter::constant_tensor(const Node& n, const std::string& suffix,
                                          const HostTensor& value) {
  const std::string name = composite_base(n) + "." + suffix;
  constants_[name] = to_proto(value, name);
  return data_by_name(n, name).name;
}

std::string OnnxImporter::composite_base(const Node& n) const {
  for (const std::string& out : n.output())
    if (!out.empty()) return out;
  throw error(n, "the node has no output");
}

std::string OnnxImporter::step(const Node& n, const std::string& suffix, LayerKind kind,
                               const std::string& fn, std::vector<std::string> inputs,
                               std::optional<DType> out_dtype) {
  Shape shape;
  DType dtype = DType::f32;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& t =
        w_.find_tensor(inputs[i]) ? w_.tensor(inputs[i]) : data_by_name(n, inputs[i]);
    if (i == 0) {
      shape = t.shape;
      dtype = t.dtype;
    } else {
      auto b = broadcast_shapes(shape, t.shape);
      if (!b)
        throw error(n, fmt::format("input '{}' {} does not broadcast with {}", t.name,
                                   isa::shape_str(t.shape), isa::shape_str(shape)));
      shape = *b;
    }
  }
  // A select's dtype is its second input's; a compare's u8.
  if (kind == LayerKind::select) dtype = w_.tensor(inputs[1]).dtype;
  if (kind == LayerKind::compare) dtype = DType::u8;
  if (out_dtype) dtype = *out_dtype;
  Layer& l = add_layer(n, kind, std::move(inputs), dtype, shape,
                       suffix.empty() ? "" : composite_base(n) + "." + suffix);
  l.fn = fn;
  return l.name;
}

const TensorDesc& OnnxImporter::data_by_name(const Node& n, const std::string& name) {
  for (int i = 0; i < n.input_size(); ++i)
    if (n.input(i) == name)
      return data(n, i, {w_.find_tensor(name) ? w_.tensor(name).dtype : DType::f32});
  // A constant the composition made: a weight on first use.
  Node alias = n;
  alias.clear_input();
  alias.add_input(name);
  auto c = constants_.find(name);
  const DType dt = dtype_from_onnx(c->second.data_type()).value_or(DType::f32);
  return data(alias, 0, {dt});
}

void OnnxImporter::import_unary(const Node& n, const std::string& fn, double alpha) {
  std::set<std::string> known;
  if (fn == "elu" || fn == "celu" || fn == "thresholded_relu") known = {"alpha"};
  NodeAttrs a(*this, n, known);
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 0, 6);
  Layer& l = add_layer(n, LayerKind::activation, {x.name}, x.dtype, x.shape);
  l.fn = fn;
  l.alpha = a.get_float("alpha", alpha);
}

// Clip(x, min, max) = min(max(x, min), max); an absent bound is no step. HardSigmoid = clip to
// [0, 1] of alpha x + beta; HardSwish = x * HardSigmoid(x) with alpha 1/6, beta 1/2.
void OnnxImporter::import_clip(const Node& n) {
  const bool attrs = opset_ < 11;
  NodeAttrs a(*this, n, attrs ? std::set<std::string>{"min", "max"} : std::set<std::string>{});
  check_outputs(n, 1);
  std::vector<DType> types = isa_input_dtypes("eltwise", "fn", "max");
  const TensorDesc x = data(n, 0, types);
  std::optional<double> lo, hi;
  auto bound = [&](int i) -> std::optional<double> {
    if (attrs) {
      const std::string name = i == 1 ? "min" : "max";
      if (!a.has(name)) return std::nullopt;
      return a.get_float(name, 0);
    }
    if (!has_input(n, i)) return std::nullopt;
    auto c = constants_.find(n.input(i));
    if (c == constants_.end())
      throw error(n, fmt::format("input '{}' (the {} bound) must be a constant", n.input(i),
                                 i == 1 ? "min" : "max"));
    auto h = host_tensor(c->second);
    if (!h || h->v.size() != 1)
      throw error(n, fmt::format("input '{}' (a bound) must be one number", n.input(i)));
    return static_cast<double>(h->v[0]);
  };
  lo = bound(1);
  hi = bound(2);
  std::string cur = x.name;
  if (!lo && !hi) {
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
    return;
  }
  if (lo) {
    const std::string c = scalar_constant(n, "min", *lo, x.dtype);
    cur = step(n, hi ? "lower" : "", LayerKind::eltwise, "max", {cur, c});
  }
  if (hi) {
    const std::string c = scalar_constant(n, "max", *hi, x.dtype);
    step(n, "", LayerKind::eltwise, "min", {cur, c});
  }
}

void OnnxImporter::import_hard_sigmoid(const Node& n, bool swish) {
  NodeAttrs a(*this, n, swish ? std::set<std::string>{} : std::set<std::string>{"alpha", "beta"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  const double alpha = swish ? 1.0 / 6 : a.get_float("alpha", 0.2);
  const double beta = swish ? 0.5 : a.get_float("beta", 0.5);
  std::string t = step(n, "scaled", LayerKind::eltwise, "mul",
                       {x.name, scalar_constant(n, "alpha", alpha, x.dtype)});
  t = step(n, "shifted", LayerKind::eltwise, "add", {t, scalar_constant(n, "beta", beta, x.dtype)});
  t = step(n, "lower", LayerKind::eltwise, "max", {t, scalar_constant(n, "zero", 0, x.dtype)});
  if (!swish) {
    step(n, "", LayerKind::eltwise, "min", {t, scalar_constant(n, "one", 1, x.dtype)});
    return;
  }
  t = step(n, "gate", LayerKind::eltwise, "min", {t, scalar_constant(n, "one", 1, x.dtype)});
  step(n, "", LayerKind::eltwise, "mul", {x.name, t});
}

// Selu = gamma * elu_alpha(x).
void OnnxImporter::import_selu(const Node& n) {
  NodeAttrs a(*this, n, {"alpha", "gamma"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  Layer& e = add_layer(n, LayerKind::activation, {x.name}, x.dtype, x.shape, n.output(0) + ".elu");
  e.fn = "elu";
  e.alpha = a.get_float("alpha", 1.67326319217681884765625);
  const std::string elu = e.name;
  step(
      n, "", LayerKind::eltwise, "mul",
      {elu, scalar_constant(n, "gamma", a.get_float("gamma", 1.05070102214813232421875), x.dtype)});
}

// PRelu = max(x, 0) + min(x, 0) * slope (slope broadcast to x).
void OnnxImporter::import_prelu(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  const TensorDesc s = data(n, 1);
  // The slope broadcasts one way: the output has X's shape.
  auto b = broadcast_shapes(x.shape, s.shape);
  if (!b || *b != x.shape)
    throw error(n, fmt::format("input '{}' (slope) {} does not broadcast to X '{}' {}", s.name,
                               isa::shape_str(s.shape), x.name, isa::shape_str(x.shape)));
  const std::string zero = scalar_constant(n, "zero", 0, x.dtype);
  const std::string pos = step(n, "positive", LayerKind::eltwise, "max", {x.name, zero});
  const std::string neg = step(n, "negative", LayerKind::eltwise, "min", {x.name, zero});
  const std::string sc = step(n, "scaled", LayerKind::eltwise, "mul", {neg, s.name});
  step(n, "", LayerKind::eltwise, "add", {pos, sc});
}

void OnnxImporter::import_binary_fn(const Node& n, const std::string& onnx_fn) {
  const bool mod = onnx_fn == "mod";
  NodeAttrs a(*this, n, mod ? std::set<std::string>{"fmod"} : std::set<std::string>{});
  check_outputs(n, 1);
  const std::string fn = mod && a.get_bool("fmod", false) ? "fmod" : onnx_fn;
  const std::vector<DType> types = isa_input_dtypes("eltwise", "fn", fn);
  const TensorDesc x = data(n, 0, types);
  const std::vector<DType>& convertible = convert_dtypes();
  if (fn == "pow" && data(n, 1, convertible).dtype != x.dtype) {
    // ONNX's Pow takes an exponent of its own dtype: an integer one is converted to x's dtype
    // (exact: f32 holds integers below 2^24 exactly, the integers widen); a float exponent of
    // an integer base is not (its fraction would be lost).
    const TensorDesc e = data(n, 1, convertible);
    if (isa::is_integer(x.dtype) && !isa::is_integer(e.dtype))
      throw error(n, fmt::format("an {} base with an {} exponent is not supported (only an "
                                 "integer exponent of an integer base)",
                                 isa::dtype_name(x.dtype), isa::dtype_name(e.dtype)));
    const std::string y = step(n, "exponent", LayerKind::convert, "", {e.name}, x.dtype);
    step(n, "", LayerKind::eltwise, fn, {x.name, y});
    return;
  }
  const TensorDesc y = data(n, 1, types);
  if (x.dtype != y.dtype)
    throw error(n, fmt::format("inputs of dtypes {} and {}", isa::dtype_name(x.dtype),
                               isa::dtype_name(y.dtype)));
  step(n, "", LayerKind::eltwise, fn, {x.name, y.name});
}

// Mean = the sum of the inputs divided by their count.
void OnnxImporter::import_mean(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  std::vector<std::string> inputs;
  for (int i = 0; i < n.input_size(); ++i) inputs.push_back(data(n, i).name);
  if (inputs.size() == 1) {
    add_layer(n, LayerKind::eltwise, inputs, DType::f32, w_.tensor(inputs[0]).shape).fn = "max";
    return;
  }
  const std::string sum = step(n, "sum", LayerKind::eltwise, "add", inputs);
  step(n, "", LayerKind::eltwise, "div",
       {sum, scalar_constant(n, "count", static_cast<double>(inputs.size()), DType::f32)});
}

void OnnxImporter::import_expand(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, isa_input_dtypes("eltwise", "fn", "max"));
  const std::vector<int64_t> spec = constant_ints(n, 1, "shape");
  auto out = broadcast_shapes(x.shape, Shape(spec.begin(), spec.end()));
  if (!out)
    throw error(n, fmt::format("input '{}' {} does not broadcast to the shape {}", x.name,
                               isa::shape_str(x.shape), spec));
  add_layer(n, LayerKind::eltwise, {x.name}, x.dtype, *out).fn = "max";
}

void OnnxImporter::import_slice(const Node& n) {
  const bool attrs = opset_ < 10;
  NodeAttrs a(*this, n,
              attrs ? std::set<std::string>{"starts", "ends", "axes"} : std::set<std::string>{});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, isa_input_dtypes("eltwise", "fn", "max"));
  const size_t rank = x.shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (attrs) {
    starts = a.get_ints("starts").value_or(starts);
    ends = a.get_ints("ends").value_or(ends);
    axes = a.get_ints("axes").value_or(axes);
  } else {
    starts = constant_ints(n, 1, "starts");
    ends = constant_ints(n, 2, "ends");
    if (has_input(n, 3)) axes = constant_ints(n, 3, "axes");
    if (has_input(n, 4)) steps = constant_ints(n, 4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    throw error(n, "starts, ends, axes and steps differ in length");
  std::vector<int64_t> lo(rank, 0), st(rank, 1);
  Shape out = x.shape;
  for (size_t k = 0; k < starts.size(); ++k) {
    int64_t ax = axes[k];
    if (ax < -static_cast<int64_t>(rank) || ax >= static_cast<int64_t>(rank))
      throw error(n, fmt::format("axis {} is out of range for rank {}", ax, rank));
    if (ax < 0) ax += static_cast<int64_t>(rank);
    const int64_t dim = x.shape[ax], step = steps[k];
    if (step <= 0)
      throw error(n, fmt::format("a step of {} is not supported (only positive steps)", step));
    int64_t s = starts[k] < 0 ? starts[k] + dim : starts[k];
    int64_t e = ends[k] < 0 ? ends[k] + dim : ends[k];
    s = std::clamp<int64_t>(s, 0, dim);
    e = std::clamp<int64_t>(e, 0, dim);
    out[ax] = e > s ? (e - s + step - 1) / step : 0;
    lo[ax] = s;
    st[ax] = step;
  }
  Layer& l = add_layer(n, LayerKind::slice, {x.name}, x.dtype, out);
  l.starts = lo;
  l.steps = st;
}

void OnnxImporter::import_gather(const Node& n) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, isa_input_dtypes("eltwise", "fn", "max"));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  auto c = constants_.find(n.input(1));
  if (c == constants_.end() || input_values_.count(n.input(1)))
    return import_gather_index(n, false);
  std::vector<int64_t> idx = constant_ints(n, 1, "indices");
  const Shape ishape = tensor_shape(c->second);
  for (int64_t& k : idx) {
    if (k < -x.shape[axis] || k >= x.shape[axis])
      throw error(n, fmt::format("index {} is out of range for extent {}", k, x.shape[axis]));
    if (k < 0) k += x.shape[axis];
  }
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), ishape.begin(), ishape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  if (idx.size() == 1) {
    // One index: a view (then a reshape that drops the axis, unless the indices keep it).
    Shape kept = x.shape;
    kept[axis] = 1;
    const bool drop = out != kept;
    const std::string picked = n.output(0) + ".picked";
    Layer& l = add_layer(n, LayerKind::slice, {x.name}, x.dtype, kept, drop ? picked : "");
    l.starts.assign(x.shape.size(), 0);
    l.starts[axis] = idx[0];
    l.steps.assign(x.shape.size(), 1);
    if (drop) add_layer(n, LayerKind::reshape, {picked}, x.dtype, out);
    return;
  }
  Layer& l = add_layer(n, LayerKind::gather, {x.name}, x.dtype, out);
  l.axis = axis;
  l.indices = idx;
}

void OnnxImporter::import_pad(const Node& n) {
  const bool attrs = opset_ < 11;
  NodeAttrs a(*this, n,
              attrs ? std::set<std::string>{"mode", "pads", "value", "paddings"}
                    : std::set<std::string>{"mode"});
  check_outputs(n, 1);
  const std::string mode = a.get_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    throw error(n, fmt::format("attribute 'mode' = '{}' is not supported (constant, edge, "
                               "reflect)",
                               mode));
  const TensorDesc x =
      data(n, 0,
           mode == "constant" ? std::vector<DType>{DType::f32, DType::i32, DType::i16, DType::i8}
                              : isa_input_dtypes("eltwise", "fn", "max"));
  const size_t rank = x.shape.size();
  std::vector<int64_t> pads;
  double value = 0;
  if (attrs) {
    pads = a.get_ints(a.has("pads") ? "pads" : "paddings").value_or(pads);
    value = a.get_float("value", 0);
  } else {
    pads = constant_ints(n, 1, "pads");
    if (has_input(n, 2) && mode == "constant") {
      auto c = constants_.find(n.input(2));
      auto h = c == constants_.end() ? std::nullopt : host_tensor(c->second);
      if (!h || h->v.size() != 1)
        throw error(n, fmt::format("input '{}' (the pad value) must be one constant", n.input(2)));
      value = static_cast<double>(h->v[0]);
    }
    if (has_input(n, 3)) throw error(n, "input 3 (axes) is not supported");
  }
  if (pads.size() != 2 * rank)
    throw error(n, fmt::format("pads {} must have 2 x {} entries", pads, rank));
  Shape out = x.shape;
  for (size_t i = 0; i < rank; ++i) {
    if (pads[i] < 0 || pads[rank + i] < 0)
      throw error(n, fmt::format("negative pads {} are not supported", pads));
    out[i] += pads[i] + pads[rank + i];
  }
  if (mode != "constant") return import_pad_gather(n, x, pads, mode);
  Layer& l = add_layer(n, LayerKind::pad, {x.name}, x.dtype, out);
  l.padding = pads;
  l.alpha = value;
}

}  // namespace fracsim::compiler

namespace fracsim::compiler {

// ArgMax/ArgMin = TopK with K = 1 along the axis, its indices (i32) the output; ties give the
// first index, as ONNX's default (the ISA's order is stable). keepdims = 0 views the result
// without the axis.
void OnnxImporter::import_arg(const Node& n, bool largest) {
  NodeAttrs a(*this, n, {"axis", "keepdims", "select_last_index"});
  check_outputs(n, 1);
  if (a.get_bool("select_last_index", false)) return import_arg_last(n, a, largest);
  const TensorDesc x =
      data(n, 0, {isa::DType::f32, isa::DType::i32, isa::DType::i16, isa::DType::i8});
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  isa::Shape kept = x.shape;
  kept[axis] = 1;
  const bool keepdims = a.get_bool("keepdims", true);
  const std::string indices = keepdims ? n.output(0) : n.output(0) + ".kept";
  Layer& l = add_layer(n, LayerKind::topk, {x.name}, x.dtype, kept, n.output(0) + ".values");
  l.axis = axis;
  l.k = 1;
  l.largest = largest;
  l.more_outputs = {{indices, isa::DType::i32, kept}};
  if (keepdims) return;
  isa::Shape out = x.shape;
  out.erase(out.begin() + axis);
  add_layer(n, LayerKind::reshape, {indices}, isa::DType::i32, out);
}

// select_last_index = 1: the extreme value along the axis (reduce max or min), the mask of
// the elements equal to it (compare eq), their indices where it holds and -1 elsewhere
// (select of an i32 iota), and the largest of those (reduce max): the last index of the
// extreme. A NaN equals nothing, so a row whose extreme is NaN gives -1.
void OnnxImporter::import_arg_last(const Node& n, const NodeAttrs& a, bool largest) {
  const TensorDesc x = data(n, 0, {isa::DType::f32, isa::DType::i32});
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  const bool keepdims = a.get_bool("keepdims", true);
  isa::Shape kept = x.shape, out = x.shape;
  kept[axis] = 1;
  out.erase(out.begin() + axis);
  const std::string name = n.output(0);
  Layer& m = add_layer(n, LayerKind::reduce, {x.name}, x.dtype, kept, name + ".extreme");
  m.fn = largest ? "max" : "min";
  m.axes = {axis};
  const std::string extreme = m.name;
  Layer& e =
      add_layer(n, LayerKind::compare, {x.name, extreme}, isa::DType::u8, x.shape, name + ".mask");
  e.fn = "eq";
  const std::string mask = e.name;
  HostTensor iota{onnx::TensorProto::INT32, isa::Shape(static_cast<size_t>(rank - axis), 1), {}};
  iota.shape[0] = x.shape[axis];
  for (int64_t k = 0; k < x.shape[axis]; ++k) iota.v.push_back(static_cast<long double>(k));
  const std::string iota_name = name + ".indices";
  constants_[iota_name] = to_proto(iota, iota_name);
  const std::string none = scalar_constant(n, "none", -1, isa::DType::i32);
  const std::string at = name + ".at";
  add_layer(n, LayerKind::select,
            {mask, data_by_name(n, iota_name).name, data_by_name(n, none).name}, isa::DType::i32,
            x.shape, at);
  Layer& r = add_layer(n, LayerKind::reduce, {at}, isa::DType::i32, keepdims ? kept : out);
  r.fn = "max";
  r.axes = {axis};
}

}  // namespace fracsim::compiler
