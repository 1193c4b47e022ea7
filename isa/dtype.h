// Element types of fracsim tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fracsim::isa {

// The enumerator values are the .fbin encoding of a dtype: new dtypes are appended, the existing
// codes never change.
enum class DType : uint8_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  i32 = 3,
  i16 = 4,
  i8 = 5,
  u8 = 6,
  u16 = 7,
  u32 = 8,
  u64 = 9,
  i64 = 10,
  f64 = 11,
};

constexpr int kDTypeCount = 12;

uint32_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
bool is_integer(DType t);
bool is_unsigned(DType t);
// Accepts the raw byte of an encoded dtype; nullopt when out of range.
std::optional<DType> dtype_from_code(uint8_t code);
// "f32, f16, ..." in code order: the names an error message lists as expected.
std::string_view dtype_names();

// IEEE 754 binary16 (f16) conversions. To f16: round to nearest, ties to even, overflow to
// infinity, NaN kept (quiet). From f16: exact.
uint16_t half_from_double(double v);
double half_to_double(uint16_t bits);

}  // namespace fracsim::isa
