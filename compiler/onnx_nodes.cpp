// The ops of the ONNX front end: attributes, checks and output shapes of each, as layers of
// the graph IR (see onnx_import.h for the rules). The window ops are in onnx_window_nodes.cpp.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"
#include "isa/op_def.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

const std::vector<DType> kAllTypes = {DType::f32, DType::i32, DType::i16, DType::i8};

int64_t product(Shape::const_iterator b, Shape::const_iterator e) {
  return std::accumulate(b, e, int64_t{1}, std::multiplies<>());
}

}  // namespace

std::vector<DType> isa_input_dtypes(const std::string& op, const std::string& attr,
                                    const std::string& value) {
  const isa::OpDef& def = isa::OpTable::builtin().get(op);
  std::vector<int64_t> attrs;
  for (const isa::AttrDef& a : def.attributes) attrs.push_back(a.default_value);
  const int a = def.attr_index(attr);
  FRACSIM_ASSERT(a >= 0, "op {} has no attribute {}", op, attr);
  const std::vector<std::string>& values = def.attributes[a].values;
  const auto v = std::find(values.begin(), values.end(), value);
  FRACSIM_ASSERT(v != values.end(), "op {}: {} has no value {}", op, attr, value);
  attrs[a] = v - values.begin();
  std::vector<DType> out;
  for (size_t r = 0; r < def.dtypes.size(); ++r)
    if (def.row_allows(r, attrs) &&
        std::find(out.begin(), out.end(), def.dtypes[r][0]) == out.end())
      out.push_back(def.dtypes[r][0]);
  return out;
}

void OnnxImporter::import_gemm(const Node& n) {
  // broadcast (before opset 7) allowed C to broadcast; numpy broadcasting is a superset.
  NodeAttrs a(*this, n,
              opset_ < 7 ? std::set<std::string>{"alpha", "beta", "transA", "transB", "broadcast"}
                         : std::set<std::string>{"alpha", "beta", "transA", "transB"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0), y = data(n, 1);
  require_rank(n, x, 2, 2);
  require_rank(n, y, 2, 2);
  const bool ta = a.get_bool("transA", false), tb = a.get_bool("transB", false);
  const int64_t m = x.shape[ta ? 1 : 0], k = x.shape[ta ? 0 : 1];
  const int64_t kb = y.shape[tb ? 1 : 0], nn = y.shape[tb ? 0 : 1];
  if (k != kb)
    throw error(n, fmt::format("A {} and B {} (transA {}, transB {}) do not multiply",
                               isa::shape_str(x.shape), isa::shape_str(y.shape), ta, tb));
  std::vector<std::string> inputs = {x.name, y.name};
  if (has_input(n, 2)) {
    const TensorDesc c = data(n, 2);
    const Shape target = {m, nn};
    bool fits = c.shape.size() <= 2;
    for (size_t i = 0; fits && i < c.shape.size(); ++i) {
      const int64_t e = c.shape[i], t = target[2 - c.shape.size() + i];
      fits = e == 1 || e == t;
    }
    if (!fits)
      throw error(n, fmt::format("C '{}' {} does not broadcast to [{},{}]", c.name,
                                 isa::shape_str(c.shape), m, nn));
    inputs.push_back(c.name);
  }
  Layer& l = add_layer(n, LayerKind::gemm, inputs, DType::f32, {m, nn});
  l.alpha = a.get_float("alpha", 1.0);
  l.gemm_beta = a.get_float("beta", 1.0);
  l.trans_a = ta;
  l.trans_b = tb;
}

namespace {

// Numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const size_t r = out.size() - 1 - i;
    const int64_t ea = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t eb = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (ea != eb && ea != 1 && eb != 1) return std::nullopt;
    out[r] = std::max(ea, eb);
  }
  return out;
}

}  // namespace

void OnnxImporter::import_matmul(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0), y = data(n, 1);
  // numpy's matmul: a scalar does not multiply.
  require_rank(n, x, 1, 6);
  require_rank(n, y, 1, 6);
  Shape sa = x.shape, sb = y.shape;
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  auto batch = broadcast(ba, bb);
  if (sa.back() != sb[sb.size() - 2] || !batch)
    throw error(n, fmt::format("A '{}' {} and B '{}' {} do not multiply", x.name,
                               isa::shape_str(x.shape), y.name, isa::shape_str(y.shape)));
  Shape out = *batch;
  if (x.shape.size() > 1) out.push_back(sa[sa.size() - 2]);
  if (y.shape.size() > 1) out.push_back(sb.back());
  add_layer(n, LayerKind::matmul, {x.name, y.name}, DType::f32, out);
}

void OnnxImporter::import_eltwise(const Node& n, const std::string& fn, int min_inputs,
                                  int max_inputs) {
  const bool legacy = opset_ < 7 && max_inputs == 2;
  NodeAttrs a(*this, n,
              legacy ? std::set<std::string>{"broadcast", "axis"} : std::set<std::string>{});
  check_outputs(n, 1);
  if (n.input_size() < min_inputs || n.input_size() > max_inputs)
    throw error(n, fmt::format("{} inputs; the op takes {}", n.input_size(),
                               min_inputs == max_inputs ? std::to_string(min_inputs)
                                                        : fmt::format("{} or more", min_inputs)));
  // What the ISA's eltwise rows take for fn, but for i8 and i16 in add, sub, mul and div: the
  // ISA saturates them where ONNX wraps around.
  std::vector<DType> types = isa_input_dtypes("eltwise", "fn", fn);
  if (fn != "max" && fn != "min")
    types.erase(std::remove_if(types.begin(), types.end(),
                               [](DType t) { return t == DType::i8 || t == DType::i16; }),
                types.end());
  std::vector<std::string> inputs;
  Shape shape;
  DType dtype = DType::f32;
  TensorDesc first;
  for (int i = 0; i < n.input_size(); ++i) {
    TensorDesc t = data(n, i, types);
    if (i == 0) first = t;
    if (i == 1 && legacy) t = w_.tensor(legacy_broadcast(n, a, first, t));
    if (i == 0) {
      dtype = t.dtype;
      shape = t.shape;
    } else {
      if (t.dtype != dtype)
        throw error(n, fmt::format("inputs of dtypes {} and {}", isa::dtype_name(dtype),
                                   isa::dtype_name(t.dtype)));
      auto b = broadcast(shape, t.shape);
      if (!b)
        throw error(n, fmt::format("input '{}' {} does not broadcast with {}", t.name,
                                   isa::shape_str(t.shape), isa::shape_str(shape)));
      shape = *b;
    }
    inputs.push_back(t.name);
  }
  Layer& l = add_layer(n, LayerKind::eltwise, inputs, dtype, shape);
  l.fn = fn;
}

void OnnxImporter::import_activation(const Node& n, LayerKind kind) {
  NodeAttrs a(
      *this, n,
      kind == LayerKind::leaky_relu ? std::set<std::string>{"alpha"} : std::set<std::string>{});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, kind == LayerKind::relu ? kAllTypes : std::vector<DType>{});
  require_rank(n, x, 1, 6);
  Layer& l = add_layer(n, kind, {x.name}, x.dtype, x.shape);
  if (kind == LayerKind::leaky_relu) l.alpha = a.get_float("alpha", 0.01);
}

void OnnxImporter::import_softmax(const Node& n, LayerKind kind) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 1, 6);
  // Before opset 13 the op works on the input flattened to 2-D at `axis` (default 1).
  const bool flat = opset_ < 13;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = a.get_int("axis", flat ? 1 : -1);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  Layer& l = add_layer(n, kind, {x.name}, x.dtype, x.shape);
  l.axis = axis < 0 ? axis + rank : axis;
  l.flat_axis = flat;
}

// Inference: Y from the given mean and var. Training (training_mode = 1, f32): Y from the batch's
// own statistics, and the optional outputs running_mean and running_var (see lower_batchnorm).
void OnnxImporter::import_batchnorm(const Node& n) {
  // Before opset 9: spatial (1, per channel, is what later opsets do); before 7: is_test.
  std::set<std::string> known = {"epsilon", "momentum", "training_mode"};
  if (opset_ < 9) known.insert("spatial");
  if (opset_ < 7) known.insert("is_test");
  NodeAttrs a(*this, n, known);
  if (!a.get_bool("spatial", true))
    throw error(n, "attribute 'spatial' = 0 (statistics per element) is not supported");
  if (opset_ < 7 && !a.get_bool("is_test", false))
    throw error(n, "attribute 'is_test' = 0 (training) is not supported: only inference");
  const int64_t training = a.get_int("training_mode", 0);
  if (training != 0 && training != 1)
    throw error(n, fmt::format("attribute 'training_mode' = {} is not 0 or 1", training));
  check_outputs(n, training ? 3 : 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 2, 6);
  std::vector<std::string> inputs = {x.name};
  for (int i = 1; i < 5; ++i) {
    const TensorDesc t = data(n, i);
    if (t.shape != Shape{x.shape[1]})
      throw error(n, fmt::format("input '{}' {} must have the shape [{}] (the channels)", t.name,
                                 isa::shape_str(t.shape), x.shape[1]));
    inputs.push_back(t.name);
  }
  // A variance without data must be positive, or every output is NaN.
  if (!w_.contents.count(inputs[4])) w_.random_ranges[inputs[4]] = {0.5, 1.5};
  Layer& l = add_layer(n, LayerKind::batchnorm, inputs, x.dtype, x.shape);
  l.epsilon = a.get_float("epsilon", 1e-5);
  if (training) {
    l.training = true;
    l.momentum = a.get_float("momentum", 0.9);
    const Shape stat = {x.shape[1]};
    const bool mean = n.output_size() > 1 && !n.output(1).empty();
    const bool var = n.output_size() > 2 && !n.output(2).empty();
    l.more_outputs = {{mean ? n.output(1) : "", DType::f32, stat},
                      {var ? n.output(2) : "", DType::f32, stat}};
  }
  // (momentum is read only in training: ONNX ignores it at inference.)
}

void OnnxImporter::import_lrn(const Node& n) {
  NodeAttrs a(*this, n, {"alpha", "beta", "bias", "size"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 4, 4);
  const int64_t size = a.get_int("size", 0);
  if (size < 1) throw error(n, "attribute 'size' must be a positive integer");
  Layer& l = add_layer(n, LayerKind::lrn, {x.name}, x.dtype, x.shape);
  l.size = size;
  l.alpha = a.get_float("alpha", 1e-4);
  l.beta = a.get_float("beta", 0.75);
  l.lrn_bias = a.get_float("bias", 1.0);
}

void OnnxImporter::import_flatten(const Node& n) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, kAllTypes);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 1);
  if (axis < -rank || axis > rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  const int64_t rows = product(x.shape.begin(), x.shape.begin() + axis);
  Layer& l = add_layer(n, LayerKind::flatten, {x.name}, x.dtype,
                       {rows, isa::num_elements(x.shape) / rows});
  l.axis = axis;
}

// A view (no instruction), empty tensors included.
void OnnxImporter::import_reshape(const Node& n) {
  NodeAttrs a(*this, n, {"allowzero"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, kAllTypes, true);
  const std::vector<int64_t> spec = constant_ints(n, 1, "shape");
  const bool allowzero = a.get_bool("allowzero", false);
  Shape s;
  int unknown = -1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t v = spec[i];
    if (v == 0 && !allowzero) {
      if (i >= x.shape.size())
        throw error(n, fmt::format("shape {} copies dim {} of the input {}, which has none", spec,
                                   i, isa::shape_str(x.shape)));
      v = x.shape[i];
    } else if (v == -1) {
      if (unknown >= 0) throw error(n, fmt::format("shape {} has more than one -1", spec));
      unknown = static_cast<int>(i);
      v = 1;
    } else if (v < 0) {
      throw error(n, fmt::format("shape {} has the extent {}", spec, v));
    }
    s.push_back(v);
  }
  const int64_t count = isa::num_elements(x.shape);
  int64_t known = 1;
  for (int64_t v : s)
    if (__builtin_mul_overflow(known, v, &known))
      throw error(n, fmt::format("shape {} has more than 2^63 elements", spec));
  if (unknown >= 0 && known > 0 && count % known == 0) s[unknown] = count / known;
  if (isa::num_elements(s) != count)
    throw error(n, fmt::format("the input {} cannot be viewed as {} (shape {})",
                               isa::shape_str(x.shape), isa::shape_str(s), spec));
  Layer& l = add_layer(n, LayerKind::reshape, {x.name}, x.dtype, s);
  const bool follows = !spec.empty() && ((spec[0] == 0 && !allowzero) || spec[0] == -1);
  if (!spec.empty() && !follows) l.reshape_leading = spec[0];
}

void OnnxImporter::import_transpose(const Node& n) {
  NodeAttrs a(*this, n, {"perm"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, kAllTypes);
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(rank - 1 - i);
  perm = a.get_ints("perm").value_or(perm);
  if (!is_permutation(perm, rank))
    throw error(n,
                fmt::format("attribute 'perm' = {} is no permutation of the {} dims", perm, rank));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[p]);
  Layer& l = add_layer(n, LayerKind::transpose, {x.name}, x.dtype, out);
  l.perm = perm;
}

void OnnxImporter::import_concat(const Node& n) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  if (!a.has("axis")) throw error(n, "attribute 'axis' is missing");
  if (n.input_size() < 1) throw error(n, "the op needs at least one input");
  const TensorDesc first = data(n, 0, kAllTypes);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  Shape out = first.shape;
  out[axis] = 0;
  std::vector<std::string> inputs;
  for (int i = 0; i < n.input_size(); ++i) {
    const TensorDesc t = data(n, i, kAllTypes);
    Shape s = t.shape, s0 = first.shape;
    if (s.size() == s0.size()) s[axis] = s0[axis] = 0;
    if (s != s0 || t.dtype != first.dtype)
      throw error(n, fmt::format("inputs {} {} and {} {} differ in dtype or outside axis {}",
                                 isa::dtype_name(first.dtype), isa::shape_str(first.shape),
                                 isa::dtype_name(t.dtype), isa::shape_str(t.shape), axis));
    out[axis] += t.shape[axis];
    inputs.push_back(t.name);
  }
  Layer& l = add_layer(n, LayerKind::concat, inputs, first.dtype, out);
  l.axis = axis;
}

// ReduceSumSquare, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp: an element-wise step
// (x * x, |x|, exp x) before a sum, a step (sqrt, log) after it.
void OnnxImporter::import_reduce_composite(const Node& n, const std::string& pre,
                                           const std::string& post) {
  if (!has_input(n, 0)) throw error(n, "input 0 is missing");
  std::string in = n.input(0);
  if (!pre.empty()) {
    // exp has an f64 row (ReduceLogSumExp on doubles); square and abs are f32.
    const TensorDesc x = data(
        n, 0,
        pre == "exp" ? std::vector<DType>{DType::f32, DType::f64} : std::vector<DType>{DType::f32});
    Layer& l = add_layer(n, pre == "square" ? LayerKind::eltwise : LayerKind::activation,
                         pre == "square" ? std::vector<std::string>{x.name, x.name}
                                         : std::vector<std::string>{x.name},
                         x.dtype, x.shape, n.output(0) + "." + pre);
    l.fn = pre == "square" ? "mul" : pre;
    in = l.name;
  }
  const std::string sum = post.empty() ? "" : n.output(0) + ".sum";
  import_reduce(n, "sum", in, sum, false);
  if (post.empty()) return;
  const TensorDesc& s = w_.tensor(sum);
  add_layer(n, LayerKind::activation, {sum}, s.dtype, s.shape).fn = post;
}

void OnnxImporter::import_reduce(const Node& n, const std::string& fn, const std::string& input,
                                 const std::string& layer, bool axes_as_input) {
  // ReduceSum takes its axes as an input from opset 13 on, the others as an attribute.
  const bool axes_input = fn == "sum" && axes_as_input && opset_ >= 13;
  NodeAttrs a(*this, n,
              axes_input ? std::set<std::string>{"keepdims", "noop_with_empty_axes"}
                         : std::set<std::string>{"axes", "keepdims"});
  check_outputs(n, 1);
  // Reductions of i8 and i16 accumulate into i32 in the ISA where ONNX keeps the input type;
  // f64 has sum only.
  const TensorDesc x =
      !input.empty() && input != n.input(0)
          ? w_.tensor(input)
          : data(n, 0,
                 fn == "mean"  ? std::vector<DType>{}
                 : fn == "sum" ? std::vector<DType>{DType::f32, DType::i32, DType::f64}
                               : std::vector<DType>{DType::f32, DType::i32});
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> axes;
  if (axes_input) {
    if (has_input(n, 1)) axes = constant_ints(n, 1, "axes");
  } else {
    axes = a.get_ints("axes").value_or(std::vector<int64_t>{});
  }
  for (int64_t& ax : axes) {
    if (ax < -rank || ax >= rank)
      throw error(n, fmt::format("axis {} is out of range for rank {}", ax, rank));
    if (ax < 0) ax += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  const bool keepdims = a.get_bool("keepdims", true);
  if (axes.empty()) {
    // No axes: every axis, or (noop_with_empty_axes) the input itself.
    if (a.get_bool("noop_with_empty_axes", false)) {
      add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape, layer);
      return;
    }
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const bool reduced = std::binary_search(axes.begin(), axes.end(), i);
    if (!reduced)
      out.push_back(x.shape[i]);
    else if (keepdims)
      out.push_back(1);
  }
  Layer& l = add_layer(n, LayerKind::reduce, {x.name}, x.dtype, out, layer);
  l.fn = fn;
  l.axes = axes;
}

void OnnxImporter::import_topk(const Node& n) {
  const bool k_input = opset_ >= 10;
  NodeAttrs a(*this, n,
              k_input ? std::set<std::string>{"axis", "largest", "sorted"}
                      : std::set<std::string>{"axis", "k"});
  check_outputs(n, 2);
  const TensorDesc x = data(n, 0, kAllTypes);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", -1);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  int64_t k = 0;
  if (k_input) {
    const std::vector<int64_t> kv = constant_ints(n, 1, "K");
    if (kv.size() != 1) throw error(n, fmt::format("K must be one value, got {}", kv));
    k = kv[0];
  } else {
    k = a.get_int("k", 0);
  }
  if (k < 1 || k > x.shape[axis])
    throw error(n, fmt::format("K = {} is out of range for {} elements along axis {}", k,
                               x.shape[axis], axis));
  Shape out = x.shape;
  out[axis] = k;
  // Sorted or not, the values come best first: an order ONNX allows either way.
  Layer& l = add_layer(n, LayerKind::topk, {x.name}, x.dtype, out);
  l.axis = axis;
  l.k = k;
  l.largest = a.get_bool("largest", true);
  const bool named = n.output_size() > 1 && !n.output(1).empty();
  // A full sort (K = the whole axis) whose indices nobody reads is the sort op: it splits
  // along the axis (sorted runs merged), where topk must see the whole axis for K outputs.
  bool indices_read = false;
  if (named) {
    for (const onnx::NodeProto& other : model_.graph().node())
      for (const std::string& in : other.input()) indices_read = indices_read || in == n.output(1);
    for (const onnx::ValueInfoProto& o : model_.graph().output())
      indices_read = indices_read || o.name() == n.output(1);
  }
  if (k == x.shape[axis] && !indices_read) return;
  l.more_outputs = {{named ? n.output(1) : l.name + ".indices", DType::i32, out}};
}

void OnnxImporter::import_layernorm(const Node& n) {
  NodeAttrs a(*this, n, {"axis", "epsilon", "stash_type"});
  const int64_t stash = a.get_int("stash_type", 1);
  if (stash != 1)
    throw error(n,
                fmt::format("attribute 'stash_type' = {} is not supported (only 1: float)", stash));
  check_outputs(n, 3);
  const TensorDesc x = data(n, 0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  require_rank(n, x, 1, 6);
  int64_t axis = a.get_int("axis", -1);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  if (axis < 0) axis += rank;
  const Shape normalized(x.shape.begin() + axis, x.shape.end());
  std::vector<std::string> inputs = {x.name};
  for (int i = 1; i < 3; ++i) {
    if (!has_input(n, i)) {
      if (i == 1) throw error(n, "input 1 (Scale) is missing");
      continue;
    }
    const TensorDesc t = data(n, i);
    Shape s = t.shape;
    while (s.size() > normalized.size() && s.front() == 1) s.erase(s.begin());
    if (s != normalized)
      throw error(n, fmt::format("input '{}' {} must have the normalised shape {} "
                                 "(broadcasting is not supported)",
                                 t.name, isa::shape_str(t.shape), isa::shape_str(normalized)));
    inputs.push_back(t.name);
  }
  Layer& l = add_layer(n, LayerKind::layernorm, inputs, x.dtype, x.shape);
  l.axis = axis;
  l.epsilon = a.get_float("epsilon", 1e-5);
  Shape stat(x.shape.begin(), x.shape.begin() + axis);
  stat.resize(x.shape.size(), 1);
  const bool mean = n.output_size() > 1 && !n.output(1).empty();
  const bool inv = n.output_size() > 2 && !n.output(2).empty();
  if (mean || inv) {
    l.more_outputs = {{mean ? n.output(1) : "", DType::f32, stat},
                      {inv ? n.output(2) : "", DType::f32, stat}};
  }
}

void OnnxImporter::import_constant(const Node& n) {
  NodeAttrs a(*this, n, {"value", "value_float", "value_floats", "value_int", "value_ints"});
  if (n.output_size() != 1 || n.output(0).empty()) throw error(n, "the node needs one output");
  onnx::TensorProto t;
  if (const onnx::AttributeProto* v = a.find("value")) {
    t = v->t();
  } else if (const onnx::AttributeProto* f = a.find("value_float")) {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_float_data(f->f());
  } else if (const onnx::AttributeProto* fs = a.find("value_floats")) {
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(fs->floats_size());
    for (float v : fs->floats()) t.add_float_data(v);
  } else if (const onnx::AttributeProto* i = a.find("value_int")) {
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_int64_data(i->i());
  } else if (const onnx::AttributeProto* is = a.find("value_ints")) {
    t.set_data_type(onnx::TensorProto::INT64);
    t.add_dims(is->ints_size());
    for (int64_t v : is->ints()) t.add_int64_data(v);
  } else {
    throw error(n, "the node has no value attribute");
  }
  t.set_name(n.output(0));
  if (!countable(tensor_shape(t)))
    throw error(n, fmt::format("the value's shape {} has a negative dim or more than 2^48 elements",
                               isa::shape_str(tensor_shape(t))));
  if (w_.find_tensor(t.name()) || constants_.count(t.name()))
    throw error(n, fmt::format("output '{}' is already defined", t.name()));
  constants_[t.name()] = t;
}

}  // namespace fracsim::compiler
