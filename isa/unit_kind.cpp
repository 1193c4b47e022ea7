#include "isa/unit_kind.h"

namespace fracsim::isa {

const std::array<UnitKindDef, kUnitKinds>& unit_kinds() {
  static const std::array<UnitKindDef, kUnitKinds> kUnits{{
      {UnitKind::matrix,
       "matrix",
       {"rows", "cols"},
       Expr::parse("2 * rows * cols", "matrix peak"),
       "mac",
       2},
      {UnitKind::vector, "vector", {"lanes"}, Expr::parse("lanes", "vector peak"), "vector_op", 1},
      {UnitKind::sort, "sort", {"width"}, Expr::parse("width", "sort peak"), "sort_op", 1},
  }};
  return kUnits;
}

std::optional<UnitKind> unit_named(std::string_view name) {
  for (const UnitKindDef& u : unit_kinds())
    if (u.name == name) return u.kind;
  return std::nullopt;
}

std::string unit_names_text() {
  std::string s;
  for (size_t i = 0; i < kUnitKinds; ++i)
    s += (i == 0 ? "" : i + 1 == kUnitKinds ? " or " : ", ") + unit_kinds()[i].name;
  return s;
}

double unit_peak(UnitKind k, const std::map<std::string, int64_t>& params) {
  return static_cast<double>(unit_def(k).peak.eval(params));
}

}  // namespace fracsim::isa
