#include "isa/decompose/sequential.h"

#include <algorithm>

#include <fmt/format.h>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/error.h"

namespace fracsim::isa {

uint64_t piece_footprint(const OpDef& op, const OpTable& ops, const Instruction& piece,
                         int fanout) {
  LocalPiece lp = localize(op, piece, 0);
  return lp.bytes + parallel(op, ops, lp.local, fanout, lp.bytes).scratch_bytes;
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Window dims follow their output dim, whole dims are never split.
bool splittable(const DimDef& d) {
  return d.kind == DimKind::parallel || d.kind == DimKind::reduce;
}

// Serial pieces over reduce dims add their terms in the reference order (reduce dims in op
// order, the first outermost) only if a reduce dim is split once every reduce dim before it is
// down to tiles of 1; otherwise a piece would add a block of terms out of order.
bool reduce_order_kept(const OpDef& op, const std::vector<int64_t>& tile, size_t d) {
  if (op.dims[d].kind != DimKind::reduce) return true;
  for (size_t e = 0; e < d; ++e)
    if (op.dims[e].kind == DimKind::reduce && tile[e] > 1) return false;
  return true;
}

// A piece of the given lengths with the largest footprint it can have anywhere in the
// instruction: a window dim gets the halo of an interior piece, (l-1)*stride + span input
// elements (at most the whole input), not the clipped halo of a piece at the edge. Only sizes
// matter here; the piece is never executed.
Instruction worst_case_piece(const OpDef& op, const Instruction& instr,
                             const std::vector<int64_t>& len) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  Instruction p =
      slice_instruction(op, instr, PieceRange{std::vector<int64_t>(ext.size(), 0), len});
  for (size_t d = 0; d < op.dims.size(); ++d) {
    if (op.dims[d].kind != DimKind::window) continue;
    const WindowDef& w = op.dims[d].window;
    auto term = [&](const WindowTerm& t) {
      if (t.name.empty()) return t.value;
      const int di = op.dim_index(t.name);
      return di >= 0 ? ext[di] : instr.attrs[op.attr_index(t.name)];
    };
    const int64_t span = (term(w.kernel) - 1) * term(w.dilation) + 1, st = term(w.stride);
    const int64_t l = len[op.dim_index(w.of)];
    if (l == 0) continue;
    const int64_t in_len = std::min(ext[d], (l - 1) * st + span);
    const int64_t pads = (l - 1) * st + span - in_len;  // what the input cannot supply
    p.attrs[op.attr_index(w.pad_begin)] = std::min(pads, span - 1);
    p.attrs[op.attr_index(w.pad_end)] = pads - std::min(pads, span - 1);
    for (size_t o = 0; o < op.operands.size(); ++o)
      for (size_t a = 0; a < op.operands[o].dims.size(); ++a)
        if (op.operands[o].dims[a] == op.dims[d].name) p.operands[o].shape[a] = in_len;
  }
  return p;
}

}  // namespace

// The largest footprint among the pieces a tiling gives. After rebalancing, each dim has pieces
// of at most two lengths; every combination is checked, because the parallel split (and so the
// scratch a piece needs) is not monotone in the piece's shape: a piece whose parallel dims are
// all 1 splits a reduce dim across children and needs room for partial results.
uint64_t tiling_footprint(const OpDef& op, const OpTable& ops, const Instruction& instr,
                          const std::vector<int64_t>& tile, int fanout) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  std::vector<std::vector<int64_t>> lengths(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) {
    const int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    const int64_t hi = ceil_div(ext[d], parts), lo = ext[d] / parts;
    lengths[d] = {hi};
    if (lo != hi && lo > 0) lengths[d].push_back(lo);
  }
  uint64_t worst = 0;
  std::vector<size_t> pick(ext.size(), 0);
  while (true) {
    std::vector<int64_t> len(ext.size());
    for (size_t d = 0; d < ext.size(); ++d) len[d] = lengths[d][pick[d]];
    worst = std::max(worst, piece_footprint(op, ops, worst_case_piece(op, instr, len), fanout));
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

uint64_t static_footprint(const OpDef& op, const Instruction& instr,
                          const std::vector<int64_t>& tile) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  uint64_t bytes = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    if (op.operands[o].role != OperandRole::in) continue;
    bool whole = true;
    for (const std::string& d : op.operands[o].dims) {
      const int di = op.dim_index(d);
      whole = whole && tile[di] >= ext[di] && op.dims[di].kind != DimKind::window;
    }
    // An input the instruction also writes (in place) changes between pieces.
    for (size_t w = 0; w < op.operands.size() && whole; ++w) {
      if (op.operands[w].role != OperandRole::out) continue;
      auto [a0, a1] = instr.operands[o].byte_span();
      auto [b0, b1] = instr.operands[w].byte_span();
      whole = !(a0 < b1 && b0 < a1);
    }
    if (whole && instr.operands[o].stored_bytes() > 0)
      bytes += align_up(instr.operands[o].stored_bytes(), kTileAlign);
  }
  return bytes;
}

SequentialPlan plan_sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                               const NodeBudget& budget) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  const size_t nd = ext.size();
  std::vector<int64_t> tile = ext;
  // What a tiling costs against the budget: the largest piece (one sub-block), or with a
  // capacity the whole local memory it needs, the static inputs once plus N sub-blocks for the
  // rest.
  const bool whole_memory = budget.capacity > 0;
  const uint64_t limit = whole_memory ? budget.capacity : budget.bytes;
  auto cost = [&](const std::vector<int64_t>& t) {
    const uint64_t f = tiling_footprint(op, ops, instr, t, budget.fanout);
    if (!whole_memory) return f;
    const uint64_t st = std::min(f, static_footprint(op, instr, t));
    return st + static_cast<uint64_t>(budget.depth) * (f - st);
  };
  uint64_t fp = cost(tile);
  while (fp > limit) {
    // The halving that saves the most bytes; ties go to parallel dims, then to dim order.
    int best = -1;
    uint64_t best_fp = fp;
    for (size_t d = 0; d < nd; ++d) {
      if (tile[d] <= 1 || !splittable(op.dims[d]) || !reduce_order_kept(op, tile, d)) continue;
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
        if (tile[d] > 1 && splittable(op.dims[d]) && reduce_order_kept(op, tile, d) &&
            (best < 0 || tile[d] > tile[best]))
          best = static_cast<int>(d);
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
      throw ConfigError(fmt::format(
          "{}: {}: the smallest piece needs {} bytes but {} holds {} (operand {} alone needs {} "
          "bytes)",
          budget.where, op.name, fp, whole_memory ? "the local memory" : "a cyclic sub-block",
          limit, op.operands[big].name, smallest.operands[big].stored_bytes()));
    }
    tile[best] = ceil_div(tile[best], 2);
    fp = best_fp;
  }

  // Rebalance, then enumerate with reduce dims outermost.
  std::vector<std::vector<int64_t>> cb(nd), cl(nd);
  for (size_t d = 0; d < nd; ++d) {
    int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    balanced_chunks(ext[d], parts, cb[d], cl[d]);
  }
  std::vector<size_t> order;
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind == DimKind::reduce) order.push_back(d);
  for (size_t d = 0; d < nd; ++d)
    if (op.dims[d].kind != DimKind::reduce) order.push_back(d);

  SequentialPlan plan;
  std::vector<Instruction>& pieces = plan.pieces;
  std::vector<size_t> idx(nd, 0);
  while (true) {
    PieceRange r;
    for (size_t d = 0; d < nd; ++d) {
      r.begin.push_back(cb[d][idx[d]]);
      r.len.push_back(cl[d][idx[d]]);
    }
    pieces.push_back(slice_instruction(op, instr, r));
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
