// pool2d_argmax: the flattened whole-input index of each max-pooling window's maximum, by hand
// (ONNX's MaxPool indices), and the offsets a piece carries so that it knows its position.
#include <doctest/doctest.h>

#include "isa/decompose/piece.h"
#include "isa/reference.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim::isa;

namespace {
using fracsim::testing::get;
using fracsim::testing::put;
const OpDef& argmax() { return OpTable::builtin().get("pool2d_argmax"); }

// Attributes in declaration order: kernel_h, kernel_w, stride_h, stride_w, dilation_h,
// dilation_w, pad_h0, pad_h1, pad_w0, pad_w1, index_base, index_stride_n, _c, _h, _w.
enum Attr { kKh, kKw, kSh, kSw, kDh, kDw, kPh0, kPh1, kPw0, kPw1, kBase, kSn, kSc, kSH, kSW };

Instruction instr(std::vector<TensorRef> operands, std::vector<int64_t> attrs) {
  Instruction in;
  in.opcode = argmax().opcode;
  in.operands = std::move(operands);
  in.attrs = std::move(attrs);
  return in;
}
}  // namespace

TEST_CASE("pool2d_argmax attribute layout") {
  const std::vector<std::string> names = {
      "kernel_h",   "kernel_w",       "stride_h",       "stride_w",       "dilation_h",
      "dilation_w", "pad_h0",         "pad_h1",         "pad_w0",         "pad_w1",
      "index_base", "index_stride_n", "index_stride_c", "index_stride_h", "index_stride_w"};
  REQUIRE(argmax().attributes.size() == names.size());
  for (size_t a = 0; a < names.size(); ++a) CHECK(argmax().attributes[a].name == names[a]);
}

TEST_CASE("pool2d_argmax by hand: row and column major, ties, padding, a padding-only window") {
  std::vector<uint8_t> mem(512, 0);
  std::vector<float> x(25);
  for (int i = 0; i < 25; ++i) x[i] = static_cast<float>(i + 1);  // [1,1,5,5] = 1..25
  put<float>(mem, 0, x);
  const TensorRef in = make_tensor(0, DType::f32, {1, 1, 5, 5});
  const TensorRef out = make_tensor(256, DType::i32, {1, 1, 2, 2});
  MemoryView m{mem.data(), mem.size()};
  // ONNX test_maxpool_with_argmax_2d_precomputed_strides: kernel 2, stride 2, column major.
  const Instruction col = instr({in, out}, {2, 2, 2, 2, 1, 1, 0, 0, 0, 0, 0, 25, 25, 1, 5});
  bind_dims(argmax(), col, "t");
  execute_reference(argmax(), col, m);
  CHECK(get<int32_t>(mem, 256, 4) == std::vector<int32_t>{6, 16, 8, 18});
  Instruction row = col;
  row.attrs[kSH] = 5;
  row.attrs[kSW] = 1;
  execute_reference(argmax(), row, m);
  CHECK(get<int32_t>(mem, 256, 4) == std::vector<int32_t>{6, 8, 16, 18});
  // Ties: the first maximum in window order; padding is never picked (all values negative).
  put<float>(mem, 0, std::vector<float>(25, -3.0f));
  put<float>(mem, 4 * 7, {-1.0f, -1.0f});  // (1,2) and (1,3)
  Instruction padded = row;                // kernel 3, stride 2, pads 1: [1,1,3,3] out
  padded.attrs[kKh] = padded.attrs[kKw] = 3;
  for (int a : {kPh0, kPh1, kPw0, kPw1}) padded.attrs[a] = 1;
  padded.operands[1] = make_tensor(256, DType::i32, {1, 1, 3, 3});
  bind_dims(argmax(), padded, "t");
  execute_reference(argmax(), padded, m);
  // Window (r, c) covers rows 2r-1..2r+1, cols 2c-1..2c+1; (1,2)=7 is in windows (0..1, 1),
  // (1,3)=8 in (0..1, 1..2); otherwise the first element the window covers.
  CHECK(get<int32_t>(mem, 256, 9) == std::vector<int32_t>{0, 7, 8, 5, 7, 8, 15, 16, 18});
  // One input row, kernel 2 rows at dilation 3 and pads 2/2: the window reads rows -2 and 1,
  // both padding, so it covers no input element and gives -1.
  Instruction dil = row;
  dil.operands = {make_tensor(0, DType::f32, {1, 1, 1, 5}),
                  make_tensor(256, DType::i32, {1, 1, 1, 1})};
  dil.attrs[kKh] = 2;
  dil.attrs[kDh] = 3;
  dil.attrs[kPh0] = 2;
  dil.attrs[kPh1] = 2;
  dil.attrs[kKw] = 5;
  bind_dims(argmax(), dil, "t");
  execute_reference(argmax(), dil, m);
  CHECK(get<int32_t>(mem, 256, 1) == std::vector<int32_t>{-1});
}

TEST_CASE("a piece of pool2d_argmax adds its starts times the index strides to index_base") {
  const TensorRef in = make_tensor(0, DType::u8, {2, 3, 6, 7});
  const TensorRef out = make_tensor(512, DType::i32, {2, 3, 3, 3});
  // kernel 2x3, stride 2, pads w 0/1: Wo = (7 + 1 - 3) / 2 + 1 = 3.
  const Instruction whole = instr({in, out}, {2, 3, 2, 2, 1, 1, 0, 0, 0, 1, 0, 126, 42, 7, 1});
  bind_dims(argmax(), whole, "t");
  PieceRange r;
  // dims N, C, Ho, Wo, Hi, Wi: n 1, c 2, ho 1..2, wo 2 (window dims follow their outputs).
  r.begin = {1, 2, 1, 2, 0, 0};
  r.len = {1, 1, 2, 1, 0, 0};
  const Instruction p = slice_instruction(argmax(), whole, r);
  // Input rows 2..5 (ho 1..2 at stride 2), cols 4..6 (wo 2; the end pad lies past its window).
  CHECK(p.operands[0].shape == Shape{1, 1, 4, 3});
  CHECK(p.attrs[kBase] == 1 * 126 + 2 * 42 + 2 * 7 + 4 * 1);
  CHECK(p.attrs[kPw1] == 0);
  // The piece's indices are the whole op's: run both on the same memory.
  std::vector<uint8_t> a(1024, 0);
  for (int i = 0; i < 2 * 3 * 6 * 7; ++i) a[i] = static_cast<uint8_t>((i * 37) % 251);
  std::vector<uint8_t> b = a;
  execute_reference(argmax(), whole, MemoryView{a.data(), a.size()});
  execute_reference(argmax(), p, MemoryView{b.data(), b.size()});
  const TensorRef po = p.operands[1];
  for (int64_t h = 0; h < 2; ++h) {
    const uint64_t at = po.address + 4 * static_cast<uint64_t>(h * po.strides[2]);
    CHECK(get<int32_t>(b, at, 1) == get<int32_t>(a, at, 1));
    CHECK(get<int32_t>(b, at, 1)[0] != 0);
  }
}
