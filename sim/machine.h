// Builds the machine described by a MachineSpec as a tree of Nodes and runs a Program on it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "isa/decompose/cost_model.h"
#include "isa/program.h"
#include "isa/reference.h"
#include "isa/unit_kind.h"
#include "sim/machine_spec.h"
#include "sim/node_reports.h"

namespace fracsim::sim {

enum class Mode { functional, timing };

class TraceRecorder;

struct Progress {
  uint64_t done = 0, total = 0;  // program instructions
  uint64_t picoseconds = 0;      // simulated time
};

// The watchdog's interval unless told otherwise: 10 s of simulated time.
inline constexpr uint64_t kDefaultWatchdogPicoseconds = 10'000'000'000'000;

struct SimOptions {
  // Timing mode: simulate one child per class of congruent children and account for all
  // (identical cycles and counters to an unfolded run). Ignored in functional mode.
  bool fold = true;
  // With folding, the simulated nodes per level at first, times the level's depth (1 for the
  // level under the root): they play whichever nodes of the level the classes need at a time.
  // A run that needs more at once is run again, once, with every pool as large as its level
  // (same results; the retry costs one more run).
  int fold_pool = 2;
  // For tests: the bits of the subtree digests folding keeps (MachineTree's digest_mask); 0
  // makes every pair of subtrees a candidate, left to the exact comparison.
  uint64_t fold_digest_mask = ~uint64_t{0};
  // A decision fixed at one level instead of the policy's (the mapping oracle's candidates).
  std::optional<isa::PinnedDecision> pin;
  TraceRecorder* trace = nullptr;                 // records the stages of simulated nodes
  std::function<void(const Progress&)> progress;  // after each program instruction
  // Functional mode: after each program instruction has finished at the root (in program
  // order), with the main memory as it is then (InstructionChecker::retired).
  std::function<void(size_t instruction, isa::MemoryView memory)> retired;
  // Limits (sim/README.md, "Limits"); 0 is none. A run whose host memory estimate
  // (host_memory_estimate) exceeds max_host_bytes is refused before it is built; one whose
  // simulated time reaches max_picoseconds with instructions unfinished, or in which no program
  // instruction finishes for watchdog_picoseconds of simulated time, is ended. Each a
  // ConfigError giving the numbers.
  uint64_t max_host_bytes = 0;
  uint64_t max_picoseconds = 0;
  uint64_t watchdog_picoseconds = kDefaultWatchdogPicoseconds;
};

// What a run is estimated to take of host memory (sim/README.md, "Limits"): per node of the
// machine its entry in the tree, per simulated node its SystemC modules and queues, and in
// functional mode the non-root memories (per level twice the program's footprint, or all of
// them if less) and four copies of the footprint (the root memory's bytes, the result, the
// reference run's and the instruction check's, InstructionChecker). `simulated_nodes`: those the
// run builds (every node unless a timing run folds).
struct HostMemoryEstimate {
  uint64_t bytes = 0;
  int64_t nodes = 0, simulated_nodes = 0;
  uint64_t node_memory_bytes = 0;  // functional: the non-root nodes' memories
  uint64_t program_bytes = 0;      // functional: the footprint's four copies
};
HostMemoryEstimate host_memory_estimate(const MachineSpec& spec, const isa::Program& program,
                                        Mode mode, int64_t simulated_nodes);

// The paths of a machine's nodes in the report's order (the root, then level by level, each
// level's nodes in order): "root", "root.cluster0", "root.cluster0.core1", ...
std::vector<std::string> node_paths(const MachineSpec& spec);

// Leaf unit work by unit and dtype (isa::unit_work's entries summed).
using UnitWorkTable = std::array<std::array<uint64_t, isa::kDTypeCount>, isa::kUnitKinds>;

// What the instructions of one layer (the program's instructions of one name,
// isa::instruction_name) made the machine do: every counter summed over the nodes of each level
// (a folded node counted for every node it stands for), so that the layers' tallies add up to
// the level totals.
struct LayerTally {
  std::string name;
  std::vector<size_t> instructions;  // indices in the program, in order
  std::vector<NodeStats> levels;     // the root first, then each level
  UnitWorkTable work{};              // done by the leaves' units
};

// When a program instruction ran at the root: its first piece began decoding, its last piece
// had written back (instructions complete in program order).
struct InstructionSpan {
  uint64_t start_ps = 0, end_ps = 0;
};

struct RunResult {
  Mode mode = Mode::timing;
  bool folded = false;          // congruent children were simulated once (timing mode)
  bool pools_outgrown = false;  // folded: the first pools ran out, the run restarted with full ones
  uint64_t cycles = 0;          // at the root clock
  uint64_t picoseconds = 0;     // simulated time
  NodeReports nodes;            // the root first, then level by level
  std::vector<LayerTally> layers;      // in order of their first instruction
  std::vector<InstructionSpan> spans;  // per program instruction
  // Per level (the root first), the pieces its simulated nodes ran: every node's pieces unless
  // the run folds, where a class's are run once (the cost of the simulation, not the machine).
  std::vector<uint64_t> simulated_pieces;
  std::vector<uint8_t> memory;         // functional mode: the main memory's first `footprint` bytes
};

// Checks that the program fits the machine's main memory (ConfigError with needed and
// available bytes otherwise) and that the smallest legal piece of every instruction fits every
// level (ConfigError naming level, instruction, op and operand), simulates it, and returns
// cycles and per-node counters. A run that stops making progress throws InternalError naming
// node, stage and instruction.
RunResult simulate(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& program,
                   Mode mode, const SimOptions& options);
inline RunResult simulate(const MachineSpec& spec, const isa::OpTable& ops,
                          const isa::Program& program, Mode mode) {
  return simulate(spec, ops, program, mode, SimOptions{});
}

}  // namespace fracsim::sim
