// The `search` policy's candidates (isa/decompose/search_space.h), derived by hand from the
// rules in isa/decompose/README.md ("The search space").
#include <doctest/doctest.h>

#include <vector>

#include "isa/decompose/search_space.h"
#include "isa/tensor.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

using Vectors = std::vector<std::vector<int64_t>>;

Instruction matmul(int64_t M, int64_t K, int64_t N) {
  const OpDef& op = OpTable::builtin().get("matmul");
  return Instruction{
      op.opcode,
      {make_tensor(0, DType::f32, {1, M, K}), make_tensor(1 << 20, DType::f32, {1, K, N}),
       make_tensor(2 << 20, DType::f32, {1, M, N})},
      {0}};
}

}  // namespace

TEST_CASE("chunk counts: every count to 8 then four per doubling at a leaf, 2^k and 3*2^k inside") {
  // Leaf: 1..8, then p + p/4: 10, 12, 15, 18 (22 > 20), then the extent.
  CHECK(candidate_parts(20, true) ==
        std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 15, 18, 20});
  // Inner node: 1, 2, 3, 4, 6, 8, 12, 16 (24 > 20), then the extent.
  CHECK(candidate_parts(20, false) == std::vector<int64_t>{1, 2, 3, 4, 6, 8, 12, 16, 20});
  CHECK(candidate_parts(1, false) == std::vector<int64_t>{1});
}

TEST_CASE("tile lengths: ceil(extent / p) per splittable dim, plus the start's own") {
  const OpDef& op = OpTable::builtin().get("matmul");
  // B (extent 1) has the start's length only; M, N, K = 8 at an inner node: p = 1, 2, 3, 4, 6,
  // 8 give 8, 4, 3, 2, 2, 1.
  CHECK(tile_values(op, matmul(8, 8, 8), false, {{1, 8, 8, 8}}) ==
        Vectors{{1}, {1, 2, 3, 4, 8}, {1, 2, 3, 4, 8}, {1, 2, 3, 4, 8}});
  // A start's length outside the candidates (5) is tried too.
  CHECK(tile_values(op, matmul(8, 8, 8), false, {{1, 5, 8, 8}}) ==
        Vectors{{1}, {1, 2, 3, 4, 5, 8}, {1, 2, 3, 4, 8}, {1, 2, 3, 4, 8}});
}

TEST_CASE("a reduce dim is split only with the reduce dims before it at tiles of 1") {
  const OpDef& conv = OpTable::builtin().get("conv2d");
  // conv2d: N G Co Ho Wo Ci Kh Kw Hi Wi; Ci is its only reduce dim, so any Ci tile is legal.
  const Instruction c{conv.opcode,
                      {make_tensor(0, DType::f32, {1, 1, 8, 6, 6}),
                       make_tensor(1 << 20, DType::f32, {1, 4, 8, 3, 3}),
                       make_tensor(2 << 20, DType::f32, {1, 1, 4, 4, 4})},
                      {1, 1, 1, 1, 0, 0, 0, 0, 0}};
  CHECK(tiling_legal(conv, c, {1, 1, 4, 4, 4, 2, 3, 3, 6, 6}));
  const OpDef& red = OpTable::builtin().get("reduce");
  std::vector<int> reduce_dims;
  for (size_t d = 0; d < red.dims.size(); ++d)
    if (red.dims[d].kind == DimKind::reduce) reduce_dims.push_back(static_cast<int>(d));
  REQUIRE(reduce_dims.size() >= 2);
  std::vector<int64_t> tile(red.dims.size(), 4);
  // The second reduce dim split while the first is at 4: out of order.
  CHECK_FALSE(reduce_order_kept(red, tile, static_cast<size_t>(reduce_dims[1])));
  tile[reduce_dims[0]] = 1;
  CHECK(reduce_order_kept(red, tile, static_cast<size_t>(reduce_dims[1])));
}

TEST_CASE("partitions: 2^k and 3*2^k parts on parallel dims, within the fanout, half busy") {
  const OpDef& op = OpTable::builtin().get("matmul");
  // Fanout 2: M or N in 2 (both would need 4 children); the unsplit piece first.
  CHECK(partition_candidates(op, matmul(8, 8, 8), 2) ==
        Vectors{{1, 1, 1, 1}, {1, 1, 2, 1}, {1, 2, 1, 1}});
  // Fanout 4 over M = 8, N = 3: at least 3 children busy. M 1 x N 3; M 2 x N 2 (N 3 would be 6);
  // M 3 x N 1; M 4 x N 1. N's parts 1, 2, 3 give lengths 3, 2, 1.
  CHECK(partition_candidates(op, matmul(8, 8, 3), 4) ==
        Vectors{{1, 1, 1, 1}, {1, 1, 3, 1}, {1, 2, 2, 1}, {1, 3, 1, 1}, {1, 4, 1, 1}});
  // No parallel dim longer than 1: the unsplit piece only (the reduce fallback is not a choice).
  CHECK(partition_candidates(op, matmul(1, 64, 1), 4) == Vectors{{1, 1, 1, 1}});
  // With a reduce dim (the root's): K in 2 too, visited in dim order (M, N, K, K fastest); at
  // most one reduce dim, and still only where a parallel dim can be split.
  CHECK(partition_candidates(op, matmul(8, 8, 8), 2, true) ==
        Vectors{{1, 1, 1, 1}, {1, 1, 1, 2}, {1, 1, 2, 1}, {1, 2, 1, 1}});
  CHECK(partition_candidates(op, matmul(1, 64, 1), 4, true) == Vectors{{1, 1, 1, 1}});
}
