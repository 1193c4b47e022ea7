// `fracsim isa list` and `fracsim isa doc [-o FILE]`: the instruction set, from its op tables.
#include <iostream>

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

}  // namespace fracsim::cli
