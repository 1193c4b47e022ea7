// Printers for a run: stats.json, the summary table, and the check of a functional run's outputs
// against the reference semantics run on the whole tensors. They live outside the models.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "isa/program.h"
#include "sim/instruction_check.h"
#include "sim/machine.h"

namespace fracsim::sim {

struct OutputCheck {
  std::string name;
  std::string shape;  // "f32[64,10]"
  int64_t elements = 0;
  int64_t bit_exact = 0;   // elements identical to the reference, bit for bit
  int64_t within_tol = 0;  // elements within the float tolerance (includes bit-exact ones)
  double max_abs_diff = 0;
  bool match() const { return within_tol == elements; }
};

// Float tolerance for outputs that are not bit-exact: |sim - ref| <= kOutputRtol * max(1, |ref|).
// Only a reduce dim split across children (its sum reassociated by the LFU) makes f32 results
// differ from the reference at all; integer outputs must be bit-exact.
constexpr double kOutputRtol = 1e-5;

// Runs the program with the reference semantics and compares every output element.
std::vector<OutputCheck> check_outputs(const isa::Program& program, const isa::OpTable& ops,
                                       const std::vector<uint8_t>& simulated);

// What a functional run's checks found (empty for a timing run): its outputs against the whole
// program run by the reference, and each instruction against the reference op on its inputs as
// the machine gave them (InstructionChecker), where that was checked.
struct FunctionalCheck {
  std::vector<OutputCheck> outputs;
  std::optional<InstructionCheck> instructions;
  // The run computed what the program says: every instruction holds, or, where instructions
  // were not checked, every output matches.
  bool holds() const;
  bool outputs_match() const;  // every output within the tolerance of the whole program's
};

// stats.json, as the text written to the file (two-space indents, a final newline).
// `ops` must be the op table the program ran with (the energy of its ops is priced by dtype).
std::string stats_text(const MachineSpec& spec, const isa::Program& program, const RunResult& run,
                       const FunctionalCheck& check,
                       const isa::OpTable& ops = isa::OpTable::builtin());
// The same, parsed.
nlohmann::ordered_json stats_json(const MachineSpec& spec, const isa::Program& program,
                                  const RunResult& run, const FunctionalCheck& check,
                                  const isa::OpTable& ops = isa::OpTable::builtin());

// Per level (the root first), its nodes' counters summed (stats.json's level totals).
std::vector<NodeStats> level_totals(const MachineSpec& spec, const RunResult& run);

// Per leaf unit, its work at peak over the run's cycles (each dtype at its own peak).
std::array<double, isa::kUnitKinds> run_utilization(const MachineSpec& spec, const RunResult& run);

std::string summary_text(const MachineSpec& spec, const isa::Program& program, const RunResult& run,
                         const FunctionalCheck& check);

}  // namespace fracsim::sim
