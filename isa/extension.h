// FRISA extension ops: an op defined in YAML only, by its split rules (dims, as any op) plus a
// `sequence:` of primitive local instructions that executes one piece (see isa/ops/ext/).
// Adding one needs no C++: this file parses, validates, expands and executes any of them.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"

namespace fracsim {
class YamlMap;
}

namespace fracsim::isa {

// Reads `temporaries:` and `sequence:` of an extension op whose dims, operands and attributes
// are parsed; primitives are looked up in `table`. Every mistake (unknown primitive, unknown
// tensor or dim in a view, a dim never bound, a view that drops a dim, a parallel dim that a
// step reduces over, a step that writes an input) is a ConfigError naming file, line and op.
void parse_sequence(OpDef& op, YamlMap& m, const OpTable& table);

// A piece's primitive instructions, over a private arena that holds the extension op's operands
// (dense, in operand order) and then its temporaries.
struct Expansion {
  std::vector<TensorRef> operands;     // arena views of the extension op's operands
  std::vector<TensorRef> temporaries;  // arena views of its temporaries
  std::vector<Instruction> steps;      // the primitive instructions, in order (repeats unrolled)
  std::vector<std::shared_ptr<const OpDef>> step_ops;  // the op of each
  uint64_t arena_bytes = 0;
};

Expansion expand_sequence(const OpDef& op, const Instruction& instr);

// Bytes of the temporaries of one piece (local memory the piece needs beyond its operands).
uint64_t temporaries_bytes(const OpDef& op, const Instruction& instr);

// The work of one instruction as the leaf's units do it, by unit and dtype (one entry per pair,
// in order of first use): a built-in op's work formula on its unit, in its first operand's
// dtype; an extension op's primitive steps, each on its own unit (the extension's own `work`
// formula describes the op, not what the units do).
struct UnitWork {
  UnitKind unit = UnitKind::vector;
  DType dtype = DType::f32;
  int64_t ops = 0;
};
std::vector<UnitWork> unit_work(const OpDef& op, const Instruction& instr);

// Runs the sequence on `instr`, whose operands lie in `mem`.
void execute_extension(const OpDef& op, const Instruction& instr, MemoryView mem);

}  // namespace fracsim::isa
