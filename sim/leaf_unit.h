// The leaf compute interface: what a leaf node's EX stage runs. Two backends share it: the C++
// unit model (reference semantics + cycle formulas) and, later, Verilated RTL. Backends register
// by name so that sim/ never includes rtl/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isa/reference.h"
#include "isa/unit_cycles.h"
#include "sim/machine_spec.h"
#include "sim/node_stats.h"

namespace fracsim::sim {

class LeafUnit {
 public:
  virtual ~LeafUnit() = default;
  // Runs one instruction whose operands lie in the leaf's local memory and returns the cycles it
  // takes at the leaf clock. `mem` is null in timing mode (shapes only, no data).
  virtual uint64_t run(const isa::OpDef& op, const isa::Instruction& instr,
                       isa::MemoryView* mem) = 0;
  // The counter of the Verilated unit that ran the last instruction (rtl_*_instructions), or
  // none when the C++ unit model ran it.
  [[nodiscard]] virtual std::optional<Counter> last_rtl_unit() const { return std::nullopt; }
};

using LeafUnitFactory = std::function<std::unique_ptr<LeafUnit>(const LevelSpec& leaf)>;

void register_leaf_backend(const std::string& name, LeafUnitFactory factory);
std::unique_ptr<LeafUnit> make_leaf_unit(const LevelSpec& leaf);

// What decides a piece's cycles and work: its opcode, attributes, and each operand's dtype and
// shape (addresses and strides aside). The leaf prices each distinct piece once by it.
std::vector<int64_t> piece_key(const isa::Instruction& instr);

// The values of the leaf's unit parameters (isa::unit_parameters) from its spec.
std::map<std::string, int64_t> unit_parameter_values(const LevelSpec& leaf);

// The C++ unit model's cycles for one instruction (isa/unit_cycles.h).
using isa::unit_cycles;

// The leaf's unit parameters as the cycle formulas read them.
isa::LeafParams leaf_params(const LevelSpec& leaf);

}  // namespace fracsim::sim
