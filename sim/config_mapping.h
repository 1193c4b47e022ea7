// Reading one mapping of a machine config (or of an energy table it references) through its
// declaration (sim/config_schema.h): each value is checked against its key's kind, unit and
// range, takes the declared default when absent, unknown keys are rejected, and the effective
// value of every key (given or defaulted) is recorded in the order read, with the list of keys
// that took their default, for stats.json (STYLE.md rule 9).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "isa/yaml_map.h"
#include "sim/config_schema.h"
#include "sim/units.h"

namespace fracsim::sim {

class ConfigMapping {
 public:
  using Json = nlohmann::ordered_json;

  // `position` is where a level is in the list of levels (everywhere for other mappings); a key
  // the declaration does not allow there is refused at once.
  ConfigMapping(YamlMap map, const MappingDecl& decl, KeyWhere position = KeyWhere::everywhere);

  YamlMap& yaml() { return map_; }
  const MappingDecl& decl() const { return *decl_; }
  // Whether `key` is allowed at this mapping's position (lfu_throughput above the leaf).
  bool applies(const std::string& key) const;

  // A nested mapping (a required one, or an optional one that reads as empty when absent).
  ConfigMapping mapping(const std::string& key, KeyWhere position = KeyWhere::everywhere);

  // The value of a key of each kind. `derived` is the default of a key declared with a derived
  // default (the clock of the level above); other keys take their declared default.
  std::string text(const std::string& key, const std::optional<std::string>& derived = {});
  int integer(const std::string& key, std::optional<int64_t> derived = {});
  bool boolean(const std::string& key);
  uint64_t quantity(const std::string& key, std::optional<uint64_t> derived = {});

  // The raw node of a list, named-mappings or mapping-or-file key; nullopt when an optional one
  // is absent.
  std::optional<YAML::Node> node(const std::string& key);

  void put(const std::string& key, Json value) { json_[key] = std::move(value); }

  // Rejects unknown keys and returns the effective mapping.
  Json finish();

 private:
  const ConfigKey& declared(const std::string& key, KeyKind kind) const;
  // The node of `key` when the config gives it; records a defaulted key otherwise.
  std::optional<YAML::Node> given(const ConfigKey& k, bool has_derived);
  // The declared default of `k`, as a config writes it (InternalError when it has none).
  std::string default_scalar(const ConfigKey& k) const;

  YamlMap map_;
  const MappingDecl* decl_;
  KeyWhere position_;
  Json json_ = Json::object();
  std::vector<std::string> defaulted_;
  std::vector<std::string> read_;
};

}  // namespace fracsim::sim
