// Builds the machine described by a MachineSpec as a tree of Nodes and runs a Program on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"
#include "sim/machine_spec.h"
#include "sim/node_stats.h"

namespace fracsim::sim {

enum class Mode { functional, timing };

struct NodeReport {
  std::string path;  // "root", "root.cluster0.core1"
  int level = -1;    // -1 for the root
  NodeStats stats;
};

struct RunResult {
  Mode mode = Mode::timing;
  uint64_t cycles = 0;       // at the root clock
  uint64_t picoseconds = 0;  // simulated time
  std::vector<NodeReport> nodes;  // the root first, then level by level
  std::vector<uint8_t> memory;    // functional mode: the main memory's first `footprint` bytes
};

// Checks that the program fits the machine's main memory (ConfigError with needed and
// available bytes otherwise), simulates it, and returns cycles and per-node counters.
RunResult simulate(const MachineSpec& spec, const isa::OpTable& ops, const isa::Program& program,
                   Mode mode);

}  // namespace fracsim::sim
