#include "isa/extension.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/decompose/localize.h"
#include "isa/decompose/piece.h"
#include "isa/error.h"
#include "isa/yaml_map.h"

namespace fracsim::isa {
namespace {

// "x[M,1,N]" -> {x, [M, 1, N]}; nullopt-like empty tensor on a syntax error.
ViewDef parse_view(const std::string& text) {
  ViewDef v;
  const size_t open = text.find('['), close = text.rfind(']');
  if (open == std::string::npos || close != text.size() - 1 || close < open) return v;
  v.tensor = text.substr(0, open);
  std::string inner = text.substr(open + 1, close - open - 1);
  size_t begin = 0;
  while (begin <= inner.size()) {
    size_t comma = inner.find(',', begin);
    std::string axis = inner.substr(begin, comma == std::string::npos ? std::string::npos
                                                                       : comma - begin);
    axis.erase(std::remove_if(axis.begin(), axis.end(), ::isspace), axis.end());
    if (!axis.empty()) v.axes.push_back(axis);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
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
          throw fail_at(d, "temporaries", fmt::format("temporary {} names dim '{}' that is not "
                                                      "declared under dims", t.name, d.Scalar()));
        t.dims.push_back(d.Scalar());
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
  for (const DimDef& d : op.dims)
    if (d.kind == DimKind::window)
      throw m.error("dims", fmt::format("op {}: dim {}: extension ops have no window dims",
                                        op.name, d.name));

  int index = 0;
  for (const auto& sn : m.require("sequence")) {
    const std::string key = fmt::format("sequence[{}]", index++);
    if (!sn.IsMap() || sn.size() != 1)
      throw fail_at(sn, key, "a step is one primitive op name with its operands and attributes");
    const std::string prim_name = sn.begin()->first.Scalar();
    const OpDef* prim = table.find(prim_name);
    if (!prim || prim->is_extension())
      throw fail_at(sn, key, fmt::format("unknown primitive '{}'", prim_name));
    SequenceStep step;
    step.prim = std::make_shared<const OpDef>(*prim);
    step.line = yaml_line(sn);
    YamlMap args(sn.begin()->second, m.file(), key + "." + prim_name);
    for (const OperandDef& po : prim->operands) {
      const YAML::Node vn = args.require(po.name);
      ViewDef v = parse_view(scalar_string(vn, m.file(), args.key_path(po.name)));
      bool is_input = false;
      const std::vector<std::string>* dims = tensor_dims(op, v.tensor, &is_input);
      if (!dims)
        throw fail_at(vn, key, fmt::format("operand {}: '{}' is neither an operand nor a "
                                           "temporary written as name[axes]", po.name, vn.Scalar()));
      if (v.axes.size() != po.dims.size())
        throw fail_at(vn, key, fmt::format("operand {}: {} axes for {}'s {} dims", po.name,
                                           v.axes.size(), prim_name, po.dims.size()));
      if (po.role == OperandRole::out && is_input)
        throw fail_at(vn, key, fmt::format("operand {}: writes the input {}", po.name, v.tensor));
      for (size_t a = 0; a < v.axes.size(); ++a) {
        const std::string& ax = v.axes[a];
        if (ax == "1") continue;
        if (op.dim_index(ax) < 0)
          throw fail_at(vn, key, fmt::format("operand {}: unknown dim '{}'", po.name, ax));
        // A dim the extension splits freely must stay parallel in every primitive.
        const DimKind pk = prim->dim(po.dims[a]).kind;
        if (op.dim(ax).kind == DimKind::parallel && pk != DimKind::parallel)
          throw fail_at(vn, key, fmt::format("dim {} is declared parallel but {} does not treat "
                                             "it as parallel (its dim {})", ax, prim_name,
                                             po.dims[a]));
      }
      for (const std::string& d : *dims)
        if (std::find(v.axes.begin(), v.axes.end(), d) == v.axes.end())
          throw fail_at(vn, key, fmt::format("operand {}: the view of {} drops its dim {}",
                                             po.name, v.tensor, d));
      step.operands.push_back(v);
    }
    std::vector<std::string> known_names;
    for (const DimDef& d : op.dims) known_names.push_back(d.name);
    for (const AttrDef& a : op.attributes) known_names.push_back(a.name);
    for (const AttrDef& pa : prim->attributes) {
      StepAttr sa;
      auto given = args.get(pa.name);
      const std::string where = fmt::format("{}: op {}: {}", m.file(), op.name, key);
      if (!given) {
        sa.value = Expr::parse(std::to_string(pa.default_value), where);
        sa.real = attr_to_real(pa.default_value);
      } else {
        const std::string text = scalar_string(*given, m.file(), args.key_path(pa.name));
        if (pa.type == AttrType::enumeration) {
          auto it = std::find(pa.values.begin(), pa.values.end(), text);
          if (it == pa.values.end())
            throw fail_at(*given, key, fmt::format("attribute {}: '{}' is not one of {}", pa.name,
                                                   text, fmt::join(pa.values, ", ")));
          sa.value = Expr::parse(std::to_string(it - pa.values.begin()), where);
        } else if (pa.type == AttrType::real) {
          char* end = nullptr;
          sa.real = std::strtod(text.c_str(), &end);
          if (text.empty() || *end != '\0') {
            const int ea = op.attr_index(text);
            if (ea < 0 || op.attributes[ea].type != AttrType::real)
              throw fail_at(*given, key, fmt::format("attribute {}: '{}' is neither a number nor "
                                                     "a real attribute of {}", pa.name, text,
                                                     op.name));
            sa.name = text;
          }
        } else {
          sa.value = Expr::parse(text == "true" ? "1" : text == "false" ? "0" : text, where);
          for (const std::string& n : sa.value.names())
            if (std::find(known_names.begin(), known_names.end(), n) == known_names.end())
              throw fail_at(*given, key, fmt::format("attribute {}: '{}' is neither a dim nor an "
                                                     "attribute of {}", pa.name, n, op.name));
        }
      }
      step.attrs.push_back(sa);
    }
    args.finish();
    op.sequence.push_back(step);
  }
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
  std::map<std::string, int64_t> vars = bind_dims(op, instr, op.name);
  uint64_t at = 0;
  for (const TensorRef& t : instr.operands) {
    x.operands.push_back(t.packed_at(at));
    at = align_up(at + x.operands.back().stored_bytes(), kTileAlign);
  }
  for (const TemporaryDef& t : op.temporaries) {
    Shape s;
    for (const std::string& d : t.dims) s.push_back(vars.at(d));
    x.temporaries.push_back(make_tensor(at, t.dtype, s));
    at = align_up(at + x.temporaries.back().stored_bytes(), kTileAlign);
  }
  x.arena_bytes = at;
  auto base = [&](const std::string& name, const std::vector<std::string>** dims) {
    for (size_t o = 0; o < op.operands.size(); ++o)
      if (op.operands[o].name == name) {
        *dims = &op.operands[o].dims;
        return x.operands[o];
      }
    for (size_t t = 0; t < op.temporaries.size(); ++t)
      if (op.temporaries[t].name == name) {
        *dims = &op.temporaries[t].dims;
        return x.temporaries[t];
      }
    throw InternalError("unknown tensor " + name);
  };
  for (const SequenceStep& step : op.sequence) {
    Instruction in;
    in.opcode = step.prim->opcode;
    for (const ViewDef& v : step.operands) {
      const std::vector<std::string>* dims = nullptr;
      const TensorRef t = base(v.tensor, &dims);
      TensorRef view;
      view.address = t.address;
      view.dtype = t.dtype;
      for (const std::string& ax : v.axes) {
        auto it = std::find(dims->begin(), dims->end(), ax);
        if (ax == "1") {
          view.shape.push_back(1);
          view.strides.push_back(0);
        } else if (it == dims->end()) {  // broadcast along a dim the tensor lacks
          view.shape.push_back(vars.at(ax));
          view.strides.push_back(0);
        } else {
          view.shape.push_back(t.shape[it - dims->begin()]);
          view.strides.push_back(t.strides[it - dims->begin()]);
        }
      }
      in.operands.push_back(view);
    }
    for (size_t a = 0; a < step.attrs.size(); ++a) {
      const StepAttr& sa = step.attrs[a];
      if (step.prim->attributes[a].type == AttrType::real)
        in.attrs.push_back(real_to_attr(sa.name.empty() ? sa.real
                                                        : attr_to_real(vars.at(sa.name))));
      else
        in.attrs.push_back(sa.value.eval(vars));
    }
    x.steps.push_back(std::move(in));
  }
  return x;
}

void execute_extension(const OpDef& op, const Instruction& instr, MemoryView mem) {
  const Expansion x = expand_sequence(op, instr);
  std::vector<uint8_t> arena(x.arena_bytes, 0);
  MemoryView am{arena.data(), arena.size()};
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (operand_is_read(op, instr, o)) copy_tensor(instr.operands[o], mem, x.operands[o], am);
  for (size_t s = 0; s < op.sequence.size(); ++s)
    execute_reference(*op.sequence[s].prim, x.steps[s], am);
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::out)
      copy_tensor(x.operands[o], am, instr.operands[o], mem);
}

}  // namespace fracsim::isa
