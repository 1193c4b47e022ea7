// `fracsim isa list`, `fracsim isa doc [-o FILE]` and `fracsim isa check FILE...`: the
// instruction set, from its op tables.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include <fmt/format.h>

#include "isa/error.h"

#include "isa/op_doc.h"
#include "sim/cli/command.h"
#include "sim/cli/program_io.h"

namespace po = boost::program_options;

namespace fracsim::cli {

int cmd_isa_list(const Command& self, const std::vector<std::string>& args) {
  if (!parse_command_line(self, args, po::options_description())) return 0;
  std::cout << isa::op_list(isa::OpTable::builtin());
  return 0;
}

int cmd_isa_doc(const Command& self, const std::vector<std::string>& args) {
  std::string out;
  po::options_description opts;
  opts.add_options()("output,o", po::value(&out), "the file to write (default: standard output)");
  if (!parse_command_line(self, args, opts)) return 0;
  const std::string doc = isa::op_reference_markdown(isa::OpTable::builtin());
  if (out.empty())
    std::cout << doc;
  else
    write_file_atomically(out, doc);
  return 0;
}

int cmd_isa_check(const Command& self, const std::vector<std::string>& args) {
  std::vector<std::string> files;
  po::options_description opts;
  opts.add_options()("files", po::value(&files)->required()->multitoken(),
                     "FILE...: op definitions in the form of isa/ops/*.yaml (positional)");
  po::positional_options_description pos;
  pos.add("files", -1);
  if (!parse_command_line(self, args, opts, pos)) return 0;
  // Each file is checked as the build would take it: added to the shipped ops, then the
  // cross-op rules (unique names and opcodes) over the whole table.
  isa::OpTable table = isa::OpTable::builtin();
  for (const std::string& f : files) {
    std::error_code ec;
    std::ifstream in(f, std::ios::binary);
    if (!in || std::filesystem::is_directory(f, ec))
      throw ConfigError(fmt::format("{}: cannot open file", f));
    table.add_yaml(std::string(std::istreambuf_iterator<char>(in), {}), f);
  }
  table.validate();
  for (size_t i = table.ops().size() - files.size(); i < table.ops().size(); ++i)
    std::cout << fmt::format("{}: op {} (opcode {:#x}) is valid\n", table.ops()[i].file,
                             table.ops()[i].name, table.ops()[i].opcode);
  return 0;
}

}  // namespace fracsim::cli
