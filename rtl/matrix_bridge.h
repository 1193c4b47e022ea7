// Runs matmul jobs through a Verilated matrix unit, clock by clock: drives the operand beats,
// honours ready/valid on both streams, collects the result blocks and counts the cycles. Matmul
// and conv instructions become such jobs (conv as an implicit im2col).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"
#include "rtl/matrix_unit_port.h"

namespace fracsim::rtl {

// out[B,M,N] = a[B,M,K] x b[B,K,N], dense row-major, int8 (i16 = false) or int16 values.
struct MatmulJob {
  bool i16 = false;
  int64_t B = 0, M = 0, K = 0, N = 0;
  const int16_t* a = nullptr;
  const int16_t* b = nullptr;
  // out_ready of the result stream in cycle t is ready_pattern[t % size]; empty = always ready.
  // The pattern must hold a 1, or the job cannot finish.
  std::vector<uint8_t> ready_pattern;
};

struct MatmulResult {
  std::vector<int32_t> out;   // B*M*N, row-major
  uint64_t cycles = 0;        // from the first operand beat offered to the last result taken
  uint64_t stall_cycles = 0;  // cycles with a result offered and not taken (out_valid && !ready)
  uint64_t blocks = 0;        // result beats: B * ceil(M/rows) * ceil(N/cols)
};

// Whether the rtl backend runs `instr` on the matrix unit: matmul and conv1d/2d/3d with i8 or
// i16 inputs (i32 out).
bool matrix_unit_runs(const isa::OpDef& op, const isa::Instruction& instr);

class MatrixBridge {
 public:
  explicit MatrixBridge(std::unique_ptr<MatrixUnitPort> unit);

  [[nodiscard]] int rows() const { return unit_->rows(); }
  [[nodiscard]] int cols() const { return unit_->cols(); }

  // Resets the unit, then runs the job. Blocks go in order (batch, row block, column block),
  // each as K beats; partial blocks are padded with zeros and their padding lanes dropped.
  // With no back-pressure it takes B*ceil(M/rows)*ceil(N/cols)*K + rows + cols - 1 cycles (0 for
  // an empty job), each stall cycle adding one.
  MatmulResult run(const MatmulJob& job);

  // Runs one matmul instruction (i8 or i16 inputs, i32 out) on `mem` as the leaf does: gathers
  // the operands through their strides, runs the job and stores out (adding its old value with
  // wrap-around under `accumulate`: integer addition is associative, so this equals the
  // reference's accumulation from the old value). `mem` null (timing mode): zero operands, no
  // store; the cycles do not depend on the data.
  MatmulResult run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                               isa::MemoryView* mem, std::vector<uint8_t> ready_pattern = {});

  // Runs one conv1d/conv2d/conv3d instruction (i8 or i16 in and w, i32 out) on `mem` as an
  // implicit im2col: group g is job batch g, output pixel (n, spatial...) job row, (ci, taps...)
  // job k and output channel job column; a tap in the padding streams a zero. The job takes
  // G * cdiv(N * pixels, rows) * cdiv(Co, cols) * Ci * taps + rows + cols - 1 cycles, the
  // conv `cycles` formulas of isa/ops/conv*.yaml. Stores out like run_instruction (accumulate
  // adds the old value with wrap-around); `mem` null: timing mode.
  MatmulResult run_conv_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                                    isa::MemoryView* mem, std::vector<uint8_t> ready_pattern = {});

  MatrixUnitPort& unit() { return *unit_; }

 private:
  std::unique_ptr<MatrixUnitPort> unit_;
};

}  // namespace fracsim::rtl
