// A functional run's check of each instruction: its outputs as the machine computed them against
// the reference op run on its inputs as the machine left them (the outputs of the instructions
// before it, as computed): bit for bit, or where a decomposition may reassociate the op's sums,
// within the bound of isa/reassociation.h. Unlike the outputs' comparison with the whole program
// run by the reference (check_outputs), differences do not compound from one instruction to the
// next: a run in which every instruction holds computed what the program says, up to the order
// of its float sums.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"

namespace fracsim::sim {

// An instruction whose outputs are not the reference's bit for bit.
struct InstructionDifference {
  size_t index = 0;  // in the program, from 0
  std::string name;  // isa::instruction_name
  std::string op;
  int64_t elements = 0;   // output elements compared
  int64_t differing = 0;  // not bit for bit
  int64_t beyond = 0;     // beyond the check (bit for bit, or the reassociation bound)
  double max_abs_diff = 0;
  // The largest difference as a share of its element's reassociation bound (ElementCheck's
  // max_bound_use): at most 1 when the instruction holds.
  double bound_used = 0;
};

struct InstructionCheck {
  int64_t instructions = 0;  // checked
  int64_t bit_exact = 0;     // every output element the reference's, bit for bit
  // The rest that hold, within the reassociation bound: where the machine reordered a sum.
  int64_t within_bound = 0;
  std::vector<InstructionDifference> reassociated;  // those, in program order
  std::vector<InstructionDifference> failures;      // every instruction that does not hold
  bool holds() const { return failures.empty(); }
};

// Fed each instruction as the machine finishes it (SimOptions::retired); keeps a copy of the main
// memory as the instructions checked so far computed it.
class InstructionChecker {
 public:
  InstructionChecker(const isa::Program& program, const isa::OpTable& ops);
  // Program instruction `k` (in program order) has finished; `memory`: the main memory now.
  void retired(size_t k, isa::MemoryView memory);
  const InstructionCheck& result() const { return result_; }

 private:
  const isa::Program& program_;
  const isa::OpTable& ops_;
  std::vector<uint8_t> memory_;
  InstructionCheck result_;
};

}  // namespace fracsim::sim
