// The loop every `fracsim verify` unit shares: directed then random vectors through the RTL and
// the reference, each bridge run timed and tallied, results and cycles compared, and on the
// first mismatch, optionally, the vector run again on a traced build to write its wave.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include <fmt/ostream.h>

namespace fracsim::rtl {

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

// Runs `source`'s directed vectors, then `count` random ones, through `check` (true: it
// passed) and stops at the first that fails.
template <typename Source, typename Check>
void run_vectors(Source& source, int64_t count, UnitVerifyReport& rep, Check&& check) {
  for (const auto& v : source.directed()) {
    ++rep.directed;
    if (!check(v)) return;
  }
  for (int64_t i = 0; i < count; ++i) {
    ++rep.random;
    if (!check(source.random(i))) return;
  }
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

}  // namespace fracsim::rtl
