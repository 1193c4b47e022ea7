#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/reference.h"
#include "sim/energy.h"
#include "sim/energy_table.h"
#include "sim/layer_report.h"
#include "sim/units.h"

namespace fracsim::sim {

std::vector<NodeStats> level_totals(const MachineSpec& spec, const RunResult& run) {
  std::vector<NodeStats> totals(spec.levels.size() + 1);
  for (const NodeReport& n : run.nodes) totals[n.level + 1] += n.stats;
  return totals;
}

namespace {

// Appends the counters to object `j`, which has none of their names yet (to the ordered map
// directly: its operator[] first searches every key).
void append_counters(nlohmann::ordered_json& j, const NodeStats& s) {
  auto& map = j.get_ref<nlohmann::ordered_json::object_t&>();
  map.reserve(map.size() + kCounterInfo.size());
  for (size_t i = 0; i < kCounterInfo.size(); ++i)
    map.emplace_back(std::string(kCounterInfo[i].name), s.value[i]);
}

nlohmann::ordered_json counters_json(const NodeStats& s) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  append_counters(j, s);
  return j;
}

// The "nodes" array of stats.json as nlohmann::json's dump(2) writes it at the top level's
// depth, written directly: a large machine has thousands of entries (5461 at 4096 leaves), most
// of them sharing their counters (sim/node_reports.h), whose text is made once per entry.
std::string nodes_text(const MachineSpec& spec, const RunResult& run) {
  const std::vector<std::string> paths = node_paths(spec);
  std::unordered_map<const NodeReport*, std::string> counters;  // per shared entry
  std::string out = "[";
  for (size_t i = 0; i < run.nodes.size(); ++i) {
    auto [it, fresh] = counters.try_emplace(&run.nodes[i]);
    if (fresh)
      for (size_t c = 0; c < kCounterInfo.size(); ++c)
        it->second +=
            fmt::format(",\n      \"{}\": {}", kCounterInfo[c].name, run.nodes[i].stats.value[c]);
    // Node paths are level names and indices; the JSON string escapes what needs it.
    out += i == 0 ? "\n    {\n      \"path\": " : ",\n    {\n      \"path\": ";
    out += nlohmann::ordered_json(paths[i]).dump(-1, ' ', false,
                                                 nlohmann::ordered_json::error_handler_t::replace);
    out += it->second;
    out += "\n    }";
  }
  out += run.nodes.size() == 0 ? "]" : "\n  ]";
  return out;
}

double ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

// Energies are kept in femtojoules and reported in picojoules.
double pj(double fj) { return fj / 1000.0; }

nlohmann::ordered_json components_json(const ComponentEnergy& c) {
  nlohmann::ordered_json j;
  for (size_t k = 0; k < kEnergyComponents; ++k) j[std::string(kEnergyComponentName[k])] = pj(c[k]);
  return j;
}

// Same keys whether or not the config has a table, so that readers need not branch.
nlohmann::ordered_json energy_json(const MachineSpec& spec, const EnergyReport& e) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["configured"] = e.configured;
  j["table"] = e.configured ? ordered_json(e.source) : ordered_json(nullptr);
  j["total"] = pj(e.total);
  ordered_json levels = ordered_json::array();
  for (size_t l = 0; l < e.by_level.size(); ++l) {
    double total = 0;
    for (double v : e.by_level[l]) total += v;
    levels.push_back({{"name", l == 0 ? std::string("root") : spec.levels[l - 1].name},
                      {"total", pj(total)},
                      {"by_component", components_json(e.by_level[l])}});
  }
  j["by_level"] = levels;
  j["by_component"] = components_json(e.by_component);
  return j;
}

// Per unit, at the root clock for the whole machine; the matrix unit's per input dtype too
// (its array shape follows the dtype), the unit's own entry for f32.
nlohmann::ordered_json peaks_json(const MachineSpec& spec) {
  nlohmann::ordered_json j;
  for (const isa::UnitKindDef& u : isa::unit_kinds())
    j[u.name] = machine_peak(spec, u.kind, isa::DType::f32);
  nlohmann::ordered_json by_dtype;
  for (isa::DType d : unit_input_dtypes(isa::UnitKind::matrix))
    by_dtype[std::string(isa::dtype_name(d))] = machine_peak(spec, isa::UnitKind::matrix, d);
  j["matrix_by_dtype"] = by_dtype;
  return j;
}

nlohmann::ordered_json utilization_json(const std::array<double, isa::kUnitKinds>& u) {
  nlohmann::ordered_json j;
  for (const isa::UnitKindDef& k : isa::unit_kinds()) j[k.name] = u[static_cast<size_t>(k.kind)];
  return j;
}

nlohmann::ordered_json layers_json(const MachineSpec& spec, const std::vector<LayerRecord>& rs) {
  using nlohmann::ordered_json;
  ordered_json out = ordered_json::array();
  for (const LayerRecord& r : rs) {
    ordered_json work, util, bound;
    for (const isa::UnitKindDef& u : isa::unit_kinds()) {
      const auto k = static_cast<size_t>(u.kind);
      work[u.name] = r.unit_ops[k];
      util[u.name] = r.utilization[k];
      bound["compute:" + u.name] = r.compute_bound[k];
    }
    ordered_json levels = ordered_json::array();
    for (size_t l = 0; l < r.levels.size(); ++l) {
      ordered_json e = {{"name", l == 0 ? std::string("root") : spec.levels[l - 1].name}};
      append_counters(e, r.levels[l]);
      levels.push_back(std::move(e));
      if (l > 0) bound["bw:" + spec.levels[l - 1].name] = r.bandwidth_bound[l - 1];
    }
    out.push_back({{"name", r.name},
                   {"ops", r.ops},
                   {"instructions", r.instructions},
                   {"start_cycle", r.start_cycle},
                   {"end_cycle", r.end_cycle},
                   {"cycles", r.cycles},
                   {"work", work},
                   {"utilization", util},
                   {"compulsory_bytes", {{"read", r.read_bytes}, {"written", r.written_bytes}}},
                   {"bounds", bound},
                   {"bound", r.bound},
                   {"bounding", r.bounding},
                   {"attained", r.attained},
                   {"levels", levels}});
  }
  return out;
}

}  // namespace

std::array<double, isa::kUnitKinds> run_utilization(const MachineSpec& spec, const RunResult& run) {
  std::array<double, isa::kUnitKinds> u = ideal_cycles(spec, run_work(run));
  for (double& x : u) x = ratio(x, static_cast<double>(run.cycles));
  return u;
}

std::vector<OutputCheck> check_outputs(const isa::Program& program, const isa::OpTable& ops,
                                       const std::vector<uint8_t>& simulated) {
  std::vector<uint8_t> ref = isa::run_reference(program, ops);
  isa::MemoryView rv{ref.data(), ref.size()};
  isa::MemoryView sv{const_cast<uint8_t*>(simulated.data()), simulated.size()};
  std::vector<OutputCheck> out;
  for (const isa::Symbol& s : program.symbols) {
    if (s.role != isa::SymbolRole::output) continue;
    OutputCheck c;
    c.name = s.name;
    c.shape = fmt::format("{}{}", isa::dtype_name(s.tensor.dtype), isa::shape_str(s.tensor.shape));
    const uint32_t es = isa::dtype_size(s.tensor.dtype);
    isa::for_each_offset(s.tensor, [&](int64_t off) {
      ++c.elements;
      const uint64_t at = s.tensor.address + off * es;
      if (std::memcmp(ref.data() + at, simulated.data() + at, es) == 0) {
        ++c.bit_exact;
        ++c.within_tol;
        return;
      }
      const double r = isa::load_element(s.tensor, off, rv),
                   v = isa::load_element(s.tensor, off, sv);
      const double diff = std::fabs(r - v);
      c.max_abs_diff = std::max(c.max_abs_diff, diff);
      if (!isa::is_integer(s.tensor.dtype) && diff <= kOutputRtol * std::max(1.0, std::fabs(r)))
        ++c.within_tol;
    });
    out.push_back(c);
  }
  return out;
}

bool FunctionalCheck::holds() const {
  return instructions ? instructions->holds() : outputs_match();
}

bool FunctionalCheck::outputs_match() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const OutputCheck& c) { return c.match(); });
}

std::string stats_text(const MachineSpec& spec, const isa::Program& program, const RunResult& run,
                       const FunctionalCheck& check, const isa::OpTable& ops) {
  using nlohmann::ordered_json;
  const std::vector<NodeStats> totals = level_totals(spec, run);
  ordered_json j;
  j["format"] = "fracsim-stats/1";
  j["program"] = program.name;
  j["mode"] = run.mode == Mode::functional ? "functional" : "timing";
  j["folded"] = run.folded;
  j["simulated_pieces"] = run.simulated_pieces;
  j["cycles"] = run.cycles;
  j["seconds"] = static_cast<double>(run.picoseconds) * 1e-12;
  j["machine"] = {{"name", spec.name},
                  {"levels", spec.levels.size()},
                  {"leaves", spec.leaves()},
                  {"peak_ops_per_cycle", peaks_json(spec)}};
  j["utilization"] = utilization_json(run_utilization(spec, run));
  if (run.mode == Mode::functional) {
    ordered_json outs = ordered_json::array();
    for (const OutputCheck& c : check.outputs)
      outs.push_back({{"name", c.name},
                      {"shape", c.shape},
                      {"elements", c.elements},
                      {"bit_exact", c.bit_exact},
                      {"within_tolerance", c.within_tol},
                      {"max_abs_diff", c.max_abs_diff},
                      {"match", c.match()}});
    j["outputs"] = outs;
    if (check.instructions) {
      const InstructionCheck& ic = *check.instructions;
      auto listed = [](const std::vector<InstructionDifference>& list, bool failing) {
        ordered_json a = ordered_json::array();
        for (const InstructionDifference& f : list) {
          ordered_json e = {{"index", f.index},
                            {"name", f.name},
                            {"op", f.op},
                            {"elements", f.elements},
                            {"differing", f.differing}};
          if (failing) e["beyond_bound"] = f.beyond;
          e["max_abs_diff"] = f.max_abs_diff;
          if (!failing) e["bound_used"] = f.bound_used;  // finite: at most 1
          a.push_back(std::move(e));
        }
        return a;
      };
      const ordered_json failing = listed(ic.failures, true);
      const ordered_json reassociated = listed(ic.reassociated, false);
      j["instructions"] = {{"checked", ic.instructions},
                           {"bit_exact", ic.bit_exact},
                           {"within_bound", ic.within_bound},
                           {"reassociated", reassociated},
                           {"failing", failing}};
    }
    j["match"] = check.holds();
  }
  ordered_json levels = ordered_json::array();
  levels.push_back({{"name", "root"}, {"nodes", 1}, {"totals", counters_json(totals[0])}});
  for (size_t l = 0; l < spec.levels.size(); ++l)
    levels.push_back({{"name", spec.levels[l].name},
                      {"nodes", spec.nodes_at(l)},
                      {"totals", counters_json(totals[l + 1])}});
  j["levels"] = levels;
  j["energy_pj"] = energy_json(spec, run_energy(spec, run));
  j["layers"] = layers_json(spec, layer_records(spec, program, ops, run));
  j["nodes"] = ordered_json::array();  // written below, in its place
  ordered_json counters;
  for (const CounterInfo& c : kCounterInfo)
    counters[std::string(c.name)] = {{"unit", c.unit}, {"description", c.description}};
  j["counters"] = counters;
  j["config"] = spec.effective;
  // Names come from the user's files: a byte that is not UTF-8 becomes U+FFFD, not an error.
  std::string text = j.dump(2, ' ', false, ordered_json::error_handler_t::replace) + "\n";
  const std::string placeholder = "\n  \"nodes\": []";
  const size_t at = text.find(placeholder);
  FRACSIM_ASSERT(at != std::string::npos, "stats.json without its nodes key");
  text.replace(at, placeholder.size(), "\n  \"nodes\": " + nodes_text(spec, run));
  return text;
}

nlohmann::ordered_json stats_json(const MachineSpec& spec, const isa::Program& program,
                                  const RunResult& run, const FunctionalCheck& check,
                                  const isa::OpTable& ops) {
  return nlohmann::ordered_json::parse(stats_text(spec, program, run, check, ops));
}

std::string summary_text(const MachineSpec& spec, const isa::Program& program, const RunResult& run,
                         const FunctionalCheck& check) {
  const std::vector<NodeStats> totals = level_totals(spec, run);
  std::string s;
  s += fmt::format("fracsim: {} on {} ({} levels, {} leaves), {} mode\n", program.name, spec.name,
                   spec.levels.size(), spec.leaves(),
                   run.mode == Mode::functional ? "functional" : "timing");
  s += fmt::format("  cycles        {} at {} ({:.3f} us)\n", run.cycles,
                   format_quantity(spec.root.controller.clock, QuantityKind::frequency),
                   static_cast<double>(run.picoseconds) * 1e-6);
  s += fmt::format("  matrix util   {:.2f}% of {} ops/cycle\n",
                   100 * run_utilization(spec, run)[static_cast<size_t>(isa::UnitKind::matrix)],
                   machine_peak(spec, isa::UnitKind::matrix, isa::DType::f32));
  const EnergyReport energy = run_energy(spec, run);
  if (energy.configured) {
    double work = 0;
    for (const isa::UnitKindDef& u : isa::unit_kinds())
      work += static_cast<double>(totals.back()[unit_counter(u.kind)]);
    const double leakage = energy.total - energy.dynamic();
    s += fmt::format("  energy        {:.3f} uJ ({:.1f}% leakage; {:.3f} pJ per op; table {})\n",
                     energy.total * 1e-9, 100 * ratio(leakage, energy.total),
                     pj(ratio(energy.total, work)), energy.source);
  } else {
    s += "  energy        not configured (the machine config has no energy table)\n";
  }
  s += fmt::format("  {:<12} {:>6} {:>9} {:>14} {:>14} {:>12} {:>12}\n", "level", "nodes", "pieces",
                   "load bytes", "store bytes", "EX cycles", "LFU elems");
  for (size_t l = 0; l < totals.size(); ++l) {
    const NodeStats& t = totals[l];
    s += fmt::format("  {:<12} {:>6} {:>9} {:>14} {:>14} {:>12} {:>12}\n",
                     l == 0 ? "root" : spec.levels[l - 1].name, l == 0 ? 1 : spec.nodes_at(l - 1),
                     t[Counter::pieces], t[Counter::load_bytes], t[Counter::store_bytes],
                     t[Counter::execute_cycles], t[Counter::lfu_elements]);
  }
  if (check.instructions) {
    const InstructionCheck& ic = *check.instructions;
    if (ic.bit_exact == ic.instructions)
      s += fmt::format(
          "  instructions  all {} match the reference op on the machine's inputs bit for bit\n",
          ic.instructions);
    else if (ic.holds())
      s += fmt::format(
          "  instructions  all {} match the reference op on the machine's inputs ({} bit for "
          "bit, {} within the reassociation bound)\n",
          ic.instructions, ic.bit_exact, ic.within_bound);
    else
      s += fmt::format(
          "  instructions  MISMATCH: {} of {} differ from the reference op on the machine's "
          "inputs\n",
          ic.failures.size(), ic.instructions);
    constexpr size_t kListed = 5;
    for (size_t i = 0; i < ic.failures.size() && i < kListed; ++i) {
      const InstructionDifference& f = ic.failures[i];
      s += fmt::format(
          "    instruction {} {} ({}): {} of {} elements beyond its check (max abs diff {:g})\n",
          f.index, f.name, f.op, f.beyond, f.elements, f.max_abs_diff);
    }
    if (ic.failures.size() > kListed)
      s += fmt::format("    and {} more (stats.json)\n", ic.failures.size() - kListed);
    // Where the machine reordered sums, those that came nearest their bound first.
    std::vector<const InstructionDifference*> near;
    for (const InstructionDifference& f : ic.reassociated) near.push_back(&f);
    std::stable_sort(near.begin(), near.end(),
                     [](const auto* a, const auto* b) { return a->bound_used > b->bound_used; });
    for (size_t i = 0; i < near.size() && i < kListed; ++i) {
      const InstructionDifference& f = *near[i];
      s += fmt::format(
          "    instruction {} {} ({}): {} of {} elements reassociated, within the bound (max abs "
          "diff {:g}, {:.1f}% of the bound at most)\n",
          f.index, f.name, f.op, f.differing, f.elements, f.max_abs_diff, 100 * f.bound_used);
    }
    if (near.size() > kListed)
      s += fmt::format("    and {} more within the bound (stats.json)\n", near.size() - kListed);
  }
  for (const OutputCheck& c : check.outputs) {
    if (c.bit_exact == c.elements)
      s += fmt::format("  output {} {}: all {} elements match the reference bit for bit\n", c.name,
                       c.shape, c.elements);
    else if (c.match())
      s += fmt::format(
          "  output {} {}: all {} elements match the reference ({} bit for bit, the "
          "rest within rtol {}; max abs diff {:g})\n",
          c.name, c.shape, c.elements, c.bit_exact, kOutputRtol, c.max_abs_diff);
    else if (check.instructions && check.instructions->holds())
      s += fmt::format(
          "  output {} {}: {} of {} elements beyond rtol {} of the reference (max abs diff "
          "{:g}): the reassociated sums of instructions that each hold\n",
          c.name, c.shape, c.elements - c.within_tol, c.elements, kOutputRtol, c.max_abs_diff);
    else
      s += fmt::format(
          "  output {} {}: MISMATCH: {} of {} elements differ from the reference "
          "(max abs diff {:g})\n",
          c.name, c.shape, c.elements - c.within_tol, c.elements, c.max_abs_diff);
  }
  return s;
}

}  // namespace fracsim::sim
