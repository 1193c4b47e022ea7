// The candidates the `search` policy chooses among at a node (isa/decompose/README.md, "The
// search space"): the tile lengths per dim of a serial tiling and the parts per dim of a
// parallel partition. The search (sequential.cpp, cost_model.cpp) and the mapping oracle
// (sim/mapping_oracle.h) read the same functions, so that the oracle enumerates exactly the
// space the policy searches. Pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

// Whether serial tiles may split dim `d` of the op: parallel and reduce dims (window dims follow
// their output dim, whole dims are never split).
bool splittable(const DimDef& d);

// Serial pieces over reduce dims add their terms in the reference order (reduce dims in op
// order, the first outermost) only if a reduce dim is split once every reduce dim before it is
// down to tiles of 1; otherwise a piece would add a block of terms out of order.
bool reduce_order_kept(const OpDef& op, const std::vector<int64_t>& tile, size_t d);

// Whether every split dim of `tile` keeps the reduce order (reduce_order_kept).
bool tiling_legal(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& tile);

// Chunk counts tried per dim: at a leaf every count up to 8, then about four per doubling; at an
// inner node (whose candidates cost a parallel split each) 1, 2, 3, 4, 6, 8, 12, 16, ...
std::vector<int64_t> candidate_parts(int64_t extent, bool leaf);

// The tile lengths per dim the search tries, ascending: ceil(extent / p) for the counts of
// candidate_parts on splittable dims, plus each start's own length (the halving tiling the
// search descends from); a dim that is not split has its extent only.
std::vector<std::vector<int64_t>> tile_values(const OpDef& op, const Instruction& instr, bool leaf,
                                              const std::vector<std::vector<int64_t>>& starts);

// The parts per dim the search partitions a piece across `fanout` children with, in the order it
// visits them, the unsplit piece (all 1) first: parts of the forms 2^k and 3 * 2^k that change
// the chunk length, on the parallel dims of extent > 1 and, with `split_reduce`, on at most one
// reduce dim that may be split across children (reduce_splits_across), with their product
// within the fanout and at least half the children busy when the parallel dims can use them.
std::vector<std::vector<int64_t>> partition_candidates(const OpDef& op, const Instruction& piece,
                                                       int fanout, bool split_reduce = false);

}  // namespace fracsim::isa
