#include "isa/op_def.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/extension.h"
#include "isa/yaml_map.h"

namespace fracsim::isa {

int OpDef::dim_index(const std::string& d) const {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == d) return static_cast<int>(i);
  return -1;
}

bool OpDef::is_taps(size_t d) const {
  if (dims[d].kind != DimKind::reduce) return false;
  return std::any_of(dims.begin(), dims.end(), [&](const DimDef& w) {
    return w.kind == DimKind::window && w.window.kernel.name == dims[d].name;
  });
}

bool OpDef::epilogue_only(size_t o) const {
  const OperandDef& od = operands[o];
  if (od.role != OperandRole::in || od.read_if.empty()) return false;
  return std::any_of(dims.begin(), dims.end(), [&](const DimDef& d) {
    return d.kind == DimKind::reduce && d.final_attr == od.read_if;
  });
}

bool OpDef::splits_for(size_t d, bool integer, const std::vector<int64_t>& attrs) const {
  const DimDef& dd = dims[d];
  if (!integer || dd.integer_attr.empty()) return true;
  const std::string& v = enum_value(dd.integer_attr, attrs);
  return std::find(dd.integer_values.begin(), dd.integer_values.end(), v) !=
         dd.integer_values.end();
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

int64_t real_to_attr(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

double attr_to_real(int64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string attr_value_error(const AttrDef& a, int64_t v) {
  if (a.type == AttrType::integer)
    return fmt::format("attribute {} is {}, outside [{}, {}]", a.name, v, a.min, a.max);
  return fmt::format("attribute {} has an invalid value {}", a.name, v);
}

bool AttrDef::accepts(int64_t v) const {
  switch (type) {
    case AttrType::integer:
      return v >= min && v <= max;
    case AttrType::real:
      return !std::isnan(attr_to_real(v));
    case AttrType::boolean:
      return v == 0 || v == 1;
    case AttrType::enumeration:
      return v >= 0 && v < static_cast<int64_t>(values.size());
  }
  return false;
}

std::string OpDef::attr_value_str(int attr, int64_t value) const {
  const AttrDef& a = attributes.at(attr);
  if (a.type == AttrType::enumeration && value >= 0 &&
      value < static_cast<int64_t>(a.values.size()))
    return a.values[value];
  if (a.type == AttrType::real) return fmt::format("{}", attr_to_real(value));
  return fmt::format("{}", value);
}

const std::string& OpDef::enum_value(const std::string& attr,
                                     const std::vector<int64_t>& attrs) const {
  const int a = attr_index(attr);
  FRACSIM_ASSERT(a >= 0 && attributes[a].type == AttrType::enumeration, "op {}: no enum {}", name,
                 attr);
  return attributes[a].values.at(attrs.at(a));
}

bool OpDef::row_allows(size_t row, const std::vector<int64_t>& attrs) const {
  const DTypeRowLimit& lim = dtype_limits.at(row);
  if (lim.attr.empty()) return true;
  const std::string& v = enum_value(lim.attr, attrs);
  return std::find(lim.values.begin(), lim.values.end(), v) != lim.values.end();
}

std::string OpDef::combine_fn(const DimDef& d, const std::vector<int64_t>& attrs) const {
  if (d.combine_attr.empty()) return d.combine;
  return d.combine_by_value.at(enum_value(d.combine_attr, attrs));
}

namespace {

DimDef parse_dim(const std::string& name, const YAML::Node& n, const YamlMap& parent) {
  DimDef d;
  d.name = name;
  if (n.IsScalar()) {
    const std::string& kind = n.Scalar();
    if (kind == "parallel")
      d.kind = DimKind::parallel;
    else if (kind == "whole")
      d.kind = DimKind::whole;
    else
      throw parent.error_at(n, name,
                            fmt::format("unknown decomposition kind '{}' (expected "
                                        "parallel, whole or {{reduce: fn}})",
                                        kind));
    return d;
  }
  YamlMap m(n, parent.file(), parent.key_path(name));
  if (m.has("parallel")) {
    YamlMap pm = m.require_map("parallel");
    d.offset_attr = pm.require_string("offset");
    d.offset_scale = pm.get_string("offset_scale", "");
    pm.finish();
    m.finish();
    return d;
  }
  if (m.has("window")) {
    d.kind = DimKind::window;
    auto term = [&](const std::string& key, bool required) {
      WindowTerm t;
      auto v = m.get(key);
      if (!v) {
        if (required) throw m.error(key, "missing required key");
        t.value = 1;
        return t;
      }
      const std::string text = scalar_string(*v, m.file(), m.key_path(key));
      if (!text.empty() && std::isdigit(static_cast<unsigned char>(text[0])))
        t.value = scalar_int(*v, m.file(), m.key_path(key));
      else
        t.name = text;
      return t;
    };
    d.window.of = m.require_string("window");
    d.window.kernel = term("kernel", true);
    d.window.stride = term("stride", false);
    d.window.dilation = term("dilation", false);
    d.window.pad_begin = m.require_string("pad_begin");
    d.window.pad_end = m.require_string("pad_end");
    d.offset_attr = m.get_string("offset", "");
    d.offset_scale = m.get_string("offset_scale", "");
    if (!d.offset_scale.empty() && d.offset_attr.empty())
      throw m.error("offset_scale", "an offset_scale needs an offset");
    d.after_attr = m.get_string("after", "");
    m.finish();
    return d;
  }
  d.kind = DimKind::reduce;
  YAML::Node r = m.require("reduce");
  if (r.IsMap()) {
    YamlMap rm(r, m.file(), m.key_path("reduce"));
    d.combine_attr = rm.require_string("by");
    for (const std::string& value : rm.keys())
      if (value != "by") d.combine_by_value[value] = rm.require_string(value);
    rm.finish();
  } else {
    d.combine = scalar_string(r, m.file(), m.key_path("reduce"));
  }
  d.accumulate_attr = m.get_string("accumulate", "");
  d.final_attr = m.get_string("final", "");
  if (!d.final_attr.empty() && d.accumulate_attr.empty())
    throw m.error("final", "a final attribute needs an accumulate attribute");
  d.offset_attr = m.get_string("offset", "");
  d.after_attr = m.get_string("after", "");
  d.extent_attr = m.get_string("extent", "");
  if (m.has("integer")) {
    YamlMap im = m.require_map("integer");
    const std::vector<std::string> keys = im.keys();
    if (keys.size() != 1)
      throw m.error("integer", "expected one enum attribute and its values: {fn: [max]}");
    d.integer_attr = keys[0];
    for (const auto& v : im.require(keys[0])) d.integer_values.push_back(v.Scalar());
    im.finish();
  }
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
    a.min = m.get_int("min", INT64_MIN);
    a.max = m.get_int("max", INT64_MAX);
    if (a.min > a.max)
      throw m.error("max", fmt::format("max {} is below min {}", a.max, a.min));
    a.default_value = m.get_int("default", std::max<int64_t>(0, a.min));
    if (!a.accepts(a.default_value))
      throw m.error("default",
                    fmt::format("default {} is outside [{}, {}]", a.default_value, a.min, a.max));
  } else if (type == "bool") {
    a.type = AttrType::boolean;
    a.default_value = m.get_bool("default", false) ? 1 : 0;
  } else if (type == "real") {
    a.type = AttrType::real;
    auto v = m.get("default");
    double def = 0;
    if (v) {
      std::string text = scalar_string(*v, m.file(), m.key_path("default"));
      char* end = nullptr;
      def = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0')
        throw m.error("default", fmt::format("expected a real number, got '{}'", text));
    }
    a.default_value = real_to_attr(def);
  } else if (type == "enum") {
    a.type = AttrType::enumeration;
    for (const auto& v : m.require("values")) a.values.push_back(v.Scalar());
    std::string def = m.get_string("default", a.values.empty() ? "" : a.values[0]);
    auto it = std::find(a.values.begin(), a.values.end(), def);
    if (it == a.values.end())
      throw m.error("default", fmt::format("'{}' is not one of the values", def));
    a.default_value = it - a.values.begin();
    if (auto fo = m.get("float_only"))
      for (const auto& v : *fo) {
        if (std::find(a.values.begin(), a.values.end(), v.Scalar()) == a.values.end())
          throw m.error_at(v, "float_only",
                           fmt::format("'{}' is not one of the values", v.Scalar()));
        a.float_only.push_back(v.Scalar());
      }
  } else {
    throw m.error("type", fmt::format("unknown attribute type '{}' (expected int, bool, enum, "
                                      "real)",
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
  // An extension op (FRISA) runs a sequence of primitives: its unit and cycles come from them.
  const bool extension = m.has("sequence");
  if (!extension) {
    const std::string unit = m.require_string("unit");
    op.unit = unit_named(unit);
    if (!op.unit)
      throw fail("unit", fmt::format("unknown unit '{}' (expected {})", unit, unit_names_text()));
  }
  op.summary = m.get_string("summary", "");
  op.reassociates = m.get_bool("reassociates", false);

  YamlMap dims = m.require_map("dims");
  for (const std::string& name : dims.keys())
    op.dims.push_back(parse_dim(name, dims.require(name), dims));
  dims.finish();

  for (const auto& on : m.require("operands")) {
    YamlMap om(on, file, "operands");
    OperandDef od;
    od.name = om.require_string("name");
    std::string role = om.require_string("role");
    if (role == "in")
      od.role = OperandRole::in;
    else if (role == "out")
      od.role = OperandRole::out;
    else
      throw om.error("role", fmt::format("op {}: expected in or out, got '{}'", op.name, role));
    for (const auto& d : om.require("dims")) {
      if (op.dim_index(d.Scalar()) < 0)
        throw om.error_at(d, "dims",
                          fmt::format("op {}: operand {} names dim '{}' that is not "
                                      "declared under dims",
                                      op.name, od.name, d.Scalar()));
      od.dims.push_back(d.Scalar());
    }
    od.read_if = om.get_string("read_if", "");
    om.finish();
    op.operands.push_back(od);
  }
  if (auto attrs = m.get("attributes"))
    for (const auto& an : *attrs)
      op.attributes.push_back(parse_attr(YamlMap(an, file, "attributes")));

  for (const auto& row_node : m.require("dtypes")) {
    // A row is a list of dtypes, or {row: [...], only: {enum attribute: [values]}}.
    // (YAML::Node assignment writes through to the node, so the row is picked, not assigned.)
    DTypeRowLimit limit;
    const YAML::Node row = row_node.IsMap() ? row_node["row"] : row_node;
    if (row_node.IsMap()) {
      YamlMap rm(row_node, file, m.key_path("dtypes"));
      rm.require("row");
      YamlMap only = rm.require_map("only");
      const std::vector<std::string> keys = only.keys();
      if (keys.size() != 1)
        throw rm.error("only", fmt::format("op {}: name one enum attribute", op.name));
      limit.attr = keys[0];
      const int a = op.attr_index(limit.attr);
      if (a < 0 || op.attributes[a].type != AttrType::enumeration)
        throw only.error(limit.attr,
                         fmt::format("op {}: '{}' is not an enum attribute", op.name, limit.attr));
      for (const auto& v : only.require(limit.attr)) {
        const auto& values = op.attributes[a].values;
        if (std::find(values.begin(), values.end(), v.Scalar()) == values.end())
          throw only.error_at(
              v, limit.attr,
              fmt::format("op {}: '{}' is not a value of {}", op.name, v.Scalar(), limit.attr));
        limit.values.push_back(v.Scalar());
      }
      only.finish();
      rm.finish();
    }
    std::vector<DType> r;
    for (const auto& t : row) {
      auto dt = parse_dtype(t.Scalar());
      if (!dt)
        throw m.error_at(t, "dtypes",
                         fmt::format("op {}: unknown dtype '{}'", op.name, t.Scalar()));
      r.push_back(*dt);
    }
    if (r.size() != op.operands.size())
      throw m.error_at(row, "dtypes",
                       fmt::format("op {}: a row needs one dtype per operand ({})", op.name,
                                   op.operands.size()));
    op.dtypes.push_back(r);
    op.dtype_limits.push_back(limit);
  }
  op.work = Expr::parse(m.require_string("work"), fmt::format("{}: op {}: work", file, op.name));
  if (!extension)
    op.cycles =
        Expr::parse(m.require_string("cycles"), fmt::format("{}: op {}: cycles", file, op.name));
  else
    parse_sequence(op, m, *this);
  m.finish();

  // Every dim is bound by some operand; every name used is declared.
  for (const DimDef& d : op.dims) {
    bool used = std::any_of(op.operands.begin(), op.operands.end(), [&](const OperandDef& o) {
      return std::find(o.dims.begin(), o.dims.end(), d.name) != o.dims.end();
    });
    if (!used && d.extent_attr.empty())
      throw fail("dims", fmt::format("dim {} is never bound by an operand", d.name));
    if (used && !d.extent_attr.empty())
      throw fail("dims",
                 fmt::format("dim {} has an extent attribute but an operand binds it", d.name));
    if (!d.accumulate_attr.empty()) {
      int a = op.attr_index(d.accumulate_attr);
      if (a < 0 || op.attributes[a].type != AttrType::boolean)
        throw fail("dims", fmt::format("dim {}: accumulate names '{}', which is not a bool "
                                       "attribute",
                                       d.name, d.accumulate_attr));
    }
    if (!d.final_attr.empty()) {
      int a = op.attr_index(d.final_attr);
      if (a < 0 || op.attributes[a].type != AttrType::boolean)
        throw fail("dims", fmt::format("dim {}: final names '{}', which is not a bool attribute",
                                       d.name, d.final_attr));
    }
  }
  auto is_int_attr = [&](const std::string& n) {
    int a = op.attr_index(n);
    return a >= 0 && op.attributes[a].type == AttrType::integer;
  };
  for (const DimDef& d : op.dims) {
    if (d.kind == DimKind::reduce && !d.combine_attr.empty()) {
      int a = op.attr_index(d.combine_attr);
      if (a < 0 || op.attributes[a].type != AttrType::enumeration)
        throw fail("dims", fmt::format("dim {}: reduce by '{}', which is not an enum attribute",
                                       d.name, d.combine_attr));
      for (const std::string& v : op.attributes[a].values)
        if (!d.combine_by_value.count(v))
          throw fail("dims",
                     fmt::format("dim {}: no combining fn for {} = {}", d.name, d.combine_attr, v));
    }
    if (!d.offset_attr.empty() && !is_int_attr(d.offset_attr))
      throw fail("dims",
                 fmt::format("dim {}: offset '{}' is not an int attribute", d.name, d.offset_attr));
    for (const std::string* a : {&d.after_attr, &d.extent_attr})
      if (!a->empty() && !is_int_attr(*a))
        throw fail("dims", fmt::format("dim {}: '{}' is not an int attribute", d.name, *a));
    if (!d.integer_attr.empty()) {
      const int a = op.attr_index(d.integer_attr);
      if (a < 0 || op.attributes[a].type != AttrType::enumeration)
        throw fail("dims", fmt::format("dim {}: integer names '{}', which is not an enum "
                                       "attribute",
                                       d.name, d.integer_attr));
      for (const std::string& v : d.integer_values)
        if (std::find(op.attributes[a].values.begin(), op.attributes[a].values.end(), v) ==
            op.attributes[a].values.end())
          throw fail("dims",
                     fmt::format("dim {}: '{}' is not a value of {}", d.name, v, d.integer_attr));
    }
    if (!d.offset_scale.empty() && !is_int_attr(d.offset_scale))
      throw fail("dims", fmt::format("dim {}: offset_scale '{}' is not an int attribute", d.name,
                                     d.offset_scale));
    if (d.kind == DimKind::reduce && d.combine == "self") {
      size_t ins = 0, outs = 0;
      for (const OperandDef& o : op.operands) (o.role == OperandRole::in ? ins : outs)++;
      if (ins != outs || d.accumulate_attr.empty())
        throw fail("dims", fmt::format("dim {}: 'reduce: self' needs an accumulate attribute and "
                                       "as many inputs as outputs",
                                       d.name));
    }
    if (d.kind != DimKind::window) continue;
    const WindowDef& w = d.window;
    int of = op.dim_index(w.of);
    if (of < 0 || op.dims[of].kind != DimKind::parallel)
      throw fail("dims",
                 fmt::format("dim {}: window of '{}', which is not a parallel dim", d.name, w.of));
    for (const WindowTerm* t : {&w.kernel, &w.stride, &w.dilation})
      if (!t->name.empty() && op.dim_index(t->name) < 0 && !is_int_attr(t->name))
        throw fail("dims", fmt::format("dim {}: window term '{}' is neither a dim nor an int "
                                       "attribute",
                                       d.name, t->name));
    for (const std::string& pad : {w.pad_begin, w.pad_end})
      if (!is_int_attr(pad))
        throw fail("dims",
                   fmt::format("dim {}: window pad '{}' is not an int attribute", d.name, pad));
  }
  for (const OperandDef& o : op.operands) {
    if (o.read_if.empty()) continue;
    int a = op.attr_index(o.read_if);
    if (a < 0 || op.attributes[a].type != AttrType::boolean)
      throw fail("operands", fmt::format("operand {}: read_if names '{}', which is not a bool "
                                         "attribute",
                                         o.name, o.read_if));
  }
  for (const std::string& n : op.work.names())
    if (op.dim_index(n) < 0 && op.attr_index(n) < 0)
      throw fail("work", fmt::format("formula names '{}', neither a dim nor an attribute", n));
  static const std::vector<std::string> kNoParameters;
  const std::vector<std::string>& params = op.unit ? unit_def(*op.unit).parameters : kNoParameters;
  const std::string unit_text = op.unit ? unit_name(*op.unit) : "sequence";
  for (const std::string& n : op.cycles.names())
    if (op.dim_index(n) < 0 && op.attr_index(n) < 0 &&
        std::find(params.begin(), params.end(), n) == params.end())
      throw fail("cycles", fmt::format("formula names '{}', neither a dim, an attribute nor a "
                                       "parameter of the {} unit",
                                       n, unit_text));
  for (const std::string& p : params)
    if (op.dim_index(p) >= 0 || op.attr_index(p) >= 0)
      throw fail("dims", fmt::format("'{}' is a parameter of the {} unit and cannot name a dim or "
                                     "attribute",
                                     p, unit_text));
  for (OperandDef& o : op.operands) {
    o.dim_ids.clear();
    for (const std::string& d : o.dims) o.dim_ids.push_back(op.dim_index(d));
    o.read_if_index = op.attr_index(o.read_if);
  }
  for (DimDef& d : op.dims) {
    d.var = var_id(d.name);
    d.accumulate_index = op.attr_index(d.accumulate_attr);
    d.final_index = op.attr_index(d.final_attr);
    d.offset_index = op.attr_index(d.offset_attr);
    d.offset_scale_index = op.attr_index(d.offset_scale);
    d.after_index = op.attr_index(d.after_attr);
    d.extent_attr_index = op.attr_index(d.extent_attr);
    WindowDef& w = d.window;
    for (WindowTerm* t : {&w.kernel, &w.stride, &w.dilation}) {
      t->dim = t->name.empty() ? -1 : op.dim_index(t->name);
      t->attr = t->name.empty() ? -1 : op.attr_index(t->name);
    }
    w.of_index = op.dim_index(w.of);
    w.pad_begin_index = op.attr_index(w.pad_begin);
    w.pad_end_index = op.attr_index(w.pad_end);
  }
  for (AttrDef& a : op.attributes) a.var = var_id(a.name);
  ops_.push_back(std::move(op));
}

void OpTable::validate() const {
  std::set<std::string> names;
  std::set<uint16_t> codes;
  for (const OpDef& op : ops_) {
    if (!names.insert(op.name).second)
      throw config_error_at(op.file, op.line, "op", fmt::format("op {} is defined twice", op.name));
    if (!codes.insert(op.opcode).second)
      throw config_error_at(
          op.file, op.line, "opcode",
          fmt::format("op {}: opcode {:#x} is already taken", op.name, op.opcode));
  }
  const OpDef* elt = find("eltwise");
  for (const OpDef& op : ops_)
    for (const DimDef& d : op.dims) {
      if (d.kind != DimKind::reduce) continue;
      const auto& fns =
          elt ? elt->attributes.at(elt->attr_index("fn")).values : std::vector<std::string>{};
      if (d.combine == "self") continue;
      if (d.combine == "merge") {
        if (!find("merge"))
          throw config_error_at(op.file, op.line, "dims",
                                fmt::format("op {}: dim {} reduces by merge, but there is no merge "
                                            "op",
                                            op.name, d.name));
        continue;
      }
      std::vector<std::string> used;
      if (d.combine_attr.empty()) used.push_back(d.combine);
      for (const auto& kv : d.combine_by_value) used.push_back(kv.second);
      for (const std::string& c : used)
        if (std::find(fns.begin(), fns.end(), c) == fns.end())
          throw config_error_at(op.file, op.line, "dims",
                                fmt::format("op {}: dim {} reduces with '{}', which the LFU "
                                            "(eltwise fn) does not provide",
                                            op.name, d.name, c));
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
