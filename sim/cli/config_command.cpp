// `fracsim config check CONFIG [--set KEY=VALUE]...`: loads a machine config and prints its shape.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "sim/cli/command.h"
#include "sim/config_override.h"
#include "sim/machine_spec.h"
#include "sim/units.h"

namespace po = boost::program_options;

namespace fracsim::cli {

int cmd_config_check(const Command& self, const std::vector<std::string>& args) {
  std::string path;
  std::vector<std::string> sets;
  po::options_description opts;
  opts.add_options()("config", po::value(&path)->required(),
                     "CONFIG: the machine config (.yaml) (positional)");
  add_set_option(opts, sets);
  po::positional_options_description pos;
  pos.add("config", 1);
  if (!parse_command_line(self, args, opts, pos)) return 0;
  std::vector<sim::ConfigOverride> overrides;
  for (const std::string& s : sets) overrides.push_back(sim::parse_override(s));
  const sim::MachineSpec spec = sim::load_machine_spec(path, overrides);
  std::cout << fmt::format("{}: machine {}: {} levels below the root, {} leaves\n", path, spec.name,
                           spec.levels.size(), spec.leaves());
  std::cout << fmt::format(
      "  root   memory {} at {}\n",
      sim::format_quantity(spec.root.memory.capacity, sim::QuantityKind::bytes),
      sim::format_quantity(spec.root.memory.bandwidth, sim::QuantityKind::bandwidth));
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const sim::LevelSpec& ls = spec.levels[l];
    std::cout << fmt::format(
        "  {:<6} x{:<4} ({} nodes) memory {}, link {}{}\n", ls.name, ls.fanout, spec.nodes_at(l),
        sim::format_quantity(ls.memory.capacity, sim::QuantityKind::bytes),
        sim::format_quantity(ls.link.bandwidth, sim::QuantityKind::bandwidth),
        ls.is_leaf ? fmt::format(", matrix {}x{}, vector {} lanes", ls.matrix.rows, ls.matrix.cols,
                                 ls.vector.lanes)
                   : "");
  }
  return 0;
}

}  // namespace fracsim::cli
