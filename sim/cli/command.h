// The subcommands of `fracsim`: one table (commands()) that `fracsim help` lists and dispatch()
// reads, and the parsing every command shares, which prints the command's help for -h/--help.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/program_options.hpp>

namespace fracsim::cli {

struct Command;
// A command's entry point: `args` are the words after the command's name; returns the exit code.
using CommandMain = int (*)(const Command& self, const std::vector<std::string>& args);

struct Command {
  std::string_view name;      // one or two words: "run", "config check"
  std::string_view synopsis;  // the arguments after the name, positional ones included
  std::string_view summary;   // one line, for `fracsim help`
  CommandMain main;
};

// Every command, in the order `fracsim help` lists them.
const std::vector<Command>& commands();

// Parses `args` against `options` (-h/--help is added to them); positional arguments are
// declared in `options` too and mapped by `positional`. Returns nullopt after printing the
// command's help for -h/--help; a bad flag is a ConfigError naming the command.
std::optional<boost::program_options::variables_map> parse_command_line(
    const Command& self, const std::vector<std::string>& args,
    boost::program_options::options_description options,
    const boost::program_options::positional_options_description& positional = {});

// --set KEY=VALUE, repeatable: overrides of the machine config, declared once for every command
// that reads one (run, config check, sweep); `sets` collects them in order.
void add_set_option(boost::program_options::options_description& options,
                    std::vector<std::string>& sets);

// Runs `fracsim ARGS...`: the command named by argv[1] (and argv[2] for two-word commands).
int dispatch(int argc, char** argv);

// The command functions, each in the file named after it.
int cmd_run(const Command& self, const std::vector<std::string>& args);      // run_command.cpp
int cmd_map(const Command& self, const std::vector<std::string>& args);      // map_command.cpp
int cmd_compile(const Command& self, const std::vector<std::string>& args);  // program_commands
int cmd_asm(const Command& self, const std::vector<std::string>& args);      // program_commands
int cmd_disasm(const Command& self, const std::vector<std::string>& args);   // program_commands
int cmd_config_check(const Command& self, const std::vector<std::string>& args);   // config_command
int cmd_config_schema(const Command& self, const std::vector<std::string>& args);  // config_command
int cmd_config_doc(const Command& self, const std::vector<std::string>& args);     // config_command
int cmd_isa_list(const Command& self, const std::vector<std::string>& args);       // isa_command
int cmd_isa_doc(const Command& self, const std::vector<std::string>& args);        // isa_command
int cmd_isa_check(const Command& self, const std::vector<std::string>& args);      // isa_command
int cmd_verify(const Command& self, const std::vector<std::string>& args);         // verify_command
int cmd_sweep(const Command& self, const std::vector<std::string>& args);          // sweep_command

}  // namespace fracsim::cli
