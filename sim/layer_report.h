// Where the cycles go: one record per layer of a run (the program's instructions of one name),
// with its roofline bound. Pure functions over a finished run; printers live in sim/report.cpp.
//
// The bound of a layer is the largest of
//  - compute:U, for each leaf unit U: the layer's work on U, each dtype at U's peak for that
//    dtype (isa/unit_kind.h; a matrix unit's array shape follows the input dtype), over all
//    leaves together;
//  - bw:L, for each level L below the root: the layer's compulsory bytes (each instruction's
//    operands read once and its outputs written once, in the root memory) over the aggregate
//    bandwidth into L. The nodes one level up serve L: their memories carry reads and writes
//    alike (their bandwidths summed), and the links to L's nodes have a read and a write channel
//    each (full duplex: the larger direction over the links' summed bandwidth). The bound is the
//    larger of the two terms;
// in root cycles. Attained = bound / cycles.
//
// Time attribution: instructions complete at the root in program order; an instruction is
// charged the root cycles from the previous instruction's completion (the run's start for the
// first) to its own, so time during which several overlap goes to the one that completes first
// and the instructions' cycles add up to the run's. A layer's cycles are its instructions'.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/unit_kind.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"

namespace fracsim::sim {

// Peak ops per root cycle of all leaves' `unit`s together, for input dtype `dtype`.
double machine_peak(const MachineSpec& spec, isa::UnitKind unit, isa::DType dtype);

// Per unit, the root cycles the leaves need for `work` at their peaks.
std::array<double, isa::kUnitKinds> ideal_cycles(const MachineSpec& spec,
                                                 const UnitWorkTable& work);

// The run's leaf work by unit and dtype: its layers' summed.
UnitWorkTable run_work(const RunResult& run);

struct LayerRecord {
  std::string name;
  std::vector<std::string> ops;  // the distinct ops of its instructions, in program order
  size_t instructions = 0;
  uint64_t start_cycle = 0, end_cycle = 0;  // at the root: first decode, last write-back
  uint64_t cycles = 0;                      // attributed (see above)
  UnitWorkTable work{};
  std::array<uint64_t, isa::kUnitKinds> unit_ops{};     // work per unit, dtypes summed
  std::array<double, isa::kUnitKinds> compute_bound{};  // root cycles
  std::array<double, isa::kUnitKinds> utilization{};    // compute_bound / cycles
  uint64_t read_bytes = 0, written_bytes = 0;           // compulsory
  std::vector<double> bandwidth_bound;                  // per level below the root
  std::vector<NodeStats> levels;                        // the root first
  double bound = 0;
  std::string bounding;  // "compute:matrix", "bw:chip", ...
  double attained = 0;
};

std::vector<LayerRecord> layer_records(const MachineSpec& spec, const isa::Program& program,
                                       const isa::OpTable& ops, const RunResult& run);

// Root cycles charged to each program instruction (they add up to run.cycles).
std::vector<uint64_t> attributed_cycles(const MachineSpec& spec, const RunResult& run);

// layers.csv: a header, then one row per layer in program order (fields quoted as RFC 4180
// asks where they hold a comma, a quote or a line break).
std::string layers_csv(const MachineSpec& spec, const std::vector<LayerRecord>& records);

// `fracsim run --layers[=N]`: the `limit` layers with most cycles (all when 0), most first, and
// a line with the total cycles, the sum of the bounds and the overall attained fraction.
std::string layers_table(const std::vector<LayerRecord>& records, size_t limit);

}  // namespace fracsim::sim
