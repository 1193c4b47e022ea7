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

// Stores the job's results into the instruction's out (i32): `each(put)` calls put(element
// offset, value) once per element; under `accumulate` the old value is added, wrapping.
// An i8 or i16 operand element, as the 16-bit lane the unit takes.
int16_t lane_of(const isa::MemoryView& mem, const isa::TensorRef& t, int64_t off) {
  return t.dtype == isa::DType::i8 ? int16_t{load<int8_t>(mem, t, off)}
                                   : load<int16_t>(mem, t, off);
}

template <typename Each>
void store_out(const isa::OpDef& op, const isa::Instruction& instr, isa::MemoryView& mem,
               Each&& each) {
  const isa::TensorRef& out = instr.operands.back();
  const int acc_attr = op.attr_index("accumulate");
  const bool accumulate = acc_attr >= 0 && instr.attrs.at(static_cast<size_t>(acc_attr)) != 0;
  each([&](int64_t o, int32_t value) {
    uint8_t* p = mem.data + out.address + o * 4;
    auto v = static_cast<uint32_t>(value);
    if (accumulate) {
      uint32_t old;
      std::memcpy(&old, p, 4);
      v += old;
    }
    std::memcpy(p, &v, 4);
  });
}

bool is_conv(const isa::OpDef& op) {
  return op.name == "conv1d" || op.name == "conv2d" || op.name == "conv3d";
}

// One spatial axis of a conv instruction: tap k of output o reads input o*stride - pad +
// k*dilation, a zero when that falls outside [0, in).
struct ConvAxis {
  int64_t in = 1, out = 1, kernel = 1, stride = 1, dilation = 1, pad = 0;
  int64_t in_stride = 0, out_stride = 0, w_stride = 0;
};

// The spatial axes of a conv1d/2d/3d instruction, outermost first: operand dims 3.. of in, w
// and out, and the attributes stride_<a>, dilation_<a>, pad_<a>0 of axis a (d, h, w).
std::vector<ConvAxis> conv_axes(const isa::OpDef& op, const isa::Instruction& instr) {
  const isa::TensorRef &x = instr.operands.at(0), &w = instr.operands.at(1),
                       &out = instr.operands.at(2);
  const size_t n = x.shape.size() - 3;
  FRACSIM_ASSERT(n >= 1 && n <= 3 && w.shape.size() == n + 3 && out.shape.size() == n + 3,
                 "{}: operands of ranks {}, {}, {}", op.name, x.shape.size(), w.shape.size(),
                 out.shape.size());
  const char* names = &"dhw"[3 - n];
  auto attr = [&](const std::string& name) {
    const int i = op.attr_index(name);
    FRACSIM_ASSERT(i >= 0, "{} has no attribute {}", op.name, name);
    return instr.attrs.at(static_cast<size_t>(i));
  };
  std::vector<ConvAxis> axes(n);
  for (size_t a = 0; a < n; ++a) {
    const std::string s(1, names[a]);
    ConvAxis& ax = axes[a];
    ax.in = x.shape[3 + a];
    ax.in_stride = x.strides[3 + a];
    ax.kernel = w.shape[3 + a];
    ax.w_stride = w.strides[3 + a];
    ax.out = out.shape[3 + a];
    ax.out_stride = out.strides[3 + a];
    ax.stride = attr("stride_" + s);
    ax.dilation = attr("dilation_" + s);
    ax.pad = attr("pad_" + s + "0");
  }
  return axes;
}

}  // namespace

bool matrix_unit_runs(const isa::OpDef& op, const isa::Instruction& instr) {
  if ((op.name != "matmul" && !is_conv(op)) || instr.operands.empty()) return false;
  const isa::DType dt = instr.operands[0].dtype;
  return dt == isa::DType::i8 || dt == isa::DType::i16;
}

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
    for (int64_t bb = 0; bb < job.B; ++bb)
      for (int64_t k = 0; k < job.K; ++k) {
        for (int64_t m = 0; m < job.M; ++m)
          av[static_cast<size_t>((bb * job.M + m) * job.K + k)] =
              lane_of(*mem, a, bb * a.strides[0] + m * a.strides[1] + k * a.strides[2]);
        for (int64_t n = 0; n < job.N; ++n)
          bv[static_cast<size_t>((bb * job.K + k) * job.N + n)] =
              lane_of(*mem, b, bb * b.strides[0] + k * b.strides[1] + n * b.strides[2]);
      }
  }
  job.a = av.data();
  job.b = bv.data();
  MatmulResult res = run(job);
  if (mem)
    store_out(op, instr, *mem, [&](auto&& put) {
      for (int64_t bb = 0; bb < job.B; ++bb)
        for (int64_t m = 0; m < job.M; ++m)
          for (int64_t n = 0; n < job.N; ++n)
            put(bb * out.strides[0] + m * out.strides[1] + n * out.strides[2],
                res.out[static_cast<size_t>((bb * job.M + m) * job.N + n)]);
    });
  return res;
}

MatmulResult MatrixBridge::run_conv_instruction(const isa::OpDef& op, const isa::Instruction& instr,
                                                isa::MemoryView* mem,
                                                std::vector<uint8_t> ready_pattern) {
  const isa::TensorRef &x = instr.operands.at(0), &w = instr.operands.at(1),
                       &out = instr.operands.at(2);
  const isa::DType dt = x.dtype;
  if (!is_conv(op) || (dt != isa::DType::i8 && dt != isa::DType::i16) ||
      out.dtype != isa::DType::i32)
    throw InternalError(fmt::format("matrix unit RTL: {} of {} is not an integer convolution",
                                    op.name, isa::dtype_name(dt)));
  const std::vector<ConvAxis> axes = conv_axes(op, instr);
  const int64_t N = x.shape[0], G = x.shape[1], Ci = x.shape[2], Co = w.shape[1];
  int64_t pixels = 1, taps = 1;
  for (const ConvAxis& a : axes) {
    pixels *= a.out;
    taps *= a.kernel;
  }
  MatmulJob job;
  job.i16 = dt == isa::DType::i16;
  job.B = G;
  job.M = N * pixels;
  job.K = Ci * taps;
  job.N = Co;
  job.ready_pattern = std::move(ready_pattern);
  std::vector<int16_t> av(static_cast<size_t>(job.B * job.M * job.K), 0);
  std::vector<int16_t> bv(static_cast<size_t>(job.B * job.K * job.N), 0);
  // Index vectors of a pixel (output position per axis) and a tap (kernel position per axis),
  // last axis fastest, from their flat numbers.
  const size_t n_axes = axes.size();
  auto split = [&](int64_t flat, bool tap, int64_t* idx) {
    for (size_t a = n_axes; a-- > 0;) {
      const int64_t extent = tap ? axes[a].kernel : axes[a].out;
      idx[a] = flat % extent;
      flat /= extent;
    }
  };
  if (mem && job.B * job.M * job.K * job.N != 0) {
    int64_t o[3], k[3];
    for (int64_t g = 0; g < G; ++g) {
      // a: row (n, pixel), column (ci, tap): the input element the tap reads, 0 in the padding.
      for (int64_t n = 0; n < N; ++n)
        for (int64_t p = 0; p < pixels; ++p) {
          split(p, false, o);
          const int64_t row = (g * job.M + n * pixels + p) * job.K;
          for (int64_t t = 0; t < taps; ++t) {
            split(t, true, k);
            int64_t off = n * x.strides[0] + g * x.strides[1];
            bool inside = true;
            for (size_t a = 0; a < n_axes && inside; ++a) {
              const int64_t i = o[a] * axes[a].stride - axes[a].pad + k[a] * axes[a].dilation;
              inside = i >= 0 && i < axes[a].in;
              off += i * axes[a].in_stride;
            }
            if (!inside) continue;
            for (int64_t ci = 0; ci < Ci; ++ci)
              av[static_cast<size_t>(row + ci * taps + t)] =
                  lane_of(*mem, x, off + ci * x.strides[2]);
          }
        }
      // b: row (ci, tap), column co: the weight.
      for (int64_t ci = 0; ci < Ci; ++ci)
        for (int64_t t = 0; t < taps; ++t) {
          split(t, true, k);
          int64_t off = g * w.strides[0] + ci * w.strides[2];
          for (size_t a = 0; a < n_axes; ++a) off += k[a] * axes[a].w_stride;
          for (int64_t co = 0; co < Co; ++co)
            bv[static_cast<size_t>((g * job.K + ci * taps + t) * job.N + co)] =
                lane_of(*mem, w, off + co * w.strides[1]);
        }
    }
  }
  job.a = av.data();
  job.b = bv.data();
  MatmulResult res = run(job);
  if (mem)
    store_out(op, instr, *mem, [&](auto&& put) {
      int64_t o[3];
      for (int64_t g = 0; g < G; ++g)
        for (int64_t n = 0; n < N; ++n)
          for (int64_t p = 0; p < pixels; ++p) {
            split(p, false, o);
            int64_t off = n * out.strides[0] + g * out.strides[1];
            for (size_t a = 0; a < n_axes; ++a) off += o[a] * axes[a].out_stride;
            for (int64_t co = 0; co < Co; ++co)
              put(off + co * out.strides[2],
                  res.out[static_cast<size_t>((g * job.M + n * pixels + p) * job.N + co)]);
          }
    });
  return res;
}

}  // namespace fracsim::rtl
