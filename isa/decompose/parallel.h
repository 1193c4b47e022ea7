// Parallel decomposition: one instruction of a node into at most `fanout` child instructions
// plus the LFU work that combines their partial results. Pure function.
//
// Rule: split parallel dims only, choosing the number of parts per dim that minimises the
// largest child's work (ties: fewer bytes moved, then fewer children). Only when no parallel dim
// can be split (all extents 1) does it split the largest reduce dim: child 0 writes the output,
// each other child writes a dense partial into scratch, and the LFU folds partial r into the
// output with the dim's combining eltwise fn, in order r = 1, 2, ...
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

struct ParallelSplit {
  std::vector<Instruction> children;    // children[i] runs on child i; size <= fanout
  std::vector<Instruction> reductions;  // eltwise instructions for the LFU, in order
  uint64_t scratch_bytes = 0;           // partial-result space used from scratch_base
};

ParallelSplit parallel(const OpDef& op, const OpTable& ops, const Instruction& instr, int fanout,
                       uint64_t scratch_base);

}  // namespace fracsim::isa
