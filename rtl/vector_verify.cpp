#include "rtl/vector_verify.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include "isa/error.h"
#include "isa/op_def.h"
#include "isa/reference.h"
#include "isa/tensor.h"
#include "rtl/vector_bridge.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {
namespace {

// One test vector: an integer eltwise, activation or reduce instruction's shape and data.
struct VecCase {
  std::string name;
  std::string op = "eltwise";  // eltwise, activation, reduce
  std::string fn = "add";
  isa::DType dtype = isa::DType::i8;
  isa::Shape shape{1, 1, 1, 1, 1, 1};  // eltwise/activation: out's; reduce: in's (P0..P2, R0..R2)
  bool broadcast_b = false;            // b stride 0 along the last dim
  double alpha = 0.5;
  int64_t frac_bits = 0;
  bool accumulate = false;
  std::vector<int32_t> a, b, old_out;
  std::vector<uint8_t> ready;

  [[nodiscard]] int64_t elements() const { return isa::num_elements(shape); }
  [[nodiscard]] int64_t outputs() const {
    return op == "reduce" ? shape[0] * shape[1] * shape[2] : elements();
  }
  [[nodiscard]] int64_t b_elements() const {
    return broadcast_b && shape[5] > 0 ? elements() / shape[5] : elements();
  }
};

struct Image {
  isa::Instruction instr;
  std::vector<uint8_t> bytes;
};

void put(std::vector<uint8_t>& bytes, uint64_t addr, isa::DType dt,
         const std::vector<int32_t>& xs) {
  const uint32_t n = isa::dtype_size(dt);
  for (size_t i = 0; i < xs.size(); ++i) {
    const auto v = static_cast<uint32_t>(xs[i]);
    std::memcpy(&bytes[addr + i * n], &v, n);  // little-endian: the low bytes
  }
}

uint64_t align4(uint64_t x) { return (x + 3) / 4 * 4; }

Image build_image(const isa::OpDef& op, const VecCase& v) {
  const uint32_t sz = isa::dtype_size(v.dtype);
  const isa::DType out_dt = v.op == "reduce" ? isa::DType::i32 : v.dtype;
  Image img;
  const uint64_t a_addr = 0;
  uint64_t next = align4(static_cast<uint64_t>(v.elements()) * sz);
  isa::TensorRef a = isa::make_tensor(a_addr, v.dtype, v.shape);
  img.instr.operands.push_back(a);
  uint64_t b_addr = 0;
  if (v.op == "eltwise") {
    b_addr = next;
    isa::Shape bs = v.shape;
    if (v.broadcast_b) bs[5] = 1;
    isa::TensorRef b = isa::make_tensor(b_addr, v.dtype, bs);
    b.shape[5] = v.shape[5];
    if (v.broadcast_b) b.strides[5] = 0;
    img.instr.operands.push_back(b);
    next = align4(b_addr + static_cast<uint64_t>(v.b_elements()) * sz);
  }
  const isa::Shape os =
      v.op == "reduce" ? isa::Shape(v.shape.begin(), v.shape.begin() + 3) : v.shape;
  img.instr.operands.push_back(isa::make_tensor(next, out_dt, os));
  img.bytes.assign(next + static_cast<uint64_t>(v.outputs()) * isa::dtype_size(out_dt), 0);
  put(img.bytes, a_addr, v.dtype, v.a);
  if (v.op == "eltwise") put(img.bytes, b_addr, v.dtype, v.b);
  if (v.accumulate) put(img.bytes, next, out_dt, v.old_out);
  img.instr.opcode = op.opcode;
  img.instr.attrs.resize(op.attributes.size());
  for (size_t i = 0; i < op.attributes.size(); ++i) {
    const isa::AttrDef& d = op.attributes[i];
    img.instr.attrs[i] = d.default_value;
    if (d.name == "fn")
      img.instr.attrs[i] = std::find(d.values.begin(), d.values.end(), v.fn) - d.values.begin();
    if (d.name == "alpha") img.instr.attrs[i] = isa::real_to_attr(v.alpha);
    if (d.name == "frac_bits") img.instr.attrs[i] = v.frac_bits;
    if (d.name == "accumulate") img.instr.attrs[i] = v.accumulate ? 1 : 0;
  }
  return img;
}

std::vector<int64_t> read_out(const Image& img) {
  const isa::TensorRef& o = img.instr.operands.back();
  std::vector<int64_t> r(static_cast<size_t>(o.elements()));
  for (size_t i = 0; i < r.size(); ++i) {
    const uint8_t* p = &img.bytes[o.address + i * isa::dtype_size(o.dtype)];
    if (o.dtype == isa::DType::i8)
      r[i] = static_cast<int8_t>(p[0]);
    else if (o.dtype == isa::DType::i16) {
      int16_t x;
      std::memcpy(&x, p, 2);
      r[i] = x;
    } else {
      int32_t x;
      std::memcpy(&x, p, 4);
      r[i] = x;
    }
  }
  return r;
}

template <typename T>
std::string show(const std::vector<T>& xs, size_t limit = 96) {
  std::string s = "    ";
  for (size_t i = 0; i < xs.size() && i < limit; ++i)
    s += fmt::format("{}{}", xs[i], (i + 1) % 12 == 0 ? "\n    " : " ");
  if (xs.size() > limit) s += fmt::format("... ({} values in all)", xs.size());
  return s;
}

class CaseSource {
 public:
  CaseSource(int lanes, uint64_t seed) : L_(lanes), rng_(seed) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  static int64_t lo_of(isa::DType dt) {
    return dt == isa::DType::i8 ? -128 : (dt == isa::DType::i16 ? -32768 : INT32_MIN);
  }
  int32_t value(isa::DType dt) {  // an edge value one time in six
    const int64_t lo = lo_of(dt), hi = -lo - 1;
    if (uniform(0, 5) == 0) {
      const int64_t edges[] = {lo, hi, 0, -1, 1, lo + 1, hi - 1};
      return static_cast<int32_t>(edges[uniform(0, 6)]);
    }
    if (uniform(0, 2) == 0) return static_cast<int32_t>(uniform(-300, 300) % (hi + 1));
    return static_cast<int32_t>(uniform(lo, hi));
  }
  void fill(VecCase& v, bool random) {
    v.a.assign(static_cast<size_t>(v.elements()), 0);
    v.b.assign(v.op == "eltwise" ? static_cast<size_t>(v.b_elements()) : 0, 0);
    v.old_out.assign(v.accumulate ? static_cast<size_t>(v.outputs()) : 0, 0);
    if (!random) return;
    for (auto& x : v.a) x = value(v.dtype);
    for (auto& x : v.b) x = value(v.dtype);
    for (auto& x : v.old_out) x = value(isa::DType::i32);
  }
  static VecCase make(std::string name, std::string op, std::string fn, isa::DType dt,
                      isa::Shape shape) {
    VecCase v;
    v.name = std::move(name);
    v.op = std::move(op);
    v.fn = std::move(fn);
    v.dtype = dt;
    v.shape = std::move(shape);
    return v;
  }

  std::vector<VecCase> directed() {
    using isa::DType;
    std::vector<VecCase> vs;
    auto pairs = [&](const char* name, const char* fn, DType dt, std::vector<int32_t> a,
                     std::vector<int32_t> b) {
      VecCase v = make(name, "eltwise", fn, dt, {1, 1, 1, 1, 1, static_cast<int64_t>(a.size())});
      v.a = std::move(a);
      v.b = std::move(b);
      vs.push_back(v);
    };
    pairs("i8 add/sub saturation", "add", DType::i8, {127, -128, 100, -100, 127, 0, 1, -1, 5},
          {1, -1, 100, -100, -128, 0, 127, -128, -5});
    pairs("i8 sub saturation", "sub", DType::i8, {-128, 127, 0, -1, 0}, {1, -1, -128, 127, 127});
    pairs("i8 mul saturation", "mul", DType::i8, {-128, -128, 127, 16, -16, 0},
          {-128, 127, 127, 8, 8, -128});
    pairs("i16 mul saturation", "mul", DType::i16, {-32768, 32767, 256, -256, 181},
          {-32768, -1, 128, 128, 181});
    pairs("i32 add/mul wrap", "add", DType::i32, {INT32_MAX, INT32_MIN, -1}, {1, -1, INT32_MIN});
    pairs("i32 mul wraps", "mul", DType::i32, {INT32_MIN, INT32_MAX, 65536, -65537},
          {-1, INT32_MAX, 65536, 65537});
    pairs("i32 max/min edges", "max", DType::i32, {INT32_MIN, INT32_MAX, 0},
          {INT32_MAX, INT32_MIN, -1});
    pairs("i16 min edges", "min", DType::i16, {-32768, 32767, 0}, {32767, -32768, -1});
    {
      VecCase v = make("relu edges i32", "activation", "relu", DType::i32, {1, 1, 1, 1, 1, 5});
      v.a = {INT32_MIN, -1, 0, 1, INT32_MAX};
      vs.push_back(v);
    }
    {  // half-to-even ties: -1 * 0.5 = -0.5 -> 0, -3 * 0.5 = -1.5 -> -2, -5 * 0.5 -> -2
      VecCase v = make("leaky_relu ties, alpha 0.5", "activation", "leaky_relu", DType::i8,
                       {1, 1, 1, 1, 1, 8});
      v.a = {-1, -3, -5, -128, -127, 0, 127, 1};
      vs.push_back(v);
    }
    {
      VecCase v = make("leaky_relu alpha 1, frac_bits 8, i32", "activation", "leaky_relu",
                       DType::i32, {1, 1, 1, 1, 1, 3});
      v.alpha = 1.0;
      v.frac_bits = 8;
      v.a = {INT32_MIN, -7, 7};
      vs.push_back(v);
    }
    {
      VecCase v = make("leaky_relu alpha 1/65536, i16", "activation", "leaky_relu", DType::i16,
                       {1, 1, 1, 1, 1, 4});
      v.alpha = 1.0 / 65536;
      v.a = {-32768, -32767, -16384, -16385};
      vs.push_back(v);
    }
    auto rnd = [&](VecCase v) {
      fill(v, true);
      vs.push_back(v);
    };
    rnd(make("empty: 0 elements", "eltwise", "add", DType::i8, {1, 1, 1, 1, 3, 0}));
    rnd(make("one element", "eltwise", "sub", DType::i16, {1, 1, 1, 1, 1, 1}));
    rnd(make("exactly lanes", "eltwise", "mul", DType::i8, {1, 1, 1, 1, 1, L_}));
    rnd(make("lanes + 1", "activation", "relu", DType::i16, {1, 1, 1, 1, 1, L_ + 1}));
    {
      VecCase v =
          make("b broadcast along the last dim", "eltwise", "max", DType::i32, {1, 1, 1, 2, 3, 7});
      v.broadcast_b = true;
      rnd(v);
    }
    rnd(make("reduce sum i8, 3 terms per output (outputs share beats)", "reduce", "sum", DType::i8,
             {2, 1, 5, 3, 1, 1}));
    rnd(make("reduce max i32, one term per output", "reduce", "max", DType::i32,
             {1, 1, 2 * L_ + 3, 1, 1, 1}));
    rnd(make("reduce min i16, one output of many terms", "reduce", "min", DType::i16,
             {1, 1, 1, 3, 2 * L_ + 1, 2}));
    {
      VecCase v = make("reduce sum i32 wraps", "reduce", "sum", DType::i32, {1, 1, 2, 1, 1, 3});
      v.a = {INT32_MAX, 1, 1, INT32_MIN, -1, INT32_MIN};
      vs.push_back(v);
    }
    {
      VecCase v = make("reduce max, accumulate", "reduce", "max", DType::i8, {1, 1, 4, 1, 1, 3});
      v.accumulate = true;
      rnd(v);
    }
    {
      VecCase v = make("reduce sum, accumulate, 0 terms (out unchanged)", "reduce", "sum",
                       DType::i16, {1, 2, 3, 1, 0, 1});
      v.accumulate = true;
      rnd(v);
    }
    rnd(make("reduce max, 0 terms (out 0)", "reduce", "max", DType::i16, {1, 1, 3, 0, 1, 1}));
    auto stalled = [&](const char* name, VecCase v, std::vector<uint8_t> ready) {
      v.name = name;
      v.ready = std::move(ready);
      rnd(v);
    };
    stalled("back-pressure: ready every other cycle",
            make("", "eltwise", "add", DType::i8, {1, 1, 1, 1, 4, L_}), {1, 0});
    stalled("back-pressure: ready one cycle in seven, reduce",
            make("", "reduce", "sum", DType::i16, {1, 1, 6, 1, 1, L_ - 1 > 0 ? L_ - 1 : 1}),
            {0, 0, 0, 0, 0, 0, 1});
    stalled("back-pressure: held off 40 cycles at a time",
            make("", "activation", "relu", DType::i32, {1, 1, 1, 1, 3, L_ + 2}),
            std::vector<uint8_t>(40, 0));
    vs.back().ready.push_back(1);
    return vs;
  }

  VecCase random(int64_t index) {
    const isa::DType dts[] = {isa::DType::i8, isa::DType::i16, isa::DType::i32};
    const isa::DType dt = dts[uniform(0, 2)];
    const int64_t kind = uniform(0, 5);
    isa::Shape s(6, 1);
    for (auto& d : s) d = uniform(0, 4) == 0 ? uniform(1, 3) : 1;
    s[5] = uniform(1, 3 * L_ + 2);
    if (kind > 3) s[3] = uniform(1, 2 * L_);  // reduce: R0
    // At most about 40 beats a vector: drop outer dims until it fits.
    for (size_t d = 0; d < 5 && isa::num_elements(s) > 40 * L_; ++d)
      if (d != 3 || kind <= 3) s[d] = 1;
    VecCase v;
    if (kind <= 2) {
      const char* fns[] = {"add", "sub", "mul", "max", "min"};
      v = make("", "eltwise", fns[uniform(0, 4)], dt, s);
      v.broadcast_b = uniform(0, 4) == 0;
    } else if (kind == 3) {
      v = make("", "activation", uniform(0, 1) ? "relu" : "leaky_relu", dt, s);
      v.alpha =
          static_cast<double>(uniform(0, 3) == 0 ? uniform(0, 1) * 65536 : uniform(0, 65536)) /
          65536.0;
      v.frac_bits = uniform(0, 16);
    } else {
      const char* fns[] = {"sum", "max", "min"};
      v = make("", "reduce", fns[uniform(0, 2)], dt, s);
      v.accumulate = uniform(0, 3) == 0;
    }
    v.name = fmt::format("random #{}: {} {} {}", index, v.op, v.fn, isa::dtype_name(dt));
    if (uniform(0, 2) == 0) {
      v.ready.resize(static_cast<size_t>(uniform(1, 12)));
      for (auto& r : v.ready) r = uniform(0, 1) ? 1 : 0;
      v.ready[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.ready.size()) - 1))] = 1;
    }
    fill(v, true);
    return v;
  }

 private:
  int L_;
  std::mt19937_64 rng_;
};

void print_mismatch(std::ostream& out, const VecCase& v, int lanes,
                    const std::vector<int64_t>& expected, const std::vector<int64_t>& seen,
                    const std::string& what) {
  fmt::print(out, "MISMATCH ({}) in vector '{}' on the {}-lane vector unit\n", what, v.name, lanes);
  fmt::print(
      out, "  {} fn={} {} shape [{}]{}{}{}\n", v.op, v.fn, isa::dtype_name(v.dtype),
      fmt::join(v.shape, ","), v.broadcast_b ? ", b broadcast along the last dim" : "",
      v.op == "activation" ? fmt::format(", alpha {} frac_bits {}", v.alpha, v.frac_bits) : "",
      v.accumulate ? ", accumulate" : "");
  fmt::print(out, "  a:\n{}\n", show(v.a));
  if (!v.b.empty()) fmt::print(out, "  b:\n{}\n", show(v.b));
  if (v.accumulate) fmt::print(out, "  out before:\n{}\n", show(v.old_out));
  fmt::print(out, "  expected out (reference):\n{}\n  seen out (RTL):\n{}\n", show(expected),
             show(seen));
  size_t shown = 0;
  for (size_t i = 0; i < expected.size() && shown < 8; ++i) {
    if (expected[i] == seen[i]) continue;
    fmt::print(out, "  out[{}]: expected {}, seen {}\n", i, expected[i], seen[i]);
    ++shown;
  }
}

}  // namespace

UnitVerifyReport verify_vector_unit(const VectorUnitFactory& make_unit,
                                    const VectorUnitFactory& make_traced,
                                    const UnitVerifyOptions& options, std::ostream& out) {
  VectorBridge bridge(make_unit());
  const int L = bridge.lanes();
  const std::map<std::string, int64_t> params{{"lanes", L}};
  CaseSource source(L, options.seed);
  UnitVerifyReport rep;

  auto check = [&](const VecCase& v) {
    const isa::OpDef& op = isa::OpTable::builtin().get(v.op);
    const Image image = build_image(op, v);
    FRACSIM_ASSERT(vector_unit_runs(op, image.instr), "verify: a vector the unit does not run");
    return check_vector(
        bridge, op, image, v.ready, params, read_out,
        [&](const auto& expected, const auto& seen, const std::string& what) {
          print_mismatch(out, v, L, expected, seen, what);
        },
        make_traced, options.wave, rep, out);
  };

  run_vectors(source, options, bridge.unit(), rep, check);
  return rep;
}

}  // namespace fracsim::rtl
