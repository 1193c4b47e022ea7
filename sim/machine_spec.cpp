#include "sim/machine_spec.h"

#include <optional>
#include <utility>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/config_mapping.h"
#include "sim/units.h"

namespace fracsim::sim {

namespace {

using Json = nlohmann::ordered_json;

ControllerSpec read_controller(ConfigMapping& m, std::optional<uint64_t> inherited_clock) {
  ControllerSpec c;
  c.clock = m.quantity("clock", inherited_clock);
  c.pipeline_depth = m.integer("pipeline_depth");
  c.decode_cycles = m.integer("decode_cycles");
  c.lfu_throughput = m.applies("lfu_throughput") ? m.integer("lfu_throughput") : 0;
  return c;
}

MemorySpec read_memory(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("memory");
  MemorySpec mem;
  mem.capacity = m.quantity("capacity");
  mem.bandwidth = m.quantity("bandwidth");
  mem.latency = m.quantity("latency");
  mem.banks = m.integer("banks");
  parent.put("memory", m.finish());
  return mem;
}

LinkSpec read_link(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("link");
  LinkSpec link;
  link.bandwidth = m.quantity("bandwidth");
  link.latency = m.quantity("latency");
  link.multicast = m.boolean("multicast");
  link.pipelined = m.boolean("pipelined");
  link.posted_writes = m.boolean("posted_writes");
  parent.put("link", m.finish());
  return link;
}

// rows and cols, then one optional entry per input dtype of the matrix unit's ops, each
// inheriting what it does not give.
MatrixUnitSpec read_matrix(ConfigMapping& leaf) {
  ConfigMapping matrix = leaf.mapping("matrix");
  MatrixUnitSpec spec;
  spec.rows = matrix.integer("rows");
  spec.cols = matrix.integer("cols");
  spec.by_dtype.fill({spec.rows, spec.cols});
  for (isa::DType d : unit_input_dtypes(isa::UnitKind::matrix)) {
    const std::string key(isa::dtype_name(d));
    MatrixShape& shape = spec.by_dtype[static_cast<size_t>(d)];
    ConfigMapping entry = matrix.mapping(key);
    shape.rows = entry.integer("rows", spec.rows);
    shape.cols = entry.integer("cols", spec.cols);
    matrix.put(key, entry.finish());
  }
  leaf.put("matrix", matrix.finish());
  return spec;
}

void read_leaf(ConfigMapping& level, LevelSpec& spec) {
  ConfigMapping leaf = level.mapping("leaf");
  spec.matrix = read_matrix(leaf);
  ConfigMapping vector = leaf.mapping("vector");
  spec.vector.lanes = vector.integer("lanes");
  leaf.put("vector", vector.finish());
  ConfigMapping sort = leaf.mapping("sort");
  spec.sort.width = sort.integer("width");
  leaf.put("sort", sort.finish());
  // "rtl" is registered by the rtl library (sim never includes rtl/); a program built without
  // it fails when it makes the leaf (make_leaf_unit).
  spec.backend = leaf.text("backend");
  spec.overlapped_epilogue = leaf.boolean("overlapped_epilogue");
  level.put("leaf", leaf.finish());
}

LevelSpec read_level(ConfigMapping& m, size_t index, uint64_t parent_clock) {
  LevelSpec spec;
  spec.name = m.text("name", fmt::format("level{}", index));
  spec.fanout = m.integer("fanout");
  spec.controller = read_controller(m, parent_clock);
  spec.memory = read_memory(m);
  spec.link = read_link(m);
  spec.keep_outputs = m.boolean("keep_outputs");
  spec.resident_partial_sums = m.boolean("resident_partial_sums");
  spec.hold_partial_sums = m.boolean("hold_partial_sums");
  spec.overlap = m.boolean("overlap");
  spec.prefetch = m.boolean("prefetch");
  spec.is_leaf = m.applies("leaf");
  if (spec.is_leaf) read_leaf(m, spec);
  return spec;
}

MachineSpec parse_machine_node(const YAML::Node& doc, const std::string& file) {
  MachineSpec spec;
  spec.file = file;
  ConfigMapping top(YamlMap(doc, file, ""), machine_config_decl());
  spec.name = top.text("machine");
  // How every node splits the instructions it receives (isa/decompose/cost_model.h); the
  // declaration's choices are the policies' names.
  spec.decomposer = *isa::policy_named(top.text("decomposer"));
  const std::string hazards = top.text("hazards");
  for (size_t h = 0; h < kHazardCheckNames.size(); ++h)
    if (kHazardCheckNames[h] == hazards) spec.hazards = static_cast<HazardCheck>(h);

  ConfigMapping root = top.mapping("root");
  spec.root.controller = read_controller(root, std::nullopt);
  spec.root.memory = read_memory(root);
  top.put("root", root.finish());

  YAML::Node levels = *top.node("levels");
  if (!levels.IsSequence()) {
    throw top.yaml().error("levels", "expected a list of levels, from the top down");
  }
  if (levels.size() == 0) {
    throw top.yaml().error("levels", "must list at least one level");
  }
  const MappingDecl& level_decl = *top.decl().find("levels")->mapping;
  Json levels_json = Json::array();
  uint64_t parent_clock = spec.root.controller.clock;
  int64_t nodes = 1;
  for (size_t i = 0; i < levels.size(); ++i) {
    ConfigMapping level(YamlMap(levels[i], file, fmt::format("levels[{}]", i)), level_decl,
                        i + 1 == levels.size() ? KeyWhere::leaf : KeyWhere::above_leaf);
    LevelSpec ls = read_level(level, i, parent_clock);
    for (size_t j = 0; j < i; ++j) {
      if (spec.levels[j].name == ls.name) {
        throw level.yaml().error(
            "name", fmt::format("duplicate level name '{}' (levels[{}] has it too)", ls.name, j));
      }
    }
    // Every node has its own report in a run (and in stats.json), several KiB each: a level of
    // 2^20 nodes already needs gigabytes, so refuse more rather than run out of memory or time.
    if (__builtin_mul_overflow(nodes, static_cast<int64_t>(ls.fanout), &nodes) ||
        nodes > kMaxLevelNodes) {
      throw level.yaml().error(
          "fanout",
          fmt::format("gives level {} more than {} nodes (2^20), the most fracsim simulates",
                      ls.name, kMaxLevelNodes));
    }
    parent_clock = ls.controller.clock;
    levels_json.push_back(level.finish());
    spec.levels.push_back(std::move(ls));
  }
  top.put("levels", std::move(levels_json));
  // Optional: a run without a table reports no energy rather than a made-up one.
  if (auto energy = top.node("energy")) {
    std::vector<std::string> names;
    for (const LevelSpec& l : spec.levels) names.push_back(l.name);
    spec.energy = read_energy_table(*energy, top.yaml(), names);
    top.put("energy", spec.energy->effective);
  }
  spec.effective = top.finish();
  return spec;
}

}  // namespace

int64_t MachineSpec::nodes_at(size_t level) const {
  FRACSIM_ASSERT(level < levels.size(), "level {} of a machine with {} levels", level,
                 levels.size());
  int64_t n = 1;
  for (size_t i = 0; i <= level; ++i) {
    n *= levels[i].fanout;
  }
  return n;
}

int64_t MachineSpec::leaves() const {
  FRACSIM_ASSERT(!levels.empty(), "a machine spec without levels");
  return nodes_at(levels.size() - 1);
}

MachineSpec load_machine_spec(const std::string& path) {
  return parse_machine_node(load_yaml_file(path), path);
}

MachineSpec parse_machine_spec(const std::string& text, const std::string& file) {
  return parse_machine_node(load_yaml_string(text, file), file);
}

MachineSpec parse_machine_yaml(const YAML::Node& doc, const std::string& file) {
  return parse_machine_node(doc, file);
}

}  // namespace fracsim::sim
