#include "rtl/sort_bridge.h"

#include <algorithm>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/semantics/semantics.h"

namespace fracsim::rtl {

namespace sem = isa::semantics;

bool sort_unit_runs(const isa::OpDef& op, const isa::Instruction& instr) {
  if (op.name != "merge" || instr.operands.size() != 2) return false;
  for (const isa::TensorRef& t : instr.operands)
    if (t.dtype != isa::DType::i8 && t.dtype != isa::DType::i16 && t.dtype != isa::DType::i32)
      return false;
  const int64_t runs = sem::attr(op, instr, "runs");
  return runs == 1 || runs == 2;
}

SortBridge::SortBridge(std::unique_ptr<SortUnitPort> unit) : unit_(std::move(unit)) {
  FRACSIM_ASSERT(unit_ != nullptr, "sort bridge without a unit");
}

MergeResult SortBridge::run(const MergeJob& job) {
  const int W = unit_->width();
  MergeResult res;
  res.out.assign(static_cast<size_t>(job.M * job.N), 0);
  if (job.M * job.N == 0) return res;
  // merge's runs: balanced, the first one longer; more runs than elements leaves one.
  const int64_t la = job.two_runs && job.N > 1 ? (job.N + 1) / 2 : job.N, lb = job.N - la;
  std::vector<int32_t> out(static_cast<size_t>(W));
  SortUnitInputs in;
  in.descending = job.descending;
  unit_->reset();
  const uint64_t beats = static_cast<uint64_t>(job.M * ((job.N + W - 1) / W));
  uint64_t taken = 0;
  int64_t m = 0, ia = 0, ib = 0, done = 0;  // the row, its heads and its outputs so far
  while (taken < beats) {
    const int32_t* row = job.rows.data() + m * job.N;
    in.in_valid = true;
    in.a = row + ia;
    in.a_count = static_cast<int>(std::min<int64_t>(W, la - ia));
    in.b = row + la + ib;
    in.b_count = static_cast<int>(std::min<int64_t>(W, lb - ib));
    in.emit = static_cast<int>(std::min<int64_t>(W, job.N - done));
    in.out_ready =
        job.ready_pattern.empty() || job.ready_pattern[res.cycles % job.ready_pattern.size()] != 0;
    const SortUnitOutputs o = unit_->cycle(in, out.data());
    ++res.cycles;
    if (o.out_valid && !in.out_ready) ++res.stall_cycles;
    if (o.in_ready && o.out_valid && in.out_ready) {
      if (o.take_a < 0 || o.take_a > in.emit || o.take_a > in.a_count ||
          in.emit - o.take_a > in.b_count)
        throw InternalError(
            fmt::format("sort unit (width {}): took {} of {} from run A ({} there, "
                        "{} in B)",
                        W, o.take_a, in.emit, in.a_count, in.b_count));
      std::copy(out.begin(), out.begin() + in.emit, res.out.begin() + m * job.N + done);
      ia += o.take_a;
      ib += in.emit - o.take_a;
      done += in.emit;
      ++taken;
      if (done == job.N) {
        ++m;
        ia = ib = done = 0;
      }
    }
    if (res.cycles - res.stall_cycles > beats + 64)
      throw InternalError(
          fmt::format("sort unit (width {}): no progress after {} cycles", W, res.cycles));
  }
  return res;
}

MergeResult SortBridge::run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                                        isa::MemoryView* mem, std::vector<uint8_t> ready_pattern) {
  if (!sort_unit_runs(op, instr)) throw InternalError("sort unit RTL: not a merge it runs");
  const isa::TensorRef &x = instr.operands[0], &o = instr.operands[1];
  MergeJob job;
  job.M = x.shape[0];
  job.N = x.shape[1];
  job.two_runs = sem::attr(op, instr, "runs") == 2;
  job.descending = sem::attr(op, instr, "descending") != 0;
  job.ready_pattern = std::move(ready_pattern);
  job.rows.assign(static_cast<size_t>(job.M * job.N), 0);
  auto offset = [](const isa::TensorRef& t, int64_t m, int64_t n) {
    return m * t.strides[0] + n * t.strides[1];
  };
  if (mem)
    for (int64_t m = 0; m < job.M; ++m)
      for (int64_t n = 0; n < job.N; ++n) {
        const int64_t off = offset(x, m, n);
        int32_t v = 0;
        if (x.dtype == isa::DType::i8)
          v = sem::load<int8_t>(*mem, x, off);
        else if (x.dtype == isa::DType::i16)
          v = sem::load<int16_t>(*mem, x, off);
        else
          v = sem::load<int32_t>(*mem, x, off);
        job.rows[static_cast<size_t>(m * job.N + n)] = v;
      }
  MergeResult res = run(job);
  if (mem)  // after every read: in and out may be the same tensor
    for (int64_t m = 0; m < job.M; ++m)
      for (int64_t n = 0; n < job.N; ++n) {
        const int64_t off = offset(o, m, n);
        const int32_t v = res.out[static_cast<size_t>(m * job.N + n)];
        if (o.dtype == isa::DType::i8)
          sem::store<int8_t>(*mem, o, off, static_cast<int8_t>(v));
        else if (o.dtype == isa::DType::i16)
          sem::store<int16_t>(*mem, o, off, static_cast<int16_t>(v));
        else
          sem::store<int32_t>(*mem, o, off, v);
      }
  return res;
}

}  // namespace fracsim::rtl
