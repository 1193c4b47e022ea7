#include "sim/mapping_oracle.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/asm_syntax.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/search_space.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"
#include "sim/instruction_plan.h"
#include "sim/machine.h"
#include "sim/trace.h"

namespace fracsim::sim {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The tile with each length as plan_tiling cuts it: ceil(extent / pieces). Tilings equal here
// give the same pieces.
std::vector<int64_t> rebalanced(const std::vector<int64_t>& ext, std::vector<int64_t> tile) {
  for (size_t d = 0; d < ext.size(); ++d)
    if (ext[d] > 0) tile[d] = ceil_div(ext[d], ceil_div(ext[d], tile[d]));
  return tile;
}

// The program with instruction `i` alone (its layer name kept; data is not needed in timing
// mode).
isa::Program single_instruction(const isa::Program& p, size_t i) {
  isa::Program out;
  out.name = p.name;
  out.footprint = p.footprint;
  out.instructions = {p.instructions[i]};
  if (!p.instruction_names.empty()) out.instruction_names = {p.instruction_names[i]};
  return out;
}

// The top node's view of the space: its shape, the budget the policy fits tilings against.
struct TopNode {
  const isa::OpDef* op = nullptr;
  isa::Instruction instr;
  NodeShape shape;
  isa::NodeBudget budget;
  std::vector<int64_t> ext;
};

// Parts per dim the policy gives a node's piece (its partition across the node's children).
std::vector<int64_t> policy_parts(const isa::OpDef& op, const isa::OpTable& ops,
                                  const isa::CostModel& model, const isa::Instruction& piece,
                                  int fanout) {
  const isa::Instruction local = isa::localize(op, piece, 0).local;
  const std::vector<int64_t> ext = isa::dim_extents(op, local);
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == isa::DimKind::parallel && ext[d] > 1)
      return model.policy() == isa::Policy::search
                 ? model.parallel_parts(0, op, ops, local, fanout, isa::CostModel::Choice::decide)
                 : isa::halving_parts(op, local, fanout);
  return std::vector<int64_t>(ext.size(), 1);
}

std::string dims_text(const isa::OpDef& op, const std::vector<int64_t>& v, bool parts) {
  std::vector<std::string> items;
  for (size_t d = 0; d < v.size(); ++d) {
    const isa::DimKind k = op.dims[d].kind;
    if (parts ? k != isa::DimKind::parallel : !isa::splittable(op.dims[d])) continue;
    items.push_back(fmt::format("{}={}", op.dims[d].name, v[d]));
  }
  return items.empty() ? "-" : fmt::format("{}", fmt::join(items, " "));
}

// simulate(), its timeline handed to options.timeline under `name` when that is set.
RunResult simulate_recorded(const MachineSpec& spec, const isa::OpTable& ops,
                            const isa::Program& program, SimOptions sim,
                            const OracleOptions& options, const std::string& name) {
  if (!options.timeline) return simulate(spec, ops, program, Mode::timing, sim);
  TraceRecorder trace;
  sim.trace = &trace;
  RunResult result = simulate(spec, ops, program, Mode::timing, sim);
  options.timeline(name, trace.json());
  return result;
}

// `text` (OracleOptions::candidates) read against the op's dims and the top node's piece
// `top`: tile lengths rebalanced as the space's are, parts of every parallel dim (1 where not
// given). `partitioned`: whether `text` gives parts (a `|`).
MapCandidate parse_candidate(const isa::OpDef& op, const isa::Instruction& top, int fanout,
                             const std::string& text, bool& partitioned) {
  auto fail = [&](const std::string& why) {
    return ConfigError(fmt::format("fracsim map: --candidate '{}': {}", text, why));
  };
  const std::vector<int64_t> ext = isa::dim_extents(op, top);
  const size_t bar = text.find('|');
  partitioned = bar != std::string::npos;
  if (partitioned && fanout == 1)
    throw fail("the top node has no children to partition its pieces across (nothing after '|')");
  MapCandidate c{ext, {}};
  if (fanout > 1) c.parts.assign(ext.size(), 1);
  auto read = [&](const std::string& items, bool parts) {
    std::istringstream in(items);
    std::string item;
    std::set<size_t> given;
    while (in >> item) {
      const size_t eq = item.find('=');
      const std::string name = item.substr(0, eq == std::string::npos ? item.size() : eq);
      size_t d = 0;
      while (d < op.dims.size() && op.dims[d].name != name) ++d;
      const bool allowed = d < op.dims.size() && (parts ? op.dims[d].kind == isa::DimKind::parallel
                                                        : isa::splittable(op.dims[d]));
      if (!allowed) {
        std::vector<std::string> names;
        for (const isa::DimDef& dim : op.dims)
          if (parts ? dim.kind == isa::DimKind::parallel : isa::splittable(dim))
            names.push_back(dim.name);
        throw fail(fmt::format("no dim '{}' among {}'s {} ({})", name, op.name,
                               parts ? "parallel dims, which the parts split" : "splittable dims",
                               fmt::join(names, " ")));
      }
      if (!given.insert(d).second) throw fail(fmt::format("{} given twice", name));
      const std::optional<int64_t> v =
          eq == std::string::npos ? std::nullopt
                                  : isa::asm_syntax::parse_number<int64_t>(item.substr(eq + 1));
      if (!v || *v < 1)
        throw fail(fmt::format("{}: expected {}=N, N a whole number of at least 1, got '{}'", name,
                               name, item));
      if (*v > std::max<int64_t>(ext[d], 1))
        throw fail(
            fmt::format("{}={}: more than the dim's extent {} at the top node", name, *v, ext[d]));
      (parts ? c.parts : c.tile)[d] = *v;
    }
  };
  read(text.substr(0, bar), false);
  if (partitioned) {
    read(text.substr(bar + 1), true);
    int64_t used = 1;
    for (int64_t p : c.parts) used *= p;
    if (used > fanout)
      throw fail(
          fmt::format("{} parts in all, more than the top node's {} children", used, fanout));
  }
  c.tile = rebalanced(ext, c.tile);
  return c;
}

}  // namespace

std::string candidate_name(const isa::OpDef& op, const MapCandidate& c) {
  std::string name = dims_text(op, c.tile, false);
  if (!c.parts.empty()) name += "_" + dims_text(op, c.parts, true);
  name.erase(std::remove(name.begin(), name.end(), '='), name.end());
  std::replace(name.begin(), name.end(), ' ', '-');
  return name;
}

OracleResult map_instruction(const MachineSpec& spec, const isa::OpTable& ops,
                             const isa::Program& program, size_t index,
                             const OracleOptions& options) {
  if (index >= program.instructions.size())
    throw ConfigError(fmt::format(
        "fracsim map: --instruction {}: program {} has {} instructions (counted from 0)", index,
        program.name, program.instructions.size()));
  OracleResult r;
  r.program = program.name;
  r.machine = spec.name;
  r.policy = std::string(isa::policy_name(spec.decomposer));
  r.index = index;
  r.layer = isa::instruction_name(program, index);
  r.instruction = program.instructions[index];
  const isa::Program alone = single_instruction(program, index);
  const isa::OpDef& op = ops.get(r.instruction.opcode);

  // The policy's own choice: a plain run (this also rejects a machine the instruction cannot
  // run on, with the simulator's own message).
  r.chosen_cycles = simulate_recorded(spec, ops, alone, SimOptions{}, options, "chosen").cycles;

  const uint64_t reserved = isa::align_up(alone.footprint, isa::kTileAlign);
  isa::CostModel model = cost_model(spec, reserved);
  const LevelSpec& top_level = spec.levels.front();
  r.level_name = top_level.name;
  r.fanout = spec.levels.size() > 1 ? spec.levels[1].fanout : 1;
  r.top = r.instruction;
  if (top_level.fanout > 1)
    r.top = isa::parallel(op, ops, r.instruction, top_level.fanout, reserved, &model, -1)
                .children.front();
  const NodeShape shape{top_level.memory.capacity,
                        top_level.controller.pipeline_depth,
                        r.fanout,
                        fmt::format("{}: level {}, program {} instruction {}", spec.file,
                                    top_level.name, program.name, index),
                        &model,
                        0};
  const std::vector<int64_t> ext = isa::dim_extents(op, r.top);
  const InstructionPlan chosen_plan = plan_instruction(op, ops, r.top, shape);
  r.chosen.tile = rebalanced(ext, chosen_plan.tile);
  if (r.fanout > 1)
    r.chosen.parts = policy_parts(op, ops, model, chosen_plan.pieces.front(), r.fanout);

  // The space: the product of the tile lengths per dim, those legal and fitting as the policy
  // counts memory (the static inputs once, N sub-blocks for the rest), each with the partitions
  // of its largest piece.
  isa::NodeBudget budget{isa::sub_block_bytes(shape.capacity, shape.pipeline_depth), r.fanout,
                         shape.where};
  budget.capacity = shape.capacity;
  budget.depth = shape.pipeline_depth;
  budget.model = &model;
  budget.level = 0;
  const bool leaf = top_level.is_leaf;
  const std::vector<std::vector<int64_t>> values =
      isa::tile_values(op, r.top, leaf, {r.chosen.tile});
  r.tilings = 1;
  for (const auto& v : values)
    r.tilings = r.tilings > (uint64_t{1} << 40) ? r.tilings : r.tilings * v.size();
  std::map<std::vector<int64_t>, bool> fits;  // rebalanced tiling -> legal and fitting
  // The limit is the space's or the sample's; candidates given are simulated as given.
  r.max_pieces = options.candidates.empty() ? options.max_pieces : 0;
  auto pieces = [&](const std::vector<int64_t>& tile) {
    uint64_t n = 1;
    for (size_t d = 0; d < ext.size(); ++d)
      if (ext[d] > 0) n *= static_cast<uint64_t>(ceil_div(ext[d], tile[d]));
    return n;
  };
  auto fitting = [&](const std::vector<int64_t>& tile) {
    auto [it, fresh] = fits.try_emplace(tile, false);
    if (fresh)
      it->second = (options.max_pieces == 0 || pieces(tile) <= options.max_pieces) &&
                   isa::tiling_legal(op, r.top, tile) &&
                   isa::tiling_cost(op, ops, r.top, tile, budget) <= isa::budget_limit(budget);
    return it->second;
  };
  auto partitions = [&](const std::vector<int64_t>& tile) {
    if (r.fanout == 1) return std::vector<std::vector<int64_t>>{{}};
    return isa::partition_candidates(op, isa::worst_case_piece(op, r.top, tile), r.fanout);
  };
  auto decode = [&](uint64_t i) {
    std::vector<int64_t> t(values.size());
    for (size_t d = values.size(); d-- > 0;) {
      t[d] = values[d][i % values[d].size()];
      i /= values[d].size();
    }
    return rebalanced(ext, t);
  };

  std::vector<MapCandidate> candidates;
  if (!options.candidates.empty()) {
    r.listed = true;
    for (const std::string& text : options.candidates) {
      bool partitioned = false;
      MapCandidate c = parse_candidate(op, r.top, r.fanout, text, partitioned);
      if (!isa::tiling_legal(op, r.top, c.tile))
        throw ConfigError(fmt::format(
            "fracsim map: --candidate '{}': the tiling splits a reduce dim whose reduce dims "
            "before it are not at tiles of 1 (its pieces would not add in the reference order)",
            text));
      if (isa::tiling_cost(op, ops, r.top, c.tile, budget) > isa::budget_limit(budget))
        throw ConfigError(fmt::format(
            "fracsim map: --candidate '{}': the tiling does not fit the top node's memory "
            "({}: {} bytes needed, {} available)",
            text, r.level_name, isa::tiling_cost(op, ops, r.top, c.tile, budget),
            isa::budget_limit(budget)));
      const isa::Instruction piece = isa::worst_case_piece(op, r.top, c.tile);
      if (r.fanout > 1 && !partitioned) c.parts = policy_parts(op, ops, model, piece, r.fanout);
      const std::vector<int64_t> piece_ext = isa::dim_extents(op, piece);
      for (size_t d = 0; d < c.parts.size(); ++d)
        if (c.parts[d] > std::max<int64_t>(piece_ext[d], 1))
          throw ConfigError(fmt::format(
              "fracsim map: --candidate '{}': {}={}: more parts than the tile's {} (a piece is "
              "split into at most its length)",
              text, op.dims[d].name, c.parts[d], piece_ext[d]));
      if (std::find(candidates.begin(), candidates.end(), c) == candidates.end())
        candidates.push_back(std::move(c));
    }
  } else if (options.sample == 0) {
    std::set<std::vector<int64_t>> seen;
    for (uint64_t i = 0; i < r.tilings; ++i) {
      const std::vector<int64_t> t = decode(i);
      if (!seen.insert(t).second || !fitting(t)) continue;
      ++r.fitting_tilings;
      for (std::vector<int64_t>& p : partitions(t)) candidates.push_back({t, std::move(p)});
    }
    r.space = candidates.size();
  } else {
    r.sampled = true;
    r.sample = options.sample;
    r.seed = options.seed;
    std::set<MapCandidate> near;
    if (fitting(r.chosen.tile))
      for (std::vector<int64_t>& p : partitions(r.chosen.tile)) near.insert({r.chosen.tile, p});
    for (size_t d = 0; d < values.size(); ++d)
      for (int64_t v : values[d]) {
        std::vector<int64_t> t = r.chosen.tile;
        t[d] = v;
        t = rebalanced(ext, t);
        if (t == r.chosen.tile || !fitting(t)) continue;
        std::vector<int64_t> p;
        if (r.fanout > 1)
          p = policy_parts(op, ops, model, isa::worst_case_piece(op, r.top, t), r.fanout);
        near.insert({t, p});
      }
    r.neighbours = near.size();
    std::mt19937_64 rng(options.seed);
    std::set<MapCandidate> drawn;
    // Draws stop when the sample is full or the space seems exhausted.
    const uint64_t most_draws = 100 * options.sample;
    while (drawn.size() < options.sample && r.draws < most_draws) {
      ++r.draws;
      const std::vector<int64_t> t = decode(rng() % r.tilings);
      if (!fitting(t)) continue;
      const std::vector<std::vector<int64_t>> ps = partitions(t);
      MapCandidate c{t, ps[rng() % ps.size()]};
      if (!near.count(c)) drawn.insert(std::move(c));
    }
    candidates.assign(near.begin(), near.end());
    candidates.insert(candidates.end(), drawn.begin(), drawn.end());
  }

  // Each candidate pinned at the top node; one that the node's plan cannot fit is counted, not
  // simulated.
  SimOptions sim;
  isa::PinnedDecision pin;
  pin.level = 0;
  pin.instruction = isa::shape_key(r.top);
  isa::CostModel pinned_model = cost_model(spec, reserved);
  NodeShape pinned_shape = shape;
  pinned_shape.model = &pinned_model;
  auto run = [&](const MapCandidate& c) -> std::optional<uint64_t> {
    pin.tile = c.tile;
    pin.parts = c.parts;
    pinned_model.pin(pin);
    try {
      plan_instruction(op, ops, r.top, pinned_shape);
    } catch (const ConfigError&) {
      return std::nullopt;
    }
    sim.pin = pin;
    return simulate_recorded(spec, ops, alone, sim, options, candidate_name(op, c)).cycles;
  };
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const std::optional<uint64_t> cycles = run(candidates[i]);
    if (options.progress) options.progress(i + 1, candidates.size());
    if (!cycles) {
      ++r.unfit;
      continue;
    }
    order.emplace_back(*cycles, i);
    r.chosen_in_space = r.chosen_in_space || candidates[i] == r.chosen;
  }
  std::sort(order.begin(), order.end());
  // The cost model's figure for a candidate: the top node's tiling estimate with the candidate's
  // partition (a model of its own, whose estimates the pin reaches), in the root's cycles.
  const double to_root = static_cast<double>(spec.root.controller.clock) /
                         static_cast<double>(top_level.controller.clock);
  auto estimate = [&](const MapCandidate& c) {
    isa::CostModel m = cost_model(spec, reserved);
    isa::PinnedDecision e = pin;
    e.tile = c.tile;
    e.parts = c.parts;
    e.estimates = true;
    m.pin(e);
    return m.tiling_cycles(0, op, ops, r.top, c.tile) * to_root;
  };
  for (const auto& [cycles, i] : order)
    r.rows.push_back({candidates[i], cycles, estimate(candidates[i])});
  // The choice: the search's own estimate (each piece's partition its own); halving's tiling
  // and first partition estimated as a candidate's (its partitions are not the model's).
  r.chosen_estimate = model.policy() == isa::Policy::search
                          ? model.tiling_cycles(0, op, ops, r.top, chosen_plan.tile) * to_root
                          : estimate(r.chosen);
  const std::optional<uint64_t> pinned = run(r.chosen);
  r.chosen_pinned_cycles = pinned ? *pinned : 0;
  r.rank = 1;
  for (const OracleRow& row : r.rows) r.rank += row.cycles < r.chosen_cycles ? 1 : 0;
  r.best = r.chosen_cycles;
  if (!r.rows.empty()) r.best = std::min(r.best, r.rows.front().cycles);
  r.gap = static_cast<double>(r.chosen_cycles) / static_cast<double>(r.best) - 1;
  return r;
}

std::string oracle_text(const isa::OpTable& ops, const OracleResult& r, size_t shown) {
  const isa::OpDef& op = ops.get(r.instruction.opcode);
  std::string s = fmt::format("fracsim map: {} instruction {} ({}, layer {}) on {}\n", r.program,
                              r.index, op.name, r.layer, r.machine);
  s += fmt::format("  top node      level 0 ({}), {} children; it receives {}\n", r.level_name,
                   r.fanout, instruction_text(op, r.top));
  s += fmt::format("  tilings       {} in the product of the tile lengths per dim\n", r.tilings);
  if (r.listed)
    s += fmt::format("  space         the {} candidates given (--candidate)\n",
                     r.rows.size() + r.unfit);
  else if (!r.sampled)
    s += fmt::format("  space         {} candidates: {} legal fitting tilings x their partitions\n",
                     r.space, r.fitting_tilings);
  else
    s += fmt::format(
        "  space         a sample of {} candidates: the choice's {} neighbours (its tiling's "
        "partitions; one dim's tile changed, the policy's partition) and {} drawn ({} draws, "
        "std::mt19937_64 seed {}): a tiling uniform over the product, redrawn until legal and "
        "fitting, then one of its partitions uniformly\n",
        r.rows.size() + r.unfit, r.neighbours, r.rows.size() + r.unfit - r.neighbours, r.draws,
        r.seed);
  if (r.max_pieces > 0)
    s += fmt::format("  limited to    tilings of at most {} pieces\n", r.max_pieces);
  s += fmt::format(
      "  simulated     {} (timing mode, folded; {} whose plan does not fit the local "
      "memory skipped)\n",
      r.rows.size(), r.unfit);
  s += fmt::format("  {:>5}  {:>12}  {:>8}  {:>12}  {:>8}  {}\n", "rank", "cycles", "vs best",
                   "estimate", "vs sim", "tile | parts");
  auto row_text = [&](const std::string& rank, uint64_t cycles, double estimate,
                      const MapCandidate& c) {
    const double sim = static_cast<double>(cycles);
    return fmt::format("  {:>5}  {:>12}  {:>+7.2f}%  {:>12.0f}  {:>+7.2f}%  {} | {}\n", rank,
                       cycles, 100.0 * (sim / static_cast<double>(r.best) - 1), estimate,
                       100.0 * (estimate / sim - 1), dims_text(op, c.tile, false),
                       dims_text(op, c.parts, true));
  };
  for (size_t i = 0; i < r.rows.size() && i < shown; ++i)
    s += row_text(fmt::format("{}", i + 1), r.rows[i].cycles, r.rows[i].estimate,
                  r.rows[i].candidate);
  s += row_text("chose", r.chosen_cycles, r.chosen_estimate, r.chosen);
  s += fmt::format(
      "  policy        {}: {} cycles (plain run; {} pinned), rank {} of {}, {} the candidates\n",
      r.policy, r.chosen_cycles, r.chosen_pinned_cycles, r.rank,
      r.rows.size() + (r.chosen_in_space ? 0 : 1), r.chosen_in_space ? "among" : "not among");
  s += fmt::format("  gap           {:.2f}% (cycles(chosen) / cycles(best) - 1)\n", 100 * r.gap);
  return s;
}

}  // namespace fracsim::sim
