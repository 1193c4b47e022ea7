// The pieces a Node's stages pass along, and the stage numbering (node.cpp, node_lfu.cpp and
// node_dispatch.cpp share them; nothing outside Node includes this).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "sim/node.h"

namespace fracsim::sim {

enum Stage { kId, kLd, kEx, kRd, kWb };
constexpr const char* kStageName[] = {"ID", "LD", "EX", "RD", "WB"};

struct Node::Piece {
  const isa::OpDef* op = nullptr;
  std::shared_ptr<const isa::Instruction> instr;  // the instruction this piece belongs to
  isa::Instruction part;                          // the piece, operands in the parent's memory
  isa::Instruction local;                         // the piece, operands in this node's memory
  std::vector<isa::Transfer> loads, stores;
  isa::ParallelSplit split;  // children's instructions and LFU work (not at a leaf)
  std::vector<std::pair<uint64_t, uint64_t>> reads, writes;  // spans in the parent's memory
  std::vector<std::pair<uint64_t, uint64_t>> local_writes;   // out tiles and scratch, here
  size_t index = 0, count = 1;
  size_t tree_node = 0;
  uint64_t copies = 1;
  int route = 0;
  Completion* completion = nullptr;        // set on the last piece of an instruction
  std::vector<isa::Instruction> finalize;  // the last piece: the plan's finalize work
};

// Runs a stage body forever; an exception stops the simulation and is rethrown by the machine.
template <typename Body>
void Node::guarded(Body&& body) {
  try {
    while (true) body();
  } catch (...) {
    if (!ctx_.error) {
      ctx_.error = std::current_exception();
      sc_core::sc_stop();  // once: other stages may fail in the same delta
    }
    sc_core::wait();  // park this process for good
  }
}

}  // namespace fracsim::sim
