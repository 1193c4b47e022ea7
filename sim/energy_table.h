// The energy table of a machine: energy per action and leakage power per component, read from
// the machine config's optional `energy:` key, either inline or from a table file that several
// configs share (configs/energy/*.yaml, a path relative to the config). sim/energy.h prices a
// run's action counts with it; no energy constant lives in model code.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "isa/dtype.h"
#include "isa/unit_kind.h"
#include "isa/yaml_map.h"

namespace fracsim::sim {

// Energies in femtojoules, powers in nanowatts (the base units of sim/units.h).
struct MemoryEnergy {
  uint64_t read_per_byte = 0;
  uint64_t write_per_byte = 0;
};

// Static power of one node, whatever it does.
struct LeakagePower {
  uint64_t memory = 0;  // the node's memory (the root: the main memory's background power)
  uint64_t logic = 0;   // controller, DMA and LFU; at a leaf also its compute units
};

struct LevelEnergy {
  MemoryEnergy memory;
  uint64_t dma_per_byte = 0;  // per byte moved over the link to the parent's memory (root: 0)
  LeakagePower leakage;
};

struct EnergyTable {
  std::string source;  // the table file as the config names it, or "inline"
  // Per action of each leaf unit (its energy_key: a matrix unit's multiply-accumulate, a vector
  // or sort unit's element op), by the dtype of the op's first operand; only the dtypes each
  // unit accepts are set.
  std::array<std::array<uint64_t, isa::kDTypeCount>, isa::kUnitKinds> unit_action{};
  uint64_t lfu_op = 0;               // per element an LFU combines
  LevelEnergy root;                  // the main memory and the root controller
  std::vector<LevelEnergy> levels;   // one per machine level, in the machine's order
  nlohmann::ordered_json effective;  // for stats.json's config
};

// Reads `energy:` of a machine config: `node` is that key's value, `config` the mapping holding
// it (for file, line and key path), `level_names` the machine's levels top down. A table must
// give every key; its `levels:` names an entry for each machine level (entries for levels the
// machine lacks are checked and ignored, so that one table serves a series of machines).
EnergyTable read_energy_table(const YAML::Node& node, const YamlMap& config,
                              const std::vector<std::string>& level_names);

// The dtypes of the first operand of the built-in ops that run on a leaf unit, in DType order:
// the keys of per-dtype settings of that unit.
std::vector<isa::DType> unit_input_dtypes(isa::UnitKind unit);

}  // namespace fracsim::sim
