// The machine description, parsed once from YAML, validated, then immutable (see sim/README.md,
// "Machine config"). The YAML tree has the shape of the machine: a root (the main memory and the
// controller beside it), then the levels below it from the top down; the last level is the leaf.
// Every key, its default and range are declared in sim/config_schema.cpp; the parser fills every
// field below from there (the zeros here are no defaults).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "isa/decompose/cost_model.h"
#include "isa/dtype.h"
#include "sim/energy_table.h"

namespace fracsim::sim {

struct MemorySpec {
  uint64_t capacity = 0;   // bytes
  uint64_t bandwidth = 0;  // bytes per second
  uint64_t latency = 0;    // picoseconds
  int banks = 0;
};

// The DMA path from a node to its parent's memory. Loads and write-backs use separate channels
// (full duplex), each with this bandwidth.
struct LinkSpec {
  uint64_t bandwidth = 0;  // bytes per second
  uint64_t latency = 0;    // picoseconds
  // The siblings' links are one shared medium: bytes several of them load for one piece of
  // their parent are read from the parent's memory once and delivered to all (a broadcast).
  bool multicast = false;
  // Split transactions: a transfer is requested when its piece is ready, so its latency
  // overlaps the transfers ahead of it on the same channel (DmaEngine::begin).
  bool pipelined = false;
  // Posted write-backs: WB moves on once a piece's data has left, freeing its sub-block; the
  // piece retires when the write lands, a latency later (Node::wb_step).
  bool posted_writes = false;
};

struct MatrixShape {
  int rows = 0;
  int cols = 0;
};

// The MAC array. Its size may depend on the input dtype (`matrix: {rows: 16, cols: 16, f32:
// {rows: 8, cols: 8}}`: narrow integers pack more MACs into the same multipliers); the dtypes
// without their own entry use rows x cols.
struct MatrixUnitSpec {
  int rows = 0;  // MAC array rows (output rows computed at once)
  int cols = 0;  // MAC array columns (output columns computed at once)
  std::array<MatrixShape, isa::kDTypeCount> by_dtype{};  // filled for every dtype

  [[nodiscard]] MatrixShape for_dtype(isa::DType dtype) const {
    return by_dtype[static_cast<size_t>(dtype)];
  }
};

struct VectorUnitSpec {
  int lanes = 0;  // elements per cycle
};

// The sort/merge unit.
struct SortUnitSpec {
  int width = 0;  // elements compared per cycle
};

// One controller: the root's or one level's.
struct ControllerSpec {
  uint64_t clock = 0;      // Hz; the period must be a whole number of picoseconds
  int pipeline_depth = 0;  // sub-instructions in flight (N); the cyclic segment has N sub-blocks
  int decode_cycles = 0;   // ID stage cycles per sub-instruction
  int lfu_throughput = 0;  // LFU elements combined per cycle (0 at the leaf: no LFU)

  // One cycle of this controller in picoseconds (exact: the parser rejects other clocks).
  [[nodiscard]] uint64_t period_ps() const { return clock == 0 ? 0 : 1000000000000ULL / clock; }
};

struct RootSpec {
  ControllerSpec controller;
  MemorySpec memory;  // the main memory holding the program's tensors
};

struct LevelSpec {
  std::string name;
  int fanout = 0;  // nodes of this level under each node of the level above (or the root)
  ControllerSpec controller;
  MemorySpec memory;  // this node's local memory
  LinkSpec link;      // to the parent's memory
  // Outputs a node writes back stay in its tensor permutation table (resident where its last
  // pieces left them), so that a later instruction reading the same view hits.
  bool keep_outputs = false;
  // A serial split along a reduce dim that accumulates (matmul's K, conv's Ci) issues the pieces
  // sharing an output tile one after another and keeps that tile in local memory across them:
  // the children accumulate into it in place; it is neither loaded for the accumulating pieces
  // nor written back before the last of them.
  bool resident_partial_sums = false;
  // The same one level down: where the parent's pieces along a reduce dim accumulate onto one
  // tile (its resident partial sums), a node keeps its part of that tile in its own memory from
  // one of the parent's pieces to the next, writing it back after the last only, instead of
  // after each (and loading it again).
  bool hold_partial_sums = false;
  // A node takes its parent's next instruction while the pieces of the one before still drain
  // through its pipeline: the parent issues the next piece's instructions to its children
  // before the previous piece's have finished (node_dispatch.cpp says when it can).
  bool overlap = false;
  // A piece's loads that no unfinished write holds back (weights, say) start before those that
  // wait for an earlier piece's write-back; and the parent hands this level's nodes an
  // instruction that reads what its previous one writes before that one has finished: their
  // loads of those bytes wait until it has (node.cpp, Node::ld_step).
  bool prefetch = false;
  // Leaf level only.
  bool is_leaf = false;
  MatrixUnitSpec matrix;
  VectorUnitSpec vector;
  SortUnitSpec sort;
  std::string backend;  // a name in the leaf backends' registry
  // A fused epilogue's vector steps work on each block of outputs the MAC array drains while it
  // computes the next (isa::LeafParams::overlapped_epilogue).
  bool overlapped_epilogue = false;
};

// How a node decides that an earlier piece in flight writes what a later one reads, which the
// later one's load then waits for (`hazards:`): `tiles`, when the written and the read views
// share a byte (exact for tiles of one tensor, however strided: isa::views_overlap); `spans`,
// when their byte spans meet (a scoreboard of address ranges: the strided tiles of one output
// then look dependent).
enum class HazardCheck : uint8_t { tiles, spans };
constexpr std::array<std::string_view, 2> kHazardCheckNames = {"tiles", "spans"};

// The most nodes one level of a machine may have (the leaves included).
constexpr int64_t kMaxLevelNodes = int64_t{1} << 20;

struct MachineSpec {
  std::string name;
  std::string file;
  isa::Policy decomposer = isa::Policy::halving;  // `decomposer:` (every node's policy)
  HazardCheck hazards = HazardCheck::tiles;       // `hazards:` (every node's)
  RootSpec root;
  std::vector<LevelSpec> levels;      // top down; levels.back().is_leaf
  std::optional<EnergyTable> energy;  // absent: the run reports no energy
  nlohmann::ordered_json effective;   // the effective config (defaults filled in), for stats.json

  [[nodiscard]] int64_t leaves() const;
  // Nodes at level i in the whole machine (product of fan-outs down to i).
  [[nodiscard]] int64_t nodes_at(size_t level) const;
};

// Parse and validate; ConfigError naming file, line and key on any mistake.
MachineSpec load_machine_spec(const std::string& path);
MachineSpec parse_machine_spec(const std::string& text, const std::string& file);
// The same from a YAML document already read from `file` (and perhaps changed: --set).
MachineSpec parse_machine_yaml(const YAML::Node& doc, const std::string& file);

}  // namespace fracsim::sim
