// Per-node counters. Each counter is declared once here with its unit and description; models
// only increment them, and printers (sim/report.cpp) live outside the models.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "isa/unit_kind.h"

namespace fracsim::sim {

enum class Counter : int {
  instructions,      // instructions received from the parent (or the program, at the root)
  pieces,            // serial sub-instructions
  decode_cycles,     // ID stage busy
  load_cycles,       // LD stage busy (DMA read channel)
  execute_cycles,    // EX stage busy (children or the leaf unit)
  reduce_cycles,     // RD stage busy (LFU)
  writeback_cycles,  // WB stage busy (DMA write channel)
  hazard_cycles,     // LD waiting for an earlier piece's write-back
  load_bytes,
  store_bytes,
  lfu_elements,
  unit_cycles,              // leaf: cycles the compute unit was busy
  matrix_ops,               // leaf: work done by the matrix unit (op work formulas)
  vector_ops,               // leaf: work done by the vector unit
  sort_ops,                 // leaf: work done by the sort unit
  static_hits,              // static operands found in the tensor permutation table (not loaded)
  static_hit_bytes,         // bytes those hits did not load
  broadcast_bytes,          // received by a broadcast a sibling's load read from the parent
  resident_bytes,           // partial sums kept in local memory: not written back, not reloaded
  kept_read_bytes,          // read from outputs the node kept whole, not loaded
  overlapped_pieces,        // pieces issued to the children while earlier ones still ran there
  rtl_matrix_instructions,  // leaf: instructions run on the Verilated matrix unit (backend rtl)
  rtl_vector_instructions,  // leaf: ... on the Verilated vector unit
  rtl_sort_instructions,    // leaf: ... on the Verilated sort unit
  kCount
};

struct CounterInfo {
  std::string_view name;
  std::string_view unit;
  std::string_view description;
};

constexpr std::array<CounterInfo, static_cast<size_t>(Counter::kCount)> kCounterInfo{{
    {"instructions", "instructions", "instructions received from the parent"},
    {"pieces", "pieces", "serial sub-instructions after sequential decomposition"},
    {"decode_cycles", "cycles", "ID stage busy, node clock"},
    {"load_cycles", "cycles", "LD stage busy on the DMA read channel, node clock"},
    {"execute_cycles", "cycles", "EX stage busy (children or leaf unit), node clock"},
    {"reduce_cycles", "cycles", "RD stage busy in the LFU, node clock"},
    {"writeback_cycles", "cycles", "WB stage busy on the DMA write channel, node clock"},
    {"hazard_cycles", "cycles", "LD stalled on an earlier piece's write-back, node clock"},
    {"load_bytes", "bytes", "bytes loaded from the parent's memory"},
    {"store_bytes", "bytes", "bytes written back to the parent's memory"},
    {"lfu_elements", "elements", "elements combined by the LFU"},
    {"unit_cycles", "cycles", "leaf compute unit busy, leaf clock"},
    {"matrix_ops", "ops", "operations done by the matrix unit"},
    {"vector_ops", "ops", "operations done by the vector unit"},
    {"sort_ops", "ops", "operations done by the sort unit"},
    {"static_hits", "operands", "static operands found resident in the tensor permutation table"},
    {"static_hit_bytes", "bytes", "bytes not loaded thanks to tensor permutation table hits"},
    {"broadcast_bytes", "bytes",
     "bytes received by broadcast, read from the parent's memory by a sibling's load"},
    {"resident_bytes", "bytes",
     "partial-sum bytes kept in local memory between serial reduce pieces: the write-backs "
     "and reloads they did not need"},
    {"kept_read_bytes", "bytes",
     "bytes the pieces read from an earlier instruction's output the node kept whole in its "
     "memory (keep_outputs), instead of loading them"},
    {"overlapped_pieces", "pieces",
     "pieces whose children's instructions were issued while an earlier piece's still ran"},
    {"rtl_matrix_instructions", "instructions",
     "leaf instructions run on the Verilated matrix unit (backend rtl)"},
    {"rtl_vector_instructions", "instructions",
     "leaf instructions run on the Verilated vector unit (backend rtl)"},
    {"rtl_sort_instructions", "instructions",
     "leaf instructions run on the Verilated sort unit (backend rtl)"},
}};

// The counter of the work done by each leaf unit (isa/unit_kind.h), in UnitKind order.
constexpr Counter unit_counter(isa::UnitKind k) {
  return static_cast<Counter>(static_cast<int>(Counter::matrix_ops) + static_cast<int>(k));
}
static_assert(unit_counter(isa::UnitKind::sort) == Counter::sort_ops && isa::kUnitKinds == 3,
              "one work counter per leaf unit, in UnitKind order");

struct NodeStats {
  std::array<uint64_t, static_cast<size_t>(Counter::kCount)> value{};

  uint64_t& operator[](Counter c) { return value[static_cast<size_t>(c)]; }
  uint64_t operator[](Counter c) const { return value[static_cast<size_t>(c)]; }
  NodeStats& operator+=(const NodeStats& o) {
    for (size_t i = 0; i < value.size(); ++i) value[i] += o.value[i];
    return *this;
  }
};

}  // namespace fracsim::sim
