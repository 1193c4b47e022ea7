#include "sim/cli/verify_command.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <boost/program_options.hpp>

#include "isa/error.h"
#include "rtl/matrix_verify.h"

namespace po = boost::program_options;

namespace fracsim::cli {

int cmd_verify(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string unit, size;
  rtl::MatrixVerifyOptions options;
  opts.add_options()("unit", po::value(&unit)->required(), "matrix")(
      "vectors", po::value(&options.vectors)->default_value(1000), "random vectors per unit")(
      "seed", po::value(&options.seed)->default_value(1), "seed of the random vectors")(
      "size", po::value(&size), "one array size RxC (default: every size built)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(fmt::format("fracsim verify: {} (see 'fracsim help')", e.what()));
  }
  if (unit != "matrix")
    throw ConfigError(fmt::format(
        "fracsim verify: --unit: expected matrix, got '{}' (the vector and sort units' RTL is "
        "not written yet)",
        unit));
  if (options.vectors < 0)
    throw ConfigError(
        fmt::format("fracsim verify: --vectors: expected >= 0, got {}", options.vectors));

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
    const int64_t run = r.directed + r.random;
    std::cout << fmt::format(
        "  {:>5}: {} vectors ({} directed, {} random, {} with back-pressure), {} mismatches; "
        "{} RTL cycles ({} stalled) at {:.2f} M cycles/s\n",
        s, run, r.directed, r.random, r.stalled_vectors, r.passed ? 0 : 1, r.rtl_cycles,
        r.stall_cycles,
        r.rtl_seconds > 0 ? static_cast<double>(r.rtl_cycles) / r.rtl_seconds / 1e6 : 0.0);
    if (!r.passed) return 1;
  }
  std::cout << "all results bit-exact; all cycles equal the model's formula plus stalls\n";
  return 0;
}

}  // namespace fracsim::cli
