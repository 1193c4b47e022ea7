#include "compiler/onnx_import.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

std::optional<isa::DType> dtype_from_onnx(int32_t elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::FLOAT:
      return isa::DType::f32;
    case onnx::TensorProto::INT32:
      return isa::DType::i32;
    case onnx::TensorProto::INT16:
      return isa::DType::i16;
    case onnx::TensorProto::INT8:
      return isa::DType::i8;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:  // a u8 holding 0 or 1
      return isa::DType::u8;
    case onnx::TensorProto::UINT16:
      return isa::DType::u16;
    case onnx::TensorProto::UINT32:
      return isa::DType::u32;
    case onnx::TensorProto::UINT64:
      return isa::DType::u64;
    case onnx::TensorProto::INT64:
      return isa::DType::i64;
    case onnx::TensorProto::FLOAT16:
      return isa::DType::f16;
    case onnx::TensorProto::BFLOAT16:
      return isa::DType::bf16;
    case onnx::TensorProto::DOUBLE:
      return isa::DType::f64;
    default:
      return std::nullopt;
  }
}

std::string onnx_type_name(int32_t elem_type) {
  if (!onnx::TensorProto::DataType_IsValid(elem_type)) return fmt::format("type {}", elem_type);
  return onnx::TensorProto::DataType_Name(static_cast<onnx::TensorProto::DataType>(elem_type));
}

// The workload as written, or at options.batch (below).
Workload import_written_or_batched(const onnx::ModelProto& model, const std::string& file,
                                   const std::map<std::string, onnx::TensorProto>& input_values,
                                   const CompileOptions& options);

Workload load_onnx(const std::string& path, const CompileOptions& options) {
  return load_onnx(path, std::map<std::string, onnx::TensorProto>(), options);
}

Workload load_onnx(const std::string& path,
                   const std::map<std::string, onnx::TensorProto>& input_values,
                   const CompileOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", path));
  onnx::ModelProto model;
  if (!model.ParseFromIstream(&in))
    throw ConfigError(
        fmt::format("{}: not an ONNX model (the file does not parse as an ONNX "
                    "ModelProto)",
                    path));
  if (!model.has_graph())
    throw ConfigError(fmt::format("{}: not an ONNX model (it has no graph)", path));
  try {
    return import_onnx(model, path, input_values, options);
  } catch (const ConfigError& e) {
    // Every message names the file, those of the tensor readers too.
    const std::string what = e.what();
    if (what.compare(0, path.size(), path) == 0) throw;
    throw ConfigError(fmt::format("{}: {}", path, what));
  }
}

// At options.batch the model is imported twice: as written, to find the inputs that carry the
// batch and refuse the nodes it cannot pass; then with those inputs' dim 0 at the batch and the
// stored shapes dropped, so that the importer and ONNX's shape inference both carry it through.
Workload import_onnx(const onnx::ModelProto& model, const std::string& file,
                     const std::map<std::string, onnx::TensorProto>& input_values,
                     const CompileOptions& options) {
  // Weights kept in files beside the model are not read: refuse them rather than take the
  // weight for an input.
  for (const onnx::TensorProto& t : model.graph().initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) {
      std::string location;
      for (const auto& kv : t.external_data())
        if (kv.key() == "location") location = kv.value();
      throw ConfigError(fmt::format(
          "{}: initializer '{}' keeps its data in an external file ('{}'); fracsim reads "
          "models that hold their tensors (save the model without external data)",
          file, t.name(), location));
    }
  Workload w = import_written_or_batched(model, file, input_values, options);
  w.fuse = options.fuse;
  w.fold_batchnorm = options.fold_batchnorm;
  return w;
}

Workload import_written_or_batched(const onnx::ModelProto& model, const std::string& file,
                                   const std::map<std::string, onnx::TensorProto>& input_values,
                                   const CompileOptions& options) {
  if (!options.batch) return OnnxImporter(model, file, input_values).run();
  BatchTracker tracker(*options.batch);
  const Workload written = OnnxImporter(model, file, input_values, &tracker).run();
  onnx::ModelProto batched = model;
  onnx::GraphProto& g = *batched.mutable_graph();
  for (onnx::ValueInfoProto& v : *g.mutable_input())
    if (tracker.carries(v.name()))
      v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(
          *options.batch);
  g.clear_value_info();
  for (onnx::ValueInfoProto& v : *g.mutable_output())
    if (v.type().has_tensor_type()) v.mutable_type()->mutable_tensor_type()->clear_shape();
  Workload w = OnnxImporter(batched, file, input_values).run();
  check_batched_shapes(written, w, tracker, *options.batch);
  return w;
}

NodeAttrs::NodeAttrs(const OnnxImporter& im, const onnx::NodeProto& node,
                     std::set<std::string> known)
    : im_(im), node_(node) {
  for (const onnx::AttributeProto& a : node.attribute())
    // consumed_inputs (opsets before 6) only described in-place buffer reuse: no meaning here.
    if (!known.count(a.name()) && !(a.name() == "consumed_inputs" && im.opset() < 6))
      throw im.error(node, fmt::format("attribute '{}' is not supported", a.name()));
}

const onnx::AttributeProto* NodeAttrs::find(const std::string& name) const {
  for (const onnx::AttributeProto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

int64_t NodeAttrs::get_int(const std::string& name, int64_t fallback) const {
  const onnx::AttributeProto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::INT)
    throw im_.error(node_, fmt::format("attribute '{}' must be an integer", name));
  return a->i();
}

bool NodeAttrs::get_bool(const std::string& name, bool fallback) const {
  const int64_t v = get_int(name, fallback ? 1 : 0);
  if (v != 0 && v != 1)
    throw im_.error(node_, fmt::format("attribute '{}' must be 0 or 1, got {}", name, v));
  return v == 1;
}

double NodeAttrs::get_float(const std::string& name, double fallback) const {
  const onnx::AttributeProto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::FLOAT)
    throw im_.error(node_, fmt::format("attribute '{}' must be a float", name));
  return a->f();
}

std::string NodeAttrs::get_string(const std::string& name, const std::string& fallback) const {
  const onnx::AttributeProto* a = find(name);
  if (!a) return fallback;
  if (a->type() != onnx::AttributeProto::STRING)
    throw im_.error(node_, fmt::format("attribute '{}' must be a string", name));
  return a->s();
}

std::optional<std::vector<int64_t>> NodeAttrs::get_ints(const std::string& name) const {
  const onnx::AttributeProto* a = find(name);
  if (!a) return std::nullopt;
  if (a->type() != onnx::AttributeProto::INTS)
    throw im_.error(node_, fmt::format("attribute '{}' must be a list of integers", name));
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

OnnxImporter::OnnxImporter(const onnx::ModelProto& model, std::string file,
                           const std::map<std::string, onnx::TensorProto>& input_values,
                           BatchTracker* tracker)
    : model_(model), file_(std::move(file)), input_values_(input_values), tracker_(tracker) {}

ConfigError OnnxImporter::error(const onnx::NodeProto& node, const std::string& message) const {
  const std::string who = node.name().empty() ? fmt::format("node {}", node_index_)
                                              : fmt::format("node '{}'", node.name());
  return ConfigError(fmt::format("{}: {} ({}): {}", file_, who, node.op_type(), message));
}

Workload OnnxImporter::run() {
  const onnx::GraphProto& g = model_.graph();
  for (const onnx::OperatorSetIdProto& o : model_.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
  if (opset_ > kMaxOnnxOpset)
    throw ConfigError(fmt::format("{}: opset {} of the default domain is newer than the importer "
                                  "reads (up to {})",
                                  file_, opset_, kMaxOnnxOpset));
  std::string name = g.name();
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  w_.name = name.empty() ? std::filesystem::path(file_).stem().string() : name;
  w_.file = file_;
  // A tensor declared twice (a graph input, output or value_info) with two fixed shapes is the
  // model's contradiction; ONNX's inference would take one of them and disagree with the nodes.
  {
    std::map<std::string, std::pair<isa::Shape, const char*>>& declared = declared_;
    auto declare = [&](const onnx::ValueInfoProto& v, const char* as) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      isa::Shape s;
      for (const auto& d : v.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value()) return;
        s.push_back(d.dim_value());
      }
      auto [it, fresh] = declared.try_emplace(v.name(), s, as);
      if (!fresh && it->second.first != s)
        throw ConfigError(fmt::format("{}: tensor '{}' is declared {} as {} and {} as {}", file_,
                                      v.name(), isa::shape_str(it->second.first), it->second.second,
                                      isa::shape_str(s), as));
    };
    for (const auto& v : g.input()) declare(v, "a graph input");
    for (const auto& v : g.output()) declare(v, "a graph output");
    for (const auto& v : g.value_info()) declare(v, "a value_info");
  }
  read_inputs();
  try {
    for (node_index_ = 0; node_index_ < g.node_size(); ++node_index_)
      import_node(g.node(node_index_));
  } catch (const ConfigError&) {
    // A shape of an earlier node that ONNX's inference disagrees with is the first error.
    check_shapes(node_index_);
    throw;
  }
  const std::string rejected = check_shapes(g.node_size());
  for (const onnx::ValueInfoProto& out : g.output()) {
    auto c = constants_.find(out.name());
    if (!w_.find_tensor(out.name()) && c != constants_.end()) add_constant_output(c->second);
    const TensorDesc* t = w_.find_tensor(out.name());
    bool computed = false;
    for (const Layer& l : w_.layers) {
      computed = computed || l.name == out.name();
      for (const TensorDesc& m : l.more_outputs) computed = computed || m.name == out.name();
    }
    if (!t || !computed)
      throw ConfigError(
          fmt::format("{}: graph output '{}' is not computed by any node (an "
                      "output must be a node's output)",
                      file_, out.name()));
    if (!w_.is_output(out.name())) w_.outputs.push_back(out.name());
  }
  if (!rejected.empty())
    throw ConfigError(
        fmt::format("{}: ONNX shape inference rejects the model: {}", file_, rejected));
  if (w_.outputs.empty()) throw ConfigError(fmt::format("{}: the graph has no outputs", file_));
  if (w_.layers.empty()) throw ConfigError(fmt::format("{}: the graph has no nodes", file_));
  if (tracker_) track_batch();
  return std::move(w_);
}

std::string OnnxImporter::check_shapes(int nodes) {
  onnx::ModelProto model = model_;
  onnx::GraphProto& g = *model.mutable_graph();
  g.mutable_node()->DeleteSubrange(nodes, g.node_size() - nodes);
  // ONNX's shape inference trusts the graph to define each tensor once, before its use:
  // libonnx 1.12 crashes on an EyeLike of an undefined tensor, and a tensor defined by two
  // nodes gets the later one's shape. Such a model is not given to it (the import refuses the
  // node at fault).
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const onnx::NodeProto& n : g.node()) {
    for (const std::string& in : n.input())
      if (!in.empty() && !defined.count(in)) return "";
    for (const std::string& out : n.output())
      if (!out.empty() && !defined.insert(out).second) return "";
  }
  try {
    onnx::shape_inference::InferShapes(model);
  } catch (const std::exception& e) {
    return e.what();
  }
  auto note = [&](const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
    isa::Shape s;
    for (const auto& d : v.type().tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return;
      s.push_back(d.dim_value());
    }
    inferred_[v.name()] = s;
  };
  for (const auto& v : g.value_info()) note(v);
  for (const auto& v : g.output()) note(v);
  for (size_t i = 0; i < w_.layers.size(); ++i) {
    // (A node the import refused may have added layers before it did.)
    if (layer_nodes_[i] < 0 || layer_nodes_[i] >= nodes) continue;
    node_index_ = layer_nodes_[i];
    const onnx::NodeProto& n = g.node(node_index_);
    check_inferred(n, w_.layers[i].output);
    for (const TensorDesc& t : w_.layers[i].more_outputs)
      if (!t.name.empty() &&
          std::find(n.output().begin(), n.output().end(), t.name) != n.output().end())
        check_inferred(n, t);
  }
  return "";
}

void OnnxImporter::track_batch() {
  const std::set<std::string> weights = weight_inputs(w_);
  for (const TensorDesc& t : w_.inputs) {
    if (w_.weights.count(t.name) || weights.count(t.name) || w_.contents.count(t.name)) continue;
    if (auto why = tracker_->add_input(t)) throw ConfigError(fmt::format("{}: {}", file_, *why));
  }
  if (tracker_->written_batch() == 0)
    throw ConfigError(fmt::format(
        "{}: --batch {}: no input carries the batch (every graph input is a weight or has data)",
        file_, tracker_->batch()));
  for (size_t i = 0; i < w_.layers.size(); ++i) {
    auto why = tracker_->add_layer(w_, w_.layers[i]);
    if (!why) continue;
    if (layer_nodes_[i] < 0)
      throw ConfigError(fmt::format("{}: '{}': {}", file_, w_.layers[i].name, *why));
    node_index_ = layer_nodes_[i];
    throw error(model_.graph().node(node_index_), *why);
  }
}

// A graph output that is a constant: the constant as a weight "<name>.value", copied into a
// layer that computes the output (its instruction named by the output, as no node computes it).
void OnnxImporter::add_constant_output(const onnx::TensorProto& c) {
  auto dt = dtype_from_onnx(c.data_type());
  if (!dt)
    throw ConfigError(
        fmt::format("{}: graph output '{}' has dtype {}, which the ISA lacks (it has {})", file_,
                    c.name(), onnx_type_name(c.data_type()), isa::dtype_names()));
  if (!tensor_has_data(c))
    throw ConfigError(
        fmt::format("{}: graph output '{}' is a constant without data", file_, c.name()));
  TensorDesc value{c.name() + ".value", *dt, tensor_shape(c)};
  if (value.shape.size() > 6)
    throw ConfigError(fmt::format("{}: graph output '{}' {} has rank {}; fracsim takes tensors of "
                                  "rank 6 or less",
                                  file_, c.name(), isa::shape_str(value.shape),
                                  value.shape.size()));
  w_.inputs.push_back(value);
  w_.contents[value.name] = tensor_bytes(c, *dt);
  w_.weights.insert(value.name);
  Layer l;
  l.name = c.name();
  l.kind = LayerKind::eltwise;
  l.fn = "max";
  l.inputs = {value.name};
  l.output = {c.name(), *dt, value.shape};
  w_.layers.push_back(std::move(l));
  layer_nodes_.push_back(-1);
}

void OnnxImporter::read_inputs() {
  const onnx::GraphProto& g = model_.graph();
  for (const onnx::TensorProto& t : g.initializer()) {
    check_countable(t, file_);
    constants_[t.name()] = t;
  }
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (v.has_type() && !v.type().has_tensor_type())
      throw ConfigError(fmt::format(
          "{}: input '{}' is a {}, not a tensor (fracsim takes tensors only)", file_, v.name(),
          v.type().has_sequence_type() ? "sequence"
                                       : (v.type().has_optional_type() ? "optional" : "map")));
    auto given = input_values_.find(v.name());
    if (given != input_values_.end()) {
      check_countable(given->second, file_);
      constants_[v.name()] = given->second;
      continue;
    }
    if (constants_.count(v.name())) continue;  // an initializer listed as an input too
    graph_inputs_[v.name()] = &v;
  }
  for (const auto& [name, value] : input_values_) {
    bool declared = false;
    for (const onnx::ValueInfoProto& v : g.input()) declared = declared || v.name() == name;
    if (!declared)
      throw ConfigError(
          fmt::format("{}: a value is given for '{}', which is no graph input", file_, name));
  }
  // Inputs without a value become the workload's inputs in declaration order, when their
  // dtype is the ISA's (others can only be refused where a node uses them).
  for (const onnx::ValueInfoProto& v : g.input()) {
    if (!graph_inputs_.count(v.name())) continue;
    const auto& tt = v.type().tensor_type();
    auto dt = dtype_from_onnx(tt.elem_type());
    if (!dt) continue;
    TensorDesc t{v.name(), *dt, {}};
    if (!tt.has_shape())
      throw ConfigError(fmt::format("{}: input '{}' has no shape (fracsim needs static shapes)",
                                    file_, v.name()));
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value() || d.dim_value() <= 0)
        throw ConfigError(fmt::format(
            "{}: input '{}' has a dynamic or empty dim '{}' (fracsim needs static shapes of "
            "positive extents)",
            file_, v.name(), d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value())));
      t.shape.push_back(d.dim_value());
    }
    int64_t elements = 1;
    for (int64_t e : t.shape)
      if (__builtin_mul_overflow(elements, e, &elements) || elements > kMaxTensorElements)
        throw ConfigError(fmt::format("{}: input '{}': {} has more than 2^48 elements", file_,
                                      v.name(), isa::shape_str(t.shape)));
    w_.inputs.push_back(t);
  }
}

const TensorDesc& OnnxImporter::data(const Node& n, int i, std::vector<isa::DType> dtypes,
                                     bool allow_empty) {
  if (dtypes.empty()) dtypes = {isa::DType::f32};
  if (!has_input(n, i)) throw error(n, fmt::format("input {} is missing", i));
  const std::string& name = n.input(i);
  const TensorDesc* t = w_.find_tensor(name);
  if (!t) {
    auto c = constants_.find(name);
    auto gi = graph_inputs_.find(name);
    if (c != constants_.end()) {
      auto dt = dtype_from_onnx(c->second.data_type());
      if (!dt)
        throw error(n, fmt::format("input '{}' has dtype {}, which the ISA lacks (it has {})", name,
                                   onnx_type_name(c->second.data_type()), isa::dtype_names()));
      TensorDesc d{name, *dt, tensor_shape(c->second)};
      for (int64_t e : d.shape)
        if (e < 0 || (e == 0 && !allow_empty))
          throw error(n, fmt::format("input '{}' has an empty shape {} (fracsim takes empty "
                                     "tensors in Reshape only)",
                                     name, isa::shape_str(d.shape)));
      if (tensor_has_data(c->second)) w_.contents[name] = tensor_bytes(c->second, *dt);
      if (!input_values_.count(name)) w_.weights.insert(name);
      w_.inputs.push_back(d);
    } else if (gi != graph_inputs_.end()) {
      throw error(n, fmt::format("input '{}' has dtype {}, which the ISA lacks (it has {})", name,
                                 onnx_type_name(gi->second->type().tensor_type().elem_type()),
                                 isa::dtype_names()));
    } else {
      throw error(n, fmt::format("input '{}' is not defined before the node", name));
    }
    t = &w_.inputs.back();
  }
  if (!allow_empty && isa::num_elements(t->shape) == 0)
    throw error(n, fmt::format("input '{}' has an empty shape {} (fracsim takes empty tensors in "
                               "Reshape only)",
                               name, isa::shape_str(t->shape)));
  if (std::find(dtypes.begin(), dtypes.end(), t->dtype) == dtypes.end()) {
    std::vector<std::string> names;
    for (isa::DType d : dtypes) names.emplace_back(isa::dtype_name(d));
    throw error(n, fmt::format("input '{}' has dtype {}; this op takes {}", name,
                               isa::dtype_name(t->dtype), fmt::join(names, ", ")));
  }
  if (t->shape.size() > 6)
    throw error(n, fmt::format("input '{}' {} has rank {}; fracsim takes tensors of rank 6 or less",
                               name, isa::shape_str(t->shape), t->shape.size()));
  return *t;
}

std::vector<int64_t> OnnxImporter::constant_ints(const Node& n, int i,
                                                 const std::string& what) const {
  if (!has_input(n, i)) throw error(n, fmt::format("input {} ({}) is missing", i, what));
  const std::string& name = n.input(i);
  auto c = constants_.find(name);
  if (c == constants_.end())
    throw error(n, fmt::format("input '{}' ({}) must be a constant: an initializer, a Constant "
                               "node's output or an input given a value",
                               name, what));
  if (!tensor_has_data(c->second))
    throw error(n, fmt::format("input '{}' ({}) has no data", name, what));
  const int32_t type = c->second.data_type();
  if (type != onnx::TensorProto::INT64 && type != onnx::TensorProto::INT32)
    throw error(n, fmt::format("input '{}' ({}) must be int64 or int32, got {}", name, what,
                               onnx_type_name(type)));
  return tensor_ints(c->second);
}

void OnnxImporter::check_outputs(const Node& n, int allowed) const {
  for (int i = allowed; i < n.output_size(); ++i)
    if (!n.output(i).empty())
      throw error(n, fmt::format("output {} ('{}') is not supported", i, n.output(i)));
}

void OnnxImporter::require_rank(const Node& n, const TensorDesc& t, size_t lo, size_t hi) const {
  if (t.shape.size() < lo || t.shape.size() > hi)
    throw error(n, lo == hi ? fmt::format("input '{}' {} must have rank {}", t.name,
                                          isa::shape_str(t.shape), lo)
                            : fmt::format("input '{}' {} must have a rank from {} to {}", t.name,
                                          isa::shape_str(t.shape), lo, hi));
}

Layer& OnnxImporter::add_layer(const Node& n, LayerKind kind, std::vector<std::string> inputs,
                               isa::DType dtype, isa::Shape shape, const std::string& layer) {
  if (layer.empty() && (n.output_size() < 1 || n.output(0).empty()))
    throw error(n, "the node has no output");
  const std::string name = layer.empty() ? n.output(0) : layer;
  if (w_.find_tensor(name) || constants_.count(name))
    throw error(n, fmt::format("output '{}' is already defined", name));
  for (int64_t e : shape)
    if (e < 0 || (e == 0 && kind != LayerKind::reshape))
      throw error(n, fmt::format("the output '{}' would have the shape {}; fracsim takes no "
                                 "empty tensors (but in Reshape)",
                                 name, isa::shape_str(shape)));
  Layer l;
  l.name = name;
  // Names the layer's instructions: ONNX node names are optional, unnamed ones get their op type
  // and index in the graph.
  l.node = n.name().empty() ? fmt::format("{}_{}", n.op_type(), node_index_) : n.name();
  l.kind = kind;
  l.inputs = std::move(inputs);
  l.output = {name, dtype, std::move(shape)};
  w_.layers.push_back(std::move(l));
  layer_nodes_.push_back(node_index_);
  return w_.layers.back();
}

void OnnxImporter::check_inferred(const Node& n, const TensorDesc& t) const {
  auto it = inferred_.find(t.name);
  if (it == inferred_.end() || it->second == t.shape) return;
  // ONNX's inference keeps a shape the model declares; one the node cannot give is the model's.
  auto d = declared_.find(t.name);
  if (d != declared_.end() && d->second.first != t.shape)
    throw error(n, fmt::format("output '{}' is {} but the model declares it {} as {}", t.name,
                               isa::shape_str(t.shape), isa::shape_str(d->second.first),
                               d->second.second));
  // Otherwise the two read the node differently. The known case: a pooling with ceil_mode
  // whose last window would start past the input and its begin padding, which fracsim drops
  // (as PyTorch does) and the ONNX shape inference of this build keeps.
  bool ceil_mode = false;
  for (const onnx::AttributeProto& a : n.attribute())
    ceil_mode = ceil_mode || (a.name() == "ceil_mode" && a.i() != 0);
  throw error(n, fmt::format("output '{}' is {} but ONNX shape inference says {}{}", t.name,
                             isa::shape_str(t.shape), isa::shape_str(it->second),
                             ceil_mode ? " (with ceil_mode, fracsim drops a last window that "
                                         "would start past the input and its begin padding)"
                                       : ""));
}

namespace {

// Whether a node of the op may leave its first output out: the recurrent ops may (every output
// of theirs is optional in ONNX, Y too); every other op names it.
enum class FirstOutput { required, optional };

// How an op is imported.
struct OpImport {
  using Import = std::function<void(OnnxImporter&, const onnx::NodeProto&)>;
  template <typename F>
  OpImport(F f, FirstOutput first = FirstOutput::required)  // NOLINT: the table lists lambdas
      : run(std::move(f)), first_output(first) {}
  Import run;
  FirstOutput first_output;
};

}  // namespace

void OnnxImporter::import_node(const Node& n) {
  if (!n.domain().empty() && n.domain() != "ai.onnx")
    throw error(
        n, fmt::format("op domain '{}' is not supported (only the default domain)", n.domain()));
  static const std::map<std::string, OpImport> kOps = {
      {"Conv", [](OnnxImporter& im, const Node& n) { im.import_conv(n); }},
      {"ConvTranspose", [](OnnxImporter& im, const Node& n) { im.import_conv_transpose(n); }},
      {"MaxPool", [](OnnxImporter& im, const Node& n) { im.import_pool(n, LayerKind::maxpool); }},
      {"AveragePool",
       [](OnnxImporter& im, const Node& n) { im.import_pool(n, LayerKind::avgpool); }},
      {"GlobalAveragePool",
       [](OnnxImporter& im, const Node& n) {
         im.import_global_pool(n, LayerKind::global_avgpool);
       }},
      {"GlobalMaxPool", [](OnnxImporter& im,
                           const Node& n) { im.import_global_pool(n, LayerKind::global_maxpool); }},
      {"Gemm", [](OnnxImporter& im, const Node& n) { im.import_gemm(n); }},
      {"MatMul", [](OnnxImporter& im, const Node& n) { im.import_matmul(n); }},
      {"Add", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "add", 2, 2); }},
      {"Sub", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "sub", 2, 2); }},
      {"Mul", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "mul", 2, 2); }},
      {"Div", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "div", 2, 2); }},
      {"Max", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "max", 1, 1 << 20); }},
      {"Min", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "min", 1, 1 << 20); }},
      {"Relu", [](OnnxImporter& im, const Node& n) { im.import_activation(n, LayerKind::relu); }},
      {"LeakyRelu",
       [](OnnxImporter& im, const Node& n) { im.import_activation(n, LayerKind::leaky_relu); }},
      {"Sigmoid",
       [](OnnxImporter& im, const Node& n) { im.import_activation(n, LayerKind::sigmoid); }},
      {"Tanh", [](OnnxImporter& im, const Node& n) { im.import_activation(n, LayerKind::tanh); }},
      {"Exp", [](OnnxImporter& im, const Node& n) { im.import_activation(n, LayerKind::exp); }},
      {"Softmax",
       [](OnnxImporter& im, const Node& n) { im.import_softmax(n, LayerKind::softmax); }},
      {"LogSoftmax",
       [](OnnxImporter& im, const Node& n) { im.import_softmax(n, LayerKind::log_softmax); }},
      {"BatchNormalization", [](OnnxImporter& im, const Node& n) { im.import_batchnorm(n); }},
      {"LRN", [](OnnxImporter& im, const Node& n) { im.import_lrn(n); }},
      {"Flatten", [](OnnxImporter& im, const Node& n) { im.import_flatten(n); }},
      {"Reshape", [](OnnxImporter& im, const Node& n) { im.import_reshape(n); }},
      {"Transpose", [](OnnxImporter& im, const Node& n) { im.import_transpose(n); }},
      {"Concat", [](OnnxImporter& im, const Node& n) { im.import_concat(n); }},
      {"ReduceSum", [](OnnxImporter& im, const Node& n) { im.import_reduce(n, "sum"); }},
      {"ReduceMean", [](OnnxImporter& im, const Node& n) { im.import_reduce(n, "mean"); }},
      {"ReduceMax", [](OnnxImporter& im, const Node& n) { im.import_reduce(n, "max"); }},
      {"ReduceMin", [](OnnxImporter& im, const Node& n) { im.import_reduce(n, "min"); }},
      {"ReduceProd", [](OnnxImporter& im, const Node& n) { im.import_reduce(n, "prod"); }},
      {"TopK", [](OnnxImporter& im, const Node& n) { im.import_topk(n); }},
      {"LayerNormalization", [](OnnxImporter& im, const Node& n) { im.import_layernorm(n); }},
      {"Constant", [](OnnxImporter& im, const Node& n) { im.import_constant(n); }},
      {"Identity", [](OnnxImporter& im, const Node& n) { im.import_identity(n); }},
      {"Dropout", [](OnnxImporter& im, const Node& n) { im.import_dropout(n); }},
      {"Squeeze", [](OnnxImporter& im, const Node& n) { im.import_squeeze(n, false); }},
      {"Unsqueeze", [](OnnxImporter& im, const Node& n) { im.import_squeeze(n, true); }},
      {"Erf", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "erf"); }},
      {"Sqrt", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "sqrt"); }},
      {"Log", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "log"); }},
      {"Abs", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "abs"); }},
      {"Neg", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "neg"); }},
      {"Floor", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "floor"); }},
      {"Ceil", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "ceil"); }},
      {"Round", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "round"); }},
      {"Sign", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "sign"); }},
      {"Reciprocal", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "reciprocal"); }},
      {"Softplus", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "softplus"); }},
      {"Softsign", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "softsign"); }},
      {"Elu", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "elu", 1.0); }},
      {"Celu", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "celu", 1.0); }},
      {"ThresholdedRelu",
       [](OnnxImporter& im, const Node& n) { im.import_unary(n, "thresholded_relu", 1.0); }},
      {"Sin", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "sin"); }},
      {"Cos", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "cos"); }},
      {"Tan", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "tan"); }},
      {"Asin", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "asin"); }},
      {"Acos", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "acos"); }},
      {"Atan", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "atan"); }},
      {"Sinh", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "sinh"); }},
      {"Cosh", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "cosh"); }},
      {"Asinh", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "asinh"); }},
      {"Acosh", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "acosh"); }},
      {"Atanh", [](OnnxImporter& im, const Node& n) { im.import_unary(n, "atanh"); }},
      {"Clip", [](OnnxImporter& im, const Node& n) { im.import_clip(n); }},
      {"HardSigmoid", [](OnnxImporter& im, const Node& n) { im.import_hard_sigmoid(n, false); }},
      {"HardSwish", [](OnnxImporter& im, const Node& n) { im.import_hard_sigmoid(n, true); }},
      {"Selu", [](OnnxImporter& im, const Node& n) { im.import_selu(n); }},
      {"PRelu", [](OnnxImporter& im, const Node& n) { im.import_prelu(n); }},
      {"Pow", [](OnnxImporter& im, const Node& n) { im.import_binary_fn(n, "pow"); }},
      {"Mod", [](OnnxImporter& im, const Node& n) { im.import_binary_fn(n, "mod"); }},
      {"Sum", [](OnnxImporter& im, const Node& n) { im.import_eltwise(n, "add", 1, 1 << 20); }},
      {"Mean", [](OnnxImporter& im, const Node& n) { im.import_mean(n); }},
      {"Expand", [](OnnxImporter& im, const Node& n) { im.import_expand(n); }},
      {"Slice", [](OnnxImporter& im, const Node& n) { im.import_slice(n); }},
      {"Gather", [](OnnxImporter& im, const Node& n) { im.import_gather(n); }},
      {"Pad", [](OnnxImporter& im, const Node& n) { im.import_pad(n); }},
      {"ReduceSumSquare",
       [](OnnxImporter& im, const Node& n) { im.import_reduce_composite(n, "square", ""); }},
      {"ReduceL1",
       [](OnnxImporter& im, const Node& n) { im.import_reduce_composite(n, "abs", ""); }},
      {"ReduceL2",
       [](OnnxImporter& im, const Node& n) { im.import_reduce_composite(n, "square", "sqrt"); }},
      {"ReduceLogSum",
       [](OnnxImporter& im, const Node& n) { im.import_reduce_composite(n, "", "log"); }},
      {"ReduceLogSumExp",
       [](OnnxImporter& im, const Node& n) { im.import_reduce_composite(n, "exp", "log"); }},
      {"ArgMax", [](OnnxImporter& im, const Node& n) { im.import_arg(n, true); }},
      {"ArgMin", [](OnnxImporter& im, const Node& n) { im.import_arg(n, false); }},
      {"Cast", [](OnnxImporter& im, const Node& n) { im.import_cast(n, false); }},
      {"CastLike", [](OnnxImporter& im, const Node& n) { im.import_cast(n, true); }},
      {"Equal", [](OnnxImporter& im, const Node& n) { im.import_compare(n, "eq"); }},
      {"Less", [](OnnxImporter& im, const Node& n) { im.import_compare(n, "lt"); }},
      {"Greater", [](OnnxImporter& im, const Node& n) { im.import_compare(n, "gt"); }},
      {"LessOrEqual", [](OnnxImporter& im, const Node& n) { im.import_compare(n, "le"); }},
      {"GreaterOrEqual", [](OnnxImporter& im, const Node& n) { im.import_compare(n, "ge"); }},
      {"And", [](OnnxImporter& im, const Node& n) { im.import_logic(n, "and"); }},
      {"Or", [](OnnxImporter& im, const Node& n) { im.import_logic(n, "or"); }},
      {"Xor", [](OnnxImporter& im, const Node& n) { im.import_logic(n, "xor"); }},
      {"Not", [](OnnxImporter& im, const Node& n) { im.import_logic(n, "not"); }},
      {"Where", [](OnnxImporter& im, const Node& n) { im.import_where(n); }},
      {"GatherElements", [](OnnxImporter& im, const Node& n) { im.import_gather_index(n, true); }},
      {"Trilu", [](OnnxImporter& im, const Node& n) { im.import_trilu(n); }},
      {"Split", [](OnnxImporter& im, const Node& n) { im.import_split(n); }},
      {"NegativeLogLikelihoodLoss",
       [](OnnxImporter& im, const Node& n) { im.import_nll(n, false); }},
      {"SoftmaxCrossEntropyLoss", [](OnnxImporter& im, const Node& n) { im.import_nll(n, true); }},
      {"Resize", [](OnnxImporter& im, const Node& n) { im.import_resize(n, false); }},
      {"Upsample", [](OnnxImporter& im, const Node& n) { im.import_resize(n, true); }},
      {"Tile", [](OnnxImporter& im, const Node& n) { im.import_tile(n); }},
      {"DepthToSpace", [](OnnxImporter& im, const Node& n) { im.import_depth_to_space(n, true); }},
      {"SpaceToDepth", [](OnnxImporter& im, const Node& n) { im.import_depth_to_space(n, false); }},
      {"Hardmax", [](OnnxImporter& im, const Node& n) { im.import_hardmax(n); }},
      {"Shrink", [](OnnxImporter& im, const Node& n) { im.import_shrink(n); }},
      {"IsInf", [](OnnxImporter& im, const Node& n) { im.import_isinf(n); }},
      {"InstanceNormalization", [](OnnxImporter& im, const Node& n) { im.import_instancenorm(n); }},
      {"MeanVarianceNormalization", [](OnnxImporter& im, const Node& n) { im.import_mvn(n); }},
      {"EyeLike", [](OnnxImporter& im, const Node& n) { im.import_eyelike(n); }},
      {"OneHot", [](OnnxImporter& im, const Node& n) { im.import_onehot(n); }},
      {"CumSum", [](OnnxImporter& im, const Node& n) { im.import_cumsum(n); }},
      {"Einsum", [](OnnxImporter& im, const Node& n) { im.import_einsum(n); }},
      {"RNN",
       {[](OnnxImporter& im, const Node& n) { im.import_recurrent(n, Recurrent::rnn); },
        FirstOutput::optional}},
      {"GRU",
       {[](OnnxImporter& im, const Node& n) { im.import_recurrent(n, Recurrent::gru); },
        FirstOutput::optional}},
      {"LSTM",
       {[](OnnxImporter& im, const Node& n) { im.import_recurrent(n, Recurrent::lstm); },
        FirstOutput::optional}},
  };
  auto op = kOps.find(n.op_type());
  const bool first_optional = op != kOps.end() && op->second.first_output == FirstOutput::optional;
  if (!first_optional && (n.output_size() == 0 || n.output(0).empty()))
    throw error(n, "output 0 is missing");
  // An attribute without the value of its type: ONNX's inference reads such an attribute as
  // absent, where the imports and the folding would read the field's zero.
  for (const onnx::AttributeProto& a : n.attribute()) {
    using A = onnx::AttributeProto;
    const bool has = a.type() == A::INT      ? a.has_i()
                     : a.type() == A::FLOAT  ? a.has_f()
                     : a.type() == A::STRING ? a.has_s()
                     : a.type() == A::TENSOR ? a.has_t()
                     : a.type() == A::GRAPH  ? a.has_g()
                                             : true;
    if (!has)
      throw error(n, fmt::format("attribute '{}' of type {} has no value", a.name(),
                                 A::AttributeType_Name(a.type())));
  }
  // The inputs the op's ONNX schema requires at this opset: the imports and the folding read
  // them without asking.
  if (const onnx::OpSchema* schema = onnx::OpSchemaRegistry::Schema(
          n.op_type(), static_cast<int>(std::clamp<int64_t>(opset_, 0, kMaxOnnxOpset)))) {
    const std::vector<onnx::OpSchema::FormalParameter>& formal = schema->inputs();
    for (int i = 0; i < static_cast<int>(formal.size()); ++i) {
      if (formal[i].GetOption() == onnx::OpSchema::Single && !has_input(n, i))
        throw error(n, fmt::format("input {} is missing", i));
      if (formal[i].GetOption() == onnx::OpSchema::Variadic &&
          n.input_size() < i + formal[i].GetMinArity())
        throw error(n, fmt::format("{} inputs; the op takes {} or more", n.input_size(),
                                   i + formal[i].GetMinArity()));
    }
  }
  if (fold(n)) return;
  if (op == kOps.end() && fold_ops().count(n.op_type())) {
    std::string data_input;
    for (const std::string& in : n.input())
      if (!in.empty() && (!constants_.count(in) || input_values_.count(in))) data_input = in;
    if (data_input.empty())
      throw error(n,
                  fmt::format("op {} on constants does not fold: {}", n.op_type(), fold_refusal_));
    throw error(n, fmt::format("op {} is supported on constant inputs only (folded at import); "
                               "input '{}' is data",
                               n.op_type(), data_input));
  }
  if (op == kOps.end()) {
    std::vector<std::string> names;
    for (const auto& kv : kOps) names.push_back(kv.first);
    throw error(n, fmt::format("op {} is not supported (fracsim imports {})", n.op_type(),
                               fmt::join(names, ", ")));
  }
  op->second.run(*this, n);
}

}  // namespace fracsim::compiler
