// Reference semantics on small cases computed by hand.
#include <doctest/doctest.h>

#include <cstring>
#include <limits>

#include "isa/reference.h"

using namespace fracsim::isa;

namespace {
template <typename T>
void put(std::vector<uint8_t>& mem, uint64_t addr, std::vector<T> v) {
  std::memcpy(mem.data() + addr, v.data(), v.size() * sizeof(T));
}
template <typename T>
std::vector<T> get(const std::vector<uint8_t>& mem, uint64_t addr, size_t n) {
  std::vector<T> v(n);
  std::memcpy(v.data(), mem.data() + addr, n * sizeof(T));
  return v;
}
const OpTable& ops() { return OpTable::builtin(); }
}  // namespace

TEST_CASE("matmul f32 by hand, with and without accumulate") {
  std::vector<uint8_t> mem(256, 0);
  put<float>(mem, 0, {1, 2, 3, 4, 5, 6});        // a [2,3]
  put<float>(mem, 64, {1, 0, 0, 1, 1, 1});       // b [3,2]
  put<float>(mem, 128, {10, 20, 30, 40});        // out [2,2]
  Instruction in;
  in.opcode = ops().get("matmul").opcode;
  in.operands = {make_tensor(0, DType::f32, {2, 3}), make_tensor(64, DType::f32, {3, 2}),
                 make_tensor(128, DType::f32, {2, 2})};
  in.attrs = {1};
  execute_reference(ops().get("matmul"), in, MemoryView{mem.data(), mem.size()});
  // [1 2 3; 4 5 6] x [1 0; 0 1; 1 1] = [4 5; 10 11], plus the old out.
  CHECK(get<float>(mem, 128, 4) == std::vector<float>{14, 25, 40, 51});
  in.attrs = {0};
  execute_reference(ops().get("matmul"), in, MemoryView{mem.data(), mem.size()});
  CHECK(get<float>(mem, 128, 4) == std::vector<float>{4, 5, 10, 11});
}

TEST_CASE("matmul i8 accumulates in i32 with wrap-around") {
  std::vector<uint8_t> mem(256, 0);
  put<int8_t>(mem, 0, {-128, -128});   // a [1,2]
  put<int8_t>(mem, 64, {-128, -128});  // b [2,1]
  put<int32_t>(mem, 128, {2147483647 - 32768 + 1});
  Instruction in;
  in.opcode = ops().get("matmul").opcode;
  in.operands = {make_tensor(0, DType::i8, {1, 2}), make_tensor(64, DType::i8, {2, 1}),
                 make_tensor(128, DType::i32, {1, 1})};
  in.attrs = {1};
  execute_reference(ops().get("matmul"), in, MemoryView{mem.data(), mem.size()});
  // old = 2^31 - 32768; adding 2 x 16384 gives 2^31, which wraps to -2^31.
  CHECK(get<int32_t>(mem, 128, 1)[0] == -2147483647 - 1);
}

TEST_CASE("eltwise saturates integers, broadcasts with stride 0; relu clamps") {
  const OpDef& elt = ops().get("eltwise");
  std::vector<uint8_t> mem(256, 0);
  put<int8_t>(mem, 0, {100, -100, 5, 7});  // a [2,2]
  put<int8_t>(mem, 64, {100, -100});       // b row, broadcast over rows
  Instruction in;
  in.opcode = elt.opcode;
  TensorRef b = make_tensor(64, DType::i8, {2, 2});
  b.strides = {0, 1};
  in.operands = {make_tensor(0, DType::i8, {2, 2}), b, make_tensor(128, DType::i8, {2, 2})};
  in.attrs = {0};  // add
  execute_reference(elt, in, MemoryView{mem.data(), mem.size()});
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{127, -128, 105, -93});
  in.attrs = {1};  // mul
  execute_reference(elt, in, MemoryView{mem.data(), mem.size()});
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{127, 127, 127, -128});
  in.attrs = {2};  // max
  execute_reference(elt, in, MemoryView{mem.data(), mem.size()});
  CHECK(get<int8_t>(mem, 128, 4) == std::vector<int8_t>{100, -100, 100, 7});

  const OpDef& act = ops().get("activation");
  put<float>(mem, 0, {-1.5f, 0.0f, 2.25f, -0.0f});
  Instruction r;
  r.opcode = act.opcode;
  r.operands = {make_tensor(0, DType::f32, {2, 2}), make_tensor(128, DType::f32, {2, 2})};
  r.attrs = {0};
  execute_reference(act, r, MemoryView{mem.data(), mem.size()});
  CHECK(get<float>(mem, 128, 4) == std::vector<float>{0, 0, 2.25f, 0});
}

TEST_CASE("random data segments are deterministic and in range") {
  DataSegment s;
  s.kind = DataSegment::Kind::random;
  s.dtype = DType::i8;
  s.count = 1000;
  s.seed = 42;
  s.lo = -8;
  s.hi = 8;
  std::vector<uint8_t> a(1000), b(1000);
  fill_data_segment(s, MemoryView{a.data(), a.size()});
  fill_data_segment(s, MemoryView{b.data(), b.size()});
  CHECK(a == b);
  int lo = 0, hi = 0;
  for (uint8_t v : a) {
    lo = std::min<int>(lo, static_cast<int8_t>(v));
    hi = std::max<int>(hi, static_cast<int8_t>(v));
  }
  CHECK(lo == -8);
  CHECK(hi == 8);
}
