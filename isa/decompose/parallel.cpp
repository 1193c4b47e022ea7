#include "isa/decompose/parallel.h"

#include <algorithm>
#include <functional>

#include "isa/decompose/cost_model.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/piece.h"
#include "isa/error.h"

namespace fracsim::isa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Bytes of all operands of a piece whose dims have the given lengths.
int64_t piece_bytes(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& len) {
  int64_t total = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    int64_t n = 1;
    const TensorRef& t = instr.operands[o];
    for (size_t a = 0; a < op.operands[o].dims.size(); ++a)
      if (t.strides[a] != 0) n *= len[op.operands[o].dim_ids[a]];
    total += n * dtype_size(t.dtype);
  }
  return total;
}

struct Choice {
  std::vector<int64_t> parts;
  int64_t max_work = 0;
  int64_t bytes = 0;
  int64_t children = 0;
  bool better_than(const Choice& o) const {
    if (max_work != o.max_work) return max_work < o.max_work;
    if (bytes != o.bytes) return bytes < o.bytes;
    return children < o.children;
  }
};

// Searches parts per candidate dim with product <= fanout.
Choice best_parts(const OpDef& op, const Instruction& instr, const std::vector<int64_t>& ext,
                  const std::vector<int>& candidates, int fanout) {
  Choice best;
  best.parts.assign(ext.size(), 1);
  best.max_work = 1;
  for (int64_t e : ext) best.max_work *= e;
  best.bytes = piece_bytes(op, instr, ext);
  best.children = 1;
  std::vector<int64_t> parts(ext.size(), 1);
  std::function<void(size_t, int64_t)> search = [&](size_t i, int64_t used) {
    if (i == candidates.size()) {
      Choice c;
      c.parts = parts;
      c.children = used;
      std::vector<int64_t> len(ext.size());
      c.max_work = 1;
      for (size_t d = 0; d < ext.size(); ++d) {
        len[d] = ceil_div(ext[d], parts[d]);
        c.max_work *= len[d];
      }
      c.bytes = used * piece_bytes(op, instr, len);
      if (c.better_than(best)) best = c;
      return;
    }
    const int d = candidates[i];
    for (int64_t p = 1; p <= ext[d] && used * p <= fanout; ++p) {
      parts[d] = p;
      search(i + 1, used * p);
    }
    parts[d] = 1;
  };
  search(0, 1);
  return best;
}

}  // namespace

std::vector<int64_t> halving_parts(const OpDef& op, const Instruction& instr, int fanout) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  std::vector<int> par;
  for (size_t d = 0; d < op.dims.size(); ++d)
    if (ext[d] >= 2 && op.dims[d].kind == DimKind::parallel) par.push_back(static_cast<int>(d));
  return best_parts(op, instr, ext, par, fanout).parts;
}

Instruction lfu_combine(const OpTable& ops, const std::string& fn, const TensorRef& out,
                        const TensorRef& partial, const TensorRef* first) {
  const OpDef& elt = ops.get("eltwise");
  const int rank = static_cast<int>(elt.operands[0].dims.size());
  FRACSIM_ASSERT(out.rank() <= rank, "LFU reduction of a rank-{} output", out.rank());
  Instruction in;
  in.opcode = elt.opcode;
  const TensorRef o = with_leading_dims(out, rank), p = with_leading_dims(partial, rank);
  in.operands = {first ? with_leading_dims(*first, rank) : o, p, o};
  in.attrs.assign(elt.attributes.size(), 0);
  const AttrDef& fn_attr = elt.attributes[elt.attr_index("fn")];
  auto it = std::find(fn_attr.values.begin(), fn_attr.values.end(), fn);
  FRACSIM_ASSERT(it != fn_attr.values.end(), "eltwise has no fn {}", fn);
  in.attrs[elt.attr_index("fn")] = it - fn_attr.values.begin();
  return in;
}

Instruction self_combine(const OpDef& op, const Instruction& instr,
                         const std::vector<TensorRef>& partials) {
  Instruction in = instr;
  size_t next = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::in) in.operands[o] = partials.at(next++);
  for (const DimDef& d : op.dims)
    if (d.kind == DimKind::reduce && d.combine == "self") in.attrs[d.accumulate_index] = 1;
  return in;
}

Instruction merge_runs(const OpDef& op, const OpTable& ops, const Instruction& instr,
                       int64_t runs) {
  const OpDef& merge = ops.get("merge");
  Instruction in;
  in.opcode = merge.opcode;
  const TensorRef* out = nullptr;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::out) out = &instr.operands[o];
  FRACSIM_ASSERT(out != nullptr, "op {} has no output", op.name);
  in.operands = {*out, *out};
  // Attributes the merge shares by name with the op (descending) are passed on.
  for (const AttrDef& a : merge.attributes) {
    const int mine = op.attr_index(a.name);
    in.attrs.push_back(a.name == "runs" ? runs : mine >= 0 ? instr.attrs[mine] : a.default_value);
  }
  return in;
}

std::vector<int64_t> pinned_partition(const OpDef& op, const std::vector<int64_t>& ext,
                                      const std::vector<int64_t>& pinned) {
  FRACSIM_ASSERT(pinned.size() == ext.size(), "pinned parts for {} dims, {} has {}", pinned.size(),
                 op.name, ext.size());
  std::vector<int64_t> parts(ext.size(), 1);
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == DimKind::parallel && ext[d] >= 2) parts[d] = std::min(pinned[d], ext[d]);
  return parts;
}

uint64_t lfu_cycles(const Instruction& reduction, int64_t throughput) {
  const uint64_t elements = static_cast<uint64_t>(reduction.operands.back().elements());
  const uint64_t tp = static_cast<uint64_t>(std::max<int64_t>(throughput, 1));
  return (elements + tp - 1) / tp;
}

bool splits_reduce(const OpDef& op, const std::vector<int64_t>& parts) {
  for (size_t d = 0; d < parts.size(); ++d)
    if (op.dims[d].kind == DimKind::reduce && parts[d] > 1) return true;
  return false;
}

bool reduce_splits_across(const OpDef& op, const Instruction& instr, size_t d) {
  if (op.dims[d].kind != DimKind::reduce || op.is_taps(d)) return false;
  const std::string fn = op.combine_fn(op.dims[d], instr.attrs);
  return fn != "self" && fn != "merge";
}

ParallelSplit parallel(const OpDef& op, const OpTable& ops, const Instruction& instr, int fanout,
                       uint64_t scratch_base, const CostModel* model, int level,
                       const Instruction* like) {
  FRACSIM_ASSERT(fanout >= 1, "fanout {}", fanout);
  const std::vector<int64_t> ext = dim_extents(op, instr);
  std::vector<int> par, red;
  for (size_t d = 0; d < op.dims.size(); ++d) {
    if (ext[d] < 2) continue;
    if (op.dims[d].kind == DimKind::parallel) par.push_back(static_cast<int>(d));
    // A kernel's taps split serially only (accumulating in tap order), never across children.
    if (op.dims[d].kind == DimKind::reduce && !op.is_taps(d)) red.push_back(static_cast<int>(d));
  }
  std::vector<int64_t> parts(ext.size(), 1);
  const std::vector<int64_t>* pinned = model ? model->pinned_parts(level) : nullptr;
  if (!par.empty() && pinned && fanout > 1) {
    parts = pinned_partition(op, ext, *pinned);
  } else if (!par.empty() && model && model->policy() == Policy::search && fanout > 1) {
    constexpr CostModel::Choice decide = CostModel::Choice::decide;
    parts = like && level >= 0
                ? pinned_partition(op, ext,
                                   model->parallel_parts(level, op, ops, *like, fanout, decide))
                : model->parallel_parts(level, op, ops, instr, fanout, decide);
  } else if (!par.empty()) {
    parts = halving_parts(op, instr, fanout);
  } else if (!red.empty() && fanout > 1) {
    const int reduce_dim =
        *std::max_element(red.begin(), red.end(), [&](int a, int b) { return ext[a] < ext[b]; });
    parts[reduce_dim] = std::min<int64_t>(ext[reduce_dim], fanout);
  }
  return split_by_parts(op, ops, instr, parts, scratch_base,
                        model && model->policy() == Policy::search);
}

ParallelSplit split_by_parts(const OpDef& op, const OpTable& ops, const Instruction& instr,
                             const std::vector<int64_t>& parts, uint64_t scratch_base, bool apart) {
  ParallelSplit split;
  const std::vector<int64_t> ext = dim_extents(op, instr);
  int reduce_dim = -1;
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == DimKind::reduce && parts[d] > 1) {
      FRACSIM_ASSERT(reduce_dim < 0, "{} split across children along two reduce dims", op.name);
      reduce_dim = static_cast<int>(d);
    }
  const std::string combine =
      reduce_dim >= 0 ? op.combine_fn(op.dims[reduce_dim], instr.attrs) : std::string();
  // Those combine whole outputs: such a dim is split alone.
  if (combine == "self" || combine == "merge")
    for (size_t d = 0; d < ext.size(); ++d)
      FRACSIM_ASSERT(static_cast<int>(d) == reduce_dim || parts[d] == 1,
                     "{}: its {} reduce dim split beside another dim", op.name, combine);
  // Chunks per dim, then children in row-major order over the dims (last dim fastest).
  std::vector<std::vector<int64_t>> cb(ext.size()), cl(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) balanced_chunks(ext[d], parts[d], cb[d], cl[d]);
  std::vector<size_t> idx(ext.size(), 0);
  uint64_t scratch = scratch_base;
  // Apart: chunk 0's partials go to scratch too, unless the instruction accumulates onto the
  // output's old value (which chunk 0 reads); the first fold writes fn(partial 0, partial 1).
  const bool all_scratch = apart && reduce_dim >= 0 &&
                           reduce_splits_across(op, instr, static_cast<size_t>(reduce_dim)) &&
                           (op.dims[reduce_dim].accumulate_index < 0 ||
                            instr.attrs[op.dims[reduce_dim].accumulate_index] == 0);
  std::vector<std::pair<TensorRef, TensorRef>> firsts;  // a part of the output, partial 0's
  while (true) {
    PieceRange r;
    for (size_t d = 0; d < ext.size(); ++d) {
      r.begin.push_back(cb[d][idx[d]]);
      r.len.push_back(cl[d][idx[d]]);
    }
    Instruction child = slice_instruction(op, instr, r);
    if (reduce_dim >= 0) {
      // slice_instruction set accumulate for pieces past 0; across children the partials are
      // combined by the LFU instead, so only child 0 keeps the instruction's own flag.
      const DimDef& dd = op.dims[reduce_dim];
      if (dd.accumulate_index >= 0)
        child.attrs[dd.accumulate_index] =
            idx[reduce_dim] == 0 ? instr.attrs[dd.accumulate_index] : 0;
      // No child holds the whole sum: the final step waits for the LFU (below).
      if (dd.final_index >= 0) child.attrs[dd.final_index] = 0;
      // Merge: every child sorts its own slice of the output; the runs are merged below.
      if ((idx[reduce_dim] > 0 || all_scratch) && combine != "merge") {
        std::vector<TensorRef> partials;
        for (size_t o = 0; o < op.operands.size(); ++o) {
          if (op.operands[o].role != OperandRole::out) continue;
          TensorRef& out = child.operands[o];
          const TensorRef part = out;  // where the LFU folds this child's partial
          out = out.packed_at(scratch);
          scratch = align_up(scratch + out.stored_bytes(), kTileAlign);
          partials.push_back(out);
          if (all_scratch && idx[reduce_dim] == 0) {
            firsts.emplace_back(part, out);
            continue;
          }
          const TensorRef* first = nullptr;
          if (all_scratch && idx[reduce_dim] == 1)
            for (const auto& [p0, s0] : firsts)
              if (p0 == part) first = &s0;
          FRACSIM_ASSERT(!all_scratch || idx[reduce_dim] != 1 || first,
                         "{}: chunk 1 of a reduce split before chunk 0", op.name);
          if (combine != "self")
            split.reductions.push_back(lfu_combine(ops, combine, part, out, first));
        }
        if (combine == "self") split.reductions.push_back(self_combine(op, instr, partials));
      }
    }
    split.children.push_back(std::move(child));
    int d = static_cast<int>(ext.size()) - 1;
    for (; d >= 0; --d) {
      if (++idx[d] < cb[d].size()) break;
      idx[d] = 0;
    }
    if (d < 0) break;
  }
  if (combine == "merge") split.reductions.push_back(merge_runs(op, ops, instr, parts[reduce_dim]));
  if (reduce_dim >= 0) {
    // The op's final step on the combined sum: the op over an empty range of the reduce dim,
    // accumulating onto the output, adds nothing and then runs what `final` guards.
    const DimDef& dd = op.dims[reduce_dim];
    if (dd.final_index >= 0 && instr.attrs[dd.final_index] != 0) {
      PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
      r.len[reduce_dim] = 0;
      Instruction fin = slice_instruction(op, instr, r);
      fin.attrs[dd.accumulate_index] = 1;
      fin.attrs[dd.final_index] = 1;
      split.reductions.push_back(std::move(fin));
    }
  }
  split.scratch_bytes = scratch - scratch_base;
  return split;
}

}  // namespace fracsim::isa
