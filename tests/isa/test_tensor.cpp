// views_overlap: whether two views share a byte, exact for views of equal strides (the hazard
// check of a node's pieces, sim/node.cpp). Cases worked by hand on a 1024 x 3072 f32 matrix.
#include <doctest/doctest.h>

#include "isa/tensor.h"

using namespace fracsim::isa;

namespace {

// Rows r0.., cols c0.. of a 1024 x 3072 row-major f32 matrix at 0.
TensorRef tile(int64_t r0, int64_t c0, int64_t rows, int64_t cols) {
  return TensorRef{static_cast<uint64_t>((r0 * 3072 + c0) * 4), DType::f32, {rows, cols},
                   {3072, 1}};
}

}  // namespace

TEST_CASE("views_overlap: tiles side by side in the same rows do not meet, though their spans do") {
  const TensorRef a = tile(0, 0, 64, 96), b = tile(0, 96, 64, 96);
  const auto sa = a.byte_span(), sb = b.byte_span();
  CHECK(sb.first < sa.second);  // the spans meet: [0, 774528) and [384, 774912)
  CHECK_FALSE(views_overlap(a, b));
  CHECK_FALSE(views_overlap(b, a));
}

TEST_CASE("views_overlap: tiles that share one element meet, either way round") {
  const TensorRef a = tile(0, 0, 64, 96);
  CHECK(views_overlap(a, tile(63, 95, 2, 2)));  // element (63, 95)
  CHECK(views_overlap(tile(63, 95, 2, 2), a));
  CHECK(views_overlap(a, a));
  CHECK_FALSE(views_overlap(a, tile(64, 0, 64, 96)));  // the rows below: spans apart
  CHECK_FALSE(views_overlap(a, tile(62, 96, 3, 5)));   // beside the last rows
}

TEST_CASE("views_overlap: bytes, not elements, decide") {
  // An f32 element at byte 382 holds bytes 382..385: the last two bytes of element (0, 95).
  const TensorRef a = tile(0, 0, 64, 96);
  CHECK(views_overlap(a, TensorRef{382, DType::f32, {1, 1}, {3072, 1}}));
  CHECK_FALSE(views_overlap(a, TensorRef{384, DType::f32, {1, 1}, {3072, 1}}));
  // Even and odd elements of one vector interleave without meeting.
  CHECK_FALSE(views_overlap(TensorRef{0, DType::f32, {8}, {2}}, TensorRef{4, DType::f32, {8}, {2}}));
  CHECK(views_overlap(TensorRef{0, DType::f32, {8}, {2}}, TensorRef{8, DType::f32, {8}, {2}}));
}

TEST_CASE("views_overlap: views of different strides or dtypes fall back to their spans") {
  const TensorRef a = tile(0, 0, 64, 96);
  // The transposed walk of the same bytes, and a view whose span meets a's between its rows.
  CHECK(views_overlap(a, TensorRef{0, DType::f32, {96, 64}, {1, 3072}}));
  CHECK(views_overlap(a, TensorRef{384, DType::f32, {10}, {1}}));  // span rule: cols 96..105
  CHECK(views_overlap(a, TensorRef{384, DType::i32, {64, 96}, {3072, 1}}));
  CHECK_FALSE(views_overlap(a, TensorRef{64 * 3072 * 4, DType::f32, {10}, {1}}));
}

TEST_CASE("views_overlap: rows of an NCHW tensor, whose channels reach past the batch stride") {
  // Row h of every image and channel of a [2, 64, 7, 7] f32 tensor at 0: the tile a piece
  // split along H reads and writes. In bytes the batch stride is 12544 and the channel stride
  // 196, so the channel offsets between two such views, -63 * 196 .. 63 * 196, span more than
  // one batch stride: which batch offset pairs up cannot be told at once and each is tried.
  auto row = [](int64_t h) {
    return TensorRef{static_cast<uint64_t>(h * 7 * 4), DType::f32, {2, 64, 1, 7}, {3136, 49, 7, 1}};
  };
  auto element = [](int64_t n, int64_t c, int64_t h, int64_t w) {
    return TensorRef{static_cast<uint64_t>((n * 3136 + c * 49 + h * 7 + w) * 4),
                     DType::f32,
                     {1, 1, 1, 1},
                     {3136, 49, 7, 1}};
  };
  CHECK_FALSE(views_overlap(row(0), row(1)));
  CHECK_FALSE(views_overlap(row(1), row(0)));
  CHECK_FALSE(views_overlap(row(2), row(6)));
  CHECK(views_overlap(row(3), row(3)));
  // One element: in the second image's row 1 (channel 5, column 3), and beside it in row 2.
  CHECK(views_overlap(row(1), element(1, 5, 1, 3)));
  CHECK(views_overlap(element(1, 5, 1, 3), row(1)));
  CHECK_FALSE(views_overlap(row(1), element(1, 5, 2, 3)));
  CHECK_FALSE(views_overlap(element(1, 63, 0, 6), row(1)));
}

TEST_CASE("views_overlap: past its budget of steps it answers that the views meet") {
  // Every other f32 of a buffer (element stride 2, 8 bytes), as n dims of extent 2 and that one
  // stride, and the same view 4 bytes on: the odd elements, so no byte is shared. The element
  // offsets between the two lie in -n .. n along each of the n equal strides, and each dim's
  // offset can be -1, 0 or 1 with the rest still in reach: 3^n paths before every one fails.
  auto strided = [](uint64_t address, size_t n) {
    return TensorRef{address, DType::f32, Shape(n, 2), Shape(n, 2)};
  };
  CHECK_FALSE(views_overlap(strided(0, 6), strided(4, 6)));  // 3^6 = 729 paths: exact
  CHECK(views_overlap(strided(0, 6), strided(8, 6)));        // one element apart: they meet
  // 3^17 paths exceed the 65,536 steps: taken to meet, as their spans do.
  CHECK(views_overlap(strided(0, 17), strided(4, 17)));
}

TEST_CASE("view_within: a part of a view, placed in the whole's dense copy") {
  // The whole: images 2..5 of an f32 [8,3,4,4] tensor (strides 48,16,4,1) at 0x100, as
  // [4,3,4,4]; its dense copy has strides 48,16,4,1 too, here at local 0x4000.
  const TensorRef whole{0x100 + 2 * 48 * 4, DType::f32, {4, 3, 4, 4}, {48, 16, 4, 1}};
  // Image 3, channels 1..2, every other row and column from (1, 0): offset 3*48 + 1*16 + 1*4
  // = 164 elements from image 0 of the tensor, 164 - 96 = 68 from the whole's first element.
  const TensorRef part{0x100 + (3 * 48 + 16 + 4) * 4, DType::f32, {1, 2, 2, 2}, {48, 16, 8, 2}};
  const auto at = view_within(whole, part, 0x4000);
  REQUIRE(at);
  CHECK(at->address == 0x4000 + (1 * 48 + 1 * 16 + 1 * 4) * 4);
  CHECK(at->shape == Shape{1, 2, 2, 2});
  CHECK(at->strides == Shape{48, 16, 8, 2});
  // A whole with a gap (a channel slice of the tensor) packs densely: its copy's strides differ.
  const TensorRef slice{0x100 + 16 * 4, DType::f32, {8, 2, 4, 4}, {48, 16, 4, 1}};  // channels 1-2
  const TensorRef row{
      0x100 + (5 * 48 + 2 * 16 + 3 * 4) * 4, DType::f32, {1, 1, 1, 4}, {48, 16, 4, 1}};
  const auto in_slice = view_within(slice, row, 0);
  REQUIRE(in_slice);
  CHECK(in_slice->address == (5 * 32 + 1 * 16 + 3 * 4) * 4);
  CHECK(in_slice->strides == Shape{32, 16, 4, 1});
  // Not within: an element past the whole (image 6), channel 0 outside the slice, another
  // dtype, a stride that is no multiple of the whole's, an address between elements.
  CHECK_FALSE(view_within(
      whole, TensorRef{0x100 + 6 * 48 * 4, DType::f32, {1, 1, 1, 1}, {48, 16, 4, 1}}, 0));
  CHECK_FALSE(view_within(slice, TensorRef{0x100, DType::f32, {1, 1, 1, 1}, {48, 16, 4, 1}}, 0));
  CHECK_FALSE(view_within(whole, TensorRef{part.address, DType::i32, part.shape, part.strides}, 0));
  CHECK_FALSE(
      view_within(whole, TensorRef{part.address, DType::f32, {1, 1, 2, 1}, {48, 16, 6, 1}}, 0));
  CHECK_FALSE(
      view_within(whole, TensorRef{part.address + 2, DType::f32, {1, 1, 1, 1}, {48, 16, 4, 1}}, 0));
  // A whole whose strides alias (rows overlapping by one element) names no single place.
  CHECK_FALSE(view_within(TensorRef{0, DType::f32, {4, 4}, {3, 1}},
                          TensorRef{12, DType::f32, {1, 1}, {3, 1}}, 0));
}
