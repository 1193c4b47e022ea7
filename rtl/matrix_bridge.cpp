#include "rtl/matrix_bridge.h"

#include <cstring>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::rtl {

namespace {

int64_t cdiv(int64_t x, int64_t y) { return (x + y - 1) / y; }

template <typename T>
T load(const isa::MemoryView& mem, const isa::TensorRef& t, int64_t off) {
  T v;
  std::memcpy(&v, mem.data + t.address + off * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

}  // namespace

MatrixBridge::MatrixBridge(std::unique_ptr<MatrixUnitPort> unit) : unit_(std::move(unit)) {
  FRACSIM_ASSERT(unit_ != nullptr, "matrix bridge without a unit");
}

MatmulResult MatrixBridge::run(const MatmulJob& job) {
  const int R = unit_->rows(), C = unit_->cols();
  MatmulResult res;
  res.out.assign(static_cast<size_t>(job.B * job.M * job.N), 0);
  if (job.B * job.M * job.N * job.K == 0) return res;  // an empty piece takes no time

  const int64_t mblocks = cdiv(job.M, R), nblocks = cdiv(job.N, C);
  res.blocks = static_cast<uint64_t>(job.B * mblocks * nblocks);
  const uint64_t beats = res.blocks * static_cast<uint64_t>(job.K);

  std::vector<int16_t> a_lanes(static_cast<size_t>(R)), b_lanes(static_cast<size_t>(C));
  std::vector<int32_t> block(static_cast<size_t>(R * C));
  // Fills the lanes of operand beat `beat`: block beat / K, k = beat % K.
  auto load_beat = [&](uint64_t beat) {
    const int64_t blk = static_cast<int64_t>(beat) / job.K, k = static_cast<int64_t>(beat) % job.K;
    const int64_t bb = blk / (mblocks * nblocks), m0 = (blk / nblocks) % mblocks * R,
                  n0 = blk % nblocks * C;
    for (int r = 0; r < R; ++r) {
      const int64_t m = m0 + r;
      a_lanes[r] = m < job.M ? job.a[(bb * job.M + m) * job.K + k] : int16_t{0};
    }
    for (int c = 0; c < C; ++c) {
      const int64_t n = n0 + c;
      b_lanes[c] = n < job.N ? job.b[(bb * job.K + k) * job.N + n] : int16_t{0};
    }
  };
  // Writes result beat `blk` to out, dropping the padding lanes.
  auto store_block = [&](uint64_t blk_u) {
    const auto blk = static_cast<int64_t>(blk_u);
    const int64_t bb = blk / (mblocks * nblocks), m0 = (blk / nblocks) % mblocks * R,
                  n0 = blk % nblocks * C;
    for (int r = 0; r < R && m0 + r < job.M; ++r)
      for (int c = 0; c < C && n0 + c < job.N; ++c)
        res.out[static_cast<size_t>((bb * job.M + m0 + r) * job.N + n0 + c)] = block[r * C + c];
  };

  unit_->reset();
  MatrixUnitInputs in;
  in.in_i16 = job.i16;
  in.a = a_lanes.data();
  in.b = b_lanes.data();
  uint64_t beat = 0, taken = 0;
  // k of the current beat (beat % K) and the index of this cycle's out_ready in the pattern
  // (cycles % size), kept as counters: no division per simulated cycle.
  const auto K = static_cast<uint64_t>(job.K);
  uint64_t k = 0;
  size_t ready_at = 0;
  const size_t ready_size = job.ready_pattern.size();
  bool loaded = false;
  // A healthy unit finishes within the formula plus its stalls; far beyond that it is stuck.
  const uint64_t limit = beats + static_cast<uint64_t>(R + C) + 64;
  while (taken < res.blocks) {
    in.in_valid = beat < beats;
    if (in.in_valid && !loaded) {
      load_beat(beat);
      loaded = true;
    }
    in.in_first = in.in_valid && k == 0;
    in.in_last = in.in_valid && k + 1 == K;
    in.out_ready = ready_size == 0 || job.ready_pattern[ready_at] != 0;
    if (ready_size != 0 && ++ready_at == ready_size) ready_at = 0;
    const MatrixUnitOutputs o = unit_->cycle(in, block.data());
    ++res.cycles;
    if (in.in_valid && o.in_ready) {
      ++beat;
      if (++k == K) k = 0;
      loaded = false;
    }
    if (o.out_valid && !in.out_ready) ++res.stall_cycles;
    if (o.out_valid && in.out_ready) store_block(taken++);
    if (res.cycles - res.stall_cycles > limit)
      throw InternalError(fmt::format(
          "matrix unit {}x{}: no progress after {} cycles ({} of {} operand beats taken, {} of {} "
          "result blocks)",
          R, C, res.cycles, beat, beats, taken, res.blocks));
  }
  return res;
}

MatmulResult MatrixBridge::run_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                                           isa::MemoryView* mem,
                                           std::vector<uint8_t> ready_pattern) {
  const isa::TensorRef &a = instr.operands.at(0), &b = instr.operands.at(1),
                       &out = instr.operands.at(2);
  const isa::DType dt = a.dtype;
  if ((dt != isa::DType::i8 && dt != isa::DType::i16) || out.dtype != isa::DType::i32)
    throw InternalError(
        fmt::format("matrix unit RTL: matmul of {} is not an integer matmul", isa::dtype_name(dt)));
  MatmulJob job;
  job.i16 = dt == isa::DType::i16;
  job.B = a.shape[0];
  job.M = a.shape[1];
  job.K = a.shape[2];
  job.N = b.shape[2];
  job.ready_pattern = std::move(ready_pattern);
  std::vector<int16_t> av(static_cast<size_t>(job.B * job.M * job.K), 0);
  std::vector<int16_t> bv(static_cast<size_t>(job.B * job.K * job.N), 0);
  if (mem) {
    auto elem = [&](const isa::TensorRef& t, int64_t off) -> int16_t {
      return dt == isa::DType::i8 ? int16_t{load<int8_t>(*mem, t, off)}
                                  : load<int16_t>(*mem, t, off);
    };
    for (int64_t bb = 0; bb < job.B; ++bb)
      for (int64_t k = 0; k < job.K; ++k) {
        for (int64_t m = 0; m < job.M; ++m)
          av[static_cast<size_t>((bb * job.M + m) * job.K + k)] =
              elem(a, bb * a.strides[0] + m * a.strides[1] + k * a.strides[2]);
        for (int64_t n = 0; n < job.N; ++n)
          bv[static_cast<size_t>((bb * job.K + k) * job.N + n)] =
              elem(b, bb * b.strides[0] + k * b.strides[1] + n * b.strides[2]);
      }
  }
  job.a = av.data();
  job.b = bv.data();
  MatmulResult res = run(job);
  if (mem) {
    const int acc_attr = op.attr_index("accumulate");
    const bool accumulate = acc_attr >= 0 && instr.attrs.at(static_cast<size_t>(acc_attr)) != 0;
    for (int64_t bb = 0; bb < job.B; ++bb)
      for (int64_t m = 0; m < job.M; ++m)
        for (int64_t n = 0; n < job.N; ++n) {
          const int64_t o = bb * out.strides[0] + m * out.strides[1] + n * out.strides[2];
          uint8_t* p = mem->data + out.address + o * 4;
          uint32_t v =
              static_cast<uint32_t>(res.out[static_cast<size_t>((bb * job.M + m) * job.N + n)]);
          if (accumulate) {
            uint32_t old;
            std::memcpy(&old, p, 4);
            v += old;
          }
          std::memcpy(p, &v, 4);
        }
  }
  return res;
}

}  // namespace fracsim::rtl
