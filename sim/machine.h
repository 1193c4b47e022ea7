// Builds the machine described by a MachineSpec as a tree of Nodes and runs a Program on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/program.h"
#include "sim/machine_spec.h"
#include "sim/node_reports.h"

namespace fracsim::sim {

enum class Mode { functional, timing };

class TraceRecorder;

struct Progress {
  uint64_t done = 0, total = 0;  // program instructions
  uint64_t picoseconds = 0;      // simulated time
};

struct SimOptions {
  // Timing mode: simulate one child per class of congruent children and account for all
  // (identical cycles and counters to an unfolded run). Ignored in functional mode.
  bool fold = true;
  // With folding, the simulated nodes per level at first, times the level's depth (1 for the
  // level under the root): they play whichever nodes of the level the classes need at a time.
  // A run that needs more at once is run again, once, with every pool as large as its level
  // (same results; the retry costs one more run).
  int fold_pool = 2;
  TraceRecorder* trace = nullptr;                 // records the stages of simulated nodes
  std::function<void(const Progress&)> progress;  // after each program instruction
};

// The paths of a machine's nodes in the report's order (the root, then level by level, each
// level's nodes in order): "root", "root.cluster0", "root.cluster0.core1", ...
std::vector<std::string> node_paths(const MachineSpec& spec);

struct RunResult {
  Mode mode = Mode::timing;
  bool folded = false;          // congruent children were simulated once (timing mode)
  bool pools_outgrown = false;  // folded: the first pools ran out, the run restarted with full ones
  uint64_t cycles = 0;          // at the root clock
  uint64_t picoseconds = 0;     // simulated time
  NodeReports nodes;            // the root first, then level by level
  std::vector<uint8_t> memory;  // functional mode: the main memory's first `footprint` bytes
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
