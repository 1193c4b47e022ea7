#include "sim/energy.h"

#include "isa/error.h"

namespace fracsim::sim {
namespace {

using DTypeCounts = std::array<uint64_t, isa::kDTypeCount>;

double dot(const DTypeCounts& counts, const std::array<uint64_t, isa::kDTypeCount>& fj) {
  double e = 0;
  for (size_t d = 0; d < counts.size(); ++d)
    e += static_cast<double>(counts[d]) * static_cast<double>(fj[d]);
  return e;
}

double sum(const ComponentEnergy& c, bool leakage) {
  double e = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    const bool is_leakage = i == static_cast<size_t>(EnergyComponent::memory_leakage) ||
                            i == static_cast<size_t>(EnergyComponent::logic_leakage);
    if (leakage || !is_leakage) e += c[i];
  }
  return e;
}

}  // namespace

double EnergyReport::dynamic() const { return sum(by_component, false); }

std::vector<LevelActions> run_actions(const MachineSpec& spec, const RunResult& run) {
  const size_t n = spec.levels.size() + 1;
  std::vector<NodeStats> totals(n);
  for (size_t id = 0; id < run.nodes.size(); ++id) {
    const NodeReport& node = run.nodes[id];
    FRACSIM_ASSERT(node.level + 1 >= 0 && static_cast<size_t>(node.level + 1) < n,
                   "node {} at level {}", id, node.level);
    totals[static_cast<size_t>(node.level + 1)] += node.stats;
  }
  UnitWorkTable work{};
  for (const LayerTally& layer : run.layers)
    for (size_t u = 0; u < isa::kUnitKinds; ++u)
      for (size_t d = 0; d < isa::kDTypeCount; ++d) work[u][d] += layer.work[u][d];
  std::vector<LevelActions> actions(n);
  for (size_t l = 0; l < n; ++l) {
    const NodeStats& t = totals[l];
    LevelActions& a = actions[l];
    a.nodes = l == 0 ? 1 : spec.nodes_at(l - 1);
    a.lfu_elements = t[Counter::lfu_elements];
    // Loads by this level write its memories; write-backs read them. The level below does the
    // reverse: its loads read these memories and its write-backs write them.
    a.memory_write_bytes = t[Counter::load_bytes] + t[Counter::broadcast_bytes];
    a.memory_read_bytes = t[Counter::store_bytes];
    if (l + 1 < n) {
      a.memory_read_bytes += totals[l + 1][Counter::load_bytes];
      a.memory_write_bytes += totals[l + 1][Counter::store_bytes];
    } else {
      // The leaf's units read the operands it loaded and write the results it writes back.
      a.memory_read_bytes += t[Counter::load_bytes] + t[Counter::broadcast_bytes];
      a.memory_write_bytes += t[Counter::store_bytes];
    }
    a.dma_bytes = l == 0 ? 0 : t[Counter::load_bytes] + t[Counter::store_bytes];
    if (l + 1 == n)
      for (const isa::UnitKindDef& u : isa::unit_kinds()) {
        const auto k = static_cast<size_t>(u.kind);
        for (size_t d = 0; d < isa::kDTypeCount; ++d)
          a.unit_actions[k][d] = work[k][d] / static_cast<uint64_t>(u.ops_per_action);
      }
  }
  return actions;
}

EnergyReport price_actions(const MachineSpec& spec, const std::vector<LevelActions>& actions,
                           uint64_t picoseconds) {
  FRACSIM_ASSERT(actions.size() == spec.levels.size() + 1, "{} levels of actions for {} levels",
                 actions.size(), spec.levels.size() + 1);
  EnergyReport r;
  r.by_level.resize(actions.size());
  if (!spec.energy) return r;
  const EnergyTable& table = *spec.energy;
  r.configured = true;
  r.source = table.source;
  const double ps = static_cast<double>(picoseconds);
  for (size_t l = 0; l < actions.size(); ++l) {
    const LevelActions& a = actions[l];
    const LevelEnergy& e = l == 0 ? table.root : table.levels[l - 1];
    ComponentEnergy& c = r.by_level[l];
    auto at = [&c](EnergyComponent k) -> double& { return c[static_cast<size_t>(k)]; };
    for (const isa::UnitKindDef& u : isa::unit_kinds()) {
      const auto k = static_cast<size_t>(u.kind);
      at(unit_component(u.kind)) = dot(a.unit_actions[k], table.unit_action[k]);
    }
    at(EnergyComponent::lfu) =
        static_cast<double>(a.lfu_elements) * static_cast<double>(table.lfu_op);
    const double memory =
        static_cast<double>(a.memory_read_bytes) * static_cast<double>(e.memory.read_per_byte) +
        static_cast<double>(a.memory_write_bytes) * static_cast<double>(e.memory.write_per_byte);
    at(l == 0 ? EnergyComponent::dram : EnergyComponent::local_memory) = memory;
    at(EnergyComponent::dma) =
        static_cast<double>(a.dma_bytes) * static_cast<double>(e.dma_per_byte);
    // nW x ps = 1e-21 J = 1e-6 fJ. The product is formed first so that one division rounds.
    const double node_ps = static_cast<double>(a.nodes) * ps;
    at(EnergyComponent::memory_leakage) = static_cast<double>(e.leakage.memory) * node_ps / 1e6;
    at(EnergyComponent::logic_leakage) = static_cast<double>(e.leakage.logic) * node_ps / 1e6;
    for (size_t k = 0; k < kEnergyComponents; ++k) r.by_component[k] += c[k];
  }
  r.total = sum(r.by_component, true);
  return r;
}

}  // namespace fracsim::sim
