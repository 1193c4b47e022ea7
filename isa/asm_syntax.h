// The lexical pieces of the .fasm text format shared by the assembler and the disassembler:
// whole-token number parsing, tensor lists, and the quoting of names.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/tensor.h"

namespace fracsim::isa::asm_syntax {

inline constexpr std::string_view kHeader = "; fracsim assembly, format 1\n";
inline constexpr char kHexDigits[] = "0123456789abcdef";
inline constexpr std::string_view kUsageBytes = "bytes ADDRESS DTYPE COUNT [HEX]";
inline constexpr std::string_view kUsageRandom = "random ADDRESS DTYPE COUNT seed=S lo=L hi=H";

inline bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

inline int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Whole-token integer parse: no sign for unsigned types, no '+', no spaces, no overflow.
template <typename T>
std::optional<T> parse_number(std::string_view s, int base = 10) {
  T v{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

inline std::optional<uint64_t> parse_address(std::string_view s) {
  if (s.size() < 3 || s.substr(0, 2) != "0x") return std::nullopt;
  return parse_number<uint64_t>(s.substr(2), 16);
}

inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || std::isnan(v))
    return std::nullopt;
  return v;
}

inline Shape parse_list(std::string_view s, std::string_view what,
                        const std::function<ConfigError(const std::string&)>& bad) {
  Shape out;
  if (s.empty()) return out;
  size_t begin = 0;
  while (true) {
    size_t comma = s.find(',', begin);
    std::string_view item =
        s.substr(begin, comma == std::string_view::npos ? s.npos : comma - begin);
    auto v = parse_number<int64_t>(item);
    if (!v) throw bad(fmt::format("bad {} '{}'", what, item));
    out.push_back(*v);
    if (comma == std::string_view::npos) return out;
    begin = comma + 1;
  }
}

// A name is written bare when it is one token of printable ASCII the tokenizer reads back as is.
inline std::string name_str(const std::string& name) {
  bool bare = !name.empty();
  for (char c : name) bare = bare && c > ' ' && c < 0x7f && c != '"' && c != ';' && c != '\\';
  if (bare) return name;
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\')
      out += {'\\', c};
    else if (c >= ' ' && c < 0x7f)
      out += c;
    else
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(c));
  }
  return out + "\"";
}

}  // namespace fracsim::isa::asm_syntax
