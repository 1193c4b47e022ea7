#include "rtl/vector_bridge.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "isa/error.h"
#include "isa/semantics/semantics.h"

namespace fracsim::rtl {

namespace {

namespace sem = isa::semantics;

bool is_int(isa::DType t) {
  return t == isa::DType::i8 || t == isa::DType::i16 || t == isa::DType::i32;
}

VectorDType unit_dtype(isa::DType t) {
  return t == isa::DType::i8 ? VectorDType::i8
                             : (t == isa::DType::i16 ? VectorDType::i16 : VectorDType::i32);
}

int32_t load_int(const isa::MemoryView& mem, const isa::TensorRef& t, int64_t off) {
  switch (t.dtype) {
    case isa::DType::i8:
      return sem::load<int8_t>(mem, t, off);
    case isa::DType::i16:
      return sem::load<int16_t>(mem, t, off);
    default:
      return sem::load<int32_t>(mem, t, off);
  }
}

void store_int(const isa::MemoryView& mem, const isa::TensorRef& t, int64_t off, int32_t v) {
  switch (t.dtype) {
    case isa::DType::i8:
      sem::store<int8_t>(mem, t, off, static_cast<int8_t>(v));
      break;
    case isa::DType::i16:
      sem::store<int16_t>(mem, t, off, static_cast<int16_t>(v));
      break;
    default:
      sem::store<int32_t>(mem, t, off, v);
      break;
  }
}

// leaky_relu's alpha as Q16 when it is exactly a multiple of 2^-16 in [0, 1], else -1.
int64_t alpha_q16(double alpha) {
  const double k = alpha * 65536.0;
  if (!(k >= 0.0 && k <= 65536.0) || std::floor(k) != k) return -1;
  return static_cast<int64_t>(k);
}

}  // namespace

bool vector_unit_runs(const isa::OpDef& op, const isa::Instruction& instr) {
  if (op.name != "eltwise" && op.name != "activation" && op.name != "reduce") return false;
  if (instr.operands.empty()) return false;
  for (const isa::TensorRef& t : instr.operands)
    if (!is_int(t.dtype)) return false;
  const std::string& fn = op.enum_value("fn", instr.attrs);
  if (op.name == "eltwise")
    return fn == "add" || fn == "sub" || fn == "mul" || fn == "max" || fn == "min";
  if (op.name == "activation") {
    // The integer rule reads x as fixed point (frac_bits); relu and leaky_relu with a Q16 alpha
    // give the same integers for every frac_bits of a sane size (x / 2^f is exact).
    const int64_t f = sem::attr(op, instr, "frac_bits");
    if (f < -64 || f > 64) return false;
    if (fn == "relu") return true;
    // Another alpha (0.01, the default, is one) is not exact in Q16: the reference's double
    // product would round differently from any fixed-point slope, so it stays on the model.
    return fn == "leaky_relu" && alpha_q16(sem::real_attr(op, instr, "alpha")) >= 0;
  }
  if (op.name == "reduce") return fn == "sum" || fn == "max" || fn == "min";
  return false;
}

VectorBridge::VectorBridge(std::unique_ptr<VectorUnitPort> unit) : unit_(std::move(unit)) {
  FRACSIM_ASSERT(unit_ != nullptr, "vector bridge without a unit");
}

VectorResult VectorBridge::run(const VectorJob& job) {
  const int L = unit_->lanes();
  const auto E = static_cast<uint64_t>(job.a.size());
  const bool reduce = job.op == VectorOp::reduce_sum || job.op == VectorOp::reduce_max ||
                      job.op == VectorOp::reduce_min;
  const auto group = static_cast<uint64_t>(reduce ? job.group : 1);
  FRACSIM_ASSERT(group >= 1 && E % group == 0, "vector job: elements not whole groups");
  FRACSIM_ASSERT(reduce || job.op == VectorOp::relu || job.op == VectorOp::leaky_relu ||
                     job.b.size() == job.a.size(),
                 "vector job: b is not as long as a");
  VectorResult res;
  res.out.assign(E / group, 0);
  if (E == 0) return res;
  res.beats = (E + static_cast<uint64_t>(L) - 1) / static_cast<uint64_t>(L);

  std::vector<int32_t> a(static_cast<size_t>(L)), b(static_cast<size_t>(L)),
      out(static_cast<size_t>(L));
  VectorUnitInputs in;
  in.op = job.op;
  in.dtype = job.dtype;
  in.alpha_q16 = job.alpha_q16;
  in.a = a.data();
  in.b = b.data();
  auto load_beat = [&](uint64_t beat) {
    in.lane_valid = in.seg_first = 0;
    for (int l = 0; l < L; ++l) {
      const uint64_t i = beat * static_cast<uint64_t>(L) + static_cast<uint64_t>(l);
      const bool v = i < E;
      a[static_cast<size_t>(l)] = v ? job.a[i] : 0;
      b[static_cast<size_t>(l)] = v && !job.b.empty() ? job.b[i] : 0;
      if (v) in.lane_valid |= uint64_t{1} << l;
      if (v && i % group == 0) in.seg_first |= uint64_t{1} << l;
    }
  };

  unit_->reset();
  uint64_t beat = 0;
  bool loaded = false;
  const uint64_t limit = res.beats + 64;  // a healthy unit takes one cycle per beat
  while (beat < res.beats) {
    if (!loaded) {
      load_beat(beat);
      loaded = true;
    }
    in.in_valid = true;
    in.out_ready =
        job.ready_pattern.empty() || job.ready_pattern[res.cycles % job.ready_pattern.size()] != 0;
    const VectorUnitOutputs o = unit_->cycle(in, out.data());
    ++res.cycles;
    if (o.out_valid && !in.out_ready) ++res.stall_cycles;
    if (o.out_valid && in.out_ready) {
      for (int l = 0; l < L; ++l) {
        const uint64_t i = beat * static_cast<uint64_t>(L) + static_cast<uint64_t>(l);
        if (i < E && (i + 1) % group == 0) res.out[i / group] = out[static_cast<size_t>(l)];
      }
    }
    if (o.in_ready) {
      if (!(o.out_valid && in.out_ready))
        throw InternalError("vector unit: operand beat taken without its result beat");
      ++beat;
      loaded = false;
    }
    if (res.cycles - res.stall_cycles > limit)
      throw InternalError(
          fmt::format("vector unit ({} lanes): no progress after {} cycles ({} of "
                      "{} beats)",
                      L, res.cycles, beat, res.beats));
  }
  return res;
}

VectorResult VectorBridge::run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                                           isa::MemoryView* mem,
                                           std::vector<uint8_t> ready_pattern) {
  if (!vector_unit_runs(op, instr))
    throw InternalError(fmt::format("vector unit RTL: cannot run this {} instruction", op.name));
  const std::string& fn = op.enum_value("fn", instr.attrs);
  VectorJob job;
  job.ready_pattern = std::move(ready_pattern);
  job.dtype = unit_dtype(instr.operands[0].dtype);
  // Element offsets of the operands, in the reference's order (last dim fastest).
  std::vector<int64_t> off_a, off_b, off_out;
  if (op.name == "eltwise") {
    job.op = fn == "add"   ? VectorOp::add
             : fn == "sub" ? VectorOp::sub
             : fn == "mul" ? VectorOp::mul
             : fn == "max" ? VectorOp::max
                           : VectorOp::min;
    const isa::TensorRef &a = instr.operands[0], &b = instr.operands[1], &o = instr.operands[2];
    sem::for_each_index<3>(o.shape, {&a.strides, &b.strides, &o.strides}, [&](const auto& x) {
      off_a.push_back(x[0]);
      off_b.push_back(x[1]);
      off_out.push_back(x[2]);
    });
  } else if (op.name == "activation") {
    job.op = fn == "relu" ? VectorOp::relu : VectorOp::leaky_relu;
    if (job.op == VectorOp::leaky_relu)
      job.alpha_q16 = static_cast<uint32_t>(alpha_q16(sem::real_attr(op, instr, "alpha")));
    const isa::TensorRef &x = instr.operands[0], &o = instr.operands[1];
    sem::for_each_index<2>(o.shape, {&x.strides, &o.strides}, [&](const auto& i) {
      off_a.push_back(i[0]);
      off_out.push_back(i[1]);
    });
  } else {  // reduce: per output, its terms in index order (R0 outermost)
    job.op = fn == "sum" ? VectorOp::reduce_sum
                         : (fn == "max" ? VectorOp::reduce_max : VectorOp::reduce_min);
    const isa::TensorRef &x = instr.operands[0], &o = instr.operands[1];
    const isa::Shape kept(x.strides.begin(), x.strides.begin() + 3);
    const int64_t R0 = x.shape[3], R1 = x.shape[4], R2 = x.shape[5];
    job.group = R0 * R1 * R2;
    sem::for_each_index<2>(o.shape, {&kept, &o.strides}, [&](const auto& i) {
      off_out.push_back(i[1]);
      for (int64_t r0 = 0; r0 < R0; ++r0)
        for (int64_t r1 = 0; r1 < R1; ++r1)
          for (int64_t r2 = 0; r2 < R2; ++r2)
            off_a.push_back(i[0] + r0 * x.strides[3] + r1 * x.strides[4] + r2 * x.strides[5]);
    });
  }
  const bool binary = op.name == "eltwise";
  job.a.assign(off_a.size(), 0);
  if (binary) job.b.assign(off_b.size(), 0);
  if (mem) {
    for (size_t i = 0; i < off_a.size(); ++i)
      job.a[i] = load_int(*mem, instr.operands[0], off_a[i]);
    if (binary)
      for (size_t i = 0; i < off_b.size(); ++i)
        job.b[i] = load_int(*mem, instr.operands[1], off_b[i]);
  }
  const bool empty_groups = op.name == "reduce" && job.group == 0;
  if (empty_groups) job.group = 1;  // no terms at all: no beats, out is the start value
  VectorResult res = run(job);
  if (!mem) return res;
  const isa::TensorRef& o = instr.operands.back();
  const bool accumulate = op.name == "reduce" && sem::attr(op, instr, "accumulate") != 0;
  for (size_t i = 0; i < off_out.size(); ++i) {
    int32_t v = empty_groups ? 0 : res.out[i];
    if (accumulate) {
      const int32_t old = load_int(*mem, o, off_out[i]);
      if (empty_groups)
        v = old;
      else if (job.op == VectorOp::reduce_sum)
        v = static_cast<int32_t>(static_cast<uint32_t>(old) + static_cast<uint32_t>(v));
      else if (job.op == VectorOp::reduce_max)
        v = old > v ? old : v;
      else
        v = old < v ? old : v;
    }
    store_int(*mem, o, off_out[i], v);
  }
  return res;
}

}  // namespace fracsim::rtl
