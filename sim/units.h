// Quantities with units, as written in machine configs: "256 GB/s", "1 GHz", "512 KiB",
// "100 ns", "0.2 pJ", "15 mW". Each parser returns the value in a base unit and throws ConfigError
// naming file, line and key when the text is not a quantity of that kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace fracsim::sim {

enum class QuantityKind { bytes, bandwidth, frequency, time, energy, power };

// Base units: bytes, bytes per second, Hz, picoseconds, femtojoules, nanowatts (integers,
// exact). A nanowatt for a picosecond is 1e-6 fJ (sim/energy.cpp converts leakage with it).
// `key` is the key path used in messages.
uint64_t parse_quantity(const YAML::Node& node, QuantityKind kind, const std::string& file,
                        const std::string& key);
// The same for a bare string (no line information).
uint64_t parse_quantity_text(const std::string& text, QuantityKind kind, const std::string& where);

// What a kind is called and the units it takes, as messages, the config reference and the
// JSON Schema spell them.
struct QuantityUnits {
  std::string noun;                // "a size"
  std::string example;             // "512 KiB"
  std::vector<std::string> units;  // "B", "KB", ...
};
QuantityUnits quantity_units(QuantityKind kind);

// The canonical text of a value ("256 GB/s", "1 GHz", "512 KiB", "100 ns", "15 mW").
std::string format_quantity(uint64_t value, QuantityKind kind);

}  // namespace fracsim::sim
