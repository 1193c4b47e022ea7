#include "sim/energy.h"

#include "isa/error.h"

namespace fracsim::sim {
namespace {

using DTypeCounts = std::array<uint64_t, isa::kDTypeCount>;

// The program's work on the matrix units (`matrix`) or on the others (which the leaf counts as
// vector_ops), by the dtype of each instruction's first operand.
DTypeCounts program_work(const isa::Program& program, const isa::OpTable& ops, bool matrix) {
  DTypeCounts work{};
  for (const isa::Instruction& instr : program.instructions) {
    const isa::OpDef& op = ops.get(instr.opcode);
    if ((op.unit == "matrix") != matrix || instr.operands.empty()) continue;
    work[static_cast<size_t>(instr.operands[0].dtype)] +=
        static_cast<uint64_t>(isa::instruction_work(op, instr));
  }
  return work;
}

// Splits `total` over the dtypes in proportion to `weights`; the last dtype with a weight takes
// the rounding remainder, so the parts always add up to `total`.
DTypeCounts split_by(uint64_t total, const DTypeCounts& weights) {
  DTypeCounts out{};
  long double sum = 0;
  size_t last = weights.size();
  for (size_t d = 0; d < weights.size(); ++d) {
    sum += static_cast<long double>(weights[d]);
    if (weights[d] > 0) last = d;
  }
  if (total == 0) return out;
  FRACSIM_ASSERT(last < weights.size(), "{} leaf ops but no program instruction on that unit",
                 total);
  uint64_t given = 0;
  for (size_t d = 0; d < last; ++d) {
    out[d] = static_cast<uint64_t>(static_cast<long double>(total) *
                                   static_cast<long double>(weights[d]) / sum);
    given += out[d];
  }
  out[last] = total - given;
  return out;
}

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

std::vector<LevelActions> run_actions(const MachineSpec& spec, const RunResult& run,
                                      const isa::Program& program, const isa::OpTable& ops) {
  const size_t n = spec.levels.size() + 1;
  std::vector<NodeStats> totals(n);
  for (size_t id = 0; id < run.nodes.size(); ++id) {
    const NodeReport& node = run.nodes[id];
    FRACSIM_ASSERT(node.level + 1 >= 0 && static_cast<size_t>(node.level + 1) < n,
                   "node {} at level {}", id, node.level);
    totals[static_cast<size_t>(node.level + 1)] += node.stats;
  }
  const DTypeCounts matrix_work = program_work(program, ops, true);
  const DTypeCounts vector_work = program_work(program, ops, false);
  std::vector<LevelActions> actions(n);
  for (size_t l = 0; l < n; ++l) {
    const NodeStats& t = totals[l];
    LevelActions& a = actions[l];
    a.nodes = l == 0 ? 1 : spec.nodes_at(l - 1);
    a.lfu_elements = t[Counter::lfu_elements];
    // Loads by this level write its memories; write-backs read them. The level below does the
    // reverse: its loads read these memories and its write-backs write them.
    a.memory_write_bytes = t[Counter::load_bytes];
    a.memory_read_bytes = t[Counter::store_bytes];
    if (l + 1 < n) {
      a.memory_read_bytes += totals[l + 1][Counter::load_bytes];
      a.memory_write_bytes += totals[l + 1][Counter::store_bytes];
    } else {
      // The leaf's units read the operands it loaded and write the results it writes back.
      a.memory_read_bytes += t[Counter::load_bytes];
      a.memory_write_bytes += t[Counter::store_bytes];
    }
    a.dma_bytes = l == 0 ? 0 : t[Counter::load_bytes] + t[Counter::store_bytes];
    // A matrix op's work is 2 ops per MAC (the op definitions' work formulas).
    a.macs = split_by(t[Counter::matrix_ops] / 2, matrix_work);
    a.vector_ops = split_by(t[Counter::vector_ops], vector_work);
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
    at(EnergyComponent::matrix_unit) = dot(a.macs, table.mac);
    at(EnergyComponent::vector_unit) = dot(a.vector_ops, table.vector_op);
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
