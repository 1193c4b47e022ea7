// Element types of fracsim tensors.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace fracsim::isa {

enum class DType : uint8_t { f32 = 0, f16 = 1, bf16 = 2, i32 = 3, i16 = 4, i8 = 5 };

constexpr int kDTypeCount = 6;

uint32_t dtype_size(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view name);
bool is_integer(DType t);
// Accepts the raw byte of an encoded dtype; nullopt when out of range.
std::optional<DType> dtype_from_code(uint8_t code);

}  // namespace fracsim::isa
