#include "isa/decompose/sequential.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/decompose/cost_model.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/search_space.h"
#include "isa/error.h"

namespace fracsim::isa {

uint64_t piece_footprint(const OpDef& op, const OpTable& ops, const Instruction& piece, int fanout,
                         const CostModel* model, int level) {
  LocalPiece lp = localize(op, piece, 0);
  // Below the root `search` splits only parallel dims when there are any, and those need no
  // scratch (the root, which also splits reduce dims, has no serial tiling).
  if (model && model->policy() == Policy::search && fanout > 1) {
    const std::vector<int64_t> ext = dim_extents(op, piece);
    for (size_t d = 0; d < ext.size(); ++d)
      if (op.dims[d].kind == DimKind::parallel && ext[d] > 1) return lp.bytes;
  }
  return lp.bytes + parallel(op, ops, lp.local, fanout, lp.bytes, model, level).scratch_bytes;
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

// A window dim gets the halo of an interior piece, (l-1)*stride + span input elements (at most
// the whole input), not the clipped halo of a piece at the edge. Only sizes matter here; the
// piece is never executed.
Instruction worst_case_piece(const OpDef& op, const Instruction& instr,
                             const std::vector<int64_t>& len) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  Instruction p =
      slice_instruction(op, instr, PieceRange{std::vector<int64_t>(ext.size(), 0), len});
  for (size_t d = 0; d < op.dims.size(); ++d) {
    if (op.dims[d].kind != DimKind::window) continue;
    const WindowDef& w = op.dims[d].window;
    auto term = [&](const WindowTerm& t) { return window_term(t, ext, instr); };
    const int kd = w.kernel.dim;
    const int64_t taps = kd >= 0 ? len[kd] : term(w.kernel);  // the piece's taps
    const int64_t span = (taps - 1) * term(w.dilation) + 1, st = term(w.stride);
    const int64_t l = len[w.of_index];
    if (l == 0) continue;
    const int64_t in_len = std::min(ext[d], (l - 1) * st + span);
    const int64_t pads = (l - 1) * st + span - in_len;  // what the input cannot supply
    p.attrs[w.pad_begin_index] = std::min(pads, span - 1);
    p.attrs[w.pad_end_index] = pads - std::min(pads, span - 1);
    for (size_t o = 0; o < op.operands.size(); ++o)
      for (size_t a = 0; a < op.operands[o].dims.size(); ++a)
        if (op.operands[o].dims[a] == op.dims[d].name) p.operands[o].shape[a] = in_len;
  }
  return p;
}

// The largest footprint among the pieces a tiling gives. After rebalancing, each dim has pieces
// of at most two lengths; with children every combination is checked, because the parallel
// split (and so the scratch a piece needs) is not monotone in the piece's shape: a piece whose
// parallel dims are all 1 splits a reduce dim across children and needs room for partial
// results.
uint64_t tiling_footprint(const OpDef& op, const OpTable& ops, const Instruction& instr,
                          const std::vector<int64_t>& tile, int fanout, const CostModel* model,
                          int level) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  std::vector<std::vector<int64_t>> lengths(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) {
    const int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    const int64_t hi = ceil_div(ext[d], parts), lo = ext[d] / parts;
    lengths[d] = {hi};
    // Without children a piece needs no scratch, and its tiles grow with its lengths: the
    // longest piece is the largest.
    if (lo != hi && lo > 0 && fanout > 1) lengths[d].push_back(lo);
  }
  uint64_t worst = 0;
  std::vector<size_t> pick(ext.size(), 0);
  while (true) {
    std::vector<int64_t> len(ext.size());
    for (size_t d = 0; d < ext.size(); ++d) len[d] = lengths[d][pick[d]];
    worst = std::max(
        worst, piece_footprint(op, ops, worst_case_piece(op, instr, len), fanout, model, level));
    size_t d = 0;
    for (; d < ext.size(); ++d) {
      if (++pick[d] < lengths[d].size()) break;
      pick[d] = 0;
    }
    if (d == ext.size()) return worst;
  }
}

std::vector<Instruction> sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                    const NodeBudget& budget) {
  return plan_sequential(op, ops, instr, budget).pieces;
}

bool input_stays_whole(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile,
                       size_t o) {
  if (op.operands[o].role != OperandRole::in) return false;
  return input_stays_whole(op, instr, dim_extents(op, instr), tile, o);
}

bool input_stays_whole(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& ext,
                       const std::vector<int64_t>& tile, size_t o) {
  if (op.operands[o].role != OperandRole::in) return false;
  for (const int di : op.operands[o].dim_ids)
    if (tile[di] < ext[di] || op.dims[di].kind == DimKind::window) return false;
  // An input the instruction also writes (in place) changes between pieces.
  return !input_meets_output(op, instr, o);
}

uint64_t static_footprint(const OpDef& op, const Instruction& instr,
                          const std::vector<int64_t>& tile) {
  uint64_t bytes = 0;
  const std::vector<int64_t> ext = dim_extents(op, instr);
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (input_stays_whole(op, instr, ext, tile, o) && instr.operands[o].stored_bytes() > 0)
      bytes += align_up(instr.operands[o].stored_bytes(), kTileAlign);
  return bytes;
}

namespace {

// `search`: from the halving tiling, moves to tilings of less estimated time that still fit: a
// dim's tile changed alone, or one dim's tile grown while another's shrinks to the longest that
// fits, until no such move helps.
template <typename Cost>
std::vector<int64_t> searched_tiling(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                     const NodeBudget& budget, std::vector<int64_t> best,
                                     Cost& cost, uint64_t limit) {
  const CostModel& model = *budget.model;
  const std::vector<int64_t> ext = dim_extents(op, instr);
  const size_t nd = ext.size();
  const std::vector<std::vector<int64_t>> values =
      tile_values(op, instr, budget.fanout == 1, {best});  // candidate tiles, ascending
  auto legal = [&](const std::vector<int64_t>& t) { return tiling_legal(op, instr, t); };
  auto time = [&](const std::vector<int64_t>& t, double at_least) {
    return model.tiling_cycles(budget.level, op, ops, instr, t, at_least, budget.run);
  };
  double best_t = time(best, std::numeric_limits<double>::infinity());
  auto pieces = [&](const std::vector<int64_t>& t) {
    double n = 1;
    for (size_t d = 0; d < nd; ++d)
      n *= static_cast<double>(ext[d] == 0 ? 1 : ceil_div(ext[d], t[d]));
    return n;
  };
  // More pieces must gain a share of the time: below it the estimate cannot tell them apart,
  // and each piece costs simulation time, at an inner node times every piece below it.
  const double more_pieces = budget.fanout == 1 ? 0.02 : 0.05;
  auto better = [&](const std::vector<int64_t>& t) {
    if (t == best || !legal(t)) return false;
    const double gain = pieces(t) > pieces(best) ? more_pieces : 1e-9;
    const double needed = best_t * (1 - gain);
    const double tt = time(t, needed);
    if (!(tt < needed) || cost(t) > limit) return false;
    best = t;
    best_t = tt;
    return true;
  };
  for (int round = 0; round < 8; ++round) {
    bool improved = false;
    for (size_t d = 0; d < nd; ++d)
      for (int64_t v : values[d]) {
        std::vector<int64_t> t = best;
        t[d] = v;
        improved = better(t) || improved;
      }
    if (!improved)
      for (size_t a = 0; a < nd && !improved; ++a)
        for (int64_t va : values[a]) {
          if (va <= best[a]) continue;
          for (size_t b = 0; b < nd && !improved; ++b) {
            if (b == a) continue;
            // The longest tile of b below its current one with which the grown a fits.
            for (auto it = std::lower_bound(values[b].begin(), values[b].end(), best[b]);
                 it != values[b].begin() && !improved;) {
              --it;
              std::vector<int64_t> t = best;
              t[a] = va;
              t[b] = *it;
              if (!legal(t) || cost(t) > limit) continue;
              improved = better(t);
              break;
            }
          }
          if (improved) break;
        }
    if (!improved) break;
  }
  return best;
}

}  // namespace

std::optional<Instruction> starting_instruction(const OpDef& op, const Instruction& instr) {
  Instruction start = instr;
  bool accumulates = false;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const OperandDef& od = op.operands[o];
    if (od.role == OperandRole::out && od.read_if_index >= 0 && operand_is_read(op, instr, o)) {
      start.attrs[static_cast<size_t>(od.read_if_index)] = 0;
      accumulates = true;
    }
  }
  if (!accumulates) return std::nullopt;
  // The piece that starts a tile others accumulate onto does not complete its sum: a reduce
  // dim's final attribute (a fused epilogue) is clear on it, as slicing leaves it.
  for (const DimDef& dd : op.dims)
    if (dd.kind == DimKind::reduce && dd.final_index >= 0 && dd.accumulate_index >= 0 &&
        start.attrs[static_cast<size_t>(dd.accumulate_index)] !=
            instr.attrs[static_cast<size_t>(dd.accumulate_index)])
      start.attrs[static_cast<size_t>(dd.final_index)] = 0;
  return start;
}

uint64_t budget_limit(const NodeBudget& budget) {
  return budget.capacity > 0 ? budget.capacity : budget.bytes;
}

uint64_t tiling_cost(const OpDef& op, const OpTable& ops, const Instruction& instr,
                     const std::vector<int64_t>& tile, const NodeBudget& budget) {
  const uint64_t f =
      tiling_footprint(op, ops, instr, tile, budget.fanout, budget.model, budget.level);
  if (budget.capacity == 0) return f;
  const uint64_t st = std::min(f, static_footprint(op, instr, tile));
  return st + static_cast<uint64_t>(budget.depth) * (f - st);
}

std::vector<int64_t> choose_tiling(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                   const NodeBudget& budget) {
  const bool search = budget.model && budget.model->policy() == Policy::search;
  PackedKey key;
  if (search) {
    key = budget.model->tiling_key(op, instr, budget);
    if (const std::vector<int64_t>* tile = budget.model->remembered_tiling(key)) return *tile;
  }
  const std::vector<int64_t> ext = dim_extents(op, instr);
  const size_t nd = ext.size();
  std::vector<int64_t> tile = ext;
  const bool whole_memory = budget.capacity > 0;
  const uint64_t limit = budget_limit(budget);
  // A tiling's footprint is asked for again (the search's moves revisit tilings).
  std::map<std::vector<int64_t>, uint64_t> costs;
  auto cost = [&](const std::vector<int64_t>& t) {
    auto [it, fresh] = costs.try_emplace(t, 0);
    if (fresh) it->second = tiling_cost(op, ops, instr, t, budget);
    return it->second;
  };
  uint64_t fp = cost(tile);
  bool integer = false;
  for (const TensorRef& t : instr.operands) integer = integer || is_integer(t.dtype);
  auto can_halve = [&](size_t d) {
    return tile[d] > 1 && splittable(op.dims[d]) && reduce_order_kept(op, tile, d) &&
           (!op.is_taps(d) || op.splits_for(d, integer, instr.attrs));
  };
  while (fp > limit) {
    // A kernel's taps split only once nothing else can (every other tile is 1), so that a
    // kernel that fits keeps the decomposition it had.
    bool others = false;
    for (size_t d = 0; d < nd; ++d) others = others || (!op.is_taps(d) && can_halve(d));
    auto candidate = [&](size_t d) { return can_halve(d) && op.is_taps(d) != others; };
    // The halving that saves the most bytes; ties go to parallel dims, then to dim order.
    int best = -1;
    uint64_t best_fp = fp;
    for (size_t d = 0; d < nd; ++d) {
      if (!candidate(d)) continue;
      std::vector<int64_t> t = tile;
      t[d] = ceil_div(t[d], 2);
      uint64_t f = cost(t);
      if (f >= fp) continue;
      bool parallel_over_reduce = best >= 0 && f == best_fp &&
                                  op.dims[d].kind == DimKind::parallel &&
                                  op.dims[best].kind != DimKind::parallel;
      if (best < 0 || f < best_fp || parallel_over_reduce) {
        best = static_cast<int>(d);
        best_fp = f;
      }
    }
    if (best < 0) {
      // No halving saves bytes yet (tiles round up to kTileAlign): halve the longest tile anyway.
      for (size_t d = 0; d < nd; ++d)
        if (candidate(d) && (best < 0 || tile[d] > tile[best])) best = static_cast<int>(d);
      if (best >= 0) {
        std::vector<int64_t> t = tile;
        t[best] = ceil_div(t[best], 2);
        best_fp = cost(t);
      }
    }
    if (best < 0) {
      // Nothing left to split: name the operand that takes the most room in this piece.
      Instruction smallest =
          slice_instruction(op, instr, PieceRange{std::vector<int64_t>(nd, 0), tile});
      size_t big = 0;
      for (size_t o = 1; o < smallest.operands.size(); ++o)
        if (smallest.operands[o].stored_bytes() > smallest.operands[big].stored_bytes()) big = o;
      std::string why;
      for (size_t d = 0; d < nd && why.empty(); ++d)
        if (op.is_taps(d) && tile[d] > 1 && !op.splits_for(d, integer, instr.attrs))
          why = fmt::format("; the taps of {} split on integer operands only with {} = {}",
                            op.dims[d].name, op.dims[d].integer_attr,
                            fmt::join(op.dims[d].integer_values, " or "));
      throw ConfigError(fmt::format(
          "{}: {}: the smallest piece needs {} bytes but {} holds {} (operand {} alone needs {} "
          "bytes){}",
          budget.where, op.name, fp, whole_memory ? "the local memory" : "a cyclic sub-block",
          limit, op.operands[big].name, smallest.operands[big].stored_bytes(), why));
    }
    tile[best] = ceil_div(tile[best], 2);
    fp = best_fp;
  }
  // The taps split only once every other tile was 1: grow the parallel dims back, each in turn
  // as far as the piece still fits, so that a window larger than the memory does not make every
  // output its own piece.
  bool taps_split = false;
  for (size_t d = 0; d < nd; ++d) taps_split = taps_split || (op.is_taps(d) && tile[d] < ext[d]);
  for (size_t d = 0; d < nd && taps_split; ++d) {
    if (op.dims[d].kind != DimKind::parallel) continue;
    while (tile[d] < ext[d]) {
      std::vector<int64_t> t = tile;
      t[d] = std::min(ext[d], 2 * t[d]);
      if (cost(t) > limit) break;
      tile = std::move(t);
    }
  }
  if (search) {
    tile = searched_tiling(op, ops, instr, budget, tile, cost, limit);
    budget.model->remember_tiling(std::move(key), tile);
  }
  return tile;
}

bool resident_split(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  bool accumulating = false;
  for (size_t d = 0; d < ext.size(); ++d) {
    if (op.dims[d].kind != DimKind::reduce || tile[d] >= ext[d]) continue;
    if (op.dims[d].accumulate_attr.empty()) return false;
    accumulating = true;
  }
  if (!accumulating) return false;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::in && input_meets_output(op, instr, o)) return false;
  return true;
}

bool input_meets_output(const OpDef& op, const Instruction& instr, size_t o) {
  const auto [a0, a1] = instr.operands[o].byte_span();
  for (size_t w = 0; w < op.operands.size(); ++w) {
    if (op.operands[w].role != OperandRole::out) continue;
    const auto [b0, b1] = instr.operands[w].byte_span();
    if (a0 < b1 && b0 < a1) return true;
  }
  return false;
}

SequentialPlan plan_sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                               const NodeBudget& budget) {
  return plan_tiling(op, ops, instr, choose_tiling(op, ops, instr, budget), budget.resident);
}

SequentialPlan plan_tiling(const OpDef& op, const OpTable& ops, const Instruction& instr,
                           const std::vector<int64_t>& tile, bool resident_sums) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  const size_t nd = ext.size();
  FRACSIM_ASSERT(tile.size() == nd, "a tiling of {} dims for {}, which has {}", tile.size(),
                 op.name, nd);
  const bool resident = resident_sums && resident_split(op, instr, tile);

  // Rebalance, then enumerate with reduce dims outermost (resident: innermost).
  std::vector<std::vector<int64_t>> cb(nd), cl(nd);
  for (size_t d = 0; d < nd; ++d) {
    int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    balanced_chunks(ext[d], parts, cb[d], cl[d]);
  }
  std::vector<size_t> order;
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind == DimKind::reduce && !resident) order.push_back(d);
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind != DimKind::reduce) order.push_back(d);
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind == DimKind::reduce && resident) order.push_back(d);

  SequentialPlan plan;
  plan.tile = tile;
  std::vector<Instruction>& pieces = plan.pieces;
  std::vector<size_t> idx(nd, 0);
  while (true) {
    PieceRange r;
    for (size_t d = 0; d < nd; ++d) {
      r.begin.push_back(cb[d][idx[d]]);
      r.len.push_back(cl[d][idx[d]]);
    }
    pieces.push_back(slice_instruction(op, instr, r));
    if (resident) {
      // The next piece continues this output tile unless every reduce dim is at its last chunk.
      bool more = false;
      for (size_t d = 0; d < nd; ++d)
        more = more || (op.dims[d].kind == DimKind::reduce && idx[d] + 1 < cb[d].size());
      plan.holds_output.push_back(more ? 1 : 0);
    }
    int k = static_cast<int>(nd) - 1;
    for (; k >= 0; --k) {
      size_t d = order[k];
      if (++idx[d] < cb[d].size()) break;
      idx[d] = 0;
    }
    if (k < 0) break;
  }
  // Runs sorted piece by piece are merged by one streaming pass of the node's LFU.
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind == DimKind::reduce && cb[d].size() > 1 &&
        op.combine_fn(op.dims[d], instr.attrs) == "merge")
      plan.finalize.push_back(merge_runs(op, ops, instr, static_cast<int64_t>(cb[d].size())));
  return plan;
}

}  // namespace fracsim::isa
