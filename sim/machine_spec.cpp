#include "sim/machine_spec.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/config_mapping.h"
#include "sim/units.h"

namespace fracsim::sim {

namespace {

using Json = nlohmann::ordered_json;

// The leaf backends a config may name. "rtl" is registered by the rtl library (sim never
// includes rtl/); a program built without it fails when it makes the leaf (make_leaf_unit).
const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> kBackends{"model", "rtl"};
  return kBackends;
}

ControllerSpec read_controller(ConfigMapping& m, std::optional<uint64_t> inherited_clock,
                               bool has_lfu) {
  ControllerSpec c;
  c.clock = m.clock(inherited_clock);
  c.pipeline_depth = m.integer("pipeline_depth", 3, 1);
  c.decode_cycles = m.integer("decode_cycles", 1, 0);
  c.lfu_throughput = has_lfu ? m.integer("lfu_throughput", std::nullopt, 1) : 0;
  return c;
}

MemorySpec read_memory(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("memory");
  MemorySpec mem;
  mem.capacity = m.quantity("capacity", QuantityKind::bytes, std::nullopt, true);
  mem.bandwidth = m.quantity("bandwidth", QuantityKind::bandwidth, std::nullopt, true);
  mem.latency = m.quantity("latency", QuantityKind::time, 0, false);
  mem.banks = m.integer("banks", 1, 1);
  parent.put("memory", m.finish());
  return mem;
}

LinkSpec read_link(ConfigMapping& parent) {
  ConfigMapping m = parent.mapping("link");
  LinkSpec link;
  link.bandwidth = m.quantity("bandwidth", QuantityKind::bandwidth, std::nullopt, true);
  link.latency = m.quantity("latency", QuantityKind::time, 0, false);
  link.multicast = m.boolean("multicast", false);
  parent.put("link", m.finish());
  return link;
}

// rows and cols, then one optional entry per input dtype of the matrix unit's ops, each
// inheriting what it does not give.
MatrixUnitSpec read_matrix(ConfigMapping& leaf) {
  ConfigMapping matrix = leaf.mapping("matrix");
  MatrixUnitSpec spec;
  spec.rows = matrix.integer("rows", std::nullopt, 1);
  spec.cols = matrix.integer("cols", std::nullopt, 1);
  spec.by_dtype.fill({spec.rows, spec.cols});
  for (isa::DType d : unit_input_dtypes(isa::UnitKind::matrix)) {
    const std::string key(isa::dtype_name(d));
    MatrixShape& shape = spec.by_dtype[static_cast<size_t>(d)];
    if (auto entry = matrix.optional_mapping(key)) {
      shape.rows = entry->integer("rows", spec.rows, 1);
      shape.cols = entry->integer("cols", spec.cols, 1);
      matrix.put(key, entry->finish());
    } else {
      matrix.put(key, {{"rows", shape.rows}, {"cols", shape.cols}});
    }
  }
  leaf.put("matrix", matrix.finish());
  return spec;
}

void read_leaf(ConfigMapping& level, LevelSpec& spec) {
  ConfigMapping leaf = level.mapping("leaf");
  spec.matrix = read_matrix(leaf);
  ConfigMapping vector = leaf.mapping("vector");
  spec.vector.lanes = vector.integer("lanes", std::nullopt, 1);
  leaf.put("vector", vector.finish());
  if (auto sort = leaf.optional_mapping("sort")) {
    spec.sort.width = sort->integer("width", std::nullopt, 1);
    leaf.put("sort", sort->finish());
  } else {
    leaf.put("sort", {{"width", spec.sort.width}});
  }
  spec.backend = leaf.text("backend", std::string("model"));
  const auto& backends = known_backends();
  if (std::find(backends.begin(), backends.end(), spec.backend) == backends.end()) {
    throw leaf.yaml().error("backend", fmt::format("unknown backend '{}' (expected {})",
                                                   spec.backend, fmt::join(backends, " or ")));
  }
  level.put("leaf", leaf.finish());
}

LevelSpec read_level(ConfigMapping& m, size_t index, bool last, uint64_t parent_clock) {
  LevelSpec spec;
  spec.name = m.text("name", fmt::format("level{}", index));
  spec.fanout = m.integer("fanout", std::nullopt, 1);
  // The leaf has no children, hence nothing for an LFU to combine; a leaf block elsewhere would
  // make a machine whose lower levels are unreachable.
  if (last && m.yaml().has("lfu_throughput")) {
    throw m.yaml().error("lfu_throughput", "not allowed on the last level (a leaf has no LFU)");
  }
  if (!last && m.yaml().has("leaf")) {
    throw m.yaml().error("leaf", "only allowed on the last level");
  }
  spec.controller = read_controller(m, parent_clock, !last);
  spec.memory = read_memory(m);
  spec.link = read_link(m);
  spec.keep_outputs = m.boolean("keep_outputs", true);
  spec.resident_partial_sums = m.boolean("resident_partial_sums", true);
  spec.overlap = m.boolean("overlap", true);
  spec.is_leaf = last;
  if (last) {
    read_leaf(m, spec);
  }
  return spec;
}

MachineSpec parse_machine_node(const YAML::Node& doc, const std::string& file) {
  MachineSpec spec;
  spec.file = file;
  ConfigMapping top(YamlMap(doc, file, ""));
  spec.name = top.text("machine", std::nullopt);
  // How every node splits the instructions it receives (isa/decompose/cost_model.h).
  const std::string policy = top.text("decomposer", std::string(kDefaultDecomposer));
  if (auto p = isa::policy_named(policy)) {
    spec.decomposer = *p;
  } else {
    throw top.yaml().error("decomposer", fmt::format("unknown decomposer '{}' (expected {})",
                                                     policy, isa::kPolicyNames));
  }

  ConfigMapping root = top.mapping("root");
  spec.root.controller = read_controller(root, std::nullopt, true);
  spec.root.memory = read_memory(root);
  top.put("root", root.finish());

  YAML::Node levels = top.yaml().require("levels");
  if (!levels.IsSequence()) {
    throw top.yaml().error("levels", "expected a list of levels, from the top down");
  }
  if (levels.size() == 0) {
    throw top.yaml().error("levels", "must list at least one level");
  }
  Json levels_json = Json::array();
  uint64_t parent_clock = spec.root.controller.clock;
  int64_t nodes = 1;
  for (size_t i = 0; i < levels.size(); ++i) {
    ConfigMapping level(YamlMap(levels[i], file, fmt::format("levels[{}]", i)));
    LevelSpec ls = read_level(level, i, i + 1 == levels.size(), parent_clock);
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
          "fanout", fmt::format("gives level {} more than {} nodes (2^20), the most fracsim simulates",
                                ls.name, kMaxLevelNodes));
    }
    parent_clock = ls.controller.clock;
    levels_json.push_back(level.finish());
    spec.levels.push_back(std::move(ls));
  }
  top.put("levels", std::move(levels_json));
  // Optional: a run without a table reports no energy rather than a made-up one.
  if (auto energy = top.yaml().get("energy")) {
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
