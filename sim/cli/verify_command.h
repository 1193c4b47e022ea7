// `fracsim verify --unit matrix|vector|sort [--vectors N] [--seed S] [--size RxC] [--lanes L]
// [--width W] [--wave FILE]`.
#pragma once

#include <string>
#include <vector>

namespace fracsim::cli {

// Exit code 0 when every vector matches, 1 on the first mismatch (printed).
int cmd_verify(const std::vector<std::string>& args);

}  // namespace fracsim::cli
