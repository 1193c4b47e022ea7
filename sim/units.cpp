#include "sim/units.h"

#include <cctype>
#include <numeric>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::sim {

namespace {

struct Unit {
  const char* name;
  uint64_t scale;  // base units per one of this unit
};

struct KindInfo {
  const char* noun;     // "a size", used in "expected a size such as ..."
  const char* example;  // a valid quantity of this kind
  const char* base;     // plural name of the base unit, for "not a whole number of ..."
  std::vector<Unit> units;
};

constexpr uint64_t kKi = 1024;
constexpr uint64_t kK = 1000;

const KindInfo& kind_info(QuantityKind kind) {
  static const KindInfo kBytes{"a size",
                               "512 KiB",
                               "bytes",
                               {{"B", 1},
                                {"KB", kK},
                                {"MB", kK * kK},
                                {"GB", kK * kK * kK},
                                {"TB", kK * kK * kK * kK},
                                {"KiB", kKi},
                                {"MiB", kKi * kKi},
                                {"GiB", kKi * kKi * kKi},
                                {"TiB", kKi * kKi * kKi * kKi}}};
  static const KindInfo kBandwidth{"a bandwidth",
                                   "256 GB/s",
                                   "bytes per second",
                                   {{"B/s", 1},
                                    {"KB/s", kK},
                                    {"MB/s", kK * kK},
                                    {"GB/s", kK * kK * kK},
                                    {"TB/s", kK * kK * kK * kK},
                                    {"KiB/s", kKi},
                                    {"MiB/s", kKi * kKi},
                                    {"GiB/s", kKi * kKi * kKi},
                                    {"TiB/s", kKi * kKi * kKi * kKi}}};
  static const KindInfo kFrequency{
      "a frequency",
      "1 GHz",
      "Hz",
      {{"Hz", 1}, {"kHz", kK}, {"MHz", kK * kK}, {"GHz", kK * kK * kK}}};
  static const KindInfo kTime{
      "a time",
      "100 ns",
      "picoseconds",
      {{"ps", 1}, {"ns", kK}, {"us", kK * kK}, {"ms", kK * kK * kK}, {"s", kK * kK * kK * kK}}};
  static const KindInfo kEnergy{"an energy",
                                "0.2 pJ",
                                "femtojoules",
                                {{"fJ", 1}, {"pJ", kK}, {"nJ", kK * kK}, {"uJ", kK * kK * kK}}};
  static const KindInfo kPower{"a power",
                               "15 mW",
                               "nanowatts",
                               {{"nW", 1}, {"uW", kK}, {"mW", kK * kK}, {"W", kK * kK * kK}}};
  switch (kind) {
    case QuantityKind::bytes:
      return kBytes;
    case QuantityKind::bandwidth:
      return kBandwidth;
    case QuantityKind::frequency:
      return kFrequency;
    case QuantityKind::time:
      return kTime;
    case QuantityKind::energy:
      return kEnergy;
    case QuantityKind::power:
      return kPower;
  }
  throw InternalError("unknown QuantityKind");
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) {
    return "";
  }
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A decimal number split into an integer mantissa and a power of ten: "2.50" -> 250 / 100.
struct Decimal {
  uint64_t mantissa = 0;
  uint64_t divisor = 1;
};

// Reads "123" or "1.25" from the start of `s`; advances `pos`. nullopt when there are no digits
// or the number has more digits than a uint64 holds.
std::optional<Decimal> read_decimal(const std::string& s, size_t& pos) {
  Decimal d;
  bool digits = false;
  bool point = false;
  for (; pos < s.size(); ++pos) {
    char c = s[pos];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      break;
    }
    digits = true;
    if (__builtin_mul_overflow(d.mantissa, uint64_t{10}, &d.mantissa) ||
        __builtin_add_overflow(d.mantissa, static_cast<uint64_t>(c - '0'), &d.mantissa)) {
      return std::nullopt;
    }
    if (point && __builtin_mul_overflow(d.divisor, uint64_t{10}, &d.divisor)) {
      return std::nullopt;
    }
  }
  if (!digits) {
    return std::nullopt;
  }
  return d;
}

ConfigError quantity_error(const std::string& where, const std::string& message) {
  if (where.empty()) {
    return ConfigError(message);
  }
  return ConfigError(fmt::format("{}: {}", where, message));
}

}  // namespace

uint64_t parse_quantity_text(const std::string& text, QuantityKind kind, const std::string& where) {
  const KindInfo& info = kind_info(kind);
  const std::string s = trim(text);
  auto expected = [&] {
    return quantity_error(
        where, fmt::format("expected {} such as '{}', got '{}'", info.noun, info.example, s));
  };
  const bool negative = !s.empty() && s[0] == '-';
  size_t pos = negative ? 1 : 0;
  auto d = read_decimal(s, pos);
  if (!d) {
    throw expected();
  }
  const std::string unit = trim(s.substr(pos));
  const Unit* found = nullptr;
  for (const Unit& u : info.units) {
    if (unit == u.name) {
      found = &u;
    }
  }
  if (!found) {
    throw expected();
  }
  if (negative) {
    throw quantity_error(where, fmt::format("must not be negative, got '{}'", s));
  }

  // value = mantissa * scale / divisor, exactly. With mantissa/divisor in lowest terms, the
  // product is whole iff the remaining divisor divides the scale.
  uint64_t g = std::gcd(d->mantissa, d->divisor);
  uint64_t mantissa = d->mantissa / g;
  uint64_t divisor = d->divisor / g;
  if (found->scale % divisor != 0) {
    throw quantity_error(where, fmt::format("'{}' is not a whole number of {}", s, info.base));
  }
  uint64_t value = 0;
  if (__builtin_mul_overflow(mantissa, found->scale / divisor, &value)) {
    throw quantity_error(where, fmt::format("'{}' is too large", s));
  }
  return value;
}

uint64_t parse_quantity(const YAML::Node& node, QuantityKind kind, const std::string& file,
                        const std::string& key) {
  const int line = yaml_line(node);
  if (!node.IsScalar()) {
    const KindInfo& info = kind_info(kind);
    throw config_error_at(
        file, line, key,
        fmt::format("expected {} such as '{}', got a list or map", info.noun, info.example));
  }
  // The message without a place, then the place: the error names its key (ConfigError::key).
  try {
    return parse_quantity_text(node.Scalar(), kind, "");
  } catch (const ConfigError& e) {
    throw config_error_at(file, line, key, e.what());
  }
}

QuantityUnits quantity_units(QuantityKind kind) {
  const KindInfo& info = kind_info(kind);
  QuantityUnits q{info.noun, info.example, {}};
  for (const Unit& u : info.units) q.units.emplace_back(u.name);
  return q;
}

std::string format_quantity(uint64_t value, QuantityKind kind) {
  const KindInfo& info = kind_info(kind);
  // Zero divides by everything; print it in the base unit.
  const Unit* best = &info.units.front();
  if (value != 0) {
    for (const Unit& u : info.units) {
      if (value % u.scale == 0 && u.scale > best->scale) {
        best = &u;
      }
    }
  }
  return fmt::format("{} {}", value / best->scale, best->name);
}

}  // namespace fracsim::sim
