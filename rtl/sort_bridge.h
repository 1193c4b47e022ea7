// Runs merge jobs through a Verilated sort (merge) unit beat by beat: feeds windows at the two
// runs' heads, honours ready/valid, moves the heads by what each beat took, counts the cycles.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"
#include "rtl/sort_unit_port.h"

namespace fracsim::rtl {

// M rows of N integers, each the concatenation of run A (the first cdiv(N, 2) elements) and run
// B (the rest); with one run, A is the whole row.
struct MergeJob {
  int64_t M = 0, N = 0;
  bool two_runs = true;
  bool descending = false;
  std::vector<int32_t> rows;           // M*N, row-major
  std::vector<uint8_t> ready_pattern;  // out_ready in cycle t; empty = always ready
};

struct MergeResult {
  std::vector<int32_t> out;  // M*N, each row the stable merge of its runs
  uint64_t cycles = 0;
  uint64_t stall_cycles = 0;
};

// Whether the rtl backend runs `instr` on the sort unit: merge with runs 1 or 2 on integers.
bool sort_unit_runs(const isa::OpDef& op, const isa::Instruction& instr);

class SortBridge {
 public:
  explicit SortBridge(std::unique_ptr<SortUnitPort> unit);
  [[nodiscard]] int width() const { return unit_->width(); }
  SortUnitPort& unit() { return *unit_; }

  // M * cdiv(N, width) cycles (0 for an empty job), each stall cycle adding one.
  MergeResult run(const MergeJob& job);

  // One merge instruction that sort_unit_runs() accepts, on `mem` (null: timing mode).
  MergeResult run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                              isa::MemoryView* mem, std::vector<uint8_t> ready_pattern = {});

 private:
  std::unique_ptr<SortUnitPort> unit_;
};

}  // namespace fracsim::rtl
