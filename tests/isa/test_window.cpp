// Reference semantics of the window ops (conv, pool, lrn) on small cases computed by hand or by a
// separate direct computation of the op's definition, and the rule that makes their halo
// decomposition exact: a piece sliced along an output dim, with the pads that remain at its
// edges, computes exactly the whole op's outputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <numeric>

#include "isa/decompose/execute.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"
#include "isa/reference.h"
#include "tests/common/instruction_helpers.h"
#include "tests/common/memory_helpers.h"

using namespace fracsim::isa;

namespace {

using fracsim::testing::run_reference;
const OpTable& ops() { return OpTable::builtin(); }

using fracsim::testing::get;
using fracsim::testing::put;
// first, first+1, ..., as floats.
std::vector<float> ramp(size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// An instruction of `op` with its default attributes, the named ones overridden (so that the
// cases read like the op's YAML and do not depend on the attribute order).
Instruction make(const std::string& op_name, std::vector<TensorRef> operands,
                 const std::map<std::string, int64_t>& set) {
  const OpDef& op = ops().get(op_name);
  Instruction in;
  in.opcode = op.opcode;
  in.operands = std::move(operands);
  for (const AttrDef& a : op.attributes) in.attrs.push_back(a.default_value);
  for (const auto& [name, value] : set) {
    REQUIRE_MESSAGE(op.attr_index(name) >= 0, op_name, " has no attribute ", name);
    in.attrs[op.attr_index(name)] = value;
  }
  bind_dims(op, in, "test");  // the case itself is a valid instruction
  return in;
}
int64_t fn_index(const std::string& op, const std::string& fn) {
  const AttrDef& a = ops().get(op).attributes[ops().get(op).attr_index("fn")];
  return std::find(a.values.begin(), a.values.end(), fn) - a.values.begin();
}
int64_t attr_of(const Instruction& in, const std::string& name) {
  return in.attrs[ops().get(in.opcode).attr_index(name)];
}

// Runs `in` whole, then as pieces cut along dim `dim` at `cuts` (each piece sliced with its halo
// and pads; along a kernel's taps, in tap order), within each cut every index of dim `inner`
// alone when one is named, and checks that both write the same output bytes. Returns the
// pieces.
std::vector<Instruction> check_pieces(const Instruction& in, std::vector<uint8_t> mem,
                                      const std::string& dim, const std::vector<int64_t>& cuts,
                                      const std::string& inner = "") {
  const OpDef& op = ops().get(in.opcode);
  std::vector<uint8_t> whole = mem, pieces = mem;
  run_reference(in, whole);
  const std::vector<int64_t> ext = dim_extents(op, in);
  const int d = op.dim_index(dim), e = inner.empty() ? -1 : op.dim_index(inner);
  std::vector<int64_t> bounds = cuts;
  bounds.insert(bounds.begin(), 0);
  bounds.push_back(ext[d]);
  std::vector<Instruction> out;
  for (size_t p = 0; p + 1 < bounds.size(); ++p)
    for (int64_t k = 0; k < (e < 0 ? 1 : ext[e]); ++k) {
      PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
      r.begin[d] = bounds[p];
      r.len[d] = bounds[p + 1] - bounds[p];
      if (e >= 0) {
        r.begin[e] = k;
        r.len[e] = 1;
      }
      out.push_back(slice_instruction(op, in, r));
      bind_dims(op, out.back(), "piece");  // a piece is a valid instruction of its own
      run_reference(out.back(), pieces);
    }
  auto [lo, hi] = in.operands.back().byte_span();
  CHECK(std::memcmp(whole.data() + lo, pieces.data() + lo, hi - lo) == 0);
  return out;
}
}  // namespace

TEST_CASE("conv2d f32: stride 2, dilation 2, asymmetric pads, two groups, accumulate") {
  // in [1,G=2,Ci=2,5,4] = -30..49, w [G=2,Co=2,Ci=2,2,2] = -7..24; pads h (1,0), w (0,1):
  // Ho = (5+1-3)/2+1 = 2, Wo = (4+1-3)/2+1 = 2. Output (oh, ow) reads rows 2*oh-1+{0,2} and
  // columns 2*ow+{0,2}; row -1 and column 4 are padding. E.g. out[g0,co0,0,0] =
  // in[0,0,1,0]*w[0,0,0,1,0] + in[0,0,1,2]*w[0,0,0,1,1] + in[0,1,1,0]*w[0,0,1,1,0] + in[0,1,1,2]*
  // w[0,0,1,1,1] = (-26)(-5) + (-24)(-4) + (-6)(-1) + (-4)(0) = 232. The rest by the same rule
  // (a direct loop over the definition, outside this code base).
  std::vector<uint8_t> mem(1024, 0);
  put(mem, 0, ramp(80, -30));
  put(mem, 512, ramp(32, -7));
  const std::vector<float> want = {232,  124, 504,  256,  -248, -100, -200, -64,
                                   1432, 716, 3096, 1536, 2232, 1132, 4952, 2496};
  Instruction in = make(
      "conv2d",
      {make_tensor(0, DType::f32, {1, 2, 2, 5, 4}), make_tensor(512, DType::f32, {2, 2, 2, 2, 2}),
       make_tensor(768, DType::f32, {1, 2, 2, 2, 2})},
      {{"stride_h", 2},
       {"stride_w", 2},
       {"dilation_h", 2},
       {"dilation_w", 2},
       {"pad_h0", 1},
       {"pad_w1", 1}});
  put(mem, 768, std::vector<float>(16, 99));  // overwritten without accumulate
  run_reference(in, mem);
  CHECK(get<float>(mem, 768, 16) == want);
  in.attrs[ops().get("conv2d").attr_index("accumulate")] = 1;
  run_reference(in, mem);
  std::vector<float> twice = want;
  for (float& v : twice) v *= 2;
  CHECK(get<float>(mem, 768, 16) == twice);
}

TEST_CASE("conv1d f32: two images, two input channels, pads 1 and 1") {
  // in [2,1,2,5]: image 0 channels [1 2 3 4 5], [1 1 1 1 1]; image 1 the negatives.
  // w [1,1,2,3]: channel 0 [1 0 -1], channel 1 [1 1 1].
  // Wo = 5; out[w] = in0[w-1] - in0[w+1] + in1[w-1] + in1[w] + in1[w+1] (padding zero):
  // image 0: [0-2+0+1+1, 1-3+3, 2-4+3, 3-5+3, 4-0+1+1+0] = [0, 1, 1, 1, 6].
  std::vector<uint8_t> mem(256, 0);
  put<float>(mem, 0, {1, 2, 3, 4, 5, 1, 1, 1, 1, 1, -1, -2, -3, -4, -5, -1, -1, -1, -1, -1});
  put<float>(mem, 128, {1, 0, -1, 1, 1, 1});
  run_reference(
      make("conv1d",
           {make_tensor(0, DType::f32, {2, 1, 2, 5}), make_tensor(128, DType::f32, {1, 1, 2, 3}),
            make_tensor(192, DType::f32, {2, 1, 1, 5})},
           {{"pad_w0", 1}, {"pad_w1", 1}}),
      mem);
  CHECK(get<float>(mem, 192, 10) == std::vector<float>{0, 1, 1, 1, 6, 0, -1, -1, -1, -6});
}

TEST_CASE("conv3d f32: a 2x2x2 kernel over a 2x2x2 input with one plane of padding in front") {
  // in = 1..8, w = 1..8 (d, h, w order); pad_d0 = 1 gives Do = 2, Ho = Wo = 1.
  // od = 0: plane kd = 0 is padding; kd = 1 reads plane 0: 1*5 + 2*6 + 3*7 + 4*8 = 70.
  // od = 1: plane 0 x w plane 0 (1+4+9+16 = 30) plus plane 1 x w plane 1 (25+36+49+64 = 174).
  std::vector<uint8_t> mem(256, 0);
  put(mem, 0, ramp(8, 1));
  put(mem, 64, ramp(8, 1));
  run_reference(make("conv3d",
                     {make_tensor(0, DType::f32, {1, 1, 1, 2, 2, 2}),
                      make_tensor(64, DType::f32, {1, 1, 1, 2, 2, 2}),
                      make_tensor(128, DType::f32, {1, 1, 1, 2, 1, 1})},
                     {{"pad_d0", 1}}),
                mem);
  CHECK(get<float>(mem, 128, 2) == std::vector<float>{70, 204});
}

TEST_CASE("conv1d on integers accumulates in i32 with wrap-around") {
  std::vector<uint8_t> mem(256, 0);
  SUBCASE("i8: two products of 2^14 carry an accumulating output past INT32_MAX") {
    put<int8_t>(mem, 0, {-128, -128});   // in [1,1,2,1]
    put<int8_t>(mem, 64, {-128, -128});  // w [1,1,2,1]
    put<int32_t>(mem, 128, {std::numeric_limits<int32_t>::max() - 32768 + 1});
    run_reference(
        make("conv1d",
             {make_tensor(0, DType::i8, {1, 1, 2, 1}), make_tensor(64, DType::i8, {1, 1, 2, 1}),
              make_tensor(128, DType::i32, {1, 1, 1, 1})},
             {{"accumulate", 1}}),
        mem);
    CHECK(get<int32_t>(mem, 128, 1)[0] == std::numeric_limits<int32_t>::min());
  }
  SUBCASE("i16: three products of 2^30 wrap to -2^30") {
    put<int16_t>(mem, 0, {-32768, -32768, -32768});   // in [1,1,1,3]
    put<int16_t>(mem, 64, {-32768, -32768, -32768});  // w [1,1,1,3]
    run_reference(
        make("conv1d",
             {make_tensor(0, DType::i16, {1, 1, 1, 3}), make_tensor(64, DType::i16, {1, 1, 1, 3}),
              make_tensor(128, DType::i32, {1, 1, 1, 1})},
             {}),
        mem);
    CHECK(get<int32_t>(mem, 128, 1)[0] == -(1 << 30));
  }
}

TEST_CASE("max pool ignores padding, also when every input is negative") {
  // in [1,1,3,3] = -1..-9, a 2x2 window, stride 1, pads 1 on every side: Ho = Wo = 4. The
  // corner windows cover one input element each.
  std::vector<uint8_t> mem(256, 0);
  std::vector<float> in(9);
  for (int i = 0; i < 9; ++i) in[i] = static_cast<float>(-(i + 1));
  put(mem, 0, in);
  run_reference(
      make("pool2d",
           {make_tensor(0, DType::f32, {1, 1, 3, 3}), make_tensor(64, DType::f32, {1, 1, 4, 4})},
           {{"fn", fn_index("pool2d", "max")},
            {"kernel_h", 2},
            {"kernel_w", 2},
            {"pad_h0", 1},
            {"pad_h1", 1},
            {"pad_w0", 1},
            {"pad_w1", 1}}),
      mem);
  CHECK(get<float>(mem, 64, 16) ==
        std::vector<float>{-1, -1, -2, -3, -1, -1, -2, -3, -4, -4, -5, -6, -7, -7, -8, -9});
}

TEST_CASE("avg pool f32 with and without count_include_pad") {
  // in [1,1,4] = 1 2 3 4, kernel 3, pads 1 and 1: windows {1,2} {1,2,3} {2,3,4} {3,4}.
  std::vector<uint8_t> mem(128, 0);
  put<float>(mem, 0, {1, 2, 3, 4});
  Instruction in = make(
      "pool1d", {make_tensor(0, DType::f32, {1, 1, 4}), make_tensor(64, DType::f32, {1, 1, 4})},
      {{"fn", fn_index("pool1d", "avg")}, {"kernel_w", 3}, {"pad_w0", 1}, {"pad_w1", 1}});
  run_reference(in, mem);
  CHECK(get<float>(mem, 64, 4) == std::vector<float>{1.5f, 2, 3, 3.5f});
  in.attrs[ops().get("pool1d").attr_index("count_include_pad")] = 1;
  run_reference(in, mem);
  // The padding counts: 3/3, 6/3, 9/3, 7/3 (one f32 division, rounded once).
  CHECK(get<float>(mem, 64, 4) == std::vector<float>{1, 2, 3, 7.0f / 3.0f});
}

TEST_CASE("avg pool on integers rounds half to even") {
  std::vector<uint8_t> mem(128, 0);
  SUBCASE("i32: pairs averaging 2.5, 3.5, -2.5, -3.5; windows with a pad") {
    put<int32_t>(mem, 0, {2, 3, 3, 4, -2, -3, -3, -4, 1, 3});
    // The first nine elements in pairs; the last window covers 1 and a pad (1/1 = 1).
    Instruction in = make(
        "pool1d", {make_tensor(0, DType::i32, {1, 1, 9}), make_tensor(64, DType::i32, {1, 1, 5})},
        {{"fn", fn_index("pool1d", "avg")}, {"kernel_w", 2}, {"stride_w", 2}, {"pad_w1", 1}});
    run_reference(in, mem);
    CHECK(get<int32_t>(mem, 64, 5) == std::vector<int32_t>{2, 4, -2, -4, 1});
    in.attrs[ops().get("pool1d").attr_index("kernel_w")] = 3;
    in.attrs[ops().get("pool1d").attr_index("pad_w1")] = 2;
    in.operands[0].shape[2] = 10;
    // Windows {2,3,3} {3,4,-2} {-2,-3,-3} {-3,-4,1} {1,3,pad}: 8/3, 5/3, -8/3, -6/3, 4/2 or 4/3.
    run_reference(in, mem);
    CHECK(get<int32_t>(mem, 64, 5) == std::vector<int32_t>{3, 2, -3, -2, 2});
    in.attrs[ops().get("pool1d").attr_index("count_include_pad")] = 1;
    run_reference(in, mem);
    CHECK(get<int32_t>(mem, 64, 5) == std::vector<int32_t>{3, 2, -3, -2, 1});
  }
  SUBCASE("i8: 5 with one pad counted is 2.5 -> 2; 7 is 3.5 -> 4") {
    put<int8_t>(mem, 0, {5, 7});
    run_reference(
        make("pool1d",
             {make_tensor(0, DType::i8, {1, 2, 1}), make_tensor(64, DType::i8, {1, 2, 1})},
             {{"fn", fn_index("pool1d", "avg")},
              {"kernel_w", 2},
              {"pad_w0", 1},
              {"count_include_pad", 1}}),
        mem);
    CHECK(get<int8_t>(mem, 64, 2) == std::vector<int8_t>{2, 4});
  }
}

TEST_CASE("pool3d: max and mean of a 2x2x2 block, f32 and i8") {
  std::vector<uint8_t> mem(128, 0);
  put(mem, 0, ramp(8, 1));
  put<int8_t>(mem, 32, {1, 2, 3, 4, 5, 6, 7, 8});
  for (const char* fn : {"max", "avg"}) {
    const std::map<std::string, int64_t> attrs = {
        {"fn", fn_index("pool3d", fn)}, {"kernel_d", 2}, {"kernel_h", 2}, {"kernel_w", 2}};
    run_reference(make("pool3d",
                       {make_tensor(0, DType::f32, {1, 1, 2, 2, 2}),
                        make_tensor(64, DType::f32, {1, 1, 1, 1, 1})},
                       attrs),
                  mem);
    run_reference(make("pool3d",
                       {make_tensor(32, DType::i8, {1, 1, 2, 2, 2}),
                        make_tensor(96, DType::i8, {1, 1, 1, 1, 1})},
                       attrs),
                  mem);
    // Mean 36/8 = 4.5: f32 exactly, i8 half to even -> 4.
    CHECK(get<float>(mem, 64, 1)[0] == (fn == std::string("max") ? 8.0f : 4.5f));
    CHECK(get<int8_t>(mem, 96, 1)[0] == (fn == std::string("max") ? 8 : 4));
  }
}

TEST_CASE("a dilated pool window that covers only padding gives 0") {
  // W = 1, kernel 3, dilation 2, pads 1 and 3 (both inside the dilated kernel of 5): the one
  // window's taps are -1, 1 and 3, all padding.
  std::vector<uint8_t> mem(128, 0);
  put<float>(mem, 0, {-5});
  put<float>(mem, 64, {99});
  for (const char* fn : {"max", "avg"}) {
    run_reference(
        make("pool1d",
             {make_tensor(0, DType::f32, {1, 1, 1}), make_tensor(64, DType::f32, {1, 1, 1})},
             {{"fn", fn_index("pool1d", fn)},
              {"kernel_w", 3},
              {"dilation_w", 2},
              {"pad_w0", 1},
              {"pad_w1", 3}}),
        mem);
    CHECK(get<float>(mem, 64, 1)[0] == 0.0f);
  }
}

TEST_CASE("lrn against a separate double-precision computation") {
  // The expected values come from a direct double-precision loop over the ONNX definition,
  // rounded to f32 (the inputs are chosen so that the f32 sums of squares are exact).
  std::vector<uint8_t> mem(256, 0);
  SUBCASE("size 3, alpha 0.5, beta 0.75, bias 2, in [1,5,1,2]") {
    put<float>(mem, 0, {1.0f, -2.0f, 0.5f, 3.0f, -1.5f, 0.25f, 2.0f, -0.5f, 1.25f, 1.0f});
    run_reference(
        make("lrn",
             {make_tensor(0, DType::f32, {1, 5, 1, 2}), make_tensor(64, DType::f32, {1, 5, 1, 2})},
             {{"size", 3},
              {"alpha", real_to_attr(0.5)},
              {"bias", real_to_attr(2.0)},
              {"pad_c0", 1},
              {"pad_c1", 1}}),
        mem);
    const std::vector<double> want = {0.5520158410072327, -0.685785710811615,   0.24537746608257294,
                                      1.0267540216445923, -0.6446528434753418,  0.09662236273288727,
                                      0.8164676427841187, -0.27503547072410583, 0.558577835559845,
                                      0.5520158410072327};
    const std::vector<float> got = get<float>(mem, 64, 10);
    for (size_t i = 0; i < want.size(); ++i)
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
  SUBCASE("the ONNX defaults (size 5, alpha 1e-4, beta 0.75, bias 1), in [1,6,1,1]") {
    put<float>(mem, 0, {3.0f, -7.5f, 12.0f, 0.5f, -20.0f, 9.0f});
    run_reference(
        make("lrn",
             {make_tensor(0, DType::f32, {1, 6, 1, 1}), make_tensor(64, DType::f32, {1, 6, 1, 1})},
             {}),
        mem);
    const std::vector<double> want = {2.9906179904937744,  -7.476517200469971,  11.891447067260742,
                                      0.49494895339012146, -19.814455032348633, 8.93557357788086};
    const std::vector<float> got = get<float>(mem, 64, 6);
    for (size_t i = 0; i < want.size(); ++i)
      CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

TEST_CASE("conv2d pieces cut inside the padding compute exactly the whole") {
  // in [1,1,2,4,5], kernel 3x3, pads 2 on every side, stride 1: Ho = 6, Wo = 7. Output rows
  // 0 and 1 see two and one padding rows: the cut after row 1 lies inside the padding.
  std::vector<uint8_t> mem(2048, 0);
  std::vector<float> in(40), w(18);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * static_cast<float>((i * 7) % 13) - 1.5f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f * static_cast<float>((i * 5) % 11) - 2.0f;
  put(mem, 0, in);
  put(mem, 256, w);
  Instruction whole = make(
      "conv2d",
      {make_tensor(0, DType::f32, {1, 1, 2, 4, 5}), make_tensor(256, DType::f32, {1, 1, 2, 3, 3}),
       make_tensor(512, DType::f32, {1, 1, 1, 6, 7})},
      {{"pad_h0", 2}, {"pad_h1", 2}, {"pad_w0", 2}, {"pad_w1", 2}});
  std::vector<Instruction> rows = check_pieces(whole, mem, "Ho", {1, 2, 5});
  // Row 1's windows start at input row -1: one padding row remains, and its halo is rows 0..1.
  CHECK(attr_of(rows[1], "pad_h0") == 1);
  CHECK(attr_of(rows[1], "pad_h1") == 0);
  CHECK(rows[1].operands[0].shape[3] == 2);
  // The last row's windows end past the input: input row 3 and two padding rows after it.
  CHECK(attr_of(rows[3], "pad_h0") == 0);
  CHECK(attr_of(rows[3], "pad_h1") == 2);
  check_pieces(whole, mem, "Wo", {1, 3, 6});
}

TEST_CASE("pool2d pieces cut inside the padding compute exactly the whole") {
  // in [1,2,5,5], kernel 3x3, stride 2, pads 2 (rows) and 1 (columns), i32 inputs: Ho = 4, Wo = 3.
  std::vector<uint8_t> mem(1024, 0);
  std::vector<int32_t> in(50);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int32_t>((i * 37) % 23) - 11;
  put(mem, 0, in);
  for (const char* fn : {"max", "avg"})
    for (int64_t include_pad : {0, 1}) {
      CAPTURE(fn);
      CAPTURE(include_pad);
      Instruction whole = make(
          "pool2d",
          {make_tensor(0, DType::i32, {1, 2, 5, 5}), make_tensor(512, DType::i32, {1, 2, 4, 3})},
          {{"fn", fn_index("pool2d", fn)},
           {"kernel_h", 3},
           {"kernel_w", 3},
           {"stride_h", 2},
           {"stride_w", 2},
           {"pad_h0", 2},
           {"pad_h1", 2},
           {"pad_w0", 1},
           {"pad_w1", 1},
           {"count_include_pad", include_pad}});
      std::vector<Instruction> rows = check_pieces(whole, mem, "Ho", {1, 3});
      // Row 0 keeps both padding rows; rows 1..2 (input rows 0..4) have none left; row 3's
      // window reaches 2 rows past the input.
      CHECK(attr_of(rows[0], "pad_h0") == 2);
      CHECK(attr_of(rows[1], "pad_h0") == 0);
      CHECK(attr_of(rows[2], "pad_h1") == 2);
      check_pieces(whole, mem, "Wo", {1, 2});
    }
}

TEST_CASE("lrn pieces along channels: the centre moves with pad_c0") {
  // size 5 over 7 channels: pad_c0 = pad_c1 = 2 for the whole tensor.
  std::vector<uint8_t> mem(512, 0);
  std::vector<float> in(14);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.75f * static_cast<float>((i * 5) % 9) - 3.0f;
  put(mem, 0, in);
  Instruction whole = make(
      "lrn", {make_tensor(0, DType::f32, {1, 7, 1, 2}), make_tensor(256, DType::f32, {1, 7, 1, 2})},
      {{"alpha", real_to_attr(0.25)}});
  std::vector<Instruction> p = check_pieces(whole, mem, "C", {1, 3, 6});
  // Outputs 1..2: channel 1's window starts at -1, so one pad remains and the piece's input
  // starts at channel 0; the centre of its first output is 0 + floor(4/2) - 1 = 1 of that
  // input, global channel 1 as in the whole op.
  CHECK(attr_of(p[1], "pad_c0") == 1);
  CHECK(p[1].operands[0].address == 0);
  CHECK(p[1].operands[0].shape[1] == 5);  // channels 0..4 serve outputs 1..2
  // Outputs 3..5 read channels 1..7 clipped to 1..6: no pad in front, one behind.
  CHECK(attr_of(p[2], "pad_c0") == 0);
  CHECK(attr_of(p[2], "pad_c1") == 1);
  CHECK(p[3].operands[0].shape[1] == 3);  // output 6 reads channels 4..6
  CHECK(attr_of(p[3], "pad_c1") == 2);
}

TEST_CASE("lrn on integers: fixed point with frac_bits, rounded half to even") {
  // i16, frac_bits 8 (256 = 1.0): channels {1.0, 2.0, 0.0}, size 3, alpha 1, beta 1, bias 1.
  //   c = 0: window {pad, 1.0, 2.0}: squares 5, 1 + 5/3 = 8/3, 1.0 / (8/3) = 0.375 -> 96
  //   c = 1: window {1.0, 2.0, 0.0}: squares 5, 2.0 / (8/3) = 0.75 -> 192
  //   c = 2: window {2.0, 0.0, pad}: squares 4, 0.0 -> 0
  const OpDef& op = ops().get("lrn");
  std::vector<uint8_t> mem(256, 0);
  put<int16_t>(mem, 0, {256, 512, 0});
  Instruction in;
  in.opcode = op.opcode;
  in.operands = {make_tensor(0, DType::i16, {1, 3, 1, 1}),
                 make_tensor(64, DType::i16, {1, 3, 1, 1})};
  for (const AttrDef& a : op.attributes) in.attrs.push_back(a.default_value);
  in.attrs[op.attr_index("size")] = 3;
  in.attrs[op.attr_index("alpha")] = real_to_attr(1.0);
  in.attrs[op.attr_index("beta")] = real_to_attr(1.0);
  in.attrs[op.attr_index("bias")] = real_to_attr(1.0);
  in.attrs[op.attr_index("pad_c0")] = 1;
  in.attrs[op.attr_index("pad_c1")] = 1;
  in.attrs[op.attr_index("frac_bits")] = 8;
  execute_reference(op, in, MemoryView{mem.data(), mem.size()});
  CHECK(get<int16_t>(mem, 64, 3) == std::vector<int16_t>{96, 192, 0});
}

TEST_CASE("pool2d pieces of the kernel's taps give the whole op bit for bit") {
  // in [1,1,5,6] f32 = -0.3, -0.6, ... (all negative, so that a piece whose taps see only
  // padding must not give 0), kernel 3x4, dilation 2 rows, pads (2,2) rows and (1,2) columns:
  // Ho = (5+4-5)/1+1 = 5, Wo = (6+3-4)/1+1 = 6.
  std::vector<uint8_t> mem(1024, 0);
  std::vector<float> in(30);
  for (size_t i = 0; i < in.size(); ++i) in[i] = -0.3f * static_cast<float>((i * 7) % 11 + 1);
  put(mem, 0, in);
  for (const char* fn : {"max", "avg"})
    for (int64_t include_pad : {0, 1}) {
      CAPTURE(fn);
      CAPTURE(include_pad);
      Instruction whole = make(
          "pool2d",
          {make_tensor(0, DType::f32, {1, 1, 5, 6}), make_tensor(512, DType::f32, {1, 1, 5, 6})},
          {{"fn", fn_index("pool2d", fn)},
           {"kernel_h", 3},
           {"kernel_w", 4},
           {"dilation_h", 2},
           {"pad_h0", 2},
           {"pad_h1", 2},
           {"pad_w0", 1},
           {"pad_w1", 2},
           {"count_include_pad", include_pad}});
      // Taps rows [0,1), [1,2), [2,3).
      std::vector<Instruction> p = check_pieces(whole, mem, "Kh", {1, 2});
      // The middle piece: one tap row, one before and one after it; it continues the windows
      // and does not complete them. Output row 0, tap 1 reads row 0*1 - 2 + 1*2 = 0: no pad
      // before; the last output row 4 reads row 4, no pad after. Its input is the whole.
      CHECK(attr_of(p[1], "kernel_h") == 1);
      CHECK(attr_of(p[1], "tap_h0") == 1);
      CHECK(attr_of(p[1], "tap_h1") == 1);
      CHECK(attr_of(p[1], "accumulate") == 1);
      CHECK(attr_of(p[1], "final") == 0);
      CHECK(attr_of(p[1], "pad_h0") == 0);
      CHECK(attr_of(p[1], "pad_h1") == 0);
      CHECK(p[1].operands[0].shape[2] == 5);
      // The first piece (tap row 0) reads rows -2..2: two pad rows, input rows 0..2, and the
      // 2 rows after them are outside its operand (in_h1).
      CHECK(attr_of(p[0], "accumulate") == 0);
      CHECK(attr_of(p[0], "pad_h0") == 2);
      CHECK(p[0].operands[0].shape[2] == 3);
      CHECK(attr_of(p[0], "in_h1") == 2);
      CHECK(attr_of(p[2], "final") == 1);
      CHECK(attr_of(p[2], "in_h0") == 2);
      // Each tap row alone, and within it each tap column: 12 pieces.
      CHECK(check_pieces(whole, mem, "Kh", {1, 2}, "Kw").size() == 12);
    }
}

TEST_CASE(
    "pool2d pieces: the input frame is cut to the windows' reach, pieces alike but for "
    "their place are equal, and their taps still count the whole windows") {
  // in [1,1,12,4] f32, kernel 3x3, pads 1 all round, stride 1: Ho = 12, Wo = 4. Output rows
  // 3..5 read input rows 2..6; no tap of theirs reads outside those 5 rows, so the 2 input rows
  // before and the 5 after decide nothing: the piece's frame is 0 and 0, as is that of rows
  // 6..8 (input rows 5..9). Rows 0..2 keep pad_h0 = 1 (the frame before them is 0 anyway).
  std::vector<uint8_t> mem(1024, 0);
  std::vector<float> in(48);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.25f * static_cast<float>((i * 5) % 13) - 1.0f;
  put(mem, 0, in);
  for (int64_t include_pad : {0, 1}) {
    CAPTURE(include_pad);
    Instruction whole = make(
        "pool2d",
        {make_tensor(0, DType::f32, {1, 1, 12, 4}), make_tensor(512, DType::f32, {1, 1, 12, 4})},
        {{"fn", fn_index("pool2d", "avg")},
         {"kernel_h", 3},
         {"kernel_w", 3},
         {"pad_h0", 1},
         {"pad_h1", 1},
         {"pad_w0", 1},
         {"pad_w1", 1},
         {"count_include_pad", include_pad}});
    std::vector<Instruction> rows = check_pieces(whole, mem, "Ho", {3, 6, 9});
    CHECK(attr_of(rows[1], "in_h0") == 0);
    CHECK(attr_of(rows[1], "in_h1") == 0);
    CHECK(rows[1].attrs == rows[2].attrs);
    CHECK(rows[1].operands[0].shape == rows[2].operands[0].shape);
    CHECK(attr_of(rows[0], "pad_h0") == 1);
    CHECK(attr_of(rows[3], "pad_h1") == 1);
    // Rows 3..5 cut per kernel row: tap row 0's windows read rows 0..2 of the piece's input,
    // and their whole windows reach 2 rows further (taps 1 and 2), which are input: its frame
    // after is 2 (its operand ends 2 rows before the piece's). Tap row 2 reads rows 2..4 and
    // its whole windows 2 rows before them: its frame before is 2. The pieces of the cut piece
    // give what the cut piece gives, bit for bit.
    std::vector<Instruction> taps = check_pieces(rows[1], mem, "Kh", {1, 2});
    CHECK(attr_of(taps[0], "in_h0") == 0);
    CHECK(attr_of(taps[0], "in_h1") == 2);
    CHECK(attr_of(taps[2], "in_h0") == 2);
    CHECK(attr_of(taps[2], "in_h1") == 0);
  }
}

TEST_CASE("pool2d taps: a piece whose taps all fall in the padding has an empty input") {
  // in [1,1,1,4], kernel 3 rows, pads 2 and 2: Ho = (1+4-3)+1 = 3. Output row 0's tap 0 reads
  // row -2 and output row 2's tap 2 reads row 2: cut at tap 1, the first piece's rows are
  // -2..0 (one input row) and the last piece's 0..2; cut per tap, the piece of tap 0 over
  // output rows 0..0 reads only padding.
  std::vector<uint8_t> mem(256, 0);
  put(mem, 0, std::vector<float>{-1.5f, -2.5f, -0.5f, -3.0f});
  for (const char* fn : {"max", "avg"}) {
    CAPTURE(fn);
    Instruction whole =
        make("pool2d",
             {make_tensor(0, DType::f32, {1, 1, 1, 4}), make_tensor(128, DType::f32, {1, 1, 3, 4})},
             {{"fn", fn_index("pool2d", fn)}, {"kernel_h", 3}, {"pad_h0", 2}, {"pad_h1", 2}});
    const OpDef& op = ops().get("pool2d");
    const std::vector<int64_t> ext = dim_extents(op, whole);
    std::vector<uint8_t> want = mem, got = mem;
    run_reference(whole, want);
    // Taps one by one over output row 0 (taps 0 and 1 read rows -2 and -1: padding only).
    for (int64_t k = 0; k < 3; ++k) {
      PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
      r.len[op.dim_index("Ho")] = 1;
      r.begin[op.dim_index("Kh")] = k;
      r.len[op.dim_index("Kh")] = 1;
      const Instruction piece = slice_instruction(op, whole, r);
      bind_dims(op, piece, "piece");
      CHECK(piece.operands[0].shape[2] == (k == 2 ? 1 : 0));
      run_reference(piece, got);
    }
    CHECK(get<float>(got, 128, 4) == get<float>(want, 128, 4));
    // Every window of output row 0 covers input row 0 alone: max and mean are that row.
    CHECK(get<float>(want, 128, 4) == std::vector<float>{-1.5f, -2.5f, -0.5f, -3.0f});
  }
}

TEST_CASE("conv2d pieces of the kernel's taps accumulate in the reference order, bit for bit") {
  // in [1,1,Ci=2,5,5], w [1,Co=2,2,3,3], pads 2, dilation 1: Ho = Wo = 7, values with many
  // significant bits so that another order of the sums would round differently.
  std::vector<uint8_t> mem(2048, 0);
  std::vector<float> x(50), w(36);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.1f * static_cast<float>((i * 13) % 17) - 0.77f;
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.37f * static_cast<float>((i * 5) % 7) - 1.01f;
  put(mem, 0, x);
  put(mem, 256, w);
  Instruction whole = make(
      "conv2d",
      {make_tensor(0, DType::f32, {1, 1, 2, 5, 5}), make_tensor(256, DType::f32, {1, 2, 2, 3, 3}),
       make_tensor(512, DType::f32, {1, 1, 2, 7, 7})},
      {{"pad_h0", 2}, {"pad_h1", 2}, {"pad_w0", 2}, {"pad_w1", 2}});
  // Ci outermost, then the tap rows, then the tap columns: the order the sum runs in.
  std::vector<uint8_t> want = mem, got = mem;
  run_reference(whole, want);
  const OpDef& op = ops().get("conv2d");
  const std::vector<int64_t> ext = dim_extents(op, whole);
  int pieces = 0;
  for (int64_t ci = 0; ci < 2; ++ci)
    for (int64_t kh = 0; kh < 3; ++kh)
      for (int64_t kw = 0; kw < 3; kw += 2) {  // column taps [0,2) and [2,3)
        PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
        for (auto [dim, b, l] : {std::tuple<const char*, int64_t, int64_t>{"Ci", ci, 1},
                                 {"Kh", kh, 1},
                                 {"Kw", kw, kw == 0 ? 2 : 1}}) {
          r.begin[op.dim_index(dim)] = b;
          r.len[op.dim_index(dim)] = l;
        }
        const Instruction piece = slice_instruction(op, whole, r);
        bind_dims(op, piece, "piece");
        CHECK(attr_of(piece, "accumulate") == (pieces > 0 ? 1 : 0));
        run_reference(piece, got);
        ++pieces;
      }
  auto [lo, hi] = whole.operands[2].byte_span();
  CHECK(std::memcmp(want.data() + lo, got.data() + lo, hi - lo) == 0);
}

TEST_CASE("the decomposer splits a pool's taps only when nothing else fits") {
  // pool2d max, in [1,1,8,8] f32 (256 bytes), kernel 8x8: one output. Whole, the piece needs
  // 256 + 64 (the output's aligned tile) = 320 bytes; in a sub-block of 192 no other dim can
  // split, so Kh halves to 4: 4 rows of 32 bytes (128) + 64 = 192, two pieces.
  std::vector<uint8_t> mem(512, 0);
  std::vector<float> x(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -0.25f * static_cast<float>((i * 29) % 31);
  put(mem, 0, x);
  const OpDef& op = ops().get("pool2d");
  for (const char* fn : {"max", "avg"}) {
    CAPTURE(fn);
    const Instruction whole =
        make("pool2d",
             {make_tensor(0, DType::f32, {1, 1, 8, 8}), make_tensor(256, DType::f32, {1, 1, 1, 1})},
             {{"fn", fn_index("pool2d", fn)}, {"kernel_h", 8}, {"kernel_w", 8}});
    const NodeBudget budget{192, 1, "core"};
    const SequentialPlan plan = plan_sequential(op, ops(), whole, budget);
    REQUIRE(plan.pieces.size() == 2);
    CHECK(plan.tile[op.dim_index("Kh")] == 4);
    CHECK(plan.tile[op.dim_index("Kw")] == 8);
    CHECK(attr_of(plan.pieces[0], "final") == 0);
    CHECK(attr_of(plan.pieces[1], "accumulate") == 1);
    CHECK(attr_of(plan.pieces[1], "tap_h0") == 4);
    std::vector<uint8_t> want = mem, got = mem;
    run_reference(whole, want);
    execute_decomposed(op, ops(), whole, MemoryView{got.data(), got.size()}, {budget});
    CHECK(get<float>(got, 256, 1) == get<float>(want, 256, 1));
  }
  // Two outputs (Ho = 2, a 9x8 input): Ho splits first and the kernel stays whole (each
  // piece: 8 rows, 256 + 64 = 320 bytes, fits 320).
  const Instruction two =
      make("pool2d",
           {make_tensor(0, DType::f32, {1, 1, 9, 8}), make_tensor(320, DType::f32, {1, 1, 2, 1})},
           {{"kernel_h", 8}, {"kernel_w", 8}});
  const SequentialPlan plan = plan_sequential(op, ops(), two, NodeBudget{320, 1, "core"});
  CHECK(plan.pieces.size() == 2);
  CHECK(plan.tile[op.dim_index("Ho")] == 1);
  CHECK(plan.tile[op.dim_index("Kh")] == 8);
}

TEST_CASE("an integer average pool's taps do not split: the error says why") {
  const Instruction in =
      make("pool2d",
           {make_tensor(0, DType::i32, {1, 1, 8, 8}), make_tensor(256, DType::i32, {1, 1, 1, 1})},
           {{"fn", fn_index("pool2d", "avg")}, {"kernel_h", 8}, {"kernel_w", 8}});
  std::string what;
  try {
    sequential(ops().get("pool2d"), ops(), in, NodeBudget{192, 1, "core"});
  } catch (const fracsim::ConfigError& e) {
    what = e.what();
  }
  CHECK(what ==
        "core: pool2d: the smallest piece needs 320 bytes but a cyclic sub-block holds 192 "
        "(operand in alone needs 256 bytes); the taps of Kh split on integer operands only with "
        "fn = max");
}
