// Instructions of the built-in ops, rank-6 views and the reference run over a flat test memory,
// shared by the tests of the ISA and the compiler. Written out here rather than taken from the
// library's own helpers, so that the tests do not lean on the code they check.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"
#include "isa/tensor.h"

namespace fracsim::testing {

// An instruction of the built-in op `op` with the attributes in declaration order.
inline isa::Instruction instruction(const std::string& op, std::vector<isa::TensorRef> operands,
                                    std::vector<int64_t> attrs) {
  isa::Instruction in;
  in.opcode = isa::OpTable::builtin().get(op).opcode;
  in.operands = std::move(operands);
  in.attrs = std::move(attrs);
  return in;
}

// A dense tensor of `shape` at `addr` as a rank-6 operand (eltwise, activation): the leading
// dims have extent 1 and stride 0.
inline isa::TensorRef rank6(uint64_t addr, isa::DType dtype, isa::Shape shape) {
  isa::TensorRef t = isa::make_tensor(addr, dtype, shape);
  while (t.shape.size() < 6) {
    t.shape.insert(t.shape.begin(), 1);
    t.strides.insert(t.strides.begin(), 0);
  }
  return t;
}

// Runs `in` with the reference semantics on `mem`.
inline void run_reference(const isa::Instruction& in, std::vector<uint8_t>& mem) {
  isa::execute_reference(isa::OpTable::builtin().get(in.opcode), in,
                         isa::MemoryView{mem.data(), mem.size()});
}

}  // namespace fracsim::testing
