// The whole decomposition, executed functionally without timing: at each level, serial pieces
// are loaded into a local memory, split across children (recursively) and combined by the LFU,
// then written back; leaves run the reference semantics. This is the oracle the property tests
// hold the decomposer to, and the data path the simulator's functional mode must reproduce.
#pragma once

#include <vector>

#include "isa/decompose/sequential.h"
#include "isa/reference.h"

namespace fracsim::isa {

struct DecompositionStats {
  int64_t pieces = 0;      // serial pieces over all nodes
  int64_t leaf_runs = 0;   // instructions executed by leaves
  int64_t reductions = 0;  // LFU instructions
  uint64_t loaded_bytes = 0;
  uint64_t stored_bytes = 0;
};

// levels[0] is the node that receives `instr` with its operands in `parent`; levels.back() is
// the leaf (fanout 1).
void execute_decomposed(const OpDef& op, const OpTable& ops, const Instruction& instr,
                        MemoryView parent, const std::vector<NodeBudget>& levels,
                        DecompositionStats* stats = nullptr);

}  // namespace fracsim::isa
