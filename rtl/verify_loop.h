// The loop every `fracsim verify` unit shares: directed then random vectors through the RTL and
// the reference, each bridge run timed and tallied, results and cycles compared, and on the
// first mismatch, optionally, the vector run again on a traced build to write its wave.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/ostream.h>

#include "isa/op_def.h"
#include "isa/reference.h"
#include "rtl/unit_port.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {

// What `fracsim verify` runs on a unit (matrix, vector or sort).
struct UnitVerifyOptions {
  int64_t vectors = 1000;  // random vectors, after the directed set
  uint64_t seed = 1;
  std::string wave;      // when set, a VCD of the first failing vector is written here
  std::string coverage;  // when set, the unit's coverage counts are written here at the end
};

struct UnitVerifyReport {
  bool passed = true;
  int64_t directed = 0;           // directed vectors run
  int64_t random = 0;             // random vectors run
  int64_t stalled_vectors = 0;    // vectors run with back-pressure on the result stream
  uint64_t rtl_cycles = 0;        // clock cycles simulated
  uint64_t stall_cycles = 0;      // of which the result stream was held back
  double rtl_seconds = 0;         // host time spent in the RTL
  bool wave_written = false;      // the failing vector's wave was written
  bool coverage_written = false;  // the unit's coverage counts were written
};

// Runs `source`'s directed vectors, then options.vectors random ones, through `check` (true:
// it passed), stopping at the first that fails; then, with options.coverage, writes `unit`'s
// coverage counts there.
template <typename Source, typename Check>
void run_vectors(Source& source, const UnitVerifyOptions& options, UnitPort& unit,
                 UnitVerifyReport& rep, Check&& check) {
  [&] {
    for (const auto& v : source.directed()) {
      ++rep.directed;
      if (!check(v)) return;
    }
    for (int64_t i = 0; i < options.vectors; ++i) {
      ++rep.random;
      if (!check(source.random(i))) return;
    }
  }();
  if (!options.coverage.empty()) rep.coverage_written = unit.write_coverage(options.coverage);
}

// Runs `run` (a bridge run returning .cycles and .stall_cycles) and adds its host time and
// cycles to the report.
template <typename Run>
auto timed_run(UnitVerifyReport& rep, bool stalled, Run&& run) {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run();
  rep.rtl_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rep.rtl_cycles += r.cycles;
  rep.stall_cycles += r.stall_cycles;
  if (stalled) ++rep.stalled_vectors;
  return r;
}

// What differs between the reference and the RTL: "" when nothing does.
template <typename T>
std::string mismatch_kind(const std::vector<T>& expected, const std::vector<T>& seen,
                          uint64_t expected_cycles, uint64_t seen_cycles) {
  std::string what;
  if (expected != seen) what = "results";
  if (seen_cycles != expected_cycles) what += what.empty() ? "cycles" : " and cycles";
  return what;
}

// Runs the failing vector again on a unit from `make_traced` (which may be empty) tracing to
// `wave`; `rerun(bridge)` repeats the vector on a bridge around the traced unit.
template <typename Bridge, typename Factory, typename Rerun>
void write_wave(const Factory& make_traced, const std::string& wave, UnitVerifyReport& rep,
                std::ostream& out, Rerun&& rerun) {
  if (wave.empty()) return;
  auto traced = make_traced ? make_traced() : nullptr;
  if (traced && traced->trace_to(wave)) {
    Bridge bridge(std::move(traced));
    rerun(bridge);
    rep.wave_written = true;
    fmt::print(out, "  wave of this vector: {}\n", wave);
  } else {
    fmt::print(out, "  no wave: this unit has no traced build\n");
  }
}

// One vector through the reference and the RTL. `image` is its instruction over one flat
// memory (.instr, .bytes); the reference runs it on one copy, `bridge` on another with the
// result stream's `ready` pattern; `read_out(image)` reads the output. Results must be equal and
// the RTL's cycles the unit's formula (with `params`) plus the stalls. On a mismatch,
// `print(expected, seen, what)` describes the vector and its outputs, the back-pressure pattern
// and the cycles follow, and the vector runs again on a unit from `make_traced` to write
// `wave`. True when the vector passed.
template <typename Bridge, typename Image, typename ReadOut, typename Print, typename Factory>
bool check_vector(Bridge& bridge, const isa::OpDef& op, const Image& image,
                  const std::vector<uint8_t>& ready, const std::map<std::string, int64_t>& params,
                  ReadOut&& read_out, Print&& print, const Factory& make_traced,
                  const std::string& wave, UnitVerifyReport& rep, std::ostream& out) {
  Image ref = image, rtl = image;
  isa::execute_reference(op, ref.instr, isa::MemoryView{ref.bytes.data(), ref.bytes.size()});
  isa::MemoryView mem{rtl.bytes.data(), rtl.bytes.size()};
  const auto r = timed_run(rep, !ready.empty(),
                           [&] { return bridge.run_instruction(op, rtl.instr, &mem, ready); });
  const uint64_t expected_cycles = sim::unit_cycles(op, ref.instr, params) + r.stall_cycles;
  const auto expected = read_out(ref), seen = read_out(rtl);
  const std::string what = mismatch_kind(expected, seen, expected_cycles, r.cycles);
  if (what.empty()) return true;
  rep.passed = false;
  print(expected, seen, what);
  if (!ready.empty()) {
    std::string pattern;
    for (uint8_t x : ready) pattern += x ? '1' : '0';
    fmt::print(out, "  out_ready pattern (repeating from cycle 0): {}\n", pattern);
  }
  fmt::print(out, "  cycles: expected {} (formula) + {} stalled = {}, seen {}\n",
             expected_cycles - r.stall_cycles, r.stall_cycles, expected_cycles, r.cycles);
  write_wave<Bridge>(make_traced, wave, rep, out, [&](Bridge& traced) {
    Image again = image;
    isa::MemoryView m{again.bytes.data(), again.bytes.size()};
    traced.run_instruction(op, again.instr, &m, ready);
  });
  return false;
}

}  // namespace fracsim::rtl
