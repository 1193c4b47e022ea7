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

uint64_t tile_footprint(const OpDef& op, const OpTable& ops, const Instruction& instr,
                        const std::vector<int64_t>& tile, int fanout) {
  PieceRange r{std::vector<int64_t>(tile.size(), 0), tile};
  return piece_footprint(op, ops, slice_instruction(op, instr, r), fanout);
}

}  // namespace

std::vector<Instruction> sequential(const OpDef& op, const OpTable& ops, const Instruction& instr,
                                    const NodeBudget& budget) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  const size_t nd = ext.size();
  std::vector<int64_t> tile = ext;
  uint64_t fp = tile_footprint(op, ops, instr, tile, budget.fanout);
  while (fp > budget.bytes) {
    // The halving that saves the most bytes; ties go to parallel dims, then to dim order.
    int best = -1;
    uint64_t best_fp = fp;
    for (size_t d = 0; d < nd; ++d) {
      if (tile[d] <= 1 || op.dims[d].kind == DimKind::whole) continue;
      std::vector<int64_t> t = tile;
      t[d] = ceil_div(t[d], 2);
      uint64_t f = tile_footprint(op, ops, instr, t, budget.fanout);
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
        if (tile[d] > 1 && op.dims[d].kind != DimKind::whole && (best < 0 || tile[d] > tile[best]))
          best = static_cast<int>(d);
      if (best >= 0) {
        std::vector<int64_t> t = tile;
        t[best] = ceil_div(t[best], 2);
        best_fp = tile_footprint(op, ops, instr, t, budget.fanout);
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
          "{}: {}: the smallest piece needs {} bytes but a cyclic sub-block holds {} (operand "
          "{} alone needs {} bytes)",
          budget.where, op.name, fp, budget.bytes, op.operands[big].name,
          smallest.operands[big].stored_bytes()));
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

  std::vector<Instruction> pieces;
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
  return pieces;
}

}  // namespace fracsim::isa
