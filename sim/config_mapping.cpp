#include "sim/config_mapping.h"

#include <climits>

#include <fmt/format.h>

namespace fracsim::sim {

namespace {
constexpr uint64_t kPicosecondsPerSecond = 1000000000000ULL;
}  // namespace

std::optional<ConfigMapping> ConfigMapping::optional_mapping(const std::string& key) {
  auto map = map_.get_map(key);
  if (!map) {
    defaulted_.push_back(key);
    return std::nullopt;
  }
  return ConfigMapping(std::move(*map));
}

std::string ConfigMapping::text(const std::string& key,
                                const std::optional<std::string>& fallback) {
  std::string value;
  if (auto node = given(key, fallback.has_value())) {
    value = scalar_string(*node, map_.file(), map_.key_path(key));
    if (value.empty()) throw map_.error(key, "must not be empty");
  } else {
    value = *fallback;
  }
  json_[key] = value;
  return value;
}

bool ConfigMapping::boolean(const std::string& key, bool fallback) {
  bool value = fallback;
  if (auto node = given(key, true)) {
    const std::string s = scalar_string(*node, map_.file(), map_.key_path(key));
    if (s != "true" && s != "false")
      throw map_.error(key, fmt::format("expected true or false, got '{}'", s));
    value = s == "true";
  }
  json_[key] = value;
  return value;
}

int ConfigMapping::integer(const std::string& key, std::optional<int64_t> fallback, int64_t min) {
  int64_t value = 0;
  if (auto node = given(key, fallback.has_value())) {
    value = scalar_int(*node, map_.file(), map_.key_path(key));
    if (value < min) throw map_.error(key, fmt::format("must be at least {}, got {}", min, value));
    if (value > INT_MAX)
      throw map_.error(key, fmt::format("must be at most {}, got {}", INT_MAX, value));
  } else {
    value = *fallback;
  }
  json_[key] = value;
  return static_cast<int>(value);
}

uint64_t ConfigMapping::quantity(const std::string& key, QuantityKind kind,
                                 std::optional<uint64_t> fallback, bool positive) {
  uint64_t value = 0;
  if (auto node = given(key, fallback.has_value())) {
    value = parse_quantity(*node, kind, map_.file(), map_.key_path(key));
    if (positive && value == 0)
      throw map_.error(key, fmt::format("must be greater than zero, got '{}'", node->Scalar()));
  } else {
    value = *fallback;
  }
  json_[key] = format_quantity(value, kind);
  return value;
}

uint64_t ConfigMapping::clock(const std::optional<uint64_t>& fallback) {
  uint64_t hz = quantity("clock", QuantityKind::frequency, fallback, true);
  if (kPicosecondsPerSecond % hz != 0) {
    throw map_.error(
        "clock", fmt::format("{} gives a period of {:.3f} ps; fracsim needs a whole number "
                             "of picoseconds",
                             map_.require("clock").Scalar(),
                             static_cast<double>(kPicosecondsPerSecond) / static_cast<double>(hz)));
  }
  return hz;
}

ConfigMapping::Json ConfigMapping::finish() {
  map_.finish();
  json_["defaulted"] = defaulted_;
  return std::move(json_);
}

std::optional<YAML::Node> ConfigMapping::given(const std::string& key, bool optional) {
  if (!optional) return map_.require(key);
  auto node = map_.get(key);
  if (!node) defaulted_.push_back(key);
  return node;
}

}  // namespace fracsim::sim
