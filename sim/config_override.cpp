#include "sim/config_override.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/config_schema.h"

namespace fracsim::sim {

namespace {

// One step of a key path: a mapping key or a list entry (by name, or by index).
struct PathStep {
  std::string key;              // a key, or an entry's name
  std::optional<size_t> index;  // [i]
};

ConfigError override_error(const std::string& file, const ConfigOverride& o,
                           const std::string& path, const std::string& message) {
  return ConfigError(fmt::format("{}: --set {}: {}: {}", file, o.text, path, message));
}

std::vector<PathStep> parse_path(const std::string& file, const ConfigOverride& o) {
  std::vector<PathStep> steps;
  const std::string& k = o.key;
  auto bad = [&](const std::string& why) {
    return ConfigError(fmt::format("{}: --set {}: bad key path '{}': {}", file, o.text, k, why));
  };
  size_t i = 0;
  while (i < k.size()) {
    if (k[i] == '[') {
      const size_t close = k.find(']', i);
      if (close == std::string::npos) throw bad("'[' without ']'");
      const std::string digits = k.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.size() > 9 ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); }))
        throw bad(fmt::format("expected an index in [], got '{}'", digits));
      if (steps.empty()) throw bad("an index needs a list before it");
      steps.push_back({"", static_cast<size_t>(std::stoul(digits))});
      i = close + 1;
      if (i < k.size() && k[i] != '.' && k[i] != '[') throw bad("expected '.' or '[' after ']'");
    } else {
      size_t end = i;
      while (end < k.size() && k[end] != '.' && k[end] != '[' && k[end] != ']') ++end;
      if (end == i) throw bad("empty key");
      if (end < k.size() && k[end] == ']') throw bad("']' without '['");
      steps.push_back({k.substr(i, end - i), std::nullopt});
      i = end;
    }
    if (i < k.size() && k[i] == '.') {
      ++i;
      if (i == k.size()) throw bad("empty key");
    }
  }
  return steps;
}

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// The entries of a list as a message lists them: their names, or [i] for unnamed ones.
std::string entry_names(const YAML::Node& list) {
  std::vector<std::string> names;
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node e = list[i];
    if (e.IsMap() && e["name"].IsScalar())
      names.push_back(e["name"].Scalar());
    else
      names.push_back(fmt::format("[{}]", i));
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

// Where a path is in the declarations (sim/config_schema.h): in a mapping of `mapping`'s keys,
// in a list or a mapping of names whose entries have `mapping`'s keys, or below a value.
struct DeclCursor {
  enum class At { mapping, list, names } at = At::mapping;
  const MappingDecl* mapping = nullptr;
  KeyWhere position = KeyWhere::everywhere;
};

OverrideTarget apply_one(YAML::Node doc, const std::string& file, const ConfigOverride& o) {
  YAML::Node value;
  try {
    value = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    throw ConfigError(fmt::format("{}: --set {}: the value is not YAML: {}", file, o.text, e.msg));
  }
  const std::vector<PathStep> steps = parse_path(file, o);
  OverrideTarget target;
  YAML::Node node = doc;  // rebound with reset(): assigning a YAML::Node writes through it
  std::string path;
  DeclCursor decl{DeclCursor::At::mapping, &machine_config_decl(), KeyWhere::everywhere};
  for (size_t s = 0; s < steps.size(); ++s) {
    const PathStep& step = steps[s];
    const bool last = s + 1 == steps.size();
    const YAML::Node& here = node;  // const lookups: operator[] on a non-const node adds keys
    if (here.IsSequence()) {
      size_t i = 0;
      if (step.index) {
        i = *step.index;
        if (i >= here.size())
          throw override_error(
              file, o, fmt::format("{}[{}]", path, i),
              fmt::format("no such entry ({} has {}: {})", path, here.size(), entry_names(here)));
      } else {
        for (i = 0; i < here.size(); ++i) {
          const YAML::Node e = here[i];
          if (e.IsMap() && e["name"].IsScalar() && e["name"].Scalar() == step.key) break;
        }
        if (i == here.size())
          throw override_error(file, o, path,
                               fmt::format("no entry named '{}' (entries: {}; or {}[i])", step.key,
                                           entry_names(here), path));
      }
      path = fmt::format("{}[{}]", path, i);
      if (decl.at == DeclCursor::At::list)
        decl = {DeclCursor::At::mapping, decl.mapping,
                i + 1 == here.size() ? KeyWhere::leaf : KeyWhere::above_leaf};
      if (last) {
        node[i] = value;
      } else {
        YAML::Node next = here[i];
        node.reset(next);
      }
      continue;
    }
    if (step.index) throw override_error(file, o, path, "is not a list");
    if (!here.IsMap())
      throw override_error(file, o, path,
                           fmt::format("is a value ('{}'), not a mapping", here.Scalar()));
    const std::string key_path = join_key(path, step.key);
    const YAML::Node child = here[step.key];
    const bool absent = !child.IsDefined() || child.IsNull();
    // The path must follow the declared keys: a key the parser does not know is refused before
    // the document changes, and a value has no keys below it.
    if (decl.at == DeclCursor::At::names) {
      decl = {DeclCursor::At::mapping, decl.mapping, KeyWhere::everywhere};
    } else if (decl.at == DeclCursor::At::mapping && decl.mapping) {
      const ConfigKey* k = decl.mapping->find(step.key);
      if (!k)
        throw override_error(file, o, key_path,
                             fmt::format("unknown key (expected one of: {})",
                                         fmt::join(decl.mapping->names_at(decl.position), ", ")));
      if (!k->mapping && !last && absent)
        throw override_error(file, o, key_path,
                             fmt::format("is a value ({}), not a mapping", key_kind_noun(k->kind)));
      if (k->kind == KeyKind::list)
        decl = {DeclCursor::At::list, k->mapping, KeyWhere::everywhere};
      else if (k->kind == KeyKind::named_mappings)
        decl = {DeclCursor::At::names, k->mapping, KeyWhere::everywhere};
      else
        decl = {DeclCursor::At::mapping, k->mapping, KeyWhere::everywhere};
    }
    if (absent && target.added.empty()) target.added = key_path;
    if (last) {
      node[step.key] = value;
    } else {
      if (absent) node[step.key] = YAML::Node(YAML::NodeType::Map);
      YAML::Node next = here[step.key];
      node.reset(next);
    }
    path = key_path;
  }
  target.path = path;
  return target;
}

// Whether an error about `key` is about what override `t` set.
bool covers(const OverrideTarget& t, const std::string& key) {
  auto under = [&](const std::string& p) {
    return key == p || key.rfind(p + ".", 0) == 0 || key.rfind(p + "[", 0) == 0;
  };
  return under(t.path) || (!t.added.empty() && key == t.added);
}

}  // namespace

ConfigOverride parse_override(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw ConfigError(fmt::format("--set {}: expected KEY=VALUE, e.g. levels[0].fanout=8", text));
  return {text, text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<OverrideTarget> apply_overrides(YAML::Node doc, const std::string& file,
                                            const std::vector<ConfigOverride>& overrides) {
  std::vector<OverrideTarget> targets;
  for (const ConfigOverride& o : overrides) targets.push_back(apply_one(doc, file, o));
  return targets;
}

MachineSpec load_machine_spec(const std::string& path,
                              const std::vector<ConfigOverride>& overrides) {
  if (overrides.empty()) return load_machine_spec(path);
  YAML::Node doc = load_yaml_file(path);
  const std::vector<OverrideTarget> targets = apply_overrides(doc, path, overrides);
  MachineSpec spec;
  try {
    spec = parse_machine_yaml(doc, path);
  } catch (const ConfigError& e) {
    // The last override that set the key is the one in effect.
    for (size_t i = targets.size(); i-- > 0;)
      if (!e.key().empty() && covers(targets[i], e.key()))
        throw ConfigError(
            fmt::format("{}: --set {}: {}: {}", path, overrides[i].text, e.key(), e.detail()),
            e.key(), e.detail());
    // Another key's error may still come from an override (a level renamed to a duplicate).
    std::vector<std::string> texts;
    for (const ConfigOverride& o : overrides) texts.push_back(o.text);
    throw ConfigError(fmt::format("{} (with --set {})", e.what(), fmt::join(texts, ", --set ")),
                      e.key(), e.detail());
  }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ConfigOverride& o : overrides) list.push_back(o.text);
  spec.effective["overrides"] = std::move(list);
  return spec;
}

}  // namespace fracsim::sim
