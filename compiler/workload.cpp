#include "compiler/workload.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/batch.h"
#include "compiler/layer_reader.h"
#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::compiler {

const TensorDesc* Workload::find_tensor(const std::string& name) const {
  for (const TensorDesc& t : inputs)
    if (t.name == name) return &t;
  for (const Layer& l : layers) {
    if (l.name == name) return &l.output;
    for (const TensorDesc& t : l.more_outputs)
      if (t.name == name) return &t;
  }
  return nullptr;
}

const TensorDesc& Workload::tensor(const std::string& name) const {
  const TensorDesc* t = find_tensor(name);
  FRACSIM_ASSERT(t != nullptr, "workload {} has no tensor {}", this->name, name);
  return *t;
}

const Layer* Workload::find_layer(const std::string& name) const {
  for (const Layer& l : layers)
    if (l.name == name) return &l;
  return nullptr;
}

std::optional<float> Workload::scalar_constant(const std::string& name) const {
  const TensorDesc* t = find_tensor(name);
  auto c = contents.find(name);
  if (!t || !weights.count(name) || c == contents.end() || t->dtype != isa::DType::f32 ||
      isa::num_elements(t->shape) != 1 || c->second.size() != sizeof(float))
    return std::nullopt;
  float v;
  std::memcpy(&v, c->second.data(), sizeof(float));
  return v;
}

bool Workload::is_output(const std::string& name) const {
  return std::find(outputs.begin(), outputs.end(), name) != outputs.end();
}

namespace {

const std::vector<std::string> kTopKeys = {"workload", "seed", "inputs", "layers", "outputs"};
const std::vector<std::string> kInputKeys = {"shape", "dtype"};

// Checked before any value is read, so that a misspelt key is reported as such rather than as
// the required key it was meant to be. `prefix` names the layer in messages.
void reject_unknown_keys(const YamlMap& m, const std::vector<std::string>& allowed,
                         const std::string& prefix = "", const std::string& context = "") {
  for (const auto& kv : m.node()) {
    const std::string key = kv.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    throw m.error_at(kv.first, key,
                     fmt::format("{}unknown key{} (expected one of: {})", prefix, context,
                                 fmt::join(allowed, ", ")));
  }
}

// Bounds every tensor so that element counts and byte sizes never overflow (2^48 elements).
constexpr int64_t kMaxElements = int64_t{1} << 48;

bool too_large(const isa::Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d > kMaxElements / n) return true;
    n *= d;
  }
  return false;
}

}  // namespace

std::string shape_and_name(const TensorDesc& t) {
  return fmt::format("'{}' {}", t.name, isa::shape_str(t.shape));
}

namespace {

class WorkloadParser {
 public:
  // With `tracker`, records which tensors carry the batch and refuses the layers it cannot
  // pass; with `batch`, sets every input's dim 0 to it.
  explicit WorkloadParser(std::string file, BatchTracker* tracker = nullptr,
                          std::optional<int64_t> batch = std::nullopt)
      : tracker_(tracker), batch_(batch) {
    w_.file = std::move(file);
  }

  Workload parse(const YAML::Node& doc) {
    YamlMap top(doc, w_.file, "");
    reject_unknown_keys(top, kTopKeys);
    w_.name = top.require_string("workload");
    if (w_.name.empty()) throw top.error("workload", "the name must not be empty");
    int64_t seed = top.get_int("seed", 1);
    if (seed < 0)
      throw top.error("seed", fmt::format("expected a non-negative integer, got {}", seed));
    w_.seed = static_cast<uint64_t>(seed);
    parse_inputs(top.require_map("inputs"));
    YAML::Node layers = top.require("layers");
    if (!layers.IsSequence() || layers.size() == 0)
      throw top.error("layers", "expected a non-empty list of layers");
    for (size_t i = 0; i < layers.size(); ++i)
      parse_layer(YamlMap(layers[i], w_.file, fmt::format("layers[{}]", i)));
    parse_outputs(top);
    top.finish();
    return std::move(w_);
  }

 private:
  // Inputs and layers share one namespace; '.' is kept for weights ("fc1.weight").
  void claim_name(const std::string& name, const std::string& where,
                  const std::function<ConfigError(const std::string&)>& fail) {
    if (name.empty()) throw fail("the name must not be empty");
    if (name.find('.') != std::string::npos)
      throw fail(
          fmt::format("the name must not contain '.' (reserved for weights such as {}.weight)",
                      name.substr(0, name.find('.'))));
    auto [it, fresh] = owners_.emplace(name, where);
    if (!fresh) throw fail(fmt::format("the name is already used by {}", it->second));
  }

  void parse_inputs(YamlMap inputs) {
    if (inputs.keys().empty())
      throw config_error_at(w_.file, inputs.line(), "inputs", "expected at least one input");
    for (const std::string& name : inputs.keys()) {
      claim_name(name, fmt::format("the input at line {}", yaml_line(inputs.node()[name])),
                 [&](const std::string& m) { return inputs.error(name, m); });
      YamlMap e = inputs.require_map(name);
      reject_unknown_keys(e, kInputKeys);
      TensorDesc t;
      t.name = name;
      YAML::Node shape = e.require("shape");
      if (!shape.IsSequence() || shape.size() == 0)
        throw e.error("shape", "expected a non-empty list of extents");
      for (size_t d = 0; d < shape.size(); ++d) {
        std::string key = fmt::format("shape[{}]", d);
        int64_t v = scalar_int(shape[d], w_.file, e.key_path(key));
        if (v <= 0)
          throw e.error_at(shape[d], key, fmt::format("extent must be positive, got {}", v));
        t.shape.push_back(v);
      }
      if (batch_) t.shape[0] = *batch_;
      if (tracker_)
        if (auto why = tracker_->add_input(t)) throw e.error("shape", *why);
      if (too_large(t.shape))
        throw e.error("shape",
                      fmt::format("{} has more than 2^48 elements", isa::shape_str(t.shape)));
      std::string dtype = e.require_string("dtype");
      auto dt = isa::parse_dtype(dtype);
      if (!dt)
        throw e.error("dtype", fmt::format("unknown dtype '{}' (expected one of: {})", dtype,
                                           isa::dtype_names()));
      t.dtype = *dt;
      e.finish();
      w_.inputs.push_back(std::move(t));
    }
    inputs.finish();
  }

  // An input of a layer: a tensor defined earlier (an input or an earlier layer).
  const TensorDesc& resolve(LayerReader& r, const YAML::Node& n, const std::string& key) {
    if (!n.IsScalar()) throw r.error_at(n, key, "expected a tensor name, got a list or map");
    const TensorDesc* t = w_.find_tensor(n.Scalar());
    if (!t)
      throw r.error_at(
          n, key,
          fmt::format("unknown tensor '{}' (not an input nor an earlier layer)", n.Scalar()));
    return *t;
  }

  std::vector<const TensorDesc*> read_inputs(LayerReader& r, const std::string& kind) {
    YAML::Node list = r.require("inputs");
    if (!list.IsSequence() || list.size() != 2)
      throw r.error("inputs", fmt::format("{} expects a list of two tensor names [a, b]", kind));
    return {&resolve(r, list[0], "inputs[0]"), &resolve(r, list[1], "inputs[1]")};
  }

  std::vector<const TensorDesc*> read_concat_inputs(LayerReader& r) {
    YAML::Node list = r.require("inputs");
    if (!list.IsSequence() || list.size() < 2)
      throw r.error("inputs", "concat expects a list of two or more tensor names");
    std::vector<const TensorDesc*> out;
    for (size_t i = 0; i < list.size(); ++i)
      out.push_back(&resolve(r, list[i], fmt::format("inputs[{}]", i)));
    return out;
  }

  static void infer_cnn_layer(LayerReader& r, Layer& l, const TensorDesc& x) {
    switch (l.kind) {
      case LayerKind::conv2d:
        return infer_conv2d(r, l, x);
      case LayerKind::maxpool:
      case LayerKind::avgpool:
        return infer_pool(r, l, x);
      case LayerKind::global_avgpool:
        return infer_global_avgpool(r, l, x);
      case LayerKind::batchnorm:
      case LayerKind::softmax:
      case LayerKind::layernorm:
        return infer_normalization(r, l, x);
      case LayerKind::flatten:
        return infer_flatten(r, l, x);
      case LayerKind::reshape:
        return infer_reshape(r, l, x);
      case LayerKind::transpose:
        return infer_transpose(r, l, x);
      case LayerKind::lrn:
        return infer_lrn(r, l, x);
      default:
        return infer_unary(r, l, x);
    }
  }

  void parse_layer(YamlMap m) {
    Layer l;
    l.name = m.require_string("name");
    if (l.name.empty()) throw m.error("name", "the name must not be empty");
    LayerReader r(m, l.name);
    claim_name(l.name, fmt::format("{} at line {}", m.path(), m.line()),
               [&](const std::string& msg) { return r.error("name", msg); });
    std::string type = r.require_scalar("type");
    using Keys = std::vector<std::string>;
    static const Keys kUnary = {"name", "type", "input"};
    static const Keys kConv = {"name",   "type",    "input",    "filters", "kernel",
                               "stride", "padding", "dilation", "groups",  "bias"};
    static const Keys kPool = {"name", "type", "input", "kernel", "stride", "padding"};
    static const Keys kAvgPool = {
        "name", "type", "input", "kernel", "stride", "padding", "count_include_pad"};
    static const Keys kNorm = {"name", "type", "input", "epsilon"};
    static const std::map<std::string, std::pair<LayerKind, Keys>> kKinds = {
        {"dense", {LayerKind::dense, {"name", "type", "input", "units", "bias"}}},
        {"relu", {LayerKind::relu, kUnary}},
        {"add", {LayerKind::add, {"name", "type", "inputs"}}},
        {"matmul", {LayerKind::matmul, {"name", "type", "inputs"}}},
        {"conv2d", {LayerKind::conv2d, kConv}},
        {"maxpool", {LayerKind::maxpool, kPool}},
        {"avgpool", {LayerKind::avgpool, kAvgPool}},
        {"global_avgpool", {LayerKind::global_avgpool, kUnary}},
        {"batchnorm", {LayerKind::batchnorm, kNorm}},
        {"softmax", {LayerKind::softmax, kUnary}},
        {"layernorm", {LayerKind::layernorm, kNorm}},
        {"gelu", {LayerKind::gelu, kUnary}},
        {"sigmoid", {LayerKind::sigmoid, kUnary}},
        {"tanh", {LayerKind::tanh, kUnary}},
        {"flatten", {LayerKind::flatten, kUnary}},
        {"reshape", {LayerKind::reshape, {"name", "type", "input", "shape"}}},
        {"transpose", {LayerKind::transpose, {"name", "type", "input", "perm"}}},
        {"concat", {LayerKind::concat, {"name", "type", "inputs", "axis"}}},
        {"lrn", {LayerKind::lrn, {"name", "type", "input", "size", "alpha", "beta", "bias"}}},
    };
    auto kind = kKinds.find(type);
    if (kind == kKinds.end()) {
      std::vector<std::string> names;
      for (const auto& k : kKinds) names.push_back(k.first);
      throw r.error("type", fmt::format("unknown layer type '{}' (expected one of: {})", type,
                                        fmt::join(names, ", ")));
    }
    l.kind = kind->second.first;
    reject_unknown_keys(m, kind->second.second, r.prefix(), " for type " + type);
    l.output.name = l.name;
    switch (l.kind) {
      case LayerKind::dense:
        infer_dense(r, l);
        break;
      case LayerKind::relu:
        infer_relu(r, l);
        break;
      case LayerKind::add:
        infer_add(r, l);
        break;
      case LayerKind::matmul:
        infer_matmul(r, l);
        break;
      case LayerKind::concat:
        infer_concat(r, l, read_concat_inputs(r));
        break;
      default:
        infer_cnn_layer(r, l, resolve(r, r.require("input"), "input"));
        break;
    }
    if (too_large(l.output.shape))
      throw r.error(l.kind == LayerKind::dense    ? "units"
                    : l.kind == LayerKind::conv2d ? "filters"
                                                  : "inputs",
                    fmt::format("the output shape {} has more than 2^48 elements",
                                isa::shape_str(l.output.shape)));
    if (tracker_)
      if (auto why = tracker_->add_layer(w_, l))
        throw r.error(l.kind == LayerKind::reshape     ? "shape"
                      : l.kind == LayerKind::transpose ? "perm"
                      : l.inputs.size() > 1            ? "inputs"
                                                       : "input",
                      *why);
    m.finish();
    w_.layers.push_back(std::move(l));
  }

  static void require_f32(LayerReader& r, const std::string& key, const std::string& kind,
                          const TensorDesc& t) {
    if (t.dtype != isa::DType::f32)
      throw r.error(key, fmt::format("{} supports only f32 in v1, got '{}' of dtype {}", kind,
                                     t.name, isa::dtype_name(t.dtype)));
  }

  void infer_dense(LayerReader& r, Layer& l) {
    const TensorDesc& x = resolve(r, r.require("input"), "input");
    if (x.shape.size() != 2)
      throw r.error("input",
                    fmt::format("dense needs a rank-2 input [M,K], got {}", shape_and_name(x)));
    require_f32(r, "input", "dense", x);
    l.inputs = {x.name};
    l.units = r.require_positive("units");
    l.bias = r.get_bool("bias", true);
    l.output.dtype = isa::DType::f32;
    l.output.shape = {x.shape[0], l.units};
  }

  void infer_relu(LayerReader& r, Layer& l) {
    const TensorDesc& x = resolve(r, r.require("input"), "input");
    require_f32(r, "input", "relu", x);
    l.inputs = {x.name};
    l.output.dtype = x.dtype;
    l.output.shape = x.shape;
  }

  // Equal shapes, or b a row [N] added to every row of a [..., N].
  void infer_add(LayerReader& r, Layer& l) {
    auto in = read_inputs(r, "add");
    const TensorDesc &a = *in[0], &b = *in[1];
    bool row_broadcast = b.shape.size() == 1 && a.shape.size() >= 2 && a.shape.back() == b.shape[0];
    if (a.shape != b.shape && !row_broadcast)
      throw r.error("inputs", fmt::format("add needs equal shapes or b of shape [N] with a of "
                                          "shape [M,N], got {} and {}",
                                          shape_and_name(a), shape_and_name(b)));
    if (a.dtype != isa::DType::f32 || b.dtype != isa::DType::f32)
      throw r.error("inputs", fmt::format("add supports only f32 in v1, got {} and {}",
                                          isa::dtype_name(a.dtype), isa::dtype_name(b.dtype)));
    l.inputs = {a.name, b.name};
    l.output.dtype = a.dtype;
    l.output.shape = a.shape;
  }

  // f32 x f32 -> f32; i8 x i8 and i16 x i16 accumulate into i32.
  void infer_matmul(LayerReader& r, Layer& l) {
    auto in = read_inputs(r, "matmul");
    const TensorDesc &a = *in[0], &b = *in[1];
    if (a.shape.size() != 2 || b.shape.size() != 2 || a.shape[1] != b.shape[0])
      throw r.error("inputs", fmt::format("matmul needs a [M,K] and b [K,N], got {} and {}",
                                          shape_and_name(a), shape_and_name(b)));
    using isa::DType;
    if (a.dtype != b.dtype ||
        (a.dtype != DType::f32 && a.dtype != DType::i8 && a.dtype != DType::i16))
      throw r.error("inputs", fmt::format("matmul accepts f32 x f32, i8 x i8 or i16 x i16, "
                                          "got {} x {}",
                                          isa::dtype_name(a.dtype), isa::dtype_name(b.dtype)));
    l.inputs = {a.name, b.name};
    l.output.dtype = a.dtype == DType::f32 ? DType::f32 : DType::i32;
    l.output.shape = {a.shape[0], b.shape[1]};
  }

  void parse_outputs(YamlMap& top) {
    auto list = top.get("outputs");
    if (!list) {
      w_.outputs = {w_.layers.back().name};
      return;
    }
    if (!list->IsSequence() || list->size() == 0)
      throw top.error("outputs", "expected a non-empty list of layer names");
    for (size_t i = 0; i < list->size(); ++i) {
      const YAML::Node& n = (*list)[i];
      std::string key = fmt::format("outputs[{}]", i);
      std::string name = scalar_string(n, w_.file, key);
      auto fail = [&](const std::string& msg) {
        return config_error_at(w_.file, yaml_line(n), key, msg);
      };
      bool is_input = std::any_of(w_.inputs.begin(), w_.inputs.end(),
                                  [&](const TensorDesc& t) { return t.name == name; });
      if (is_input) throw fail(fmt::format("'{}' is an input; outputs must be layers", name));
      if (!owners_.count(name)) throw fail(fmt::format("unknown layer '{}'", name));
      if (w_.is_output(name)) throw fail(fmt::format("layer '{}' is listed twice", name));
      w_.outputs.push_back(name);
    }
  }

  Workload w_;
  BatchTracker* tracker_;
  std::optional<int64_t> batch_;
  std::map<std::string, std::string> owners_;  // name -> where it was defined, for messages
};

}  // namespace

namespace {

// The workload as written, or at options.batch: read once to find the tensors that carry the
// batch (refusing the layers it cannot pass), then again with the inputs at the batch, so that
// shape inference carries it through; the second reading must scale as the first says.
Workload parse_written_or_batched(const std::function<YAML::Node()>& load, const std::string& file,
                                  const CompileOptions& options) {
  if (!options.batch) return WorkloadParser(file).parse(load());
  BatchTracker tracker(*options.batch);
  const Workload written = WorkloadParser(file, &tracker).parse(load());
  Workload batched = WorkloadParser(file, nullptr, options.batch).parse(load());
  check_batched_shapes(written, batched, tracker, *options.batch);
  return batched;
}

Workload parse_at_batch(const std::function<YAML::Node()>& load, const std::string& file,
                        const CompileOptions& options) {
  Workload w = parse_written_or_batched(load, file, options);
  w.fuse = options.fuse;
  w.fold_batchnorm = options.fold_batchnorm;
  return w;
}

}  // namespace

Workload parse_workload(const std::string& text, const std::string& file,
                        const CompileOptions& options) {
  return parse_at_batch([&] { return load_yaml_string(text, file); }, file, options);
}

Workload load_workload(const std::string& path, const CompileOptions& options) {
  return parse_at_batch([&] { return load_yaml_file(path); }, path, options);
}

}  // namespace fracsim::compiler
