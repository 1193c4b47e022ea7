#include "rtl/sort_verify.h"

#include <algorithm>
#include <chrono>
#include <cstring>
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
#include "rtl/sort_bridge.h"
#include "sim/leaf_unit.h"

namespace fracsim::rtl {
namespace {

struct MergeCase {
  std::string name;
  isa::DType dtype = isa::DType::i32;
  int64_t M = 1, N = 0, runs = 2;
  bool descending = false;
  bool in_place = false;      // out is the same tensor as in
  std::vector<int32_t> data;  // M*N
  std::vector<uint8_t> ready;
};

struct Image {
  isa::Instruction instr;
  std::vector<uint8_t> bytes;
};

Image build_image(const isa::OpDef& op, const MergeCase& v) {
  const uint32_t sz = isa::dtype_size(v.dtype);
  const auto n = static_cast<uint64_t>(v.M * v.N);
  const uint64_t out_addr = v.in_place ? 0 : (n * sz + 3) / 4 * 4;
  Image img;
  img.bytes.assign(out_addr + n * sz + 4, 0);
  for (size_t i = 0; i < v.data.size(); ++i) {
    const auto x = static_cast<uint32_t>(v.data[i]);
    std::memcpy(&img.bytes[i * sz], &x, sz);
  }
  img.instr.opcode = op.opcode;
  img.instr.operands = {isa::make_tensor(0, v.dtype, {v.M, v.N}),
                        isa::make_tensor(out_addr, v.dtype, {v.M, v.N})};
  img.instr.attrs.resize(op.attributes.size());
  for (size_t i = 0; i < op.attributes.size(); ++i) {
    const std::string& a = op.attributes[i].name;
    img.instr.attrs[i] = a == "runs" ? v.runs : (a == "descending" ? (v.descending ? 1 : 0) : 0);
  }
  return img;
}

std::vector<int32_t> read_out(const Image& img) {
  const isa::TensorRef& o = img.instr.operands[1];
  const uint32_t sz = isa::dtype_size(o.dtype);
  std::vector<int32_t> r(static_cast<size_t>(o.elements()));
  for (size_t i = 0; i < r.size(); ++i) {
    const uint8_t* p = &img.bytes[o.address + i * sz];
    if (sz == 1)
      r[i] = static_cast<int8_t>(p[0]);
    else if (sz == 2) {
      int16_t x;
      std::memcpy(&x, p, 2);
      r[i] = x;
    } else
      std::memcpy(&r[i], p, 4);
  }
  return r;
}

class CaseSource {
 public:
  CaseSource(int width, uint64_t seed) : W_(width), rng_(seed) {}
  int64_t uniform(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint64_t>(hi - lo + 1));
  }
  int32_t value(isa::DType dt, int64_t spread) {
    const int64_t lo = dt == isa::DType::i8 ? -128 : (dt == isa::DType::i16 ? -32768 : INT32_MIN);
    if (uniform(0, 7) == 0) return static_cast<int32_t>(uniform(0, 1) ? lo : -lo - 1);
    if (spread > 0) return static_cast<int32_t>(uniform(-spread, spread));  // many equal keys
    return static_cast<int32_t>(uniform(lo, -lo - 1));
  }
  // Random data with each run sorted in the case's order (unless `unsorted`).
  void fill(MergeCase& v, bool unsorted = false, int64_t spread = 0) {
    v.data.assign(static_cast<size_t>(v.M * v.N), 0);
    for (auto& x : v.data) x = value(v.dtype, spread);
    if (unsorted) return;
    const int64_t la = v.runs == 2 && v.N > 1 ? (v.N + 1) / 2 : v.N;
    for (int64_t m = 0; m < v.M; ++m) {
      auto row = v.data.begin() + m * v.N;
      for (auto [b, e] : {std::pair<int64_t, int64_t>{0, la}, {la, v.N}}) {
        std::sort(row + b, row + e);
        if (v.descending) std::reverse(row + b, row + e);
      }
    }
  }
  static MergeCase make(std::string name, isa::DType dt, int64_t M, int64_t N) {
    MergeCase v;
    v.name = std::move(name);
    v.dtype = dt;
    v.M = M;
    v.N = N;
    return v;
  }
  std::vector<MergeCase> directed() {
    using isa::DType;
    std::vector<MergeCase> vs;
    auto given = [&](const char* name, DType dt, int64_t N, std::vector<int32_t> d, bool desc) {
      MergeCase v = make(name, dt, 1, N);
      v.data = std::move(d);
      v.descending = desc;
      vs.push_back(v);
    };
    given("i8 extremes, signed order", DType::i8, 6, {-128, -1, 127, -127, 0, 126}, false);
    given("i32 extremes, descending", DType::i32, 4, {INT32_MAX, INT32_MIN, 0, -1}, true);
    given("equal keys across the runs", DType::i16, 5, {3, 3, 3, 3, 3}, false);
    given("run B entirely first", DType::i32, 6, {10, 11, 12, 1, 2, 3}, false);
    given("runs not sorted (greedy merge still defined)", DType::i16, 7, {5, 1, 9, 0, 8, 2, 7},
          false);
    auto rnd = [&](MergeCase v, bool unsorted = false, int64_t spread = 0) {
      fill(v, unsorted, spread);
      vs.push_back(v);
    };
    rnd(make("empty: N = 0", DType::i8, 3, 0));
    rnd(make("empty: M = 0", DType::i8, 0, 5));
    rnd(make("one element", DType::i32, 1, 1));
    rnd(make("N = width", DType::i16, 2, W_));
    rnd(make("N = width + 1", DType::i8, 3, W_ + 1));
    {
      MergeCase v = make("one run (a copy)", DType::i32, 2, 3 * W_ + 1);
      v.runs = 1;
      rnd(v);
    }
    {
      MergeCase v = make("in place, descending, many equal keys", DType::i16, 4, 5 * W_ - 1);
      v.in_place = v.descending = true;
      rnd(v, false, 3);
    }
    for (auto [name, ready] : {std::pair<const char*, std::vector<uint8_t>>{
                                   "back-pressure: ready every other cycle", {1, 0}},
                               {"back-pressure: ready one cycle in five", {0, 0, 0, 0, 1}}}) {
      MergeCase v = make(name, DType::i8, 3, 4 * W_ + 3);
      v.ready = ready;
      rnd(v);
    }
    return vs;
  }
  MergeCase random(int64_t index) {
    const isa::DType dts[] = {isa::DType::i8, isa::DType::i16, isa::DType::i32};
    MergeCase v = make(fmt::format("random #{}", index), dts[uniform(0, 2)], uniform(1, 4),
                       uniform(1, 6 * W_));
    v.runs = uniform(0, 5) == 0 ? 1 : 2;
    v.descending = uniform(0, 1) == 1;
    v.in_place = uniform(0, 3) == 0;
    if (uniform(0, 2) == 0) {
      v.ready.resize(static_cast<size_t>(uniform(1, 12)));
      for (auto& r : v.ready) r = uniform(0, 1) ? 1 : 0;
      v.ready[static_cast<size_t>(uniform(0, static_cast<int64_t>(v.ready.size()) - 1))] = 1;
    }
    fill(v, uniform(0, 9) == 0, uniform(0, 2) == 0 ? uniform(1, 4) : 0);
    return v;
  }

 private:
  int W_;
  std::mt19937_64 rng_;
};

std::string show(const std::vector<int32_t>& xs, int64_t inner) {
  std::string s;
  for (size_t i = 0; i < xs.size() && i < 256; ++i)
    s += fmt::format(
        "{}{} ", i % static_cast<size_t>(std::max<int64_t>(inner, 1)) == 0 ? "\n    " : "", xs[i]);
  return s;
}

}  // namespace

UnitVerifyReport verify_sort_unit(const SortUnitFactory& make_unit,
                                  const SortUnitFactory& make_traced,
                                  const UnitVerifyOptions& options, std::ostream& out) {
  const isa::OpDef& op = isa::OpTable::builtin().get("merge");
  SortBridge bridge(make_unit());
  const int W = bridge.width();
  const std::map<std::string, int64_t> params{{"width", W}};
  CaseSource source(W, options.seed);
  UnitVerifyReport rep;
  auto check = [&](const MergeCase& v) {
    return check_vector(
        bridge, op, build_image(op, v), v.ready, params, read_out,
        [&](const auto& expected, const auto& seen, const std::string& what) {
          fmt::print(out, "MISMATCH ({}) in vector '{}' on the width-{} sort unit\n", what, v.name,
                     W);
          fmt::print(out, "  merge {} [{},{}] runs={}{}{}\n", isa::dtype_name(v.dtype), v.M, v.N,
                     v.runs, v.descending ? " descending" : "", v.in_place ? " in place" : "");
          fmt::print(out, "  in (rows):{}\n  expected out (reference):{}\n  seen out (RTL):{}\n",
                     show(v.data, v.N), show(expected, v.N), show(seen, v.N));
        },
        make_traced, options.wave, rep, out);
  };
  run_vectors(source, options, bridge.unit(), rep, check);
  return rep;
}

}  // namespace fracsim::rtl
