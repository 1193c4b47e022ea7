// The ONNX front end's aliases, views and constant folding: Identity, inference-mode Dropout,
// Squeeze and Unsqueeze become views (no instruction); a node whose inputs are constants is
// evaluated at import (onnx_fold.h).
#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

// Every dtype of the ISA: a view moves no element, so it takes them all.
std::vector<DType> all_dtypes() {
  std::vector<DType> out;
  for (int c = 0; c < isa::kDTypeCount; ++c) out.push_back(*isa::dtype_from_code(c));
  return out;
}

}  // namespace

bool OnnxImporter::fold(const Node& n) {
  if (!fold_ops().count(n.op_type())) return false;
  const bool shape_only = n.op_type() == "Shape" || n.op_type() == "Size";
  std::vector<std::optional<HostTensor>> in;
  for (int i = 0; i < n.input_size(); ++i) {
    const std::string& name = n.input(i);
    if (name.empty()) {
      in.emplace_back();
      continue;
    }
    auto c = constants_.find(name);
    if (shape_only) {
      HostTensor h;
      if (const TensorDesc* t = w_.find_tensor(name)) {
        h.shape = t->shape;
      } else if (c != constants_.end()) {
        h.shape = tensor_shape(c->second);
      } else if (auto gi = graph_inputs_.find(name); gi != graph_inputs_.end()) {
        const auto& tt = gi->second->type().tensor_type();
        if (!tt.has_shape()) return false;
        for (const auto& d : tt.shape().dim()) {
          if (!d.has_dim_value()) return false;
          h.shape.push_back(d.dim_value());
        }
      } else {
        return false;
      }
      in.emplace_back(std::move(h));
      continue;
    }
    // An input given a value is data the node computes on, not a constant of the model.
    if (c == constants_.end() || input_values_.count(name) || !tensor_has_data(c->second))
      return false;
    auto h = host_tensor(c->second);
    if (!h) return false;
    in.emplace_back(std::move(*h));
  }
  std::vector<HostTensor> out;
  try {
    out = fold_node(n, opset_, in);
  } catch (const std::invalid_argument& e) {
    fold_refusal_ = e.what();
    return false;  // lowered, or refused, as any other node
  }
  for (size_t i = 0; i < out.size() && static_cast<int>(i) < n.output_size(); ++i) {
    const std::string& name = n.output(static_cast<int>(i));
    if (name.empty()) continue;
    if (w_.find_tensor(name) || constants_.count(name))
      throw error(n, fmt::format("output '{}' is already defined", name));
    constants_[name] = to_proto(out[i], name);
  }
  return true;
}

void OnnxImporter::import_identity(const Node& n) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, all_dtypes(), true);
  add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
}

// Inference: the output is the input (the mask, all true, is a bool tensor the ISA lacks).
void OnnxImporter::import_dropout(const Node& n) {
  if (opset_ < 7) {
    NodeAttrs a(*this, n, {"is_test", "ratio"});
    if (!a.get_bool("is_test", false))
      throw error(n, "attribute 'is_test' = 0 (training) is not supported: only inference");
  } else {
    NodeAttrs a(*this, n, {"ratio", "seed"});
    if (has_input(n, 2)) {
      auto c = constants_.find(n.input(2));
      auto h = c == constants_.end() ? std::nullopt : host_tensor(c->second);
      if (!h || h->v.size() != 1)
        throw error(n, "input 2 (training_mode) must be a constant: fracsim runs inference");
      if (h->v[0] != 0) throw error(n, "training_mode = true is not supported: only inference");
    }
  }
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, all_dtypes());
  add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
}

void OnnxImporter::import_squeeze(const Node& n, bool unsqueeze) {
  const bool axes_input = opset_ >= 13;
  NodeAttrs a(*this, n, axes_input ? std::set<std::string>{} : std::set<std::string>{"axes"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0, all_dtypes());
  std::optional<std::vector<int64_t>> axes;
  if (axes_input) {
    if (has_input(n, 1)) axes = constant_ints(n, 1, "axes");
  } else {
    axes = a.get_ints("axes");
  }
  if (unsqueeze && !axes) throw error(n, "the axes are missing");
  const int64_t rank = static_cast<int64_t>(x.shape.size() + (unsqueeze ? axes->size() : 0));
  std::vector<bool> marked(rank, false);
  if (axes)
    for (int64_t ax : *axes) {
      if (ax < -rank || ax >= rank)
        throw error(n, fmt::format("axis {} is out of range for rank {}", ax, rank));
      if (ax < 0) ax += rank;
      if (marked[ax]) throw error(n, fmt::format("axes {} repeat an axis", *axes));
      marked[ax] = true;
      if (!unsqueeze && x.shape[ax] != 1)
        throw error(n, fmt::format("axis {} of {} has extent {}, not 1", ax,
                                   isa::shape_str(x.shape), x.shape[ax]));
    }
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (unsqueeze) {
      out.push_back(marked[i] ? 1 : x.shape[k++]);
    } else if (!(axes ? marked[i] : x.shape[i] == 1)) {
      out.push_back(x.shape[i]);
    }
  }
  add_layer(n, LayerKind::reshape, {x.name}, x.dtype, out);
}

std::string OnnxImporter::legacy_broadcast(const Node& n, const NodeAttrs& a, const TensorDesc& x,
                                           const TensorDesc& y) {
  if (opset_ >= 7 || !a.get_bool("broadcast", false)) return y.name;
  const int64_t rank = static_cast<int64_t>(x.shape.size()),
                yr = static_cast<int64_t>(y.shape.size());
  int64_t axis = a.get_int("axis", rank - yr);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis + yr > rank)
    throw error(
        n, fmt::format("attribute 'axis' = {} does not place B {} within A {}",
                       a.get_int("axis", 0), isa::shape_str(y.shape), isa::shape_str(x.shape)));
  if (axis + yr == rank) return y.name;
  Shape s = y.shape;
  s.resize(static_cast<size_t>(rank - axis), 1);
  const std::string name = n.output(0) + ".broadcast_b";
  add_layer(n, LayerKind::reshape, {y.name}, y.dtype, s, name);
  return name;
}

}  // namespace fracsim::compiler
