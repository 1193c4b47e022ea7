// An operation of the fractal ISA, as described in isa/ops/*.yaml: its named dims and how each
// may be split, its operands and attributes, the accepted dtypes, its work formula and the leaf
// unit that executes it. Loaded and validated once; everything else reads it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "isa/dtype.h"
#include "isa/expr.h"

namespace fracsim::isa {

enum class DimKind { parallel, reduce, whole };

struct DimDef {
  std::string name;
  DimKind kind = DimKind::parallel;
  std::string combine;          // reduce: the eltwise fn the LFU uses to combine partial results
  std::string accumulate_attr;  // reduce: bool attribute that makes a piece add to its output
};

enum class OperandRole { in, out };

struct OperandDef {
  std::string name;
  OperandRole role = OperandRole::in;
  std::vector<std::string> dims;
  std::string read_if;  // out operands: bool attribute under which the old value is read too
};

enum class AttrType { integer, boolean, enumeration };

struct AttrDef {
  std::string name;
  AttrType type = AttrType::integer;
  int64_t default_value = 0;
  std::vector<std::string> values;  // enumeration names; the value is the index
  std::string doc;
};

struct OpDef {
  std::string name;
  uint16_t opcode = 0;
  std::string unit;  // leaf compute unit class: matrix, vector, sort
  std::string summary;
  std::vector<DimDef> dims;
  std::vector<OperandDef> operands;
  std::vector<AttrDef> attributes;
  std::vector<std::vector<DType>> dtypes;
  Expr work;
  // Leaf-unit cycles for one instruction, over the dims, the attributes and the parameters of
  // the op's unit (unit_parameters()).
  Expr cycles;
  std::string file;
  int line = 0;

  int dim_index(const std::string& dim) const;        // -1 when absent
  int attr_index(const std::string& attr) const;      // -1 when absent
  int operand_index(const std::string& name) const;   // -1 when absent
  const DimDef& dim(const std::string& name) const;
  // "relu" for an enum attribute value, or the number.
  std::string attr_value_str(int attr, int64_t value) const;
};

// The parameters of a leaf unit class that cycle formulas may use: matrix {rows, cols},
// vector {lanes}, sort {width}.
const std::vector<std::string>& unit_parameters(const std::string& unit);

class OpTable {
 public:
  // Parses one op definition; `file` names it in errors.
  void add_yaml(const std::string& text, const std::string& file);
  // Checks cross-op rules (unique names and opcodes, reductions naming an eltwise fn).
  void validate() const;

  const OpDef* find(const std::string& name) const;
  const OpDef* find(uint16_t opcode) const;
  const OpDef& get(const std::string& name) const;  // InternalError when absent
  const OpDef& get(uint16_t opcode) const;
  const std::vector<OpDef>& ops() const { return ops_; }

  // The ops shipped in isa/ops/, compiled into the binary.
  static const OpTable& builtin();

 private:
  std::vector<OpDef> ops_;
};

}  // namespace fracsim::isa
