// How far a decomposed instruction's float results may lie from the reference's.
//
// A decomposition gives the reference's bits unless it splits a reduce dim across children
// (the LFU then adds the partial sums in another order) or the op declares `reassociates`
// (its serial pieces add partial sums in another order). Such an f32 element may then differ
// from the reference by at most
//   2 * R * 2^-24 * S            (2^-53 for f64)
// where R is the number of terms summed into it (the product of its op's reduce and whole
// dims) and S the larger of |the reference's element| and the same element of the op run on
// the absolute values of its operands: the classic bound for two orders of a float sum (for a
// sum of products S is the sum of the products' magnitudes; for non-negative terms, the
// result itself). The property test of decompositions and a functional run's check of each
// instruction both hold results to it.
#pragma once

#include <cstdint>

#include "isa/op_def.h"
#include "isa/reference.h"

namespace fracsim::isa {

// R: the number of terms summed into each output element of `instr`.
int64_t terms_per_output(const OpDef& op, const Instruction& instr);

// Whether a decomposition may reassociate the op's sums: a reduce dim (which a parent may split
// across its children) or the op's `reassociates`.
bool may_reassociate(const OpDef& op);

// Replaces every element of `instr`'s f32 and f64 operands in `mem` by its absolute value.
void absolute_operands(const Instruction& instr, MemoryView mem);

// One output operand's elements compared.
struct ElementCheck {
  int64_t elements = 0;
  int64_t bit_exact = 0;     // identical to the reference's, bit for bit
  int64_t within_bound = 0;  // bit for bit or within the bound (bit_exact included)
  double max_abs_diff = 0;
  // The largest difference as a share of its element's bound, over the elements that differ
  // (0 when none does; infinite for one without a bound: an integer, or no `magnitude`).
  double max_bound_use = 0;
  bool holds() const { return within_bound == elements; }
};

// Compares the elements of `out` in `got` with those in `want` (the reference's): bit for bit,
// or, when `magnitude` is given (the op run on absolute operands, as absolute_operands leaves
// them) and `out` is f32 or f64, within the bound above with R = terms. Integers: bit for bit.
ElementCheck compare_elements(const TensorRef& out, MemoryView got, MemoryView want,
                              const MemoryView* magnitude, int64_t terms);

}  // namespace fracsim::isa
