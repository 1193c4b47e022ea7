#include "isa/op_def.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::isa {

int OpDef::dim_index(const std::string& d) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == d) return static_cast<int>(i);
  return -1;
}

int OpDef::attr_index(const std::string& a) const {
  for (size_t i = 0; i < attributes.size(); ++i)
    if (attributes[i].name == a) return static_cast<int>(i);
  return -1;
}

int OpDef::operand_index(const std::string& n) const {
  for (size_t i = 0; i < operands.size(); ++i)
    if (operands[i].name == n) return static_cast<int>(i);
  return -1;
}

const DimDef& OpDef::dim(const std::string& d) const {
  int i = dim_index(d);
  FRACSIM_ASSERT(i >= 0, "op {} has no dim {}", name, d);
  return dims[i];
}

std::string OpDef::attr_value_str(int attr, int64_t value) const {
  const AttrDef& a = attributes.at(attr);
  if (a.type == AttrType::enumeration && value >= 0 && value < static_cast<int64_t>(a.values.size()))
    return a.values[value];
  return fmt::format("{}", value);
}

const std::vector<std::string>& unit_parameters(const std::string& unit) {
  static const std::map<std::string, std::vector<std::string>> kParams = {
      {"matrix", {"rows", "cols"}}, {"vector", {"lanes"}}, {"sort", {"width"}}};
  static const std::vector<std::string> kNone;
  auto it = kParams.find(unit);
  return it == kParams.end() ? kNone : it->second;
}

namespace {

DimDef parse_dim(const std::string& name, const YAML::Node& n, const YamlMap& parent) {
  DimDef d;
  d.name = name;
  if (n.IsScalar()) {
    const std::string& kind = n.Scalar();
    if (kind == "parallel") d.kind = DimKind::parallel;
    else if (kind == "whole") d.kind = DimKind::whole;
    else
      throw parent.error_at(n, name, fmt::format("unknown decomposition kind '{}' (expected "
                                                 "parallel, whole or {{reduce: fn}})", kind));
    return d;
  }
  YamlMap m(n, parent.file(), parent.key_path(name));
  d.kind = DimKind::reduce;
  d.combine = m.require_string("reduce");
  d.accumulate_attr = m.get_string("accumulate", "");
  m.finish();
  return d;
}

AttrDef parse_attr(YamlMap m) {
  AttrDef a;
  a.name = m.require_string("name");
  std::string type = m.require_string("type");
  a.doc = m.get_string("doc", "");
  if (type == "int") {
    a.type = AttrType::integer;
    a.default_value = m.get_int("default", 0);
  } else if (type == "bool") {
    a.type = AttrType::boolean;
    a.default_value = m.get_bool("default", false) ? 1 : 0;
  } else if (type == "enum") {
    a.type = AttrType::enumeration;
    for (const auto& v : m.require("values")) a.values.push_back(v.Scalar());
    std::string def = m.get_string("default", a.values.empty() ? "" : a.values[0]);
    auto it = std::find(a.values.begin(), a.values.end(), def);
    if (it == a.values.end())
      throw m.error("default", fmt::format("'{}' is not one of the values", def));
    a.default_value = it - a.values.begin();
  } else {
    throw m.error("type", fmt::format("unknown attribute type '{}' (expected int, bool, enum)",
                                      type));
  }
  m.finish();
  return a;
}

}  // namespace

void OpTable::add_yaml(const std::string& text, const std::string& file) {
  YAML::Node doc = load_yaml_string(text, file);
  YamlMap m(doc, file, "");
  OpDef op;
  op.file = file;
  op.line = m.line();
  op.name = m.require_string("op");
  auto fail = [&](const std::string& key, const std::string& msg) {
    return m.error(key, fmt::format("op {}: {}", op.name, msg));
  };
  int64_t opcode = m.require_int("opcode");
  if (opcode <= 0 || opcode > 0xffff) throw fail("opcode", "must be in 1..0xffff");
  op.opcode = static_cast<uint16_t>(opcode);
  op.unit = m.require_string("unit");
  if (op.unit != "matrix" && op.unit != "vector" && op.unit != "sort")
    throw fail("unit", fmt::format("unknown unit '{}' (expected matrix, vector or sort)", op.unit));
  op.summary = m.get_string("summary", "");

  YamlMap dims = m.require_map("dims");
  for (const std::string& name : dims.keys()) op.dims.push_back(parse_dim(name, dims.require(name), dims));
  dims.finish();

  for (const auto& on : m.require("operands")) {
    YamlMap om(on, file, "operands");
    OperandDef od;
    od.name = om.require_string("name");
    std::string role = om.require_string("role");
    if (role == "in") od.role = OperandRole::in;
    else if (role == "out") od.role = OperandRole::out;
    else throw om.error("role", fmt::format("op {}: expected in or out, got '{}'", op.name, role));
    for (const auto& d : om.require("dims")) {
      if (op.dim_index(d.Scalar()) < 0)
        throw om.error_at(d, "dims", fmt::format("op {}: operand {} names dim '{}' that is not "
                                                 "declared under dims", op.name, od.name,
                                                 d.Scalar()));
      od.dims.push_back(d.Scalar());
    }
    od.read_if = om.get_string("read_if", "");
    om.finish();
    op.operands.push_back(od);
  }
  if (auto attrs = m.get("attributes"))
    for (const auto& an : *attrs) op.attributes.push_back(parse_attr(YamlMap(an, file, "attributes")));

  for (const auto& row : m.require("dtypes")) {
    std::vector<DType> r;
    for (const auto& t : row) {
      auto dt = parse_dtype(t.Scalar());
      if (!dt) throw m.error_at(t, "dtypes", fmt::format("op {}: unknown dtype '{}'", op.name, t.Scalar()));
      r.push_back(*dt);
    }
    if (r.size() != op.operands.size())
      throw m.error_at(row, "dtypes", fmt::format("op {}: a row needs one dtype per operand ({})",
                                                  op.name, op.operands.size()));
    op.dtypes.push_back(r);
  }
  op.work = Expr::parse(m.require_string("work"), fmt::format("{}: op {}: work", file, op.name));
  op.cycles =
      Expr::parse(m.require_string("cycles"), fmt::format("{}: op {}: cycles", file, op.name));
  m.finish();

  // Every dim is bound by some operand; every name used is declared.
  for (const DimDef& d : op.dims) {
    bool used = std::any_of(op.operands.begin(), op.operands.end(), [&](const OperandDef& o) {
      return std::find(o.dims.begin(), o.dims.end(), d.name) != o.dims.end();
    });
    if (!used) throw fail("dims", fmt::format("dim {} is never bound by an operand", d.name));
    if (!d.accumulate_attr.empty()) {
      int a = op.attr_index(d.accumulate_attr);
      if (a < 0 || op.attributes[a].type != AttrType::boolean)
        throw fail("dims", fmt::format("dim {}: accumulate names '{}', which is not a bool "
                                       "attribute", d.name, d.accumulate_attr));
    }
  }
  for (const OperandDef& o : op.operands) {
    if (o.read_if.empty()) continue;
    int a = op.attr_index(o.read_if);
    if (a < 0 || op.attributes[a].type != AttrType::boolean)
      throw fail("operands", fmt::format("operand {}: read_if names '{}', which is not a bool "
                                         "attribute", o.name, o.read_if));
  }
  for (const std::string& n : op.work.names())
    if (op.dim_index(n) < 0 && op.attr_index(n) < 0)
      throw fail("work", fmt::format("formula names '{}', neither a dim nor an attribute", n));
  const std::vector<std::string>& params = unit_parameters(op.unit);
  for (const std::string& n : op.cycles.names())
    if (op.dim_index(n) < 0 && op.attr_index(n) < 0 &&
        std::find(params.begin(), params.end(), n) == params.end())
      throw fail("cycles", fmt::format("formula names '{}', neither a dim, an attribute nor a "
                                       "parameter of the {} unit", n, op.unit));
  for (const std::string& p : params)
    if (op.dim_index(p) >= 0 || op.attr_index(p) >= 0)
      throw fail("dims", fmt::format("'{}' is a parameter of the {} unit and cannot name a dim or "
                                     "attribute", p, op.unit));
  ops_.push_back(std::move(op));
}

void OpTable::validate() const {
  std::set<std::string> names;
  std::set<uint16_t> codes;
  for (const OpDef& op : ops_) {
    if (!names.insert(op.name).second)
      throw config_error_at(op.file, op.line, "op", fmt::format("op {} is defined twice", op.name));
    if (!codes.insert(op.opcode).second)
      throw config_error_at(op.file, op.line, "opcode",
                            fmt::format("op {}: opcode {:#x} is already taken", op.name, op.opcode));
  }
  const OpDef* elt = find("eltwise");
  for (const OpDef& op : ops_)
    for (const DimDef& d : op.dims) {
      if (d.kind != DimKind::reduce) continue;
      const auto& fns = elt ? elt->attributes.at(elt->attr_index("fn")).values
                            : std::vector<std::string>{};
      if (std::find(fns.begin(), fns.end(), d.combine) == fns.end())
        throw config_error_at(op.file, op.line, "dims",
                              fmt::format("op {}: dim {} reduces with '{}', which the LFU (eltwise "
                                          "fn) does not provide", op.name, d.name, d.combine));
    }
}

const OpDef* OpTable::find(const std::string& name) const {
  for (const OpDef& op : ops_)
    if (op.name == name) return &op;
  return nullptr;
}

const OpDef* OpTable::find(uint16_t opcode) const {
  for (const OpDef& op : ops_)
    if (op.opcode == opcode) return &op;
  return nullptr;
}

const OpDef& OpTable::get(const std::string& name) const {
  const OpDef* op = find(name);
  FRACSIM_ASSERT(op != nullptr, "no op named {}", name);
  return *op;
}

const OpDef& OpTable::get(uint16_t opcode) const {
  const OpDef* op = find(opcode);
  FRACSIM_ASSERT(op != nullptr, "no op with opcode {:#x}", opcode);
  return *op;
}

}  // namespace fracsim::isa

#include "isa/builtin_ops.h"

namespace fracsim::isa {

const OpTable& OpTable::builtin() {
  static const OpTable table = [] {
    OpTable t;
    for (const EmbeddedOp& e : embedded_ops()) t.add_yaml(e.text, e.file);
    t.validate();
    return t;
  }();
  return table;
}

}  // namespace fracsim::isa
