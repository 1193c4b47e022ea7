// The leaf compute interface: what a leaf node's EX stage runs. Two backends share it: the C++
// unit model (reference semantics + cycle formulas) and, later, Verilated RTL. Backends register
// by name so that sim/ never includes rtl/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "isa/reference.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {

class LeafUnit {
 public:
  virtual ~LeafUnit() = default;
  // Runs one instruction whose operands lie in the leaf's local memory and returns the cycles it
  // takes at the leaf clock. `mem` is null in timing mode (shapes only, no data).
  virtual uint64_t run(const isa::OpDef& op, const isa::Instruction& instr,
                       isa::MemoryView* mem) = 0;
};

using LeafUnitFactory = std::function<std::unique_ptr<LeafUnit>(const LevelSpec& leaf)>;

void register_leaf_backend(const std::string& name, LeafUnitFactory factory);
std::unique_ptr<LeafUnit> make_leaf_unit(const LevelSpec& leaf);

// The cycle formulas of the C++ unit model (documented in README, "Leaf compute units"):
//  matrix unit, R x C MAC array, output stationary: an R x C block of out[M,N] takes K cycles
//    (one k per cycle), blocks go back to back, and the array fills and drains once:
//      cycles = ceil(M/R) * ceil(N/C) * K + R + C - 1        (0 when M*N*K == 0)
//  vector unit, L lanes: cycles = ceil(M*N / L)
uint64_t matrix_unit_cycles(const MatrixUnitSpec& u, int64_t M, int64_t N, int64_t K);
uint64_t vector_unit_cycles(const VectorUnitSpec& u, int64_t elements);

}  // namespace fracsim::sim
