// The leaf compute units an op runs on, each declared once: its name (as op YAML's `unit:`,
// the stats counters and the energy table write it), the leaf parameters its cycle formulas may
// use, its peak in ops per cycle over those parameters, and how the energy table prices its
// work. Everything else (op parsing, leaf counters, peaks, utilisation, energy) reads this.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "isa/expr.h"

namespace fracsim::isa {

enum class UnitKind : uint8_t { matrix, vector, sort };
constexpr size_t kUnitKinds = 3;

struct UnitKindDef {
  UnitKind kind;
  std::string name;                     // "matrix"
  std::vector<std::string> parameters;  // leaf parameters cycle formulas may name
  // Ops per cycle of one unit, over its parameters (the matrix unit's for the array shape of
  // the instruction's input dtype). An op's work formula counts ops on this scale, so that no
  // instruction's work exceeds peak x its cycles.
  Expr peak;
  std::string energy_key;  // the energy table's per-dtype price of one action
  int ops_per_action;      // ops one priced action is (a multiply-accumulate is 2 ops)
};

// The units, in UnitKind order.
const std::array<UnitKindDef, kUnitKinds>& unit_kinds();
inline const UnitKindDef& unit_def(UnitKind k) { return unit_kinds()[static_cast<size_t>(k)]; }
inline const std::string& unit_name(UnitKind k) { return unit_def(k).name; }
std::optional<UnitKind> unit_named(std::string_view name);
// "matrix, vector or sort", for messages.
std::string unit_names_text();

// Peak ops per cycle of one unit with these parameter values.
double unit_peak(UnitKind k, const std::map<std::string, int64_t>& params);

}  // namespace fracsim::isa
