// Runs element-wise and reduction jobs through a Verilated vector unit, clock by clock: packs the
// element stream LANES to a beat, honours ready/valid on both streams, collects the results and
// counts the cycles.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"
#include "rtl/vector_unit_port.h"

namespace fracsim::rtl {

// One stream of elements (values of `dtype`, as int32).
struct VectorJob {
  VectorOp op = VectorOp::add;
  VectorDType dtype = VectorDType::i32;
  uint32_t alpha_q16 = 0;
  std::vector<int32_t> a, b;  // b: the binary ops only (same length as a)
  int64_t group = 1;          // reductions: terms per output, in order (>= 1)
  // out_ready of the result stream in cycle t is ready_pattern[t % size]; empty = always ready.
  // The pattern must hold a 1, or the job cannot finish.
  std::vector<uint8_t> ready_pattern;
};

struct VectorResult {
  std::vector<int32_t> out;   // one per element, or one per group for the reductions
  uint64_t cycles = 0;        // from the first operand beat offered to the last result taken
  uint64_t stall_cycles = 0;  // cycles with a result offered and not taken
  uint64_t beats = 0;         // cdiv(elements, lanes)
};

// Whether the rtl backend runs `instr` on the vector unit: eltwise add/sub/mul/max/min, activation
// relu and leaky_relu (alpha a multiple of 2^-16 in [0, 1]) and reduce sum/max/min, all on
// integers. Everything else (f32, div, the other activations, mean) stays on the C++ model.
bool vector_unit_runs(const isa::OpDef& op, const isa::Instruction& instr);

class VectorBridge {
 public:
  explicit VectorBridge(std::unique_ptr<VectorUnitPort> unit);

  [[nodiscard]] int lanes() const { return unit_->lanes(); }
  VectorUnitPort& unit() { return *unit_; }

  // Resets the unit, then runs the job: cdiv(elements, lanes) cycles (0 for an empty job), each
  // stall cycle adding one.
  VectorResult run(const VectorJob& job);

  // Runs one instruction that vector_unit_runs() accepts on `mem` as the leaf does: gathers the
  // operands through their strides, runs the job and stores out (a reduction with `accumulate`
  // combines out's old value first: sum, max and min are associative). `mem` null (timing
  // mode): zero operands, no store; the cycles do not depend on the data.
  VectorResult run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                               isa::MemoryView* mem, std::vector<uint8_t> ready_pattern = {});

 private:
  std::unique_ptr<VectorUnitPort> unit_;
};

}  // namespace fracsim::rtl
