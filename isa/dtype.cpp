#include "isa/dtype.h"

#include <array>

namespace fracsim::isa {
namespace {
struct DTypeInfo {
  std::string_view name;
  uint32_t size;
  bool integer;
};
constexpr std::array<DTypeInfo, kDTypeCount> kInfo{{
    {"f32", 4, false},
    {"f16", 2, false},
    {"bf16", 2, false},
    {"i32", 4, true},
    {"i16", 2, true},
    {"i8", 1, true},
}};
}  // namespace

uint32_t dtype_size(DType t) { return kInfo[static_cast<size_t>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<size_t>(t)].name; }
bool is_integer(DType t) { return kInfo[static_cast<size_t>(t)].integer; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_code(uint8_t code) {
  if (code >= kDTypeCount) return std::nullopt;
  return static_cast<DType>(code);
}

}  // namespace fracsim::isa
