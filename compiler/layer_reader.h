// The keys of one layer of a workload, read with messages that name the layer; shared by the
// parser (workload.cpp) and the shape inference of the CNN layers (layer_shapes.cpp).
#pragma once

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "compiler/workload.h"
#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::compiler {

inline std::optional<int64_t> parse_int(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 0);
  if (s.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
  return v;
}

// The keys of one layer; every message names the layer ("layer 'fc1': ...").
class LayerReader {
 public:
  LayerReader(YamlMap& map, const std::string& layer)
      : map_(map), prefix_("layer '" + layer + "': ") {}

  ConfigError error(const std::string& key, const std::string& message) const {
    return map_.error(key, prefix_ + message);
  }
  ConfigError error_at(const YAML::Node& node, const std::string& key,
                       const std::string& message) const {
    return map_.error_at(node, key, prefix_ + message);
  }
  const std::string& prefix() const { return prefix_; }

  std::optional<YAML::Node> get(const std::string& key) { return map_.get(key); }
  YAML::Node require(const std::string& key) {
    auto n = map_.get(key);
    if (!n) throw error(key, "missing required key");
    return *n;
  }
  std::string require_scalar(const std::string& key) {
    YAML::Node n = require(key);
    if (!n.IsScalar()) throw error(key, "expected a single value, got a list or map");
    return n.Scalar();
  }
  int64_t require_positive(const std::string& key) {
    std::string s = require_scalar(key);
    std::optional<int64_t> v = parse_int(s);
    if (!v || *v <= 0) throw error(key, fmt::format("expected a positive integer, got '{}'", s));
    return *v;
  }
  bool get_bool(const std::string& key, bool fallback) {
    auto n = map_.get(key);
    if (!n) return fallback;
    if (n->IsScalar() && n->Scalar() == "true") return true;
    if (n->IsScalar() && n->Scalar() == "false") return false;
    throw error(key, fmt::format("expected true or false, got '{}'",
                                 n->IsScalar() ? n->Scalar() : "a list or map"));
  }

 private:
  YamlMap& map_;
  std::string prefix_;
};

std::string shape_and_name(const TensorDesc& t);

// Shape inference of the layers beyond v1; `x` is the resolved input (the first for concat).
void infer_conv2d(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_pool(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_global_avgpool(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_normalization(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_lrn(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_unary(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_flatten(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_reshape(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_transpose(LayerReader& r, Layer& l, const TensorDesc& x);
void infer_concat(LayerReader& r, Layer& l, const std::vector<const TensorDesc*>& xs);

}  // namespace fracsim::compiler
