#include "isa/dtype.h"

#include <array>
#include <cmath>
#include <string>

namespace fracsim::isa {
namespace {
struct DTypeInfo {
  std::string_view name;
  uint32_t size;
  bool integer;
  bool is_unsigned;
};
constexpr std::array<DTypeInfo, kDTypeCount> kInfo{{
    {"f32", 4, false, false},
    {"f16", 2, false, false},
    {"bf16", 2, false, false},
    {"i32", 4, true, false},
    {"i16", 2, true, false},
    {"i8", 1, true, false},
    {"u8", 1, true, true},
    {"u16", 2, true, true},
    {"u32", 4, true, true},
    {"u64", 8, true, true},
    {"i64", 8, true, false},
    {"f64", 8, false, false},
}};
}  // namespace

uint32_t dtype_size(DType t) { return kInfo[static_cast<size_t>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<size_t>(t)].name; }
bool is_integer(DType t) { return kInfo[static_cast<size_t>(t)].integer; }
bool is_unsigned(DType t) { return kInfo[static_cast<size_t>(t)].is_unsigned; }

std::optional<DType> parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_code(uint8_t code) {
  if (code >= kDTypeCount) return std::nullopt;
  return static_cast<DType>(code);
}

std::string_view dtype_names() {
  static const std::string names = [] {
    std::string s;
    for (const DTypeInfo& i : kInfo) s += std::string(s.empty() ? "" : ", ") + std::string(i.name);
    return s;
  }();
  return names;
}

uint16_t half_from_double(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  if (std::isnan(v)) return sign | 0x7e00;
  const double a = std::fabs(v);
  // 65520 = the largest f16 (65504) plus half an ulp: from there on the result rounds to inf.
  if (a >= 65520.0) return sign | 0x7c00;
  if (a < std::ldexp(1.0, -14)) {
    // Subnormal (or zero): a multiple of 2^-24; nearbyint rounds half to even. A result of 1024
    // is the smallest normal, whose encoding is the same number.
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(a, 24)));
  }
  int e = 0;
  const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  // 11 significant bits: q in [1024, 2048]; 2048 carries into the exponent.
  double q = std::nearbyint(std::ldexp(m, 11));
  int exp = e - 1;
  if (q == 2048.0) {
    q = 1024.0;
    ++exp;
  }
  if (exp > 15) return sign | 0x7c00;
  return sign | static_cast<uint16_t>(((exp + 15) << 10) | (static_cast<int>(q) - 1024));
}

double half_to_double(uint16_t bits) {
  const int exp = (bits >> 10) & 0x1f, mant = bits & 0x3ff;
  double v;
  if (exp == 0)
    v = std::ldexp(static_cast<double>(mant), -24);
  else if (exp == 31)
    v = mant == 0 ? HUGE_VAL : std::nan("");
  else
    v = std::ldexp(static_cast<double>(1024 + mant), exp - 25);
  return (bits & 0x8000) ? -v : v;
}

}  // namespace fracsim::isa
