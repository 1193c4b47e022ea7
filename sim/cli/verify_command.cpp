// `fracsim verify --unit matrix|vector|sort [--vectors N] [--seed S] [--size RxC] [--lanes L]
// [--width W] [--wave FILE] [--coverage [--coverage-out DIR]]`: directed and random vectors
// through an RTL unit and the reference. Exit code 0 when every vector matches, 1 on the first
// mismatch (printed).

#include <algorithm>
#include <filesystem>
#include <functional>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include "isa/error.h"
#include "rtl/matrix_verify.h"
#include "rtl/sort_verify.h"
#include "rtl/unit_coverage.h"
#include "rtl/vector_verify.h"
#include "sim/cli/command.h"

namespace po = boost::program_options;

namespace fracsim::cli {
namespace {

double mcycles(uint64_t cycles, double seconds) {
  return seconds > 0 ? static_cast<double>(cycles) / seconds / 1e6 : 0.0;
}

// One unit size to verify: its label in the report ("4x4", "8 lanes"), and a run of the
// checker on it that writes coverage to `coverage` when that is set.
struct UnitRun {
  std::string label;
  std::function<rtl::UnitVerifyReport(const std::string& coverage)> run;
};

std::string trimmed(std::string label) {
  label.erase(0, label.find_first_not_of(' '));
  return label;
}

void print_report(const std::string& label, const rtl::UnitVerifyReport& r) {
  std::cout << fmt::format(
      "  {}: {} vectors ({} directed, {} random, {} with back-pressure), {} mismatches; {} RTL "
      "cycles ({} stalled) at {:.2f} M cycles/s\n",
      label, r.directed + r.random, r.directed, r.random, r.stalled_vectors, r.passed ? 0 : 1,
      r.rtl_cycles, r.stall_cycles, mcycles(r.rtl_cycles, r.rtl_seconds));
}

int run_all(const std::vector<UnitRun>& runs) {
  for (const UnitRun& u : runs) {
    const rtl::UnitVerifyReport r = u.run("");
    print_report(u.label, r);
    if (!r.passed) return 1;
  }
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

// Runs the vectors through the coverage-instrumented build, writes `dir`/coverage.dat (`dir`
// exists) and prints the points covered per kind.
int run_covered(const std::string& unit, const UnitRun& u, const std::string& dir) {
  std::error_code ec;
  const std::string data = (std::filesystem::path(dir) / "coverage.dat").string();
  std::filesystem::remove(data, ec);
  const rtl::UnitVerifyReport r = u.run(data);
  print_report(u.label, r);
  if (!r.coverage_written)
    throw InternalError(
        fmt::format("verify: the coverage build of the {} unit wrote no coverage", unit));
  std::cout << fmt::format("coverage of the {} {} unit (verilator --coverage): {}\n",
                           trimmed(u.label), unit, data);
  uint64_t covered = 0, total = 0;
  for (const rtl::CoverageCount& c : rtl::summarize_coverage(data)) {
    std::cout << fmt::format("  {:<7} {:>6} of {:>6} points ({:.1f}%)\n", c.kind, c.covered,
                             c.total, c.total ? 100.0 * c.covered / c.total : 0.0);
    covered += c.covered;
    total += c.total;
  }
  std::cout << fmt::format("  {:<7} {:>6} of {:>6} points ({:.1f}%)\n", "all", covered, total,
                           total ? 100.0 * covered / total : 0.0);
  std::cout << fmt::format("  annotated source: verilator_coverage --annotate {}/annotated {}\n",
                           dir, data);
  if (!r.passed) return 1;
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

// The unit sizes to run: every built one, or the one asked for (`only`, "" for all).
template <typename T>
std::vector<T> pick(std::vector<T> built, const T& only, const std::string& flag,
                    const std::string& what) {
  if (only == T{}) return built;
  if (std::find(built.begin(), built.end(), only) == built.end())
    throw ConfigError(fmt::format("fracsim verify: {}: no {} in this build (built: {})", flag, what,
                                  fmt::join(built, ", ")));
  return {only};
}

}  // namespace

int cmd_verify(const Command& self, const std::vector<std::string>& args) {
  std::string unit, size, wave, coverage_out;
  int64_t vectors = 1000;
  uint64_t seed = 1;
  int lanes = 0, width = 0;
  bool coverage = false;
  po::options_description opts;
  auto add = opts.add_options();
  add("unit", po::value(&unit)->required(), "matrix, vector or sort");
  add("vectors", po::value(&vectors)->default_value(vectors), "random vectors per unit size");
  add("seed", po::value(&seed)->default_value(seed), "seed of the random vectors");
  add("size", po::value(&size), "matrix: one array size RxC (default: every size built)");
  add("lanes", po::value(&lanes), "vector: one lane count (default: every lane count built)");
  add("width", po::value(&width), "sort: one width (default: every width built)");
  add("wave", po::value(&wave), "write a VCD of the first failing vector");
  add("coverage", po::bool_switch(&coverage),
      "run the coverage-instrumented build and print the points covered per kind");
  add("coverage-out", po::value(&coverage_out),
      "directory of coverage.dat (default results/runs/verify-UNIT-coverage)");
  if (!parse_command_line(self, args, opts)) return 0;
  if (unit != "matrix" && unit != "vector" && unit != "sort")
    throw ConfigError(
        fmt::format("fracsim verify: --unit: expected matrix, vector or sort, got '{}'", unit));
  if (vectors < 0)
    throw ConfigError(fmt::format("fracsim verify: --vectors: expected >= 0, got {}", vectors));
  if (!coverage_out.empty() && !coverage)
    throw ConfigError("fracsim verify: --coverage-out needs --coverage");

  rtl::UnitVerifyOptions o;
  o.vectors = vectors;
  o.seed = seed;
  o.wave = wave;
  std::vector<UnitRun> runs;
  std::string covered;  // the label of the unit size with a coverage build, "" for none
  std::string header;
  if (unit == "matrix") {
    covered = rtl::covered_matrix_size();
    const std::vector<std::string> sizes =
        coverage && size.empty() && !covered.empty()
            ? std::vector<std::string>{covered}
            : pick(rtl::built_matrix_sizes(), size, "--size", size + " matrix unit");
    for (const std::string& s : sizes) {
      const int rows = std::stoi(s.substr(0, s.find('x')));
      const int cols = std::stoi(s.substr(s.find('x') + 1));
      runs.push_back({s, [=](const std::string& cov) mutable {
                        o.coverage = cov;
                        return rtl::verify_matrix_unit(
                            [&] {
                              return cov.empty() ? rtl::make_matrix_unit(rows, cols)
                                                 : rtl::make_covered_matrix_unit(rows, cols);
                            },
                            [rows, cols] { return rtl::make_traced_matrix_unit(rows, cols); }, o,
                            std::cout);
                      }});
    }
    header = fmt::format("fracsim verify: matrix unit, seed {}, {} random vectors per size\n", seed,
                         vectors);
  } else if (unit == "vector") {
    const int cov = rtl::covered_vector_lanes();
    covered = cov ? fmt::format("{:>2} lanes", cov) : "";
    const std::vector<int> all = coverage && lanes == 0 && cov
                                     ? std::vector<int>{cov}
                                     : pick(rtl::built_vector_lanes(), lanes, "--lanes",
                                            fmt::format("{}-lane vector unit", lanes));
    for (int l : all)
      runs.push_back({fmt::format("{:>2} lanes", l), [=](const std::string& c) mutable {
                        o.coverage = c;
                        return rtl::verify_vector_unit(
                            [&] {
                              return c.empty() ? rtl::make_vector_unit(l)
                                               : rtl::make_covered_vector_unit(l);
                            },
                            [l] { return rtl::make_traced_vector_unit(l); }, o, std::cout);
                      }});
    header = fmt::format("fracsim verify: vector unit, seed {}, {} random vectors per lane count\n",
                         seed, vectors);
  } else {
    const int cov = rtl::covered_sort_width();
    covered = cov ? fmt::format("width {}", cov) : "";
    const std::vector<int> all = coverage && width == 0 && cov
                                     ? std::vector<int>{cov}
                                     : pick(rtl::built_sort_widths(), width, "--width",
                                            fmt::format("width-{} sort unit", width));
    for (int w : all)
      runs.push_back({fmt::format("width {}", w), [=](const std::string& c) mutable {
                        o.coverage = c;
                        return rtl::verify_sort_unit(
                            [&] {
                              return c.empty() ? rtl::make_sort_unit(w)
                                               : rtl::make_covered_sort_unit(w);
                            },
                            [w] { return rtl::make_traced_sort_unit(w); }, o, std::cout);
                      }});
    header = fmt::format(
        "fracsim verify: sort unit (merge), seed {}, {} random vectors per width\n", seed, vectors);
  }
  if (!coverage) {
    std::cout << header;
    return run_all(runs);
  }
  if (covered.empty())
    throw ConfigError(
        "fracsim verify: --coverage: this build has no coverage-instrumented units (configure "
        "with -DFRACSIM_RTL_COVERAGE=ON)");
  if (runs.size() != 1 || runs[0].label != covered)
    throw ConfigError(
        fmt::format("fracsim verify: --coverage: the {} unit's coverage build is {}, not {}", unit,
                    trimmed(covered), trimmed(runs[0].label)));
  const std::string dir =
      coverage_out.empty() ? "results/runs/verify-" + unit + "-coverage" : coverage_out;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw ConfigError(
        fmt::format("fracsim verify: --coverage-out: cannot create directory '{}'", dir));
  std::cout << header;
  return run_covered(unit, runs[0], dir);
}

}  // namespace fracsim::cli
