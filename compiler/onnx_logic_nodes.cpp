// The ONNX front end's ops between dtypes, on bools and by data indices: Cast and CastLike (the
// convert op), the comparisons (compare), And, Or, Xor and Not on bools, Where (select),
// GatherElements and Gather at data indices (the gather op), Trilu (a select with a constant
// mask) and Split (slices). ONNX's bool is a u8 holding 0 or 1.
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"
#include "isa/op_def.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

std::vector<DType> select_dtypes() {
  const isa::OpDef& def = isa::OpTable::builtin().get("select");
  std::vector<DType> out;
  for (const auto& row : def.dtypes) out.push_back(row[1]);
  return out;
}

int64_t axis_in(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

}  // namespace

const std::vector<DType>& convert_dtypes() {
  static const std::vector<DType> kTypes = {DType::f32, DType::f16, DType::f64, DType::i32,
                                            DType::i64, DType::i8,  DType::i16, DType::u8};
  return kTypes;
}

// Cast to the same dtype is a view; to bool, x != 0; from bool, its 0 or 1 converted.
void OnnxImporter::import_cast(const Node& n, bool like) {
  NodeAttrs a(*this, n, like ? std::set<std::string>{} : std::set<std::string>{"to"});
  check_outputs(n, 1);
  int32_t to = onnx::TensorProto::UNDEFINED;
  if (like) {
    const std::string& target = n.input_size() > 1 ? n.input(1) : "";
    const TensorDesc* t = w_.find_tensor(target);
    auto c = constants_.find(target);
    auto gi = graph_inputs_.find(target);
    if (c != constants_.end())
      to = c->second.data_type();
    else if (gi != graph_inputs_.end())
      to = gi->second->type().tensor_type().elem_type();
    else if (t)
      to = onnx_type_of(t->dtype);
    else
      throw error(n, "input 1 (target_type) is missing");
  } else {
    if (!a.has("to")) throw error(n, "attribute 'to' is missing");
    to = static_cast<int32_t>(a.get_int("to", 0));
  }
  const bool to_bool = to == onnx::TensorProto::BOOL;
  const auto target = dtype_from_onnx(to);
  if (!target || *target == DType::bf16 ||
      std::find(convert_dtypes().begin(), convert_dtypes().end(), *target) ==
          convert_dtypes().end())
    throw error(n, fmt::format("a cast to {} is not supported (the convert op has f32, f16, f64, "
                               "i32, i64, i8, i16, u8 and bool)",
                               onnx_type_name(to)));
  const TensorDesc x = data(n, 0, convert_dtypes());
  if (to_bool) {
    const std::string zero = scalar_constant(n, "zero", 0, x.dtype);
    Layer& l =
        add_layer(n, LayerKind::compare, {x.name, data_by_name(n, zero).name}, DType::u8, x.shape);
    l.fn = "ne";
    return;
  }
  if (x.dtype == *target) {
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
    return;
  }
  add_layer(n, LayerKind::convert, {x.name}, *target, x.shape);
}

void OnnxImporter::import_compare(const Node& n, const std::string& fn) {
  NodeAttrs a(*this, n,
              opset_ < 7 ? std::set<std::string>{"broadcast", "axis"} : std::set<std::string>{});
  check_outputs(n, 1);
  const std::vector<DType> types = isa_input_dtypes("compare", "fn", fn);
  const TensorDesc x = data(n, 0, types);
  const TensorDesc y = data(n, 1, types);
  if (x.dtype != y.dtype)
    throw error(n, fmt::format("inputs of dtypes {} and {}", isa::dtype_name(x.dtype),
                               isa::dtype_name(y.dtype)));
  const std::string b = opset_ < 7 ? legacy_broadcast(n, a, x, y) : y.name;
  auto out = broadcast_shapes(x.shape, w_.tensor(b).shape);
  if (!out)
    throw error(n, fmt::format("input '{}' {} does not broadcast with {}", y.name,
                               isa::shape_str(y.shape), isa::shape_str(x.shape)));
  add_layer(n, LayerKind::compare, {x.name, b}, DType::u8, *out).fn = fn;
}

// On bools (u8 0/1): And = min, Or = max, Xor = (x != y), Not = (x == 0).
void OnnxImporter::import_logic(const Node& n, const std::string& op) {
  NodeAttrs a(*this, n,
              opset_ < 7 ? std::set<std::string>{"broadcast", "axis"} : std::set<std::string>{});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, {DType::u8});
  if (op == "not") {
    const std::string zero = scalar_constant(n, "zero", 0, DType::u8);
    add_layer(n, LayerKind::compare, {x.name, data_by_name(n, zero).name}, DType::u8, x.shape).fn =
        "eq";
    return;
  }
  const TensorDesc y = data(n, 1, {DType::u8});
  const std::string b = opset_ < 7 ? legacy_broadcast(n, a, x, y) : y.name;
  auto out = broadcast_shapes(x.shape, w_.tensor(b).shape);
  if (!out)
    throw error(n, fmt::format("input '{}' {} does not broadcast with {}", y.name,
                               isa::shape_str(y.shape), isa::shape_str(x.shape)));
  if (op == "xor") {
    add_layer(n, LayerKind::compare, {x.name, b}, DType::u8, *out).fn = "ne";
    return;
  }
  add_layer(n, LayerKind::eltwise, {x.name, b}, DType::u8, *out).fn = op == "and" ? "min" : "max";
}

void OnnxImporter::import_where(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc c = data(n, 0, {DType::u8});
  const TensorDesc x = data(n, 1, select_dtypes());
  const TensorDesc y = data(n, 2, select_dtypes());
  if (x.dtype != y.dtype)
    throw error(n, fmt::format("inputs of dtypes {} and {}", isa::dtype_name(x.dtype),
                               isa::dtype_name(y.dtype)));
  auto out = broadcast_shapes(c.shape, x.shape);
  if (out) out = broadcast_shapes(*out, y.shape);
  if (!out) throw error(n, "the condition and the inputs do not broadcast together");
  add_layer(n, LayerKind::select, {c.name, x.name, y.name}, x.dtype, *out);
}

// GatherElements, and Gather when its indices are data (gather = false: elements).
void OnnxImporter::import_gather_index(const Node& n, bool elements) {
  NodeAttrs a(*this, n, {"axis"});
  check_outputs(n, 1);
  std::vector<DType> types;
  for (const auto& row : isa::OpTable::builtin().get("gather").dtypes)
    if (std::find(types.begin(), types.end(), row[0]) == types.end()) types.push_back(row[0]);
  const TensorDesc x = data(n, 0, types);
  const TensorDesc idx = data(n, 1, {DType::i64, DType::i32});
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  axis = axis_in(axis, rank);
  if (axis > 2 || rank - axis - 1 > 2)
    throw error(n, fmt::format("axis {} of rank {}: the gather op takes at most two dims before "
                               "the axis and two after it",
                               axis, rank));
  Shape out;
  if (elements) {
    if (idx.shape.size() != x.shape.size())
      throw error(n, fmt::format("indices {} must have the rank of the input {}",
                                 isa::shape_str(idx.shape), isa::shape_str(x.shape)));
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && idx.shape[d] > x.shape[d])
        throw error(n, fmt::format("indices {} exceed the input {} in dim {}",
                                   isa::shape_str(idx.shape), isa::shape_str(x.shape), d));
    out = idx.shape;
  } else {
    out.assign(x.shape.begin(), x.shape.begin() + axis);
    out.insert(out.end(), idx.shape.begin(), idx.shape.end());
    out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
    if (out.size() > 6)
      throw error(n, fmt::format("the output would have rank {}; fracsim takes rank 6 or less",
                                 out.size()));
  }
  Layer& l = add_layer(n, LayerKind::gather_index, {x.name, idx.name}, x.dtype, out);
  l.axis = axis;
  l.flat_axis = !elements;
}

// Trilu: a select of x and 0 with a constant mask over the last two dims (upper: j - i >= k;
// lower: j - i <= k).
void OnnxImporter::import_trilu(const Node& n) {
  NodeAttrs a(*this, n, {"upper"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, select_dtypes());
  require_rank(n, x, 2, 6);
  int64_t k = 0;
  if (has_input(n, 1)) {
    const std::vector<int64_t> v = constant_ints(n, 1, "k");
    if (v.size() != 1) throw error(n, "input 1 (k) must hold one integer");
    k = v[0];
  }
  const bool upper = a.get_bool("upper", true);
  const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
  HostTensor mask{onnx::TensorProto::UINT8, {rows, cols}, {}};
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask.v.push_back((upper ? j - i >= k : j - i <= k) ? 1 : 0);
  const std::string mask_name = n.output(0) + ".mask";
  constants_[mask_name] = to_proto(mask, mask_name);
  const std::string zero = scalar_constant(n, "zero", 0, x.dtype);
  add_layer(n, LayerKind::select,
            {data_by_name(n, mask_name).name, x.name, data_by_name(n, zero).name}, x.dtype,
            x.shape);
}

// Split: each output a slice view of the input along the axis.
void OnnxImporter::import_split(const Node& n) {
  const bool attr = opset_ < 13;
  NodeAttrs a(*this, n,
              attr ? std::set<std::string>{"axis", "split"} : std::set<std::string>{"axis"});
  const TensorDesc x = data(n, 0, isa_input_dtypes("eltwise", "fn", "max"));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = a.get_int("axis", 0);
  if (axis < -rank || axis >= rank)
    throw error(n, fmt::format("attribute 'axis' = {} is out of range for rank {}", axis, rank));
  axis = axis_in(axis, rank);
  std::vector<int64_t> split;
  if (attr)
    split = a.get_ints("split").value_or(split);
  else if (has_input(n, 1))
    split = constant_ints(n, 1, "split");
  const int64_t parts = n.output_size();
  if (split.empty()) {
    if (x.shape[axis] % parts != 0)
      throw error(
          n, fmt::format("extent {} does not split into {} equal parts", x.shape[axis], parts));
    split.assign(parts, x.shape[axis] / parts);
  }
  int64_t total = 0;
  for (int64_t s : split) total += s;
  if (static_cast<int64_t>(split.size()) != parts || total != x.shape[axis])
    throw error(n, fmt::format("split {} does not divide extent {} into {} outputs", split,
                               x.shape[axis], parts));
  int64_t start = 0;
  for (int64_t i = 0; i < parts; ++i) {
    Shape out = x.shape;
    out[axis] = split[i];
    if (!n.output(i).empty()) {
      Layer& l = add_layer(n, LayerKind::slice, {x.name}, x.dtype, out, n.output(i));
      l.starts.assign(rank, 0);
      l.starts[axis] = start;
      l.steps.assign(rank, 1);
    }
    start += split[i];
  }
}

}  // namespace fracsim::compiler
