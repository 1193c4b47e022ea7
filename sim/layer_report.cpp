#include "sim/layer_report.h"

#include <algorithm>

#include <fmt/format.h>

#include "isa/decompose/localize.h"
#include "isa/error.h"
#include "sim/leaf_unit.h"

namespace fracsim::sim {

double machine_peak(const MachineSpec& spec, isa::UnitKind unit, isa::DType dtype) {
  const LevelSpec& leaf = spec.levels.back();
  const std::map<std::string, int64_t> params = leaf_params(leaf).values(dtype);
  const double clock_ratio =
      static_cast<double>(leaf.controller.clock) / static_cast<double>(spec.root.controller.clock);
  return static_cast<double>(spec.leaves()) * isa::unit_peak(unit, params) * clock_ratio;
}

std::array<double, isa::kUnitKinds> ideal_cycles(const MachineSpec& spec,
                                                 const UnitWorkTable& work) {
  std::array<double, isa::kUnitKinds> out{};
  for (size_t u = 0; u < isa::kUnitKinds; ++u)
    for (size_t d = 0; d < isa::kDTypeCount; ++d)
      if (work[u][d] > 0)
        out[u] += static_cast<double>(work[u][d]) /
                  machine_peak(spec, static_cast<isa::UnitKind>(u), static_cast<isa::DType>(d));
  return out;
}

UnitWorkTable run_work(const RunResult& run) {
  UnitWorkTable work{};
  for (const LayerTally& layer : run.layers)
    for (size_t u = 0; u < isa::kUnitKinds; ++u)
      for (size_t d = 0; d < isa::kDTypeCount; ++d) work[u][d] += layer.work[u][d];
  return work;
}

std::vector<uint64_t> attributed_cycles(const MachineSpec& spec, const RunResult& run) {
  const uint64_t period = spec.root.controller.period_ps();
  std::vector<uint64_t> out(run.spans.size());
  uint64_t before = 0;
  for (size_t i = 0; i < run.spans.size(); ++i) {
    const uint64_t end = (run.spans[i].end_ps + period - 1) / period;
    FRACSIM_ASSERT(end >= before, "instruction {} completed before instruction {}", i, i - 1);
    out[i] = end - before;
    before = end;
  }
  // Nothing runs after the last instruction completes; should it, the last is charged for it.
  if (!out.empty() && run.cycles > before) out.back() += run.cycles - before;
  return out;
}

std::vector<LayerRecord> layer_records(const MachineSpec& spec, const isa::Program& program,
                                       const isa::OpTable& ops, const RunResult& run) {
  const uint64_t period = spec.root.controller.period_ps();
  const double clock = static_cast<double>(spec.root.controller.clock);
  const std::vector<uint64_t> charged = attributed_cycles(spec, run);
  // Aggregate bandwidths into each level, in bytes per root cycle: the memories of the nodes
  // one level up, and the links from them to the level's nodes (one direction).
  std::vector<double> memory_bw, link_bw;
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const double parents = l == 0 ? 1.0 : static_cast<double>(spec.nodes_at(l - 1));
    const MemorySpec& pm = l == 0 ? spec.root.memory : spec.levels[l - 1].memory;
    memory_bw.push_back(parents * static_cast<double>(pm.bandwidth) / clock);
    link_bw.push_back(static_cast<double>(spec.nodes_at(l)) *
                      static_cast<double>(spec.levels[l].link.bandwidth) / clock);
  }
  std::vector<LayerRecord> out;
  for (const LayerTally& t : run.layers) {
    LayerRecord r;
    r.name = t.name;
    r.instructions = t.instructions.size();
    r.levels = t.levels;
    r.work = t.work;
    uint64_t start_ps = UINT64_MAX, end_ps = 0;
    for (size_t i : t.instructions) {
      const isa::Instruction& instr = program.instructions[i];
      const isa::OpDef& op = ops.get(instr.opcode);
      if (std::find(r.ops.begin(), r.ops.end(), op.name) == r.ops.end()) r.ops.push_back(op.name);
      for (size_t o = 0; o < instr.operands.size(); ++o) {
        if (isa::operand_is_read(op, instr, o)) r.read_bytes += instr.operands[o].stored_bytes();
        if (op.operands[o].role == isa::OperandRole::out)
          r.written_bytes += instr.operands[o].stored_bytes();
      }
      start_ps = std::min(start_ps, run.spans[i].start_ps);
      end_ps = std::max(end_ps, run.spans[i].end_ps);
      r.cycles += charged[i];
    }
    r.start_cycle = start_ps / period;
    r.end_cycle = (end_ps + period - 1) / period;
    r.compute_bound = ideal_cycles(spec, t.work);
    for (size_t u = 0; u < isa::kUnitKinds; ++u) {
      for (uint64_t w : t.work[u]) r.unit_ops[u] += w;
      r.utilization[u] = r.cycles > 0 ? r.compute_bound[u] / static_cast<double>(r.cycles) : 0;
      if (r.compute_bound[u] > r.bound || r.bounding.empty()) {
        r.bound = r.compute_bound[u];
        r.bounding = "compute:" + isa::unit_name(static_cast<isa::UnitKind>(u));
      }
    }
    const double total = static_cast<double>(r.read_bytes + r.written_bytes);
    const double one_way = static_cast<double>(std::max(r.read_bytes, r.written_bytes));
    for (size_t l = 0; l < spec.levels.size(); ++l) {
      const double b = std::max(total / memory_bw[l], one_way / link_bw[l]);
      r.bandwidth_bound.push_back(b);
      if (b > r.bound) {
        r.bound = b;
        r.bounding = "bw:" + spec.levels[l].name;
      }
    }
    r.attained = r.cycles > 0 ? r.bound / static_cast<double>(r.cycles) : 0;
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string joined(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? sep : "") + parts[i];
  return s;
}

// The stage counters layers.csv gives per level.
constexpr Counter kStageCounters[] = {Counter::load_bytes,    Counter::store_bytes,
                                      Counter::load_cycles,   Counter::execute_cycles,
                                      Counter::reduce_cycles, Counter::writeback_cycles,
                                      Counter::hazard_cycles};

}  // namespace

std::string layers_csv(const MachineSpec& spec, const std::vector<LayerRecord>& records) {
  std::vector<std::string> head = {"layer",       "ops",       "instructions",
                                   "start_cycle", "end_cycle", "cycles"};
  for (const isa::UnitKindDef& u : isa::unit_kinds()) head.push_back(u.name + "_ops");
  for (const isa::UnitKindDef& u : isa::unit_kinds()) head.push_back(u.name + "_utilization");
  head.insert(head.end(), {"read_bytes", "written_bytes"});
  for (const isa::UnitKindDef& u : isa::unit_kinds()) head.push_back("bound_compute:" + u.name);
  for (const LevelSpec& l : spec.levels) head.push_back("bound_bw:" + l.name);
  head.insert(head.end(), {"bound", "bounding", "attained"});
  for (size_t l = 0; l <= spec.levels.size(); ++l)
    for (Counter c : kStageCounters)
      head.push_back(fmt::format("{}.{}", l == 0 ? "root" : spec.levels[l - 1].name,
                                 kCounterInfo[static_cast<size_t>(c)].name));
  std::string out = joined(head, ",") + "\n";
  for (const LayerRecord& r : records) {
    std::vector<std::string> row = {csv_field(r.name),
                                    joined(r.ops, "+"),
                                    std::to_string(r.instructions),
                                    std::to_string(r.start_cycle),
                                    std::to_string(r.end_cycle),
                                    std::to_string(r.cycles)};
    for (uint64_t w : r.unit_ops) row.push_back(std::to_string(w));
    for (double u : r.utilization) row.push_back(fmt::format("{}", u));
    row.push_back(std::to_string(r.read_bytes));
    row.push_back(std::to_string(r.written_bytes));
    for (double b : r.compute_bound) row.push_back(fmt::format("{}", b));
    for (double b : r.bandwidth_bound) row.push_back(fmt::format("{}", b));
    row.push_back(fmt::format("{}", r.bound));
    row.push_back(r.bounding);
    row.push_back(fmt::format("{}", r.attained));
    for (const NodeStats& level : r.levels)
      for (Counter c : kStageCounters) row.push_back(std::to_string(level[c]));
    out += joined(row, ",") + "\n";
  }
  return out;
}

std::string layers_table(const std::vector<LayerRecord>& records, size_t limit) {
  std::vector<const LayerRecord*> order;
  for (const LayerRecord& r : records) order.push_back(&r);
  std::stable_sort(order.begin(), order.end(), [](const LayerRecord* a, const LayerRecord* b) {
    return a->cycles > b->cycles;
  });
  if (limit > 0 && order.size() > limit) order.resize(limit);
  uint64_t total = 0;
  double bounds = 0;
  size_t width = 5;
  for (const LayerRecord& r : records) {
    total += r.cycles;
    bounds += r.bound;
  }
  for (const LayerRecord* r : order) width = std::max(width, r->name.size());
  const auto matrix = static_cast<size_t>(isa::UnitKind::matrix);
  std::string s =
      fmt::format("  {:<{}} {:<18} {:>12} {:>6} {:>12} {:<16} {:>8} {:>7}\n", "layer", width, "ops",
                  "cycles", "share", "bound", "bounding", "attained", "matrix");
  for (const LayerRecord* r : order)
    s += fmt::format(
        "  {:<{}} {:<18} {:>12} {:>5.1f}% {:>12.0f} {:<16} {:>7.1f}% {:>6.1f}%\n", r->name, width,
        joined(r->ops, "+"), r->cycles,
        total ? 100.0 * static_cast<double>(r->cycles) / static_cast<double>(total) : 0.0, r->bound,
        r->bounding, 100 * r->attained, 100 * r->utilization[matrix]);
  s += fmt::format(
      "  {} of {} layers; total {} cycles, sum of the bounds {:.0f}, attained {:.1f}%\n",
      order.size(), records.size(), total, bounds,
      total ? 100 * bounds / static_cast<double>(total) : 0.0);
  return s;
}

}  // namespace fracsim::sim
