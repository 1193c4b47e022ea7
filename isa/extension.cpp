#include "isa/extension.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/decompose/localize.h"
#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::isa {
namespace {

// Splits on commas outside parentheses.
std::vector<std::string> split_top(const std::string& text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  for (std::string& o : out) {
    o.erase(0, o.find_first_not_of(" \t"));
    o.erase(o.find_last_not_of(" \t") + 1);
  }
  if (out.size() == 1 && out[0].empty()) out.clear();
  return out;
}

// "x[M,1,N | D = od + kd]" -> {x, [M, 1, N], {D: od + kd}}; an empty tensor on a syntax error.
ViewDef parse_view(const std::string& text, const std::string& where) {
  ViewDef v;
  const size_t open = text.find('['), close = text.rfind(']');
  if (open == std::string::npos || close != text.size() - 1 || close < open) return v;
  std::string inner = text.substr(open + 1, close - open - 1);
  std::string fixed;
  const size_t bar = inner.find('|');
  if (bar != std::string::npos) {
    fixed = inner.substr(bar + 1);
    inner = inner.substr(0, bar);
  }
  v.axes = split_top(inner);
  for (const std::string& f : split_top(fixed)) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos) return ViewDef{};
    std::string dim = f.substr(0, eq);
    dim.erase(std::remove_if(dim.begin(), dim.end(), ::isspace), dim.end());
    v.fixed.emplace_back(dim, Expr::parse(f.substr(eq + 1), where));
  }
  v.tensor = text.substr(0, open);
  return v;
}

// The dims of an extension operand or temporary, by name; nullptr when unknown.
const std::vector<std::string>* tensor_dims(const OpDef& op, const std::string& name,
                                            bool* is_input) {
  for (const OperandDef& o : op.operands)
    if (o.name == name) {
      if (is_input) *is_input = o.role == OperandRole::in;
      return &o.dims;
    }
  for (const TemporaryDef& t : op.temporaries)
    if (t.name == name) {
      if (is_input) *is_input = false;
      return &t.dims;
    }
  return nullptr;
}

// Names a formula inside a step may use: the op's dims and attributes, and loop variables.
void check_names(const OpDef& op, const Expr& e, const std::vector<std::string>& loop_vars,
                 const std::function<ConfigError(const std::string&)>& fail) {
  for (const std::string& n : e.names())
    if (op.dim_index(n) < 0 && op.attr_index(n) < 0 &&
        std::find(loop_vars.begin(), loop_vars.end(), n) == loop_vars.end())
      throw fail(
          fmt::format("'{}' is neither a dim, an attribute nor a loop variable of {}", n, op.name));
}

SequenceStep parse_step(const OpDef& op, YamlMap& m, const OpTable& table, const YAML::Node& sn,
                        const std::string& key, std::vector<std::string> loop_vars) {
  auto fail_at = [&](const YAML::Node& n, const std::string& msg) {
    return m.error_at(n, key, fmt::format("op {}: {}", op.name, msg));
  };
  const std::string where = fmt::format("{}: op {}: {}", m.file(), op.name, key);
  if (!sn.IsMap() || sn.size() != 1)
    throw fail_at(sn, "a step is one primitive op name with its operands and attributes");
  const std::string prim_name = sn.begin()->first.Scalar();
  SequenceStep step;
  step.line = yaml_line(sn);
  YamlMap args(sn.begin()->second, m.file(), key + "." + prim_name);
  if (auto when = args.get("when")) {
    step.when = Expr::parse(scalar_string(*when, m.file(), args.key_path("when")), where);
    check_names(op, step.when, loop_vars,
                [&](const std::string& msg) { return fail_at(*when, "when: " + msg); });
  }
  if (prim_name == "repeat") {
    YamlMap over = args.require_map("over");
    for (const std::string& var : over.keys()) {
      const std::string dim = over.require_string(var);
      if (op.dim_index(dim) < 0)
        throw fail_at(over.node(), fmt::format("repeat over '{}', which is not a dim", dim));
      step.loops.emplace_back(var, dim);
      step.loop_vars.emplace_back(var_id(var), var_id(dim));
      loop_vars.push_back(var);
    }
    over.finish();
    int i = 0;
    for (const auto& bn : args.require("steps"))
      step.body.push_back(
          parse_step(op, m, table, bn, fmt::format("{}.steps[{}]", key, i++), loop_vars));
    args.finish();
    return step;
  }
  const OpDef* prim = table.find(prim_name);
  if (!prim || prim->is_extension())
    throw fail_at(sn, fmt::format("unknown primitive '{}'", prim_name));
  step.prim = std::make_shared<const OpDef>(*prim);
  for (const OperandDef& po : prim->operands) {
    const YAML::Node vn = args.require(po.name);
    ViewDef v = parse_view(scalar_string(vn, m.file(), args.key_path(po.name)), where);
    bool is_input = false;
    const std::vector<std::string>* dims = tensor_dims(op, v.tensor, &is_input);
    if (!dims)
      throw fail_at(vn, fmt::format("operand {}: '{}' is neither an operand nor a temporary "
                                    "written as name[axes]",
                                    po.name, vn.Scalar()));
    if (v.axes.size() != po.dims.size())
      throw fail_at(vn, fmt::format("operand {}: {} axes for {}'s {} dims", po.name, v.axes.size(),
                                    prim_name, po.dims.size()));
    if (po.role == OperandRole::out && is_input)
      throw fail_at(vn, fmt::format("operand {}: writes the input {}", po.name, v.tensor));
    for (size_t a = 0; a < v.axes.size(); ++a) {
      const std::string& ax = v.axes[a];
      if (ax == "1") continue;
      if (op.dim_index(ax) < 0)
        throw fail_at(vn, fmt::format("operand {}: unknown dim '{}'", po.name, ax));
      // A dim the extension splits freely must stay parallel in every primitive.
      const DimKind pk = prim->dim(po.dims[a]).kind;
      if (op.dim(ax).kind == DimKind::parallel && pk != DimKind::parallel)
        throw fail_at(vn, fmt::format("dim {} is declared parallel but {} does not treat it as "
                                      "parallel (its dim {})",
                                      ax, prim_name, po.dims[a]));
    }
    for (const auto& [dim, index] : v.fixed) {
      if (std::find(dims->begin(), dims->end(), dim) == dims->end())
        throw fail_at(vn, fmt::format("operand {}: {} has no dim {} to hold at an index", po.name,
                                      v.tensor, dim));
      check_names(op, index, loop_vars, [&](const std::string& msg) {
        return fail_at(vn, fmt::format("operand {}: {}", po.name, msg));
      });
    }
    for (const std::string& d : *dims) {
      const bool held =
          std::any_of(v.fixed.begin(), v.fixed.end(), [&](const auto& f) { return f.first == d; });
      if (!held && std::find(v.axes.begin(), v.axes.end(), d) == v.axes.end())
        throw fail_at(
            vn, fmt::format("operand {}: the view of {} drops its dim {}", po.name, v.tensor, d));
    }
    v.tensor_index = op.operand_index(v.tensor);
    if (v.tensor_index < 0)
      for (size_t t = 0; t < op.temporaries.size(); ++t)
        if (op.temporaries[t].name == v.tensor)
          v.tensor_index = static_cast<int>(op.operands.size() + t);
    for (const std::string& ax : v.axes) {
      const auto it = std::find(dims->begin(), dims->end(), ax);
      v.axis_of.push_back(ax == "1"           ? ViewDef::kOne
                          : it == dims->end() ? ViewDef::kBroadcast
                                              : static_cast<int>(it - dims->begin()));
      v.axis_var.push_back(ax == "1" ? -1 : var_id(ax));
    }
    for (const auto& f : v.fixed)
      v.fixed_axis.push_back(
          static_cast<int>(std::find(dims->begin(), dims->end(), f.first) - dims->begin()));
    step.operands.push_back(v);
  }
  for (const AttrDef& pa : prim->attributes) {
    StepAttr sa;
    auto given = args.get(pa.name);
    if (!given) {
      sa.value = Expr::parse(std::to_string(pa.default_value), where);
      sa.real = attr_to_real(pa.default_value);
    } else {
      const std::string text = scalar_string(*given, m.file(), args.key_path(pa.name));
      if (pa.type == AttrType::enumeration) {
        auto it = std::find(pa.values.begin(), pa.values.end(), text);
        if (it == pa.values.end())
          throw fail_at(*given, fmt::format("attribute {}: '{}' is not one of {}", pa.name, text,
                                            fmt::join(pa.values, ", ")));
        sa.value = Expr::parse(std::to_string(it - pa.values.begin()), where);
      } else if (pa.type == AttrType::real) {
        char* end = nullptr;
        sa.real = std::strtod(text.c_str(), &end);
        if (text.empty() || *end != '\0') {
          const int ea = op.attr_index(text);
          if (ea < 0 || op.attributes[ea].type != AttrType::real)
            throw fail_at(*given, fmt::format("attribute {}: '{}' is neither a number nor a real "
                                              "attribute of {}",
                                              pa.name, text, op.name));
          sa.name = text;
          sa.var = var_id(text);
        }
      } else {
        sa.value = Expr::parse(text == "true" ? "1" : text == "false" ? "0" : text, where);
        check_names(op, sa.value, loop_vars, [&](const std::string& msg) {
          return fail_at(*given, fmt::format("attribute {}: {}", pa.name, msg));
        });
      }
    }
    step.attrs.push_back(sa);
  }
  args.finish();
  return step;
}

}  // namespace

void parse_sequence(OpDef& op, YamlMap& m, const OpTable& table) {
  auto fail_at = [&](const YAML::Node& n, const std::string& key, const std::string& msg) {
    return m.error_at(n, key, fmt::format("op {}: {}", op.name, msg));
  };
  std::set<std::string> names;
  for (const OperandDef& o : op.operands) names.insert(o.name);
  if (auto temps = m.get("temporaries"))
    for (const auto& tn : *temps) {
      YamlMap tm(tn, m.file(), "temporaries");
      TemporaryDef t;
      t.name = tm.require_string("name");
      for (const auto& d : tm.require("dims")) {
        if (op.dim_index(d.Scalar()) < 0)
          throw fail_at(d, "temporaries",
                        fmt::format("temporary {} names dim '{}' that is not "
                                    "declared under dims",
                                    t.name, d.Scalar()));
        t.dims.push_back(d.Scalar());
        t.dim_vars.push_back(var_id(d.Scalar()));
      }
      const std::string dt = tm.get_string("dtype", "f32");
      auto parsed = parse_dtype(dt);
      if (!parsed) throw fail_at(tn, "temporaries", fmt::format("unknown dtype '{}'", dt));
      t.dtype = *parsed;
      tm.finish();
      if (!names.insert(t.name).second)
        throw fail_at(tn, "temporaries", fmt::format("the name {} is already used", t.name));
      op.temporaries.push_back(t);
    }

  int index = 0;
  for (const auto& sn : m.require("sequence"))
    op.sequence.push_back(parse_step(op, m, table, sn, fmt::format("sequence[{}]", index++), {}));
}

uint64_t temporaries_bytes(const OpDef& op, const Instruction& instr) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  uint64_t bytes = 0;
  for (const TemporaryDef& t : op.temporaries) {
    int64_t n = 1;
    for (const std::string& d : t.dims) n *= ext[op.dim_index(d)];
    bytes = align_up(bytes + n * dtype_size(t.dtype), kTileAlign);
  }
  return bytes;
}

Expansion expand_sequence(const OpDef& op, const Instruction& instr) {
  Expansion x;
  Vars vars;
  bind_vars(op, instr, vars);
  uint64_t at = 0;
  for (const TensorRef& t : instr.operands) {
    x.operands.push_back(t.packed_at(at));
    at = align_up(at + x.operands.back().stored_bytes(), kTileAlign);
  }
  for (const TemporaryDef& t : op.temporaries) {
    Shape s;
    for (int d : t.dim_vars) s.push_back(vars.at(d));
    x.temporaries.push_back(make_tensor(at, t.dtype, s));
    at = align_up(at + x.temporaries.back().stored_bytes(), kTileAlign);
  }
  x.arena_bytes = at;
  auto base = [&](int index) -> const TensorRef& {
    const size_t i = static_cast<size_t>(index);
    return i < x.operands.size() ? x.operands[i] : x.temporaries.at(i - x.operands.size());
  };
  std::function<void(const std::vector<SequenceStep>&)> expand =
      [&](const std::vector<SequenceStep>& steps) {
        for (const SequenceStep& step : steps) {
          if (!step.when.text().empty() && step.when.eval(vars) == 0) continue;
          if (!step.prim) {
            std::function<void(size_t)> loop = [&](size_t l) {
              if (l == step.loop_vars.size()) return expand(step.body);
              const auto [var, dim] = step.loop_vars[l];
              for (int64_t i = 0; i < vars.at(dim); ++i) {
                vars.set(var, i);
                loop(l + 1);
              }
              vars.erase(var);
            };
            loop(0);
            continue;
          }
          Instruction in;
          in.opcode = step.prim->opcode;
          bool inside = true;
          for (const ViewDef& v : step.operands) {
            const TensorRef& t = base(v.tensor_index);
            TensorRef view;
            view.address = t.address;
            view.dtype = t.dtype;
            for (size_t f = 0; f < v.fixed.size(); ++f) {
              const size_t a = static_cast<size_t>(v.fixed_axis[f]);
              const int64_t i = v.fixed[f].second.eval(vars);
              inside = inside && i >= 0 && i < t.shape[a];
              view.address += static_cast<uint64_t>(i * t.strides[a]) * dtype_size(t.dtype);
            }
            for (size_t a = 0; a < v.axis_of.size(); ++a) {
              const int own = v.axis_of[a];
              if (own == ViewDef::kOne) {
                view.shape.push_back(1);
                view.strides.push_back(0);
              } else if (own == ViewDef::kBroadcast) {  // a dim the tensor lacks
                view.shape.push_back(vars.at(v.axis_var[a]));
                view.strides.push_back(0);
              } else {
                view.shape.push_back(t.shape[own]);
                view.strides.push_back(t.strides[own]);
              }
            }
            in.operands.push_back(view);
          }
          if (!inside) continue;  // an index in the padding: nothing to add
          for (size_t a = 0; a < step.attrs.size(); ++a) {
            const StepAttr& sa = step.attrs[a];
            if (step.prim->attributes[a].type == AttrType::real)
              in.attrs.push_back(
                  real_to_attr(sa.name.empty() ? sa.real : attr_to_real(vars.at(sa.var))));
            else
              in.attrs.push_back(sa.value.eval(vars));
          }
          x.steps.push_back(std::move(in));
          x.step_ops.push_back(step.prim);
        }
      };
  expand(op.sequence);
  return x;
}

void execute_extension(const OpDef& op, const Instruction& instr, MemoryView mem) {
  const Expansion x = expand_sequence(op, instr);
  std::vector<uint8_t> arena(x.arena_bytes, 0);
  MemoryView am{arena.data(), arena.size()};
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (operand_is_read(op, instr, o)) copy_tensor(instr.operands[o], mem, x.operands[o], am);
  for (size_t s = 0; s < x.steps.size(); ++s) execute_reference(*x.step_ops[s], x.steps[s], am);
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::out)
      copy_tensor(x.operands[o], am, instr.operands[o], mem);
}

namespace {

void add_unit_work(const OpDef& op, const Instruction& instr, std::vector<UnitWork>& out) {
  if (op.is_extension()) {
    const Expansion x = expand_sequence(op, instr);
    for (size_t s = 0; s < x.steps.size(); ++s) add_unit_work(*x.step_ops[s], x.steps[s], out);
    return;
  }
  FRACSIM_ASSERT(op.unit.has_value(), "op {} has no unit", op.name);
  const DType dtype = instr.operands.empty() ? DType::f32 : instr.operands[0].dtype;
  const int64_t ops = instruction_work(op, instr);
  for (UnitWork& w : out)
    if (w.unit == *op.unit && w.dtype == dtype) {
      w.ops += ops;
      return;
    }
  out.push_back({*op.unit, dtype, ops});
}

}  // namespace

std::vector<UnitWork> unit_work(const OpDef& op, const Instruction& instr) {
  std::vector<UnitWork> out;
  add_unit_work(op, instr, out);
  return out;
}

}  // namespace fracsim::isa
