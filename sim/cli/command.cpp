#include "sim/cli/command.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "isa/error.h"

namespace po = boost::program_options;

namespace fracsim::cli {
namespace {

int cmd_help(const Command& self, const std::vector<std::string>& args);

bool is_help_flag(const std::string& a) { return a == "-h" || a == "--help"; }

// The command list `fracsim help` prints.
std::string command_list() {
  size_t width = 0;
  for (const Command& c : commands()) width = std::max(width, c.name.size());
  std::string text =
      "usage: fracsim COMMAND [ARGS]\n"
      "\n"
      "commands:\n";
  for (const Command& c : commands())
    text += fmt::format("  {:<{}}  {}\n", c.name, width, c.summary);
  text += "\n'fracsim COMMAND --help' prints the command's arguments and options.\n";
  return text;
}

// The commands whose name starts with the word `group` ("isa": isa list, isa doc).
std::vector<const Command*> group_of(const std::string& group) {
  std::vector<const Command*> out;
  for (const Command& c : commands())
    if (c.name.size() > group.size() && c.name.substr(0, group.size()) == group &&
        c.name[group.size()] == ' ')
      out.push_back(&c);
  return out;
}

std::string usage_line(const Command& c) {
  return c.synopsis.empty() ? fmt::format("fracsim {}", c.name)
                            : fmt::format("fracsim {} {}", c.name, c.synopsis);
}

const Command* find_command(const std::string& name) {
  for (const Command& c : commands())
    if (c.name == name) return &c;
  return nullptr;
}

// `fracsim help` lists the commands; `fracsim help COMMAND` is `fracsim COMMAND --help`.
int cmd_help(const Command&, const std::vector<std::string>& args) {
  if (args.empty() || is_help_flag(args[0])) {
    std::cout << command_list();
    return 0;
  }
  std::string name = args[0];
  for (size_t i = 1; i < args.size(); ++i) name += " " + args[i];
  const Command* c = find_command(name);
  if (!c)
    throw ConfigError(fmt::format("fracsim help: unknown command '{}' (see 'fracsim help')", name));
  return c->main(*c, {"--help"});
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"run", "-m CONFIG -w PROGRAM [options]",
       "run a program (.fbin, .fasm) or workload (.yaml, .onnx) on a machine", cmd_run},
      {"map", "-m CONFIG -w PROGRAM --instruction K [--sample N] [--seed S] [options]",
       "the mapping oracle: simulate the top node's decomposition candidates for one "
       "instruction and rank the policy's choice",
       cmd_map},
      {"compile", "WORKLOAD -o X.fbin [options]",
       "compile a workload (.yaml, .onnx) to a binary program", cmd_compile},
      {"asm", "IN.fasm|- -o OUT.fbin", "assemble a text program", cmd_asm},
      {"disasm", "IN.fbin [-o OUT.fasm]", "disassemble a binary program", cmd_disasm},
      {"config check", "CONFIG [--set KEY=VALUE]...", "check a machine config and print its shape",
       cmd_config_check},
      {"config schema", "[-o FILE]",
       "the JSON Schema of machine configs, generated from the declaration of every key",
       cmd_config_schema},
      {"config doc", "[--update FILE]",
       "the reference of every config key in Markdown (sim/README.md holds it between markers)",
       cmd_config_doc},
      {"isa list", "", "one line per op of the instruction set", cmd_isa_list},
      {"isa doc", "[-o FILE]", "the op reference in Markdown (isa/ops/README.md is its output)",
       cmd_isa_doc},
      {"isa check", "FILE...",
       "check op definitions (the form of isa/ops/*.yaml) against the shipped ops", cmd_isa_check},
      {"sweep",
       "SPEC [-j N | --slurm [--partition P] [--no-wait]] [--out DIR] [--plots] | --gather DIR",
       "run a sweep of machines, overrides, workloads and batches; one CSV row per run", cmd_sweep},
      {"verify", "--unit matrix|vector|sort [options]",
       "run directed and random vectors through an RTL unit and the reference", cmd_verify},
      {"help", "[COMMAND]", "list the commands, or describe one", cmd_help},
  };
  return kCommands;
}

std::optional<po::variables_map> parse_command_line(const Command& self,
                                                    const std::vector<std::string>& args,
                                                    po::options_description options,
                                                    const po::positional_options_description& pos) {
  options.add_options()("help,h", "print this help");
  if (std::any_of(args.begin(), args.end(), is_help_flag)) {
    // Boost's own listing, at the project's line length.
    po::options_description shown("options", 100, 50);
    for (const auto& o : options.options()) shown.add(o);
    std::cout << fmt::format("usage: {}\n{}\n\n", usage_line(self), self.summary) << shown;
    return std::nullopt;
  }
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(
        fmt::format("fracsim {}: {} (see 'fracsim {} --help')", self.name, e.what(), self.name));
  }
  return vm;
}

void add_set_option(po::options_description& options, std::vector<std::string>& sets) {
  options.add_options()(
      "set", po::value(&sets)->composing(),
      "KEY=VALUE: override a key of the machine config (repeatable), KEY a path into its YAML "
      "(levels[1].fanout=8, levels.core.memory.capacity=256 KiB: a list entry by index or by "
      "name), VALUE with its unit, checked as the file's own values are");
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << command_list();
    return 2;
  }
  const std::string first = argv[1];
  if (is_help_flag(first)) return cmd_help(*find_command("help"), {});
  std::vector<std::string> rest(argv + 2, argv + argc);
  if (const Command* c = find_command(first)) return c->main(*c, rest);
  const std::vector<const Command*> group = group_of(first);
  if (group.empty())
    throw ConfigError(fmt::format("fracsim: unknown command '{}' (see 'fracsim help')", first));
  // A two-word command: "config check", "isa list".
  if (!rest.empty()) {
    if (const Command* c = find_command(first + " " + rest[0]))
      return c->main(*c, std::vector<std::string>(rest.begin() + 1, rest.end()));
  }
  std::string usage;
  for (const Command* c : group) usage += (usage.empty() ? "" : " | ") + usage_line(*c);
  if (!rest.empty() && is_help_flag(rest[0])) {
    std::cout << "usage: " << usage << "\n";
    return 0;
  }
  throw ConfigError(fmt::format("fracsim {}: usage: {}", first, usage));
}

}  // namespace fracsim::cli
