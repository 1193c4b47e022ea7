// Every key of a machine config and of the energy table it references, declared once: name,
// kind, unit, default, range and a one-line description, one table per mapping. The parser reads
// every value through its declaration (sim/config_mapping.h), `--set` walks the tables to know the
// valid paths (sim/config_override.h), and `fracsim config schema` (a JSON Schema) and `fracsim
// config doc` (the reference in sim/README.md) are generated from them. Adding a key is one entry
// here and one read in the parser.
#pragma once

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/units.h"

namespace fracsim::sim {

enum class KeyKind {
  integer,          // a whole number in [min, max]
  boolean,          // true or false
  quantity,         // a number with a unit of `unit` ("64 KiB")
  text,             // a non-empty string
  choice,           // one of `choices`
  mapping,          // a nested mapping of `mapping`'s keys
  list,             // a non-empty list of mappings of `mapping`'s keys (the levels)
  named_mappings,   // a mapping from names to mappings of `mapping`'s keys (the energy levels)
  mapping_or_file,  // a nested mapping, or the path of a YAML file holding one (the energy table)
};

// Where in the list of levels a key of a level may be given.
enum class KeyWhere { everywhere, above_leaf, leaf };

enum class DefaultKind {
  required,  // the config must give it
  value,     // `default_text`, written as a config writes it and read by the same parser
  derived,   // the parser derives it; `default_text` says from what
  mapping,   // an optional mapping: absent, each of its keys takes its default
  none,      // optional, and absent means the feature is off (no energy table)
};

struct MappingDecl;

struct ConfigKey {
  std::string name;
  KeyKind kind = KeyKind::text;
  std::string description;  // one line
  DefaultKind default_kind = DefaultKind::required;
  std::string default_text;
  QuantityKind unit = QuantityKind::bytes;  // quantity
  bool positive = false;                    // quantity: zero is refused
  int64_t min = INT_MIN;                    // integer
  int64_t max = INT_MAX;                    // integer
  std::vector<std::string> choices;         // choice
  const MappingDecl* mapping = nullptr;     // mapping, list, named_mappings, mapping_or_file
  KeyWhere where = KeyWhere::everywhere;
  std::string where_reason;  // why a key is not allowed on the last level

  // Builders, so that each table entry is one expression.
  ConfigKey& at_least(int64_t v) {
    min = v;
    return *this;
  }
  ConfigKey& nonzero() {
    positive = true;
    return *this;
  }
  ConfigKey& defaults_to(std::string text) {
    default_kind = DefaultKind::value;
    default_text = std::move(text);
    return *this;
  }
  ConfigKey& derived_from(std::string what) {
    default_kind = DefaultKind::derived;
    default_text = std::move(what);
    return *this;
  }
  ConfigKey& optional_mapping() {
    default_kind = DefaultKind::mapping;
    return *this;
  }
  ConfigKey& optional_off(std::string what) {
    default_kind = DefaultKind::none;
    default_text = std::move(what);
    return *this;
  }
  ConfigKey& only_above_leaf(std::string why) {
    where = KeyWhere::above_leaf;
    where_reason = std::move(why);
    return *this;
  }
  ConfigKey& only_leaf() {
    where = KeyWhere::leaf;
    return *this;
  }

  [[nodiscard]] bool required() const { return default_kind == DefaultKind::required; }
  // Whether the key may be given in a level at `position` (everywhere for other mappings).
  [[nodiscard]] bool allowed_at(KeyWhere position) const {
    return where == KeyWhere::everywhere || position == KeyWhere::everywhere || where == position;
  }
};

ConfigKey integer_key(std::string name, std::string description);
ConfigKey boolean_key(std::string name, std::string description);
ConfigKey quantity_key(std::string name, QuantityKind unit, std::string description);
ConfigKey text_key(std::string name, std::string description);
ConfigKey choice_key(std::string name, std::vector<std::string> choices, std::string description);
ConfigKey mapping_key(std::string name, const MappingDecl& mapping, std::string description);
ConfigKey list_key(std::string name, const MappingDecl& entry, std::string description);
ConfigKey named_mappings_key(std::string name, const MappingDecl& entry, std::string description);
ConfigKey mapping_or_file_key(std::string name, const MappingDecl& mapping,
                              std::string description);

// One mapping's keys, in the order the parser reads them (the order of the effective config).
struct MappingDecl {
  std::string id;           // names the mapping in the schema's $defs: "level", "memory"
  std::string description;  // one line
  std::vector<ConfigKey> keys;

  // The declaration of `name`; nullptr when the mapping has no such key.
  [[nodiscard]] const ConfigKey* find(const std::string& name) const;
  // The keys allowed at `position`, sorted (as messages list them).
  [[nodiscard]] std::vector<std::string> names_at(KeyWhere position) const;
};

// The document of a machine config.
const MappingDecl& machine_config_decl();
// An energy table (the value of `energy:`, inline or in its own file).
const MappingDecl& energy_table_decl();

// The JSON Schema (draft 2020-12) of a machine config, with the energy table under
// $defs/energy_table; its "$comment" says what the schema cannot express.
nlohmann::ordered_json config_json_schema();
// The reference of every key, in Markdown (the generated part of sim/README.md).
std::string config_reference_markdown();

// How a message names a value of a kind: "an integer", "a quantity".
const char* key_kind_noun(KeyKind kind);

// "a", "a or b", "a, b or c": the choices of a key as messages and the reference list them.
std::string join_or(const std::vector<std::string>& words);

// The markers around the generated reference in sim/README.md.
inline constexpr const char* kConfigReferenceBegin =
    "<!-- config reference: generated by `fracsim config doc --update sim/README.md` from "
    "sim/config_schema.cpp; do not edit by hand -->";
inline constexpr const char* kConfigReferenceEnd = "<!-- end of the config reference -->";
// `text` (the file `file`) with the part between the markers replaced by the current reference;
// ConfigError when the file lacks either marker.
std::string with_config_reference(const std::string& text, const std::string& file);

// How fracsim reads a YAML scalar of a machine config, as JSON: an integer (decimal or 0x hex,
// as the parser reads integers), true or false, otherwise the text. What the JSON Schema checks.
nlohmann::ordered_json scalar_json(const std::string& text);

}  // namespace fracsim::sim
