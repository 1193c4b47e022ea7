#include "isa/op_doc.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace fracsim::isa {
namespace {

std::string dim_rule(const OpDef& op, const DimDef& d) {
  switch (d.kind) {
    case DimKind::parallel:
      if (d.offset_attr.empty()) return "parallel";
      return d.offset_scale.empty() ? fmt::format("parallel (offset attribute `{}`)", d.offset_attr)
                                    : fmt::format("parallel (offset attribute `{}`, times `{}`)",
                                                  d.offset_attr, d.offset_scale);
    case DimKind::whole:
      return "whole (never split)";
    case DimKind::window: {
      auto term = [](const WindowTerm& t) {
        return t.name.empty() ? std::to_string(t.value) : t.name;
      };
      std::string offset;
      if (!d.offset_attr.empty())
        offset = d.offset_scale.empty() ? fmt::format("; offset attribute `{}`", d.offset_attr)
                                        : fmt::format("; offset attribute `{}`, times `{}`",
                                                      d.offset_attr, d.offset_scale);
      if (!d.after_attr.empty())
        offset += fmt::format(" (input before the operand), `{}` (after it)", d.after_attr);
      return fmt::format("window of {}: kernel {}, stride {}, dilation {}, pads `{}`/`{}`{}",
                         d.window.of, term(d.window.kernel), term(d.window.stride),
                         term(d.window.dilation), d.window.pad_begin, d.window.pad_end, offset);
    }
    case DimKind::reduce: {
      std::string how;
      if (!d.combine_attr.empty()) {
        std::vector<std::string> parts;
        for (const auto& [value, fn] : d.combine_by_value) parts.push_back(value + ": " + fn);
        how = fmt::format("by `{}` ({})", d.combine_attr, fmt::join(parts, ", "));
      } else if (d.combine == "self") {
        how = "the op itself on the partial results";
      } else if (d.combine == "merge") {
        how = "merging the sorted runs";
      } else {
        how = d.combine;
      }
      std::string acc = d.accumulate_attr.empty()
                            ? ""
                            : fmt::format("; serial pieces set `{}`", d.accumulate_attr);
      if (!d.final_attr.empty())
        acc += fmt::format(
            "; only the piece completing the sum keeps `{}` (across children: "
            "the LFU runs the op on an empty range of the dim after combining)",
            d.final_attr);
      if (op.is_taps(static_cast<size_t>(&d - op.dims.data())))
        acc += "; a kernel's taps: split serially only, once nothing else can be";
      if (!d.extent_attr.empty()) acc += fmt::format("; extent attribute `{}`", d.extent_attr);
      if (!d.offset_attr.empty() || !d.after_attr.empty())
        acc += fmt::format("; taps before and after the piece's in `{}` and `{}`", d.offset_attr,
                           d.after_attr);
      if (!d.integer_attr.empty())
        acc += fmt::format("; on integers only with {} = {}", d.integer_attr,
                           fmt::join(d.integer_values, " or "));
      return fmt::format("reduce, combined with {}{}", how, acc);
    }
  }
  return "?";
}

std::string attr_type(const AttrDef& a) {
  switch (a.type) {
    case AttrType::integer:
      if (a.min == INT64_MIN && a.max == INT64_MAX) return "int";
      return fmt::format("int in [{}, {}]", a.min, a.max);
    case AttrType::boolean:
      return "bool";
    case AttrType::real:
      return "real";
    case AttrType::enumeration:
      return fmt::format("enum: {}", fmt::join(a.values, ", "));
  }
  return "?";
}

// The ops in opcode order.
std::vector<const OpDef*> by_opcode(const OpTable& ops) {
  std::vector<const OpDef*> v;
  for (const OpDef& op : ops.ops()) v.push_back(&op);
  std::sort(v.begin(), v.end(),
            [](const OpDef* a, const OpDef* b) { return a->opcode < b->opcode; });
  return v;
}

std::string view_str(const ViewDef& v) {
  std::string s = fmt::format("{}[{}", v.tensor, fmt::join(v.axes, ","));
  std::vector<std::string> fixed;
  for (const auto& [dim, index] : v.fixed) fixed.push_back(dim + "=" + index.text());
  if (!fixed.empty()) s += fmt::format(" | {}", fmt::join(fixed, ", "));
  return s + "]";
}

std::string sequence_markdown(const std::vector<SequenceStep>& steps, const std::string& indent) {
  std::string s;
  for (size_t i = 0; i < steps.size(); ++i) {
    const SequenceStep& st = steps[i];
    const std::string when =
        st.when.text().empty() ? "" : fmt::format(" when `{}`", st.when.text());
    if (!st.prim) {
      std::vector<std::string> loops;
      for (const auto& [var, dim] : st.loops) loops.push_back(var + " in " + dim);
      s += fmt::format("{}{}. repeat for {}{}:\n", indent, i + 1, fmt::join(loops, ", "), when);
      s += sequence_markdown(st.body, indent + "    ");
      continue;
    }
    std::vector<std::string> args;
    for (size_t k = 0; k < st.operands.size(); ++k)
      args.push_back(fmt::format("{}={}", st.prim->operands[k].name, view_str(st.operands[k])));
    s += fmt::format("{}{}. `{} {}`{}\n", indent, i + 1, st.prim->name, fmt::join(args, " "), when);
  }
  return s;
}

}  // namespace

std::string op_list(const OpTable& ops) {
  std::string s;
  for (const OpDef* opp : by_opcode(ops)) {
    const OpDef& op = *opp;
    s += fmt::format("{:#06x}  {:<12} {:<9} {}\n", op.opcode, op.name,
                     op.unit ? unit_name(*op.unit) : "extension", op.summary);
  }
  return s;
}

std::string op_reference_markdown(const OpTable& ops) {
  std::string s =
      "# The fracsim op reference\n\n"
      "Generated by `fracsim isa doc` from `isa/ops/*.yaml` and `isa/ops/ext/*.yaml`; do not edit "
      "by hand (a test checks that this file is current).\n\n"
      "Every op names its dims and says how each may be split: `parallel` dims split freely, "
      "`reduce` dims need their partial results combined (by the LFU across children; serial "
      "pieces accumulate), `window` dims follow an output dim with a halo, `whole` dims are never "
      "split. Extension ops (FRISA) run a sequence of primitive ops on each piece.\n\n"
      "| opcode | op | unit | summary |\n|---|---|---|---|\n";
  for (const OpDef* op : by_opcode(ops))
    s += fmt::format("| {:#06x} | [{}](#{}) | {} | {} |\n", op->opcode, op->name, op->name,
                     op->unit ? unit_name(*op->unit) : "extension", op->summary);
  for (const OpDef* opp : by_opcode(ops)) {
    const OpDef& op = *opp;
    s += fmt::format("\n## {}\n\n{}\n\n", op.name, op.summary);
    s += fmt::format("Defined in `{}`; opcode {:#06x}; ", op.file, op.opcode);
    s += op.is_extension() ? "an extension op.\n\n"
                           : fmt::format("runs on the leaf's {} unit.\n\n", unit_name(*op.unit));
    s += "| dim | split |\n|---|---|\n";
    for (const DimDef& d : op.dims) s += fmt::format("| {} | {} |\n", d.name, dim_rule(op, d));
    s += "\n| operand | role | dims |\n|---|---|---|\n";
    for (const OperandDef& o : op.operands)
      s += fmt::format("| {} | {}{} | {} |\n", o.name, o.role == OperandRole::in ? "in" : "out",
                       o.read_if.empty() ? "" : fmt::format(" (read when `{}`)", o.read_if),
                       fmt::join(o.dims, ", "));
    if (!op.attributes.empty()) {
      s += "\n| attribute | type | default | meaning |\n|---|---|---|---|\n";
      for (size_t a = 0; a < op.attributes.size(); ++a) {
        const AttrDef& ad = op.attributes[a];
        s += fmt::format("| {} | {} | {} | {} |\n", ad.name, attr_type(ad),
                         op.attr_value_str(static_cast<int>(a), ad.default_value), ad.doc);
      }
    }
    std::vector<std::string> rows;
    for (size_t r = 0; r < op.dtypes.size(); ++r) {
      std::vector<std::string> names;
      for (DType t : op.dtypes[r]) names.emplace_back(dtype_name(t));
      const DTypeRowLimit& lim = op.dtype_limits[r];
      rows.push_back("(" + fmt::format("{}", fmt::join(names, ", ")) + ")" +
                     (lim.attr.empty()
                          ? std::string()
                          : fmt::format(" with {} {}", lim.attr, fmt::join(lim.values, "/"))));
    }
    s += fmt::format("\nDtypes: {}.\n\nWork: `{}`.", fmt::join(rows, ", "), op.work.text());
    if (!op.is_extension())
      s += fmt::format(" Leaf cycles: `{}`.\n", op.cycles.text());
    else
      s += "\n";
    if (op.is_extension()) {
      if (!op.temporaries.empty()) {
        std::vector<std::string> t;
        for (const TemporaryDef& td : op.temporaries)
          t.push_back(
              fmt::format("{}[{}] {}", td.name, fmt::join(td.dims, ","), dtype_name(td.dtype)));
        s += fmt::format("\nTemporaries: {}.\n", fmt::join(t, "; "));
      }
      s += "\nSequence (one piece):\n\n" + sequence_markdown(op.sequence, "");
    }
  }
  return s;
}

}  // namespace fracsim::isa
