// An operation of the fractal ISA, as described in isa/ops/*.yaml: its named dims and how each
// may be split, its operands and attributes, the accepted dtypes, its work formula and the leaf
// unit that executes it. Loaded and validated once; everything else reads it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "isa/dtype.h"
#include "isa/expr.h"
#include "isa/unit_kind.h"

namespace fracsim::isa {

// How a dim may be split.
//  parallel: freely, no combining.
//  reduce:   partial results are combined (by the LFU across children; serial pieces with the
//            accumulate attribute combine onto the output they read).
//  window:   an input extent that follows an output dim through a sliding window (a
//            convolution's or pool's spatial input): never split itself; slicing the output dim
//            slices it with its halo and adjusts the piece's pad attributes.
//  whole:    never split.
// A reduce dim that is a window's kernel (conv's Kh, pool's Kh) holds the kernel's taps: serial
// pieces take a range of taps, each reading the input rows its taps touch (OpDef::is_taps).
enum class DimKind { parallel, reduce, window, whole };

// A window field: an integer literal or the name of a dim or attribute.
struct WindowTerm {
  std::string name;   // empty for a literal
  int64_t value = 0;  // the literal
  int dim = -1, attr = -1;  // the name as an index into OpDef::dims or ::attributes
};

struct WindowDef {
  std::string of;  // the output dim it follows
  WindowTerm kernel, stride, dilation;
  std::string pad_begin, pad_end;  // int attributes, adjusted per piece
  int of_index = -1, pad_begin_index = -1, pad_end_index = -1;  // as indices
};

struct DimDef {
  std::string name;
  DimKind kind = DimKind::parallel;
  // reduce: how partial results are combined. An eltwise fn ("add", "max", ...), fixed
  // (`combine`) or chosen by the value of the enum attribute `combine_attr` through
  // `combine_by_value`; or one of two combinations that are ops of their own:
  //   "self":  the op again, with accumulate set, reading the partial outputs as its inputs
  //            (topk keeps the best K of its old output and a partial list);
  //   "merge": the output keeps the dim; pieces sort their chunk in place and the `merge` op
  //            merges the sorted runs (sort).
  std::string combine;
  std::string combine_attr;
  std::map<std::string, std::string> combine_by_value;
  std::string accumulate_attr;  // reduce: bool attribute that makes a piece add to its output
  // reduce: bool attribute that only a piece completing the sum keeps (a fused epilogue runs
  // under it): slicing clears it on a piece that ends before the dim does; a split across
  // children clears it on every child and the LFU runs the op once more, over an empty range of
  // the dim, after the partials are combined (isa/decompose/parallel.h).
  std::string final_attr;
  WindowDef window;  // window
  // parallel and window: an int attribute that holds the global position of the dim's first
  // element; slicing adds the piece's start to it (count compares elements with base + c),
  // times the int attribute `offset_scale` when one is named (several dims may add to one
  // attribute: a flattened index, as pool2d_argmax's index_base).
  std::string offset_attr;
  std::string offset_scale;
  // reduce and window: an int attribute to which slicing adds the dim's extent past the piece's
  // end (with `offset`, what the piece leaves of the whole on either side: a pool piece of a
  // kernel's taps counts the input elements of its whole window by them).
  std::string after_attr;
  // reduce: the int attribute that holds the dim's extent when no operand has it (pool's kernel
  // size); slicing sets it to the piece's length.
  std::string extent_attr;
  // reduce: on integer operands the dim splits only for these values of an enum attribute
  // (pool's taps: max; integer average sums need more bits than the output holds). Empty attr:
  // no limit.
  std::string integer_attr;
  std::vector<std::string> integer_values;
  // Set when the op is added: var_id(name), and the attributes named above as indices into
  // OpDef::attributes (-1: none).
  int var = -1;
  int accumulate_index = -1, final_index = -1, offset_index = -1, offset_scale_index = -1,
      after_index = -1, extent_attr_index = -1;
};

enum class OperandRole { in, out };

struct OperandDef {
  std::string name;
  OperandRole role = OperandRole::in;
  std::vector<std::string> dims;
  // A bool attribute under which the operand is read: an output's old value is read too, an input
  // (a fused epilogue's) is read only then.
  std::string read_if;
  std::vector<int> dim_ids;  // dims[a] as an index into OpDef::dims (set when the op is added)
  int read_if_index = -1;    // read_if as an index into OpDef::attributes (set then too)
};

// Attribute values are stored as int64: bool 0/1, an enum's index, or a real's IEEE double bits.
enum class AttrType { integer, boolean, enumeration, real };

int64_t real_to_attr(double v);
double attr_to_real(int64_t bits);

struct AttrDef {
  std::string name;
  AttrType type = AttrType::integer;
  int64_t default_value = 0;
  std::vector<std::string> values;      // enumeration names; the value is the index
  std::vector<std::string> float_only;  // enumeration values defined for f32 operands only
  int64_t min = INT64_MIN, max = INT64_MAX;  // integer: the allowed range (YAML min:, max:)
  std::string doc;
  int var = -1;  // var_id(name), set when the op is added

  // Whether `v` is a value of this attribute (the encoding of a real: not NaN).
  bool accepts(int64_t v) const;
};
// "attribute NAME has an invalid value V", or for an integer outside its range, the range.
std::string attr_value_error(const AttrDef& a, int64_t v);


// FRISA extension ops: a `sequence:` of primitive local instructions runs one piece. Each step
// names a primitive op and, for each of its operands, a view of one of the extension op's
// operands or temporaries: `x[M,1,N]` lists, per primitive axis, an extension dim (the tensor's
// own axis for that dim, or a broadcast of it when the tensor lacks the dim) or 1.
struct ViewDef {
  std::string tensor;
  std::vector<std::string> axes;  // dim names or "1"
  // Tensor dims held at one index instead of being viewed: `in[N,C,H | D = od + kd]`. A step
  // whose index falls outside the dim is skipped (the zero padding of a convolution).
  std::vector<std::pair<std::string, Expr>> fixed;
  // The same by index, set when the step is parsed: the tensor (an operand's index, or the
  // number of operands plus a temporary's), per axis the tensor's own axis (kOne: a 1,
  // kBroadcast: the dim whose var_id is axis_var, which the tensor lacks), per fixed entry the
  // tensor's axis.
  static constexpr int kOne = -1, kBroadcast = -2;
  int tensor_index = -1;
  std::vector<int> axis_of, axis_var, fixed_axis;
};

struct StepAttr {
  Expr value;        // int and bool attributes: a formula over the extension's dims and attributes
  std::string name;  // real attributes: the extension attribute that gives the value ("" = literal)
  double real = 0;   // real literal
  int var = -1;      // var_id(name)
};

struct OpDef;

struct SequenceStep {
  std::shared_ptr<const OpDef> prim;  // null for a repeat block
  std::vector<ViewDef> operands;      // in the primitive's operand order
  std::vector<StepAttr> attrs;        // in the primitive's attribute order
  Expr when;                          // the step runs only where this is non-zero (empty: always)
  // A repeat block: `body` runs for every value of each loop variable in [0, extent of its dim),
  // the first variable outermost.
  std::vector<std::pair<std::string, std::string>> loops;  // variable, dim
  std::vector<std::pair<int, int>> loop_vars;              // their var_ids
  std::vector<SequenceStep> body;
  int line = 0;
};

struct TemporaryDef {
  std::string name;
  std::vector<std::string> dims;
  DType dtype = DType::f32;
  std::vector<int> dim_vars;  // var_id of each dim
};

// A dtype row that holds only for some values of an enum attribute:
// `{row: [u16, u16, u16], only: {fn: [max, min]}}`. An empty attr: the row holds for all.
struct DTypeRowLimit {
  std::string attr;
  std::vector<std::string> values;
};

struct OpDef {
  std::string name;
  uint16_t opcode = 0;
  // The leaf unit that runs it; none for an extension op, whose steps run on their primitives'.
  std::optional<UnitKind> unit;
  std::string summary;
  std::vector<DimDef> dims;
  std::vector<OperandDef> operands;
  std::vector<AttrDef> attributes;
  std::vector<std::vector<DType>> dtypes;
  std::vector<DTypeRowLimit> dtype_limits;  // one per row of dtypes
  Expr work;
  // Leaf-unit cycles for one instruction, over the dims, the attributes and the parameters of
  // the op's unit (unit_parameters()).
  Expr cycles;
  std::string file;
  int line = 0;
  // Serial pieces along a reduce dim add their partial sums in another order than the whole op
  // (an extension whose sequence loops outside the reducing primitive): f32 results then match
  // the whole op within the reassociation bound, not bit for bit.
  bool reassociates = false;
  std::vector<TemporaryDef> temporaries;  // extension ops: local scratch tensors of a piece
  std::vector<SequenceStep> sequence;     // extension ops: the primitive instructions of a piece

  bool is_extension() const { return !sequence.empty(); }
  int dim_index(const std::string& dim) const;       // -1 when absent
  // Whether dim `d` is a reduce dim that some window dim names as its kernel: a kernel's taps.
  bool is_taps(size_t d) const;
  // Whether operand `o` is an input read only under a reduce dim's `final` attribute (its
  // read_if): a fused epilogue's bias or residual.
  bool epilogue_only(size_t o) const;
  // Whether reduce dim `d` may split for an instruction with these attributes, `integer` when
  // an operand is an integer (its integer limit).
  bool splits_for(size_t d, bool integer, const std::vector<int64_t>& attrs) const;
  int attr_index(const std::string& attr) const;     // -1 when absent
  int operand_index(const std::string& name) const;  // -1 when absent
  const DimDef& dim(const std::string& name) const;
  // "relu" for an enum attribute value, the shortest exact decimal of a real, or the number.
  std::string attr_value_str(int attr, int64_t value) const;
  // The eltwise fn that combines partial results along reduce dim `d` of `instr`.
  std::string combine_fn(const DimDef& d, const std::vector<int64_t>& attrs) const;
  // The enum value name of attribute `attr` in `attrs`.
  const std::string& enum_value(const std::string& attr, const std::vector<int64_t>& attrs) const;
  // Whether dtype row `row` holds for these attribute values (its `only:` limit).
  bool row_allows(size_t row, const std::vector<int64_t>& attrs) const;
};

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
