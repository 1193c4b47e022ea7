// `fracsim config check CONFIG [--set KEY=VALUE]...`: loads a machine config and prints its shape.
// `fracsim config schema` and `fracsim config doc`: the JSON Schema and the reference of the
// format, generated from its declarations (sim/config_schema.h).
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "sim/cli/atomic_file.h"
#include "sim/cli/command.h"
#include "sim/config_override.h"
#include "sim/config_schema.h"
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

int cmd_config_schema(const Command& self, const std::vector<std::string>& args) {
  std::string out;
  po::options_description opts;
  opts.add_options()("output,o", po::value(&out), "the file to write (default: standard output)");
  if (!parse_command_line(self, args, opts)) return 0;
  const std::string schema = sim::config_json_schema().dump(2) + "\n";
  if (out.empty())
    std::cout << schema;
  else
    write_file_atomically(out, schema);
  return 0;
}

int cmd_config_doc(const Command& self, const std::vector<std::string>& args) {
  std::string update;
  po::options_description opts;
  opts.add_options()("update", po::value(&update),
                     "FILE: regenerate the reference between its markers in FILE (sim/README.md)");
  if (!parse_command_line(self, args, opts)) return 0;
  if (update.empty()) {
    std::cout << sim::config_reference_markdown();
    return 0;
  }
  std::ifstream in(update, std::ios::binary);
  if (!in) throw ConfigError(fmt::format("{}: cannot open file", update));
  std::stringstream text;
  text << in.rdbuf();
  write_file_atomically(update, sim::with_config_reference(text.str(), update));
  return 0;
}

}  // namespace fracsim::cli
