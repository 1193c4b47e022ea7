// Energy of a run: action counts x the machine's energy table + leakage power x simulated time
// (DESIGN.md, "Stats"). Pure functions over a finished run's counters; the models count actions
// and never see an energy.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {

// What energy is reported by (stats.json's `by_component`, in this order).
enum class EnergyComponent : int {
  matrix_unit,     // MACs of the leaves' matrix units
  vector_unit,     // element ops of the leaves' vector units
  sort_unit,       // element ops of the leaves' sort units
  lfu,             // elements combined by LFUs
  dram,            // reads and writes of the root's main memory
  local_memory,    // reads and writes of the levels' local memories
  dma,             // bytes over the links between a node and its parent's memory
  memory_leakage,  // static power of every memory (the main memory included) x time
  logic_leakage,   // static power of controllers, DMA, LFUs and compute units x time
  kCount
};
constexpr size_t kEnergyComponents = static_cast<size_t>(EnergyComponent::kCount);
constexpr std::array<std::string_view, kEnergyComponents> kEnergyComponentName{
    "matrix_unit",  "vector_unit", "sort_unit",      "lfu",          "dram",
    "local_memory", "dma",         "memory_leakage", "logic_leakage"};
// The component of each leaf unit's work, in UnitKind order.
constexpr EnergyComponent unit_component(isa::UnitKind k) {
  return static_cast<EnergyComponent>(static_cast<int>(EnergyComponent::matrix_unit) +
                                      static_cast<int>(k));
}
static_assert(unit_component(isa::UnitKind::sort) == EnergyComponent::sort_unit,
              "one energy component per leaf unit, in UnitKind order");

// The actions of one level's nodes in a run, summed over them: what the table prices.
struct LevelActions {
  int64_t nodes = 0;
  // Per leaf unit, its actions (energy_key: MACs, element ops) by input dtype.
  std::array<std::array<uint64_t, isa::kDTypeCount>, isa::kUnitKinds> unit_actions{};
  uint64_t lfu_elements = 0;
  uint64_t memory_read_bytes = 0;  // of the level's own memories (the root: the main memory)
  uint64_t memory_write_bytes = 0;
  uint64_t dma_bytes = 0;  // over the links to the level above (0 at the root)
};

using ComponentEnergy = std::array<double, kEnergyComponents>;  // femtojoules

struct EnergyReport {
  bool configured = false;                // false: the config has no table and every figure is 0
  std::string source;                     // the table: a file as the config names it, or "inline"
  std::vector<ComponentEnergy> by_level;  // the root first, then the machine's levels
  ComponentEnergy by_component{};         // summed over the levels
  double total = 0;                       // femtojoules

  [[nodiscard]] double dynamic() const;  // everything but the leakage components
};

// The actions of a run, level by level (the root first). Memory traffic follows from the DMA
// counters: a node's loads write its memory and read its parent's, its write-backs the reverse,
// and a leaf's compute units read every byte loaded and write every byte written back once.
// Unit actions are the leaves' work by unit and dtype (the run's layer tallies) over each unit's
// ops per action.
std::vector<LevelActions> run_actions(const MachineSpec& spec, const RunResult& run);

// Prices the actions with the spec's table; leakage over `picoseconds` of simulated time.
EnergyReport price_actions(const MachineSpec& spec, const std::vector<LevelActions>& actions,
                           uint64_t picoseconds);

inline EnergyReport run_energy(const MachineSpec& spec, const RunResult& run) {
  return price_actions(spec, run_actions(spec, run), run.picoseconds);
}

}  // namespace fracsim::sim
