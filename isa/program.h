// Instructions and programs of the fractal ISA. A Program is what the compiler emits and every
// machine runs unchanged: root-level instructions over whole tensors in the root memory, the
// initial contents of that memory, and the named tensors (inputs, weights, outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/op_def.h"
#include "isa/tensor.h"

namespace fracsim::isa {

struct Instruction {
  uint16_t opcode = 0;
  std::vector<TensorRef> operands;  // in OpDef operand order
  std::vector<int64_t> attrs;       // in OpDef attribute order (bool 0/1, enum index)
  // Not encoded: what the root controller sees of the program ahead (reused_inputs). Bit o:
  // a later instruction reads operand o's view again before anything writes over it. Pieces
  // and children's instructions keep it.
  uint32_t reused = 0;
  // Not encoded either: the marks that reach below the level under the root
  // (recurring_inputs). Bit o: input o is a constant of the program whose next reader, an
  // instruction of the same op and shapes, reads it as its operand o, so that a node gives
  // the same part of it to the same child both times. The nodes of the first `recur_levels`
  // levels under the root may count on it (sim::root_reuse_marks); a node passes a bit on to
  // its pieces only for an input it holds in its static segment.
  uint32_t recurs = 0;
  uint8_t recur_levels = 0;

  bool operator==(const Instruction& o) const {
    return opcode == o.opcode && operands == o.operands && attrs == o.attrs && reused == o.reused &&
           recurs == o.recurs && recur_levels == o.recur_levels;
  }
};

// Initial contents of a region of the root memory: literal bytes, or `count` values drawn from a
// seeded generator (uniform in [lo, hi); integers in [lo, hi]) so that programs stay small.
struct DataSegment {
  enum class Kind : uint8_t { bytes = 0, random = 1 };
  Kind kind = Kind::bytes;
  uint64_t address = 0;
  DType dtype = DType::f32;
  uint64_t count = 0;          // elements
  std::vector<uint8_t> bytes;  // kind == bytes: count * dtype_size bytes
  uint64_t seed = 0;           // kind == random
  double lo = 0, hi = 0;

  bool operator==(const DataSegment& o) const {
    return kind == o.kind && address == o.address && dtype == o.dtype && count == o.count &&
           bytes == o.bytes && seed == o.seed && lo == o.lo && hi == o.hi;
  }
};

enum class SymbolRole : uint8_t { input = 0, weight = 1, output = 2 };

struct Symbol {
  std::string name;
  SymbolRole role = SymbolRole::input;
  TensorRef tensor;

  bool operator==(const Symbol& o) const {
    return name == o.name && role == o.role && tensor == o.tensor;
  }
};

struct Program {
  std::string name;
  uint64_t footprint = 0;  // bytes of root memory the program uses, from address 0
  std::vector<Instruction> instructions;
  std::vector<DataSegment> data;
  std::vector<Symbol> symbols;
  // The layer (YAML) or node (ONNX) each instruction was lowered from, for per-layer reports:
  // empty when the program names no instruction, else one entry per instruction ("" unnamed).
  std::vector<std::string> instruction_names;

  bool operator==(const Program& o) const {
    return name == o.name && footprint == o.footprint && instructions == o.instructions &&
           data == o.data && symbols == o.symbols && instruction_names == o.instruction_names;
  }
};

std::string_view symbol_role_name(SymbolRole r);

// Binds each dim of `op` to its extent in `instr`. Throws ConfigError (prefixed by `where`) when
// operand count, rank, attribute count or dtypes do not fit the op, or two operands disagree on a
// dim. The returned map also holds the attribute values by name (for work formulas).
std::map<std::string, int64_t> bind_dims(const OpDef& op, const Instruction& instr,
                                         const std::string& where);
// The same values into `vars` by id, without the checks: for an instruction that passed them
// and the pieces cut from it (the hot paths: leaf cycles, extension steps).
void bind_vars(const OpDef& op, const Instruction& instr, Vars& vars);

// The name of instruction `i`: its entry in instruction_names, or "#i" (its index) when it has
// none, so that a program without names (a hand-written .fasm) still names every instruction.
std::string instruction_name(const Program& p, size_t i);

// An op may gain attributes after programs were encoded with it, appended to its list (the
// layernorm op's `divide`): an instruction of such a program, with fewer attributes than its op
// has, is given the defaults of those after its own, which keep the op's earlier semantics.
// Instructions of unknown opcodes, or with more attributes than their op, are left to
// validate_program.
void default_appended_attributes(Program& p, const OpTable& ops);

// Checks every instruction against the op table and every tensor, segment and symbol against
// the footprint, and that instruction_names is empty or has one entry per instruction. `source`
// names the program in errors.
void validate_program(const Program& p, const OpTable& ops, const std::string& source);

// One instruction as an assembly line: "matmul a=f32@0x0[...] b=... accumulate=0".
std::string instruction_str(const OpDef& op, const Instruction& instr);

// The work (operations) of one instruction, by the op's formula.
int64_t instruction_work(const OpDef& op, const Instruction& instr);

}  // namespace fracsim::isa
