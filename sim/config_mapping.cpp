#include "sim/config_mapping.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"

namespace fracsim::sim {

namespace {
constexpr uint64_t kPicosecondsPerSecond = 1000000000000ULL;
}  // namespace

ConfigMapping::ConfigMapping(YamlMap map, const MappingDecl& decl, KeyWhere position)
    : map_(std::move(map)), decl_(&decl), position_(position) {
  for (const ConfigKey& k : decl.keys) {
    if (k.allowed_at(position) || !map_.has(k.name)) continue;
    if (k.where == KeyWhere::above_leaf)
      throw map_.error(k.name, fmt::format("not allowed on the last level ({})", k.where_reason));
    throw map_.error(k.name, "only allowed on the last level");
  }
}

bool ConfigMapping::applies(const std::string& key) const {
  const ConfigKey* k = decl_->find(key);
  FRACSIM_ASSERT(k != nullptr, "config key {} not declared in mapping {}", key, decl_->id);
  return k->allowed_at(position_);
}

const ConfigKey& ConfigMapping::declared(const std::string& key, KeyKind kind) const {
  const ConfigKey* k = decl_->find(key);
  FRACSIM_ASSERT(k != nullptr, "config key {} not declared in mapping {}", key, decl_->id);
  const bool textual = kind == KeyKind::text && k->kind == KeyKind::choice;
  const bool structural = kind == KeyKind::list && (k->kind == KeyKind::named_mappings ||
                                                    k->kind == KeyKind::mapping_or_file);
  FRACSIM_ASSERT(k->kind == kind || textual || structural,
                 "config key {}.{} is declared {}, read as {}", decl_->id, key,
                 key_kind_noun(k->kind), key_kind_noun(kind));
  FRACSIM_ASSERT(k->allowed_at(position_), "config key {}.{} read where it is not allowed",
                 decl_->id, key);
  return *k;
}

std::optional<YAML::Node> ConfigMapping::given(const ConfigKey& k, bool has_derived) {
  FRACSIM_ASSERT(has_derived == (k.default_kind == DefaultKind::derived),
                 "config key {}.{}: a derived default must be given exactly when declared",
                 decl_->id, k.name);
  read_.push_back(k.name);
  if (k.required()) return map_.require(k.name);
  auto node = map_.get(k.name);
  if (!node) defaulted_.push_back(k.name);
  return node;
}

std::string ConfigMapping::default_scalar(const ConfigKey& k) const {
  FRACSIM_ASSERT(k.default_kind == DefaultKind::value, "config key {}.{} has no default value",
                 decl_->id, k.name);
  return k.default_text;
}

ConfigMapping ConfigMapping::mapping(const std::string& key, KeyWhere position) {
  const ConfigKey& k = declared(key, KeyKind::mapping);
  read_.push_back(k.name);
  if (k.default_kind != DefaultKind::mapping)
    return ConfigMapping(map_.require_map(key), *k.mapping, position);
  if (auto m = map_.get_map(key)) return ConfigMapping(std::move(*m), *k.mapping, position);
  defaulted_.push_back(key);
  return ConfigMapping(YamlMap(YAML::Node(YAML::NodeType::Map), map_.file(), map_.key_path(key)),
                       *k.mapping, position);
}

std::string ConfigMapping::text(const std::string& key, const std::optional<std::string>& derived) {
  const ConfigKey& k = declared(key, KeyKind::text);
  std::string value;
  if (auto node = given(k, derived.has_value())) {
    value = scalar_string(*node, map_.file(), map_.key_path(key));
    if (value.empty()) throw map_.error(key, "must not be empty");
  } else {
    value = derived ? *derived : default_scalar(k);
  }
  if (k.kind == KeyKind::choice &&
      std::find(k.choices.begin(), k.choices.end(), value) == k.choices.end()) {
    throw map_.error(key,
                     fmt::format("unknown {} '{}' (expected {})", key, value, join_or(k.choices)));
  }
  json_[key] = value;
  return value;
}

bool ConfigMapping::boolean(const std::string& key) {
  const ConfigKey& k = declared(key, KeyKind::boolean);
  const auto node = given(k, false);
  const std::string s =
      node ? scalar_string(*node, map_.file(), map_.key_path(key)) : default_scalar(k);
  if (s != "true" && s != "false")
    throw map_.error(key, fmt::format("expected true or false, got '{}'", s));
  const bool value = s == "true";
  json_[key] = value;
  return value;
}

int ConfigMapping::integer(const std::string& key, std::optional<int64_t> derived) {
  const ConfigKey& k = declared(key, KeyKind::integer);
  int64_t value = 0;
  if (auto node = given(k, derived.has_value())) {
    value = scalar_int(*node, map_.file(), map_.key_path(key));
    if (value < k.min)
      throw map_.error(key, fmt::format("must be at least {}, got {}", k.min, value));
    if (value > k.max)
      throw map_.error(key, fmt::format("must be at most {}, got {}", k.max, value));
  } else {
    value = derived ? *derived
                    : scalar_int(YAML::Node(default_scalar(k)), map_.file(), map_.key_path(key));
  }
  json_[key] = value;
  return static_cast<int>(value);
}

uint64_t ConfigMapping::quantity(const std::string& key, std::optional<uint64_t> derived) {
  const ConfigKey& k = declared(key, KeyKind::quantity);
  uint64_t value = 0;
  if (auto node = given(k, derived.has_value())) {
    value = parse_quantity(*node, k.unit, map_.file(), map_.key_path(key));
    if (k.positive && value == 0)
      throw map_.error(key, fmt::format("must be greater than zero, got '{}'", node->Scalar()));
    // Simulated time is kept in whole picoseconds and cycle counts convert to it exactly.
    if (k.unit == QuantityKind::frequency && kPicosecondsPerSecond % value != 0) {
      throw map_.error(key, fmt::format("{} gives a period of {:.3f} ps; fracsim needs a whole "
                                        "number of picoseconds",
                                        node->Scalar(),
                                        static_cast<double>(kPicosecondsPerSecond) /
                                            static_cast<double>(value)));
    }
  } else {
    value = derived ? *derived : parse_quantity_text(default_scalar(k), k.unit, map_.key_path(key));
  }
  json_[key] = format_quantity(value, k.unit);
  return value;
}

std::optional<YAML::Node> ConfigMapping::node(const std::string& key) {
  const ConfigKey& k = declared(key, KeyKind::list);
  read_.push_back(k.name);
  if (k.required()) return map_.require(key);
  return map_.get(key);
}

ConfigMapping::Json ConfigMapping::finish() {
  map_.finish();
  for (const ConfigKey& k : decl_->keys) {
    FRACSIM_ASSERT(
        !k.allowed_at(position_) || std::find(read_.begin(), read_.end(), k.name) != read_.end(),
        "config key {}.{} is declared but the parser does not read it", decl_->id, k.name);
  }
  json_["defaulted"] = defaulted_;
  return std::move(json_);
}

}  // namespace fracsim::sim
