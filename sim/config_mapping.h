// Reading one mapping of a machine config (or of an energy table it references): every key is
// declared where it is read, unknown keys are rejected, and the effective value of every key
// (given or defaulted) is recorded in schema order, with the list of keys that took their
// default, for stats.json (STYLE.md rule 9).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "isa/yaml_map.h"
#include "sim/units.h"

namespace fracsim::sim {

class ConfigMapping {
 public:
  using Json = nlohmann::ordered_json;

  explicit ConfigMapping(YamlMap map) : map_(std::move(map)) {}

  YamlMap& yaml() { return map_; }

  // A required nested mapping.
  ConfigMapping mapping(const std::string& key) { return ConfigMapping(map_.require_map(key)); }
  // An optional nested mapping; nullopt (and `key` recorded as defaulted) when absent.
  std::optional<ConfigMapping> optional_mapping(const std::string& key);

  // A non-empty string; required when `fallback` is empty.
  std::string text(const std::string& key, const std::optional<std::string>& fallback);
  // An integer in [min, INT_MAX]; required when `fallback` is empty.
  int integer(const std::string& key, std::optional<int64_t> fallback, int64_t min);
  // true or false.
  bool boolean(const std::string& key, bool fallback);
  // A quantity with a unit; `positive` rejects zero (a capacity or bandwidth of nothing).
  uint64_t quantity(const std::string& key, QuantityKind kind, std::optional<uint64_t> fallback,
                    bool positive);
  // A clock; its period must be a whole number of picoseconds, because simulated time is kept in
  // whole picoseconds and cycle counts convert to it exactly.
  uint64_t clock(const std::optional<uint64_t>& fallback);

  void put(const std::string& key, Json value) { json_[key] = std::move(value); }
  void mark_defaulted(const std::string& key) { defaulted_.push_back(key); }

  // Rejects unknown keys and returns the effective mapping.
  Json finish();

 private:
  // The node of `key` when the config gives it; records a defaulted key otherwise.
  std::optional<YAML::Node> given(const std::string& key, bool optional);

  YamlMap map_;
  Json json_ = Json::object();
  std::vector<std::string> defaulted_;
};

}  // namespace fracsim::sim
