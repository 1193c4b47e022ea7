// Reference semantics: a plain C++ implementation of every op on a flat byte memory. It is the
// oracle for the leaf unit model, the functional simulation and the tests.
//
// The semantics of each op family live in isa/semantics/*.cpp, with their rounding rules. Common
// to all: f32 arithmetic is IEEE single precision, round to nearest even, no fused multiply-add;
// sums over a reduce dim run in index order from 0, or from the old output value when the op's
// accumulate attribute is set (so serial pieces over that dim reproduce the whole op bit for
// bit); integer accumulation is i32 with two's-complement wrap-around.
#pragma once

#include <cstdint>
#include <string>

#include "isa/program.h"

namespace fracsim::isa {

struct MemoryView {
  uint8_t* data = nullptr;
  uint64_t size = 0;
};

// Whether the op has reference semantics (every op in isa/ops/ must; a test checks it).
bool has_reference(const std::string& op);

// Executes one instruction in place on `mem`. Operand spans must lie inside `mem`.
void execute_reference(const OpDef& op, const Instruction& instr, MemoryView mem);

// Writes the initial contents of a data segment (literal bytes, or the seeded generator).
void fill_data_segment(const DataSegment& seg, MemoryView mem);

// Runs a whole program on a fresh image of its footprint, with the reference semantics.
std::vector<uint8_t> run_reference(const Program& p, const OpTable& ops);

// The constants of the activation fn gelu_tanh, 0.5 x (1 + tanh(k (x + c x^3))), as f32: the
// compiler recognises the graphs that compute it from exactly these values.
constexpr float kGeluTanhC = 0.044715f;
constexpr float kGeluTanhK = 0.7978845608028654f;  // sqrt(2 / pi)
// The divisor of the activation fn gelu_erf, x / 2 (1 + erf(x / s)): sqrt 2 as f32.
constexpr float kGeluErfS = 1.4142135623730951f;

// Element i of a tensor stored in `mem`, widened to double (for comparisons and printing).
double load_element(const TensorRef& t, int64_t element_offset, MemoryView mem);

}  // namespace fracsim::isa

namespace fracsim::isa {

// Copies the elements of `src` (in src_mem) to `dst` (in dst_mem); shapes must match. Dims
// broadcast (stride 0) on both sides are copied once. This is what a DMA transfer does.
void copy_tensor(const TensorRef& src, MemoryView src_mem, const TensorRef& dst,
                 MemoryView dst_mem);

}  // namespace fracsim::isa
