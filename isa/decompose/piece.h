// A piece of an instruction: a sub-range of each of the op's dims. Slicing an instruction by a
// piece slices every operand along the axes bound to those dims.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

struct PieceRange {
  std::vector<int64_t> begin;  // one per op dim, in OpDef order
  std::vector<int64_t> len;
};

// Extents of the op's dims in `instr`, in OpDef dim order.
std::vector<int64_t> dim_extents(const OpDef& op, const Instruction& instr);

// A window field's value in an instruction whose dims have extents `ext`: its literal, or the
// dim's extent or the attribute's value it names.
int64_t window_term(const WindowTerm& t, const std::vector<int64_t>& ext, const Instruction& instr);

// The instruction restricted to `range`. A piece that starts past 0 along a reduce dim with an
// accumulate attribute gets that attribute set, so that it adds to what earlier pieces wrote.
// A piece that ends before the end of a reduce dim with a final attribute gets it cleared.
// A dim with an offset attribute adds its start (times its offset_scale) to that attribute.
// Window dims ignore their entry in `range`: they are sliced to the input their output dim's
// windows touch (the halo), and the window's pad attributes are set to what remains at the edges;
// an input frame (the whole input's elements before and after the operand's) is cut to how far
// the piece's windows reach, which is all that it decides.
Instruction slice_instruction(const OpDef& op, const Instruction& instr, const PieceRange& range);

// Splits `extent` into `parts` near-equal chunks, the first (extent % parts) one longer.
// Returns the chunk starts and lengths.
void balanced_chunks(int64_t extent, int64_t parts, std::vector<int64_t>& begin,
                     std::vector<int64_t>& len);

}  // namespace fracsim::isa
