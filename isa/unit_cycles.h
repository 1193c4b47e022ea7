// The leaf compute units' cycles for one instruction: the op's `cycles` formula over its dims,
// attributes and the unit's parameters. The C++ unit model and the decomposer's cost model both
// price pieces with these (one source).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>

#include "isa/dtype.h"
#include "isa/op_def.h"
#include "isa/program.h"

namespace fracsim::isa {

// A leaf's unit parameters (isa/unit_kind.h): the MAC array's shape per input dtype, the vector
// lanes and the sort width.
struct LeafParams {
  std::array<std::array<int64_t, 2>, kDTypeCount> matrix{};  // rows, cols by input dtype
  int64_t lanes = 1, width = 1;
  // An extension op's vector steps after its matrix step (a fused epilogue) work on each block
  // of outputs the MAC array drains while it computes the next (leaf.overlapped_epilogue).
  bool overlapped_epilogue = false;

  // The formula variables for an instruction whose first operand has `dtype`.
  std::map<std::string, int64_t> values(DType dtype) const;
  // The same, into `vars` by id.
  void bind(DType dtype, Vars& vars) const;
};

// `op`'s cycles formula over `instr`'s dims and attributes and `params`; 0 for an empty
// instruction.
uint64_t unit_cycles(const OpDef& op, const Instruction& instr,
                     const std::map<std::string, int64_t>& params);

// The cycles of one leaf piece: a built-in op's formula with the MAC array's shape for its input
// dtype; an extension op's primitive steps, one after another, or, for a matrix step followed
// by vector steps on a leaf with overlapped_epilogue, the two units pipelined over the array's
// blocks of outputs: max(M, V) + ceil(min(M, V) / blocks), M the matrix step's cycles, V the
// vector steps', blocks = ceil(the matrix step's outputs / (rows * cols)).
uint64_t leaf_cycles(const OpDef& op, const Instruction& instr, const LeafParams& leaf);

}  // namespace fracsim::isa
