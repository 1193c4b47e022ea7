#include "sim/machine_spec.h"

#include <algorithm>
#include <climits>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "isa/yaml_map.h"
#include "sim/units.h"

namespace fracsim::sim {

namespace {

using Json = nlohmann::ordered_json;

constexpr uint64_t kPicosecondsPerSecond = 1000000000000ULL;

// The leaf backends a config may name. The rtl library will add "rtl" through sim's backend
// registry; until it exists, the model is the only one.
const std::vector<std::string>& known_backends() {
  static const std::vector<std::string> kBackends{"model"};
  return kBackends;
}

// Reads one mapping of the machine config and records, in schema order, the effective value of
// every key (given or defaulted) plus the list of keys that were defaulted, for stats.json.
class ConfigMapping {
 public:
  explicit ConfigMapping(YamlMap map) : map_(std::move(map)) {}

  YamlMap& yaml() { return map_; }

  // A required nested mapping.
  ConfigMapping mapping(const std::string& key) { return ConfigMapping(map_.require_map(key)); }

  std::string text(const std::string& key, const std::optional<std::string>& fallback) {
    std::string value;
    if (auto node = given(key, fallback.has_value())) {
      value = scalar_string(*node, map_.file(), map_.key_path(key));
      if (value.empty()) {
        throw map_.error(key, "must not be empty");
      }
    } else {
      value = *fallback;
    }
    json_[key] = value;
    return value;
  }

  // An integer in [min, INT_MAX]; required when `fallback` is empty.
  int integer(const std::string& key, std::optional<int64_t> fallback, int64_t min) {
    int64_t value = 0;
    if (auto node = given(key, fallback.has_value())) {
      value = scalar_int(*node, map_.file(), map_.key_path(key));
      if (value < min) {
        throw map_.error(key, fmt::format("must be at least {}, got {}", min, value));
      }
      if (value > INT_MAX) {
        throw map_.error(key, fmt::format("must be at most {}, got {}", INT_MAX, value));
      }
    } else {
      value = *fallback;
    }
    json_[key] = value;
    return static_cast<int>(value);
  }

  // A quantity with a unit; `positive` rejects zero (a capacity or bandwidth of nothing).
  uint64_t quantity(const std::string& key, QuantityKind kind, std::optional<uint64_t> fallback,
                    bool positive) {
    uint64_t value = 0;
    if (auto node = given(key, fallback.has_value())) {
      value = parse_quantity(*node, kind, map_.file(), map_.key_path(key));
      if (positive && value == 0) {
        throw map_.error(key, fmt::format("must be greater than zero, got '{}'", node->Scalar()));
      }
    } else {
      value = *fallback;
    }
    json_[key] = format_quantity(value, kind);
    return value;
  }

  // A clock; its period must be a whole number of picoseconds, because simulated time is kept in
  // whole picoseconds and cycle counts convert to it exactly.
  uint64_t clock(const std::optional<uint64_t>& fallback) {
    uint64_t hz = quantity("clock", QuantityKind::frequency, fallback, true);
    if (kPicosecondsPerSecond % hz != 0) {
      throw map_.error(
          "clock",
          fmt::format("{} gives a period of {:.3f} ps; fracsim needs a whole number "
                      "of picoseconds",
                      map_.require("clock").Scalar(),
                      static_cast<double>(kPicosecondsPerSecond) / static_cast<double>(hz)));
    }
    return hz;
  }

  void put(const std::string& key, Json value) { json_[key] = std::move(value); }

  // Rejects unknown keys and returns the effective mapping.
  Json finish() {
    map_.finish();
    json_["defaulted"] = defaulted_;
    return std::move(json_);
  }

 private:
  // The node of `key` when the config gives it; records a defaulted key otherwise.
  std::optional<YAML::Node> given(const std::string& key, bool optional) {
    if (!optional) {
      return map_.require(key);
    }
    auto node = map_.get(key);
    if (!node) {
      defaulted_.push_back(key);
    }
    return node;
  }

  YamlMap map_;
  Json json_ = Json::object();
  std::vector<std::string> defaulted_;
};

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
  parent.put("link", m.finish());
  return link;
}

void read_leaf(ConfigMapping& level, LevelSpec& spec) {
  ConfigMapping leaf = level.mapping("leaf");
  ConfigMapping matrix = leaf.mapping("matrix");
  spec.matrix.rows = matrix.integer("rows", std::nullopt, 1);
  spec.matrix.cols = matrix.integer("cols", std::nullopt, 1);
  leaf.put("matrix", matrix.finish());
  ConfigMapping vector = leaf.mapping("vector");
  spec.vector.lanes = vector.integer("lanes", std::nullopt, 1);
  leaf.put("vector", vector.finish());
  spec.backend = leaf.text("backend", std::string("model"));
  const auto& backends = known_backends();
  if (std::find(backends.begin(), backends.end(), spec.backend) == backends.end()) {
    throw leaf.yaml().error("backend", fmt::format("unknown backend '{}' (expected {})",
                                                   spec.backend, fmt::join(backends, ", ")));
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
    // Guards leaves() and nodes_at() against overflow; no real machine comes near this.
    if (__builtin_mul_overflow(nodes, static_cast<int64_t>(ls.fanout), &nodes) ||
        nodes > (int64_t{1} << 48)) {
      throw level.yaml().error("fanout", "makes the machine larger than 2^48 nodes");
    }
    parent_clock = ls.controller.clock;
    levels_json.push_back(level.finish());
    spec.levels.push_back(std::move(ls));
  }
  top.put("levels", std::move(levels_json));
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

}  // namespace fracsim::sim
