// The mapping oracle (`fracsim map`): how far the decomposition policy's choice for one
// program instruction is from the best of its search space, by simulation.
//
// The decisions examined are those of the top node: a node of level 0, the first level below
// the root (the root's own plan is the instruction as one piece). That node's serial tiling (a
// tile length per dim, from isa::tile_values) and the parallel partition of its pieces across
// its children (parts per dim, from isa::partition_candidates) form the space; every other
// decision (the root's partition across level-0 nodes among them) stays the policy's. Each
// candidate is pinned (isa::PinnedDecision) and the instruction simulated alone (timing mode,
// folded), as is the policy's own choice (a plain run).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/program.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {

// One point of the top node's space.
struct MapCandidate {
  std::vector<int64_t> tile;   // tile length per dim (rebalanced: ceil(extent / pieces))
  std::vector<int64_t> parts;  // parts per dim of every piece's partition (empty at a leaf)
  bool operator==(const MapCandidate& o) const { return tile == o.tile && parts == o.parts; }
  bool operator<(const MapCandidate& o) const {
    return tile != o.tile ? tile < o.tile : parts < o.parts;
  }
};

// The default limit of OracleOptions::max_pieces (`fracsim map --max-pieces`).
inline constexpr uint64_t kOracleMaxPieces = 65536;

struct OracleOptions {
  // 0: every candidate of the space. Otherwise a sample: the choice's neighbourhood (every
  // partition of its tiling; each tiling that changes one dim's tile, with the partition the
  // policy gives its largest piece) and `sample` distinct candidates drawn with
  // std::mt19937_64 seeded by `seed`: a tiling uniformly from the product of the tile lengths
  // (redrawn while it breaks the reduce order, does not fit or has too many pieces), then a
  // partition uniformly from that tiling's candidates.
  uint64_t sample = 0;
  uint64_t seed = 1;
  // When > 0, only tilings of at most this many pieces: a candidate's simulation takes time
  // and memory in proportion to its pieces (about 2 KB each, and tile lengths of 1 make a
  // tiling of millions), so the whole space of a network's layer holds tilings no host could
  // simulate. 0: no limit. Candidates given (`candidates`) are simulated whatever their pieces.
  uint64_t max_pieces = kOracleMaxPieces;
  // When not empty, exactly these candidates instead of the space or a sample, each written as
  // the report prints one (`Co=256 Ho=7 Wo=56 | Co=8 Wo=4`): a tile length per splittable dim,
  // a dim not given left whole; after `|`, parts per parallel dim, a dim not given unsplit
  // (without `|`, the policy's partition of the tiling's largest piece). Throws ConfigError
  // naming the candidate when one is malformed, illegal (a reduce dim split out of the
  // reference order) or does not fit the top node's memory.
  std::vector<std::string> candidates;
  // When set, every simulation records its stages' timeline (TraceRecorder's trace-event JSON)
  // and hands it here with a name: `chosen` for the plain run of the policy's choice, else the
  // candidate's (candidate_name).
  std::function<void(const std::string& name, const std::string& json)> timeline;
  // When set, called after each candidate is looked at (simulated, or found not to fit):
  // candidates done, candidates in all.
  std::function<void(size_t done, size_t total)> progress;
};

// A candidate as a file name: its tile lengths and then its parts, as the report prints them
// (`Co=256 Ho=3 | Co=8 Wo=4` is `Co256-Ho3_Co8-Wo4`).
std::string candidate_name(const isa::OpDef& op, const MapCandidate& c);

struct OracleRow {
  MapCandidate candidate;
  uint64_t cycles = 0;
  double estimate = 0;  // the cost model's cycles for the candidate (isa::CostModel)
};

struct OracleResult {
  std::string program, machine, policy;
  size_t index = 0;              // the instruction, counted from 0
  std::string layer;             // its name (isa::instruction_name)
  isa::Instruction instruction;  // the program's
  isa::Instruction top;          // what the top node receives: the root's largest part
  std::string level_name;        // the top node's level
  int fanout = 1;                // its children
  uint64_t tilings = 0;          // the product of the tile lengths per dim
  uint64_t fitting_tilings = 0;  // full enumeration: those legal and fitting
  uint64_t space = 0;            // full enumeration: candidates (tilings x partitions)
  bool sampled = false;
  bool listed = false;  // OracleOptions::candidates
  uint64_t sample = 0, seed = 0, draws = 0;
  uint64_t neighbours = 0;  // sample: candidates of the choice's neighbourhood
  uint64_t max_pieces = 0;
  uint64_t unfit = 0;  // candidates whose plan does not fit the local memory (not simulated)
  std::vector<OracleRow> rows;        // simulated candidates, fastest first (ties: candidate order)
  MapCandidate chosen;                // the policy's choice (parts: those of its first piece)
  uint64_t chosen_cycles = 0;         // a plain run
  uint64_t chosen_pinned_cycles = 0;  // the choice pinned as a candidate
  double chosen_estimate = 0;         // the cost model's cycles for the choice
  bool chosen_in_space = false;
  size_t rank = 0;    // 1 + simulated candidates faster than the choice
  uint64_t best = 0;  // least cycles among the candidates and the choice
  double gap = 0;     // chosen_cycles / best - 1
};

// Throws ConfigError when `index` is past the program's instructions (naming the program and
// its count) or the instruction cannot run on the machine.
OracleResult map_instruction(const MachineSpec& spec, const isa::OpTable& ops,
                             const isa::Program& program, size_t index,
                             const OracleOptions& options);

// The report `fracsim map` prints: the instruction, the space, the `shown` fastest candidates,
// the policy's choice, its rank and the gap.
std::string oracle_text(const isa::OpTable& ops, const OracleResult& result, size_t shown);

}  // namespace fracsim::sim
