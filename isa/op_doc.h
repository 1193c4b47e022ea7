// Generated forms of the op table: the one-line-per-op listing (`fracsim isa list`) and the
// Markdown op reference (`fracsim isa doc`, committed as isa/ops/README.md).
#pragma once

#include <string>

#include "isa/op_def.h"

namespace fracsim::isa {

std::string op_list(const OpTable& ops);
std::string op_reference_markdown(const OpTable& ops);

}  // namespace fracsim::isa
