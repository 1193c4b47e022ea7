#include "sim/cli/verify_command.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include "isa/error.h"
#include "rtl/matrix_verify.h"
#include "rtl/sort_verify.h"
#include "rtl/vector_verify.h"

namespace po = boost::program_options;

namespace fracsim::cli {
namespace {

double mcycles(uint64_t cycles, double seconds) {
  return seconds > 0 ? static_cast<double>(cycles) / seconds / 1e6 : 0.0;
}

int verify_matrix(const rtl::MatrixVerifyOptions& options, const std::string& size) {
  std::vector<std::string> sizes = rtl::built_matrix_sizes();
  if (!size.empty()) {
    if (std::find(sizes.begin(), sizes.end(), size) == sizes.end())
      throw ConfigError(
          fmt::format("fracsim verify: --size: no {} matrix unit in this build "
                      "(built: {})",
                      size, fmt::join(sizes, ", ")));
    sizes = {size};
  }
  std::cout << fmt::format("fracsim verify: matrix unit, seed {}, {} random vectors per size\n",
                           options.seed, options.vectors);
  for (const std::string& s : sizes) {
    const int rows = std::stoi(s.substr(0, s.find('x')));
    const int cols = std::stoi(s.substr(s.find('x') + 1));
    const rtl::MatrixVerifyReport r = rtl::verify_matrix_unit(
        [rows, cols] { return rtl::make_matrix_unit(rows, cols); }, options, std::cout);
    std::cout << fmt::format(
        "  {:>5}: {} vectors ({} directed, {} random, {} with back-pressure), {} mismatches; "
        "{} RTL cycles ({} stalled) at {:.2f} M cycles/s\n",
        s, r.directed + r.random, r.directed, r.random, r.stalled_vectors, r.passed ? 0 : 1,
        r.rtl_cycles, r.stall_cycles, mcycles(r.rtl_cycles, r.rtl_seconds));
    if (!r.passed) return 1;
  }
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

int verify_vector(const rtl::VectorVerifyOptions& options, int lanes_only) {
  std::vector<int> lanes = rtl::built_vector_lanes();
  if (lanes_only > 0) {
    if (std::find(lanes.begin(), lanes.end(), lanes_only) == lanes.end())
      throw ConfigError(
          fmt::format("fracsim verify: --lanes: no {}-lane vector unit in this "
                      "build (built: {})",
                      lanes_only, fmt::join(lanes, ", ")));
    lanes = {lanes_only};
  }
  std::cout << fmt::format(
      "fracsim verify: vector unit, seed {}, {} random vectors per lane count\n", options.seed,
      options.vectors);
  for (int l : lanes) {
    const rtl::VectorVerifyReport r = rtl::verify_vector_unit(
        [l] { return rtl::make_vector_unit(l); }, [l] { return rtl::make_traced_vector_unit(l); },
        options, std::cout);
    std::cout << fmt::format(
        "  {:>2} lanes: {} vectors ({} directed, {} random, {} with back-pressure), {} "
        "mismatches; {} RTL cycles ({} stalled) at {:.2f} M cycles/s\n",
        l, r.directed + r.random, r.directed, r.random, r.stalled_vectors, r.passed ? 0 : 1,
        r.rtl_cycles, r.stall_cycles, mcycles(r.rtl_cycles, r.rtl_seconds));
    if (!r.passed) return 1;
  }
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

int verify_sort(const rtl::SortVerifyOptions& options, int width_only) {
  std::vector<int> widths = rtl::built_sort_widths();
  if (width_only > 0) {
    if (std::find(widths.begin(), widths.end(), width_only) == widths.end())
      throw ConfigError(
          fmt::format("fracsim verify: --width: no width-{} sort unit in this build "
                      "(built: {})",
                      width_only, fmt::join(widths, ", ")));
    widths = {width_only};
  }
  std::cout << fmt::format(
      "fracsim verify: sort unit (merge), seed {}, {} random vectors per "
      "width\n",
      options.seed, options.vectors);
  for (int w : widths) {
    const rtl::SortVerifyReport r =
        rtl::verify_sort_unit([w] { return rtl::make_sort_unit(w); },
                              [w] { return rtl::make_traced_sort_unit(w); }, options, std::cout);
    std::cout << fmt::format(
        "  width {}: {} vectors ({} directed, {} random, {} with back-pressure), {} mismatches; "
        "{} RTL cycles ({} stalled) at {:.2f} M cycles/s\n",
        w, r.directed + r.random, r.directed, r.random, r.stalled_vectors, r.passed ? 0 : 1,
        r.rtl_cycles, r.stall_cycles, mcycles(r.rtl_cycles, r.rtl_seconds));
    if (!r.passed) return 1;
  }
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

}  // namespace

int cmd_verify(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string unit, size, wave;
  int64_t vectors = 1000;
  uint64_t seed = 1;
  int lanes = 0, width = 0;
  opts.add_options()("unit", po::value(&unit)->required(), "matrix, vector or sort")(
      "vectors", po::value(&vectors)->default_value(1000), "random vectors per unit")(
      "seed", po::value(&seed)->default_value(1), "seed of the random vectors")(
      "size", po::value(&size), "matrix: one array size RxC (default: every size built)")(
      "lanes", po::value(&lanes), "vector: one lane count (default: every lane count built)")(
      "width", po::value(&width), "sort: one width (default: every width built)")(
      "wave", po::value(&wave), "vector, sort: a VCD of the first failing vector");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(fmt::format("fracsim verify: {} (see 'fracsim help')", e.what()));
  }
  if (unit != "matrix" && unit != "vector" && unit != "sort")
    throw ConfigError(
        fmt::format("fracsim verify: --unit: expected matrix, vector or sort, got '{}'", unit));
  if (vectors < 0)
    throw ConfigError(fmt::format("fracsim verify: --vectors: expected >= 0, got {}", vectors));
  if (unit == "matrix") {
    if (!wave.empty())
      throw ConfigError("fracsim verify: --wave: the matrix unit has no traced build yet");
    rtl::MatrixVerifyOptions options;
    options.vectors = vectors;
    options.seed = seed;
    return verify_matrix(options, size);
  }
  if (unit == "sort") {
    rtl::SortVerifyOptions options;
    options.vectors = vectors;
    options.seed = seed;
    options.wave = wave;
    return verify_sort(options, width);
  }
  rtl::VectorVerifyOptions options;
  options.vectors = vectors;
  options.seed = seed;
  options.wave = wave;
  return verify_vector(options, lanes);
}

}  // namespace fracsim::cli
