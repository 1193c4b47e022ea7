// views_overlap: whether two views share a byte, exact for tiles of one tensor (the hazard
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
