// Placing a piece in a node's local memory: every operand the piece reads is loaded into a dense
// tile of one cyclic sub-block, and every operand it writes is stored back from one.
#pragma once

#include <cstdint>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

// Local tiles start on this boundary (bytes).
constexpr uint64_t kTileAlign = 64;

// One of a node's `depth` cyclic sub-blocks in `capacity` bytes of local memory, in whole tiles.
constexpr uint64_t sub_block_bytes(uint64_t capacity, int depth) {
  return capacity / static_cast<uint64_t>(depth) / kTileAlign * kTileAlign;
}

struct Transfer {
  TensorRef parent;  // the view in the parent's memory
  TensorRef local;   // the dense tile in this node's memory
};

struct LocalPiece {
  Instruction local;             // the piece, its operands in local memory
  std::vector<Transfer> loads;   // parent -> local, before the piece runs
  std::vector<Transfer> stores;  // local -> parent, after it
  uint64_t bytes = 0;            // tile bytes used from `base` (aligned)
};

// Whether operand `o` of `instr` is read: an input unless its read_if attribute is clear (a fused
// epilogue's bias on a piece that does not complete the sum), an output when it is set.
bool operand_is_read(const OpDef& op, const Instruction& instr, size_t o);

LocalPiece localize(const OpDef& op, const Instruction& piece, uint64_t base);

uint64_t align_up(uint64_t v, uint64_t a);

}  // namespace fracsim::isa
