#include "sim/energy_table.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/op_def.h"
#include "sim/config_mapping.h"

namespace fracsim::sim {
namespace {

using Json = nlohmann::ordered_json;

MemoryEnergy read_memory_energy(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("memory");
  MemoryEnergy e;
  e.read_per_byte = m.quantity("read_per_byte");
  e.write_per_byte = m.quantity("write_per_byte");
  parent.put("memory", m.finish());
  return e;
}

LeakagePower read_leakage(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("leakage");
  LeakagePower p;
  p.memory = m.quantity("memory");
  p.logic = m.quantity("logic");
  parent.put("leakage", m.finish());
  return p;
}

// One energy per dtype the unit accepts, every one required: a run prices each action, so a
// missing dtype would silently count as free.
std::array<uint64_t, isa::kDTypeCount> read_per_dtype(ConfigMapping& parent, const std::string& key,
                                                      isa::UnitKind unit) {
  ConfigMapping m = parent.mapping(key);
  std::array<uint64_t, isa::kDTypeCount> out{};
  for (isa::DType d : unit_input_dtypes(unit))
    out[static_cast<size_t>(d)] = m.quantity(std::string(isa::dtype_name(d)));
  parent.put(key, m.finish());
  return out;
}

// The root's entry and a level's: only a level has a link (its declaration a dma_per_byte).
LevelEnergy read_level(ConfigMapping& m) {
  LevelEnergy e;
  e.memory = read_memory_energy(m);
  if (m.decl().find("dma_per_byte")) e.dma_per_byte = m.quantity("dma_per_byte");
  e.leakage = read_leakage(m);
  return e;
}

// The mapping the table's keys live in: the inline value, or the referenced file's document.
// `source` receives what the config names ("inline" or the path as written).
YamlMap table_mapping(const YAML::Node& node, const YamlMap& config, std::string& source) {
  if (!node.IsScalar()) {
    source = "inline";
    return YamlMap(node, config.file(), config.key_path("energy"));
  }
  source = node.Scalar();
  namespace fs = std::filesystem;
  const fs::path resolved = fs::path(config.file()).parent_path() / source;
  std::error_code ec;
  if (source.empty() || !fs::is_regular_file(resolved, ec)) {
    throw config_error_at(config.file(), yaml_line(node), config.key_path("energy"),
                          fmt::format("cannot open energy table '{}' (looked for '{}'; a path is "
                                      "relative to the machine config)",
                                      source, resolved.string()));
  }
  return YamlMap(load_yaml_file(resolved.string()), resolved.string(), "");
}

}  // namespace

std::vector<isa::DType> unit_input_dtypes(isa::UnitKind unit) {
  std::vector<isa::DType> out;
  for (const isa::OpDef& op : isa::OpTable::builtin().ops()) {
    if (op.unit != unit) continue;
    for (const auto& row : op.dtypes)
      if (!row.empty() && std::find(out.begin(), out.end(), row[0]) == out.end())
        out.push_back(row[0]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

EnergyTable read_energy_table(const YAML::Node& node, const YamlMap& config,
                              const std::vector<std::string>& level_names) {
  EnergyTable t;
  ConfigMapping m(table_mapping(node, config, t.source), energy_table_decl());
  m.put("table", t.source);
  for (const isa::UnitKindDef& u : isa::unit_kinds())
    t.unit_action[static_cast<size_t>(u.kind)] = read_per_dtype(m, u.energy_key, u.kind);
  t.lfu_op = m.quantity("lfu_op");
  ConfigMapping root = m.mapping("root");
  t.root = read_level(root);
  m.put("root", root.finish());

  // Every entry is checked, in document order, so that a mistake in an entry this machine does
  // not use is still caught; only the machine's levels go into the effective config.
  YamlMap levels(*m.node("levels"), m.yaml().file(), m.yaml().key_path("levels"));
  const MappingDecl& entry_decl = *m.decl().find("levels")->mapping;
  std::map<std::string, std::pair<LevelEnergy, Json>> entries;
  for (const std::string& name : levels.keys()) {
    ConfigMapping entry(levels.require_map(name), entry_decl);
    LevelEnergy e = read_level(entry);
    entries.emplace(name, std::make_pair(e, entry.finish()));
  }
  Json levels_json = Json::object();
  for (const std::string& name : level_names) {
    auto it = entries.find(name);
    if (it == entries.end()) {
      throw config_error_at(levels.file(), levels.line(), levels.path(),
                            fmt::format("no entry for the machine's level '{}'", name));
    }
    t.levels.push_back(it->second.first);
    levels_json[name] = it->second.second;
  }
  m.put("levels", std::move(levels_json));
  t.effective = m.finish();
  return t;
}

}  // namespace fracsim::sim
