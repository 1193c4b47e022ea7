#include "rtl/matrix_verify.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include "isa/error.h"
#include "isa/op_def.h"
#include "isa/reference.h"
#include "isa/tensor.h"
#include "rtl/matrix_bridge.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {
namespace {

// One test vector: a matmul instruction's shapes and data, and the result stream's ready pattern.
struct MatrixVector {
  std::string name;
  isa::DType dtype = isa::DType::i8;
  int64_t B = 1, M = 1, K = 1, N = 1;
  bool shared_b = false;  // b stored once, stride 0 along B (a weight shared by the batch)
  bool accumulate = false;
  std::vector<int16_t> a, b;     // B*M*K and (shared_b ? 1 : B)*K*N, row-major
  std::vector<int32_t> old_out;  // B*M*N, the output's contents before the instruction
  std::vector<uint8_t> ready;    // empty: no back-pressure
};

// The instruction of `v` over one flat memory: a, then b, then out.
struct Image {
  isa::Instruction instr;
  std::vector<uint8_t> bytes;
};

Image build_image(const isa::OpDef& op, const MatrixVector& v) {
  const uint32_t in_size = isa::dtype_size(v.dtype);
  const int64_t bcopies = v.shared_b ? 1 : v.B;
  const uint64_t a_addr = 0;
  const uint64_t b_addr = a_addr + static_cast<uint64_t>(v.B * v.M * v.K) * in_size;
  const uint64_t o_addr =
      (b_addr + static_cast<uint64_t>(bcopies * v.K * v.N) * in_size + 3) / 4 * 4;
  Image img;
  img.bytes.assign(o_addr + static_cast<uint64_t>(v.B * v.M * v.N) * 4, 0);
  isa::TensorRef a = isa::make_tensor(a_addr, v.dtype, {v.B, v.M, v.K});
  isa::TensorRef b = isa::make_tensor(b_addr, v.dtype, {v.B, v.K, v.N});
  if (v.shared_b) b.strides[0] = 0;
  isa::TensorRef out = isa::make_tensor(o_addr, isa::DType::i32, {v.B, v.M, v.N});
  auto put = [&](uint64_t addr, const std::vector<int16_t>& xs) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (v.dtype == isa::DType::i8) {
        img.bytes[addr + i] = static_cast<uint8_t>(static_cast<int8_t>(xs[i]));
      } else {
        std::memcpy(&img.bytes[addr + 2 * i], &xs[i], 2);
      }
    }
  };
  put(a_addr, v.a);
  put(b_addr, v.b);
  std::memcpy(&img.bytes[o_addr], v.old_out.data(), v.old_out.size() * 4);
  img.instr.opcode = op.opcode;
  img.instr.operands = {a, b, out};
  img.instr.attrs.assign(op.attributes.size(), 0);
  const int acc = op.attr_index("accumulate");
  FRACSIM_ASSERT(acc >= 0, "matmul has no accumulate attribute");
  img.instr.attrs[static_cast<size_t>(acc)] = v.accumulate ? 1 : 0;
  return img;
}

std::vector<int32_t> read_out(const Image& img) {
  const isa::TensorRef& out = img.instr.operands[2];
  std::vector<int32_t> r(static_cast<size_t>(out.elements()));
  std::memcpy(r.data(), &img.bytes[out.address], r.size() * 4);
  return r;
}

// A tensor for a mismatch report: rows of its last dim, at most `limit` values.
template <typename T>
std::string show(const std::vector<T>& xs, int64_t inner, size_t limit = 256) {
  std::string s;
  for (size_t i = 0; i < xs.size() && i < limit; ++i) {
    if (i % static_cast<size_t>(inner) == 0) s += i == 0 ? "    " : "\n    ";
    s += fmt::format("{:>11} ", xs[i]);
  }
  if (xs.size() > limit) s += fmt::format("\n    ... ({} values in all)", xs.size());
  return s;
}

class VectorSource {
 public:
  VectorSource(int rows, int cols, uint64_t seed) : R_(rows), C_(cols), rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) {  // inclusive
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }

  // A value of the dtype, an edge value one time in eight.
  int16_t value(isa::DType dt) {
    const int64_t lo = dt == isa::DType::i8 ? -128 : -32768, hi = -lo - 1;
    if (uniform(0, 7) == 0) {
      const int64_t edges[] = {lo, hi, 0, -1, 1, lo + 1};
      return static_cast<int16_t>(edges[uniform(0, 5)]);
    }
    return static_cast<int16_t>(uniform(lo, hi));
  }

  static void fill(MatrixVector& v, int16_t a_value, int16_t b_value) {
    v.a.assign(static_cast<size_t>(v.B * v.M * v.K), a_value);
    v.b.assign(static_cast<size_t>((v.shared_b ? 1 : v.B) * v.K * v.N), b_value);
    v.old_out.assign(static_cast<size_t>(v.B * v.M * v.N), 0);
  }

  void fill_random(MatrixVector& v) {
    fill(v, 0, 0);
    for (auto& x : v.a) x = value(v.dtype);
    for (auto& x : v.b) x = value(v.dtype);
    if (v.accumulate)
      for (auto& x : v.old_out) x = static_cast<int32_t>(static_cast<uint32_t>(rng_()));
  }

  MatrixVector shaped(std::string name, isa::DType dt, int64_t B, int64_t M, int64_t K, int64_t N) {
    MatrixVector v;
    v.name = std::move(name);
    v.dtype = dt;
    v.B = B;
    v.M = M;
    v.K = K;
    v.N = N;
    return v;
  }

  // Edge values, K = 1, partial blocks, wrap-around, accumulate, a shared weight, an empty
  // instruction and back-pressure patterns.
  std::vector<MatrixVector> directed() {
    using isa::DType;
    std::vector<MatrixVector> vs;
    auto edge = [&](const char* name, DType dt, int64_t K, int16_t x, int16_t y) {
      MatrixVector v = shaped(name, dt, 1, R_, K, C_);
      fill(v, x, y);
      vs.push_back(v);
    };
    edge("i8 -128 x -128, K = 1", DType::i8, 1, -128, -128);
    edge("i8 -128 x 127, K = 5", DType::i8, 5, -128, 127);
    edge("i8 127 x 127, K = 300", DType::i8, 300, 127, 127);
    edge("i16 -32768 x -32768, K = 1", DType::i16, 1, -32768, -32768);
    edge("i16 -32768 x -32768, K = 4 (sum 2^32 wraps to 0)", DType::i16, 4, -32768, -32768);
    edge("i16 -32768 x -32768, K = 3 (wraps negative)", DType::i16, 3, -32768, -32768);
    edge("i16 32767 x -32768, K = 7", DType::i16, 7, 32767, -32768);
    edge("i16 32767 x 32767, K = 5 (wraps)", DType::i16, 5, 32767, 32767);
    auto rnd = [&](MatrixVector v) {
      fill_random(v);
      vs.push_back(v);
    };
    rnd(shaped("one element, K = 1", DType::i8, 1, 1, 1, 1));
    rnd(shaped("partial blocks: M = rows+1, N = cols+1, K = 2", DType::i8, 1, R_ + 1, 2, C_ + 1));
    rnd(shaped("partial blocks: M = 2*rows-1, N = cols-1 or 1, K = 3", DType::i16, 1, 2 * R_ - 1, 3,
               C_ > 1 ? C_ - 1 : 1));
    rnd(shaped("K = 1, many blocks", DType::i16, 2, 2 * R_ + 1, 1, 3 * C_));
    {
      MatrixVector v = shaped("batch 3, b shared (stride 0 along B)", DType::i8, 3, R_, 4, C_ + 2);
      v.shared_b = true;
      rnd(v);
    }
    {
      MatrixVector v = shaped("accumulate onto the old output (wraps)", DType::i16, 1, R_, 2, C_);
      v.accumulate = true;
      fill(v, 32767, 32767);
      v.old_out.assign(v.old_out.size(), std::numeric_limits<int32_t>::max());
      vs.push_back(v);
    }
    {
      MatrixVector v = shaped("empty: K = 0", DType::i8, 1, R_, 0, C_);
      fill(v, 0, 0);
      vs.push_back(v);
    }
    auto stalled = [&](const char* name, MatrixVector v, std::vector<uint8_t> ready) {
      v.name = name;
      v.ready = std::move(ready);
      fill_random(v);
      vs.push_back(v);
    };
    stalled("back-pressure: ready every other cycle, K = 1",
            shaped("", DType::i8, 2, 2 * R_, 1, 2 * C_), {1, 0});
    stalled("back-pressure: ready one cycle in seven, K = 2",
            shaped("", DType::i16, 1, 2 * R_ + 1, 2, C_ + 1), {0, 0, 0, 0, 0, 0, 1});
    stalled("back-pressure: held off for 40 cycles at a time, K = 9",
            shaped("", DType::i8, 1, 3 * R_, 9, 2 * C_), std::vector<uint8_t>(40, 0));
    vs.back().ready.push_back(1);
    stalled("back-pressure: ready, then two cycles low, K = 1",
            shaped("", DType::i16, 1, 3 * R_, 1, C_), {1, 0, 0});
    return vs;
  }

  MatrixVector random(int64_t index) {
    const isa::DType dt = uniform(0, 1) ? isa::DType::i16 : isa::DType::i8;
    const int64_t K = uniform(0, 3) == 0 ? uniform(1, 64) : uniform(1, 12);
    MatrixVector v = shaped(fmt::format("random #{}", index), dt, uniform(1, 2),
                            uniform(1, 2 * R_ + 1), K, uniform(1, 2 * C_ + 1));
    v.shared_b = v.B > 1 && uniform(0, 3) == 0;
    v.accumulate = uniform(0, 3) == 0;
    if (uniform(0, 2) == 0) {  // back-pressure: a random ready pattern holding at least one 1
      v.ready.resize(static_cast<size_t>(uniform(1, 12)));
      const int64_t density = uniform(1, 4);
      for (auto& r : v.ready) r = uniform(0, 4) < density ? 1 : 0;
      v.ready[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.ready.size()) - 1))] = 1;
    }
    fill_random(v);
    return v;
  }

 private:
  int R_, C_;
  std::mt19937_64 rng_;
};

void print_mismatch(std::ostream& out, const MatrixVector& v, int rows, int cols,
                    const std::vector<int32_t>& expected, const std::vector<int32_t>& seen,
                    const std::string& what) {
  fmt::print(out, "MISMATCH ({}) in vector '{}' on the {}x{} matrix unit\n", what, v.name, rows,
             cols);
  fmt::print(out, "  matmul {} a[{},{},{}] x b[{},{},{}]{}{}\n", isa::dtype_name(v.dtype), v.B, v.M,
             v.K, v.B, v.K, v.N, v.shared_b ? " (b shared: stride 0 along B)" : "",
             v.accumulate ? ", accumulate" : "");
  fmt::print(out, "  a (rows of K):\n{}\n  b (rows of N):\n{}\n", show(v.a, v.K), show(v.b, v.N));
  if (v.accumulate) fmt::print(out, "  out before:\n{}\n", show(v.old_out, v.N));
  fmt::print(out, "  expected out (reference):\n{}\n  seen out (RTL):\n{}\n", show(expected, v.N),
             show(seen, v.N));
  size_t shown = 0;
  for (size_t i = 0; i < expected.size() && shown < 8; ++i) {
    if (expected[i] == seen[i]) continue;
    const int64_t n = static_cast<int64_t>(i) % v.N, m = static_cast<int64_t>(i) / v.N % v.M,
                  b = static_cast<int64_t>(i) / (v.N * v.M);
    fmt::print(out, "  out[{},{},{}]: expected {} (0x{:08x}), seen {} (0x{:08x})\n", b, m, n,
               expected[i], static_cast<uint32_t>(expected[i]), seen[i],
               static_cast<uint32_t>(seen[i]));
    ++shown;
  }
}

}  // namespace

UnitVerifyReport verify_matrix_unit(const MatrixUnitFactory& make_unit,
                                    const MatrixUnitFactory& make_traced,
                                    const UnitVerifyOptions& options, std::ostream& out) {
  const isa::OpDef& op = isa::OpTable::builtin().get("matmul");
  MatrixBridge bridge(make_unit());
  const int R = bridge.rows(), C = bridge.cols();
  const std::map<std::string, int64_t> params{{"rows", R}, {"cols", C}};
  VectorSource source(R, C, options.seed);
  UnitVerifyReport rep;

  auto check = [&](const MatrixVector& v) {
    return check_vector(
        bridge, op, build_image(op, v), v.ready, params, read_out,
        [&](const auto& expected, const auto& seen, const std::string& what) {
          print_mismatch(out, v, R, C, expected, seen, what);
        },
        make_traced, options.wave, rep, out);
  };

  run_vectors(source, options, bridge.unit(), rep, check);
  return rep;
}

}  // namespace fracsim::rtl
