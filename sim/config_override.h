// Overrides of a machine config from the command line (`--set KEY=VALUE`), applied to the YAML
// document before it is parsed, so that every key the parser knows can be set and every value
// is validated as if the file gave it. KEY is a path into the YAML tree: mapping keys joined by
// dots, `[i]` for the i-th entry of a list, and a list entry by its `name` (`levels.core` is the
// level named core; an entry without a name only by index). Each step must be a key the
// declarations (sim/config_schema.h) have there, so a misspelt key is refused before the document
// changes. Keys and mappings
// the file lacks are added. VALUE is YAML: a scalar with its unit (`256 KiB`) or a flow mapping
// (`{rows: 8, cols: 8}`).
#pragma once

#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "sim/machine_spec.h"

namespace fracsim::sim {

struct ConfigOverride {
  std::string text;   // as given: "levels.core.memory.capacity=256 KiB"
  std::string key;    // "levels.core.memory.capacity"
  std::string value;  // "256 KiB"
};

// Splits "KEY=VALUE" at its first '='; ConfigError when either side is empty.
ConfigOverride parse_override(const std::string& text);

// Where an override landed, as the parser's messages spell key paths.
struct OverrideTarget {
  std::string path;   // the key it set: "levels[1].memory.capacity"
  std::string added;  // the outermost key it added to the document ("" when none)
};

// Sets each override in `doc` (the document of `file`), in order. ConfigError, naming the
// --set, when a path does not lead anywhere (a list entry that does not exist, a key below a
// value) or the value is not YAML.
std::vector<OverrideTarget> apply_overrides(YAML::Node doc, const std::string& file,
                                            const std::vector<ConfigOverride>& overrides);

// load_machine_spec with the overrides applied. An error about a key an override set (or one
// below it) names that --set; the effective config lists the overrides under `overrides`.
MachineSpec load_machine_spec(const std::string& path,
                              const std::vector<ConfigOverride>& overrides);

}  // namespace fracsim::sim
