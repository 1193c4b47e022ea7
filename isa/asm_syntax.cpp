#include "isa/asm_syntax.h"

#include "isa/assembly.h"
#include "isa/encoding.h"

namespace fracsim::isa {

using namespace asm_syntax;

TensorRef parse_tensor(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return ConfigError(fmt::format("bad tensor '{}': {}", text, why));
  };
  const size_t at = text.find('@');
  if (at == std::string_view::npos) throw bad("expected DTYPE@ADDRESS[EXTENTS:STRIDES]");
  TensorRef t;
  auto dt = parse_dtype(text.substr(0, at));
  if (!dt) throw bad(fmt::format("unknown dtype '{}'", text.substr(0, at)));
  t.dtype = *dt;
  const size_t open = text.find('[', at);
  if (open == std::string_view::npos || text.back() != ']')
    throw bad("expected [EXTENTS:STRIDES] after the address");
  std::string_view addr = text.substr(at + 1, open - at - 1);
  auto a = parse_address(addr);
  if (!a) throw bad(fmt::format("bad address '{}' (expected hex, as 0x40)", addr));
  t.address = *a;
  std::string_view body = text.substr(open + 1, text.size() - open - 2);
  const size_t colon = body.find(':');
  if (colon == std::string_view::npos || body.find(':', colon + 1) != std::string_view::npos)
    throw bad("expected one ':' between extents and strides");
  t.shape = parse_list(body.substr(0, colon), "extent", bad);
  t.strides = parse_list(body.substr(colon + 1), "stride", bad);
  if (t.shape.size() != t.strides.size())
    throw bad(fmt::format("{} extents but {} strides", t.shape.size(), t.strides.size()));
  if (t.rank() > kMaxRank)
    throw bad(fmt::format("rank {} exceeds the maximum of {}", t.rank(), kMaxRank));
  return t;
}

}  // namespace fracsim::isa
