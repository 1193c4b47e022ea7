#include "sim/cli/isa_command.h"

#include <iostream>

#include "isa/error.h"
#include "isa/op_doc.h"
#include "sim/cli/program_io.h"

namespace fracsim::cli {

int cmd_isa(const std::vector<std::string>& args) {
  const isa::OpTable& ops = isa::OpTable::builtin();
  if (args.size() == 1 && args[0] == "list") {
    std::cout << isa::op_list(ops);
    return 0;
  }
  if (!args.empty() && args[0] == "doc") {
    const std::string doc = isa::op_reference_markdown(ops);
    if (args.size() == 1) {
      std::cout << doc;
      return 0;
    }
    if (args.size() == 3 && args[1] == "-o") {
      write_file_atomically(args[2], doc);
      return 0;
    }
  }
  throw ConfigError("fracsim isa: usage: fracsim isa list | fracsim isa doc [-o FILE]");
}

}  // namespace fracsim::cli
