// `fracsim isa list` and `fracsim isa doc [-o FILE]`.
#pragma once

#include <string>
#include <vector>

namespace fracsim::cli {

int cmd_isa(const std::vector<std::string>& args);

}  // namespace fracsim::cli
