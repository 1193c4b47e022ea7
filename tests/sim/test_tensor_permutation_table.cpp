// The tensor permutation table and static-segment layout, the exact comparison of the tables
// below two nodes, and the shared-bandwidth model, as pure functions: exact addresses and exact
// picoseconds.
#include <doctest/doctest.h>

#include "isa/error.h"
#include "sim/machine_spec.h"
#include "sim/machine_tree.h"
#include "sim/shared_bandwidth.h"
#include "sim/tensor_permutation_table.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

// A dense f32 view of `elements` in the parent memory at `address`.
StaticRequest request(uint64_t address, int64_t elements) {
  isa::TensorRef t = isa::make_tensor(address, isa::DType::f32, {elements});
  return StaticRequest{t, (static_cast<uint64_t>(elements) * 4 + 63) / 64 * 64};
}

}  // namespace

TEST_CASE("static tiles go to the ends of the memory, the cyclic segment between them") {
  TensorPermutationTable tpt(1024);
  // 256 B and 128 B tiles: the larger first at the low end, the other at the high end.
  SegmentLayout l = tpt.place({request(0x1000, 32), request(0x2000, 64)}, 512);
  CHECK(l.local == std::vector<uint64_t>{1024 - 128, 0});
  CHECK(l.hit == std::vector<bool>{false, false});
  CHECK(l.cyclic_base == 256);
  CHECK(tpt.size() == 2);
}

TEST_CASE("the same view again is a hit at the same local address, another view is not") {
  TensorPermutationTable tpt(1024);
  tpt.place({request(0x1000, 64)}, 512);
  SegmentLayout l = tpt.place({request(0x1000, 64), request(0x1000, 32)}, 512);
  CHECK(l.hit == std::vector<bool>{true, false});  // a shorter view of the same address differs
  CHECK(l.local[0] == 0);
  CHECK(l.local[1] == 1024 - 128);
  CHECK(tpt.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(0));
  CHECK(!tpt.lookup(request(0x1040, 64).view));
}

TEST_CASE("two requests for one view share one tile and load it once") {
  TensorPermutationTable tpt(1024);
  SegmentLayout l = tpt.place({request(0x1000, 16), request(0x1000, 16)}, 512);
  CHECK(l.local == std::vector<uint64_t>{0, 0});
  CHECK(l.hit == std::vector<bool>{false, true});
  CHECK(tpt.size() == 1);
}

TEST_CASE("replacement is least recently used, and only as much as the layout needs") {
  TensorPermutationTable tpt(1024);
  tpt.place({request(0x1000, 64)}, 0);  // A: 256 B at 0
  tpt.place({request(0x2000, 64)}, 0);  // B: 256 B at 768
  tpt.place({request(0x1000, 64)}, 0);  // A used again: B is now the least recently used
  CHECK(tpt.size() == 2);
  // C needs 256 B and the cyclic segment 512 B: only 512 B are free, so B goes.
  SegmentLayout l = tpt.place({request(0x3000, 64)}, 512);
  CHECK(l.hit == std::vector<bool>{false});
  CHECK(tpt.lookup(request(0x1000, 64).view));
  CHECK(!tpt.lookup(request(0x2000, 64).view));
  CHECK(tpt.lookup(request(0x3000, 64).view));
  CHECK(l.cyclic_base + 512 <= 1024);
}

TEST_CASE("a pinned hit is given up only when nothing else can make room") {
  TensorPermutationTable tpt(1024);
  tpt.place({request(0x1000, 64)}, 0);  // at 0
  tpt.place({request(0x2000, 64)}, 0);  // at 768
  // Keep B (hit) and add C (256 B) and 512 B cyclic: A goes, B stays.
  SegmentLayout l = tpt.place({request(0x2000, 64), request(0x3000, 64)}, 512);
  CHECK(l.hit == std::vector<bool>{true, false});
  // Now 768 B cyclic plus B: the only way is to give up C and then B's own placement.
  l = tpt.place({request(0x2000, 64)}, 768);
  CHECK(l.cyclic_base + 768 <= 1024);
  CHECK((l.local[0] + 256 <= l.cyclic_base || l.local[0] >= l.cyclic_base + 768));
  CHECK_THROWS_AS(tpt.place({request(0x2000, 64)}, 1024), InternalError);
}

TEST_CASE("a whole output gets room but no entry until it is kept, and then holds its parts") {
  TensorPermutationTable tpt(1024);
  StaticRequest out = request(0x4000, 64);  // 256 B
  out.use = StaticUse::output;
  // Room at the low end, like any static tile, but nothing in the table yet: a lookup of the
  // view (a later instruction's input) must not find bytes not yet written.
  SegmentLayout l = tpt.place({request(0x1000, 32), out}, 512);
  CHECK(l.local == std::vector<uint64_t>{1024 - 128, 0});
  CHECK(l.hit == std::vector<bool>{false, false});
  CHECK(l.cyclic_base == 256);
  CHECK(tpt.size() == 1);
  CHECK(!tpt.lookup(out.view));
  CHECK(!tpt.containing(request(0x4040, 16).view));
  // Kept when the instruction ends: its parts are found in it, at their offsets.
  tpt.keep(out.view, 0, 256, true);
  const auto in = tpt.containing(request(0x4040, 16).view);
  REQUIRE(in);
  CHECK(in->view == out.view);
  CHECK(in->local == 0);
  CHECK(in->bytes == 256);
  CHECK(!tpt.containing(request(0x40c0, 32).view));  // runs 64 B past its end
  CHECK(!tpt.containing(request(0x1000, 16).view));  // in a static input's tile: not an output
  // Held in place for an instruction reading a part (a resident request): a hit, pinned, so
  // the 768 B of cyclic segment evict the other entry, not it.
  StaticRequest held{in->view, in->bytes, StaticUse::resident};
  l = tpt.place({held}, 768);
  CHECK(l.hit == std::vector<bool>{true});
  CHECK(l.local == std::vector<uint64_t>{0});
  CHECK(l.cyclic_base == 256);
  CHECK(tpt.lookup(out.view) == std::optional<uint64_t>(0));
  CHECK(!tpt.lookup(request(0x1000, 32).view));
  // Evicted after all (the cyclic segment needs the whole memory), it is a miss given no room
  // and no entry: its readers load their parts instead.
  l = tpt.place({held}, 1024);
  CHECK(l.hit == std::vector<bool>{false});
  CHECK(l.cyclic_base == 0);
  CHECK(tpt.size() == 0);
}

TEST_CASE("a write to an overlapping span of the parent memory invalidates") {
  TensorPermutationTable tpt(4096);
  tpt.place({request(0x1000, 64), request(0x2000, 64)},
            0);                                // spans [0x1000,0x1100) [0x2000,0x2100)
  CHECK(tpt.invalidate(0x1100, 0x2000) == 0);  // touches neither (half-open spans)
  CHECK(tpt.invalidate(0x10fc, 0x1100) == 1);  // the last element of the first
  CHECK(!tpt.lookup(request(0x1000, 64).view));
  CHECK(tpt.lookup(request(0x2000, 64).view));
  // The next use of the first view loads it again.
  CHECK(tpt.place({request(0x1000, 64)}, 0).hit == std::vector<bool>{false});
}

TEST_CASE("a write drops exactly the entries it meets, an output kept since among them") {
  TensorPermutationTable tpt(4096);
  tpt.place({request(0x1000, 64)}, 0);         // span [0x1000,0x1100)
  CHECK(tpt.invalidate(0x5000, 0x5004) == 0);  // past every entry
  // An output kept since lies there: the same write now drops it.
  tpt.keep(request(0x5000, 16).view, 1024, 64);
  CHECK(tpt.invalidate(0x5000, 0x5004) == 1);
  CHECK(!tpt.lookup(request(0x5000, 16).view));
  // Between the entries' spans nothing is dropped; at either end the entry there is.
  tpt.keep(request(0x5000, 16).view, 1024, 64);  // [0x5000,0x5040)
  CHECK(tpt.invalidate(0x1100, 0x5000) == 0);
  CHECK(tpt.invalidate(0x503c, 0x5040) == 1);
  CHECK(tpt.invalidate(0x0ffc, 0x1001) == 1);
  CHECK(tpt.size() == 0);
}

TEST_CASE("a write inside a long entry's span is found past the shorter ones that begin later") {
  TensorPermutationTable tpt(8192);
  // Spans [0x1000,0x2000), [0x1400,0x1440) and [0x3000,0x3040): a write at 0x1800 meets only
  // the first, whose span ends after the second's.
  tpt.place({request(0x1000, 1024), request(0x1400, 16), request(0x3000, 16)}, 0);
  const TensorPermutationTable copy = tpt;  // shares the entries until either changes
  CHECK(tpt.invalidate(0x1800, 0x1804) == 1);
  CHECK(!tpt.lookup(request(0x1000, 1024).view));
  CHECK(tpt.invalidate(0x1800, 0x1804) == 0);  // asked again of the changed table
  CHECK(tpt.invalidate(0x1440, 0x3000) == 0);
  CHECK(tpt.invalidate(0x143c, 0x3001) == 2);
  CHECK(tpt.size() == 0);
  CHECK(copy.size() == 3);  // the copy kept its entries
  CHECK(copy.lookup(request(0x1000, 1024).view));
}

TEST_CASE("a write finds the entries placed, hit and evicted since the last write looked") {
  TensorPermutationTable tpt(512);  // room for two 256-byte tiles
  tpt.place({request(0x1000, 64)}, 0);
  CHECK(tpt.invalidate(0x9000, 0x9004) == 0);  // the table as it is now has been looked at
  const uint64_t one = tpt.digest();
  tpt.place({request(0x2000, 64)}, 0);  // a miss, placed since
  const uint64_t two = tpt.digest();
  CHECK(two != one);
  tpt.place({request(0x1000, 64)}, 0);  // a hit: only its use changes
  CHECK(tpt.digest() == two);
  CHECK(tpt.invalidate(0x2000, 0x2004) == 1);
  tpt.place({request(0x2000, 64)}, 0);
  CHECK(tpt.invalidate(0x9000, 0x9004) == 0);
  tpt.place({request(0x3000, 64)}, 0);  // evicts 0x1000, the least recently used
  CHECK(tpt.invalidate(0x1000, 0x1004) == 0);
  CHECK(tpt.invalidate(0x3000, 0x3100) == 1);
  CHECK(tpt.invalidate(0x2000, 0x2100) == 1);
}

TEST_CASE(
    "a trial undone leaves the table as it was, its order of use too, and one kept keeps it") {
  // Room for two 256-byte tiles: 0x1000 at 0 and 0x2000 at 256, 0x1000 the least recently used.
  TensorPermutationTable tpt(512);
  tpt.place({request(0x1000, 64), request(0x2000, 64)}, 0);
  const TensorPermutationTable before = tpt;  // shares the entries until either changes
  const uint64_t digest = tpt.digest();
  // A miss that evicts 0x1000, and a hit that makes 0x2000 the most recently used.
  tpt.begin_trial();
  CHECK(tpt.place({request(0x3000, 64)}, 0).local == std::vector<uint64_t>{0});
  CHECK(tpt.place({request(0x2000, 64)}, 0).hit == std::vector<bool>{true});
  CHECK(!tpt.lookup(request(0x1000, 64).view));
  tpt.end_trial(false);
  CHECK(tpt.same_contents(before));
  CHECK(tpt.digest() == digest);
  CHECK(tpt.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(0));
  CHECK(!tpt.lookup(request(0x3000, 64).view));
  {  // and writes find what the table holds again (a copy is probed: the table stays)
    TensorPermutationTable probe = tpt;
    CHECK(probe.invalidate(0x3000, 0x3100) == 0);
    CHECK(probe.invalidate(0x10fc, 0x1100) == 1);
  }
  // A hit alone changes the order of use: undone, 0x1000 is the victim again.
  tpt.begin_trial();
  tpt.place({request(0x1000, 64)}, 0);
  tpt.end_trial(false);
  CHECK(tpt.same_contents(before));
  tpt.place({request(0x3000, 64)}, 0);
  CHECK(!tpt.lookup(request(0x1000, 64).view));
  CHECK(tpt.lookup(request(0x2000, 64).view) == std::optional<uint64_t>(256));
  // Kept, a trial's changes stay; nested in one undone, they go with it.
  tpt.begin_trial();
  tpt.place({request(0x1000, 64)}, 0);  // evicts 0x2000
  tpt.end_trial(true);
  CHECK(tpt.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(256));
  const TensorPermutationTable kept = tpt;
  tpt.begin_trial();
  tpt.begin_trial();
  tpt.place({request(0x4000, 64)}, 0);  // evicts 0x3000
  tpt.end_trial(true);
  CHECK(!tpt.lookup(request(0x3000, 64).view));
  tpt.end_trial(false);
  CHECK(tpt.same_contents(kept));
  CHECK(tpt.lookup(request(0x3000, 64).view) == std::optional<uint64_t>(0));
  CHECK(before.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(0));  // untouched
  // What may not happen during a trial is refused.
  tpt.begin_trial();
  CHECK_THROWS_WITH(tpt.invalidate(0x1000, 0x1004),
                    doctest::Contains("an entry invalidated during a trial"));
  tpt.end_trial(false);
}

TEST_CASE("two entries of one span: dropping one leaves the other for writes to find") {
  // 64 f32 and 256 u8 at 0x1000 are different views of the same bytes [0x1000,0x1100).
  TensorPermutationTable tpt(512);  // room for two 256-byte tiles
  const isa::TensorRef bytes = isa::make_tensor(0x1000, isa::DType::u8, {256});
  tpt.place({request(0x1000, 64), StaticRequest{bytes, 256}}, 0);
  CHECK(tpt.size() == 2);
  tpt.place({request(0x2000, 64)}, 0);  // evicts the f32 view, the least recently used
  CHECK(!tpt.lookup(request(0x1000, 64).view));
  CHECK(tpt.lookup(bytes));
  CHECK(tpt.invalidate(0x10fc, 0x1100) == 1);
  CHECK(!tpt.lookup(bytes));
}

TEST_CASE("tables that differ only in their order of use share a digest, not their contents") {
  TensorPermutationTable a(1024), b(1024);
  for (TensorPermutationTable* t : {&a, &b})
    t->place({request(0x1000, 64), request(0x2000, 64)}, 0);
  CHECK(a.same_contents(b));
  a.place({request(0x1000, 64)}, 0);  // a hit: 0x1000 is now the more recently used in a
  b.place({request(0x2000, 64)}, 0);  // and 0x2000 in b; nothing moves
  CHECK(a.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(0));
  CHECK(b.lookup(request(0x1000, 64).view) == std::optional<uint64_t>(0));
  CHECK(a.digest() == b.digest());
  CHECK(!a.same_contents(b));  // the next eviction would differ
}

TEST_CASE("the same order of use under other use stamps is the same contents") {
  // Three entries; b is used more often than a, so its stamps differ, but both end in the
  // order of use 0x2000, 0x3000, 0x1000 (least recent first): the same contents. One more hit
  // on 0x2000 in b alone makes 0x3000 b's least recently used, a's 0x2000: not the same.
  TensorPermutationTable a(1024), b(1024);
  for (TensorPermutationTable* t : {&a, &b})
    t->place({request(0x1000, 64), request(0x2000, 64), request(0x3000, 64)}, 0);
  for (int i = 0; i < 3; ++i) b.place({request(0x3000, 64)}, 0);
  b.place({request(0x2000, 64)}, 0);
  for (TensorPermutationTable* t : {&a, &b}) {
    t->place({request(0x3000, 64)}, 0);
    t->place({request(0x1000, 64)}, 0);
  }
  CHECK(a.same_contents(b));
  CHECK(b.same_contents(a));
  b.place({request(0x2000, 64)}, 0);
  CHECK(!a.same_contents(b));
  CHECK(!b.same_contents(a));
}

TEST_CASE("equal tables have equal digests") {
  TensorPermutationTable a(1024), b(1024);
  a.place({request(0x1000, 64)}, 0);
  b.place({request(0x1000, 64)}, 0);
  CHECK(a.digest() == b.digest());
  b.place({request(0x1000, 64)}, 0);  // a use renumbers stamps but changes no order
  CHECK(a.digest() == b.digest());
  b.invalidate(0x1000, 0x1001);
  CHECK(a.digest() != b.digest());
}

TEST_CASE("one transfer alone moves at the slower of its cap and the memory") {
  // 100 B at min(8 GB/s, 16 GB/s) = 8 B/ns: 12.5 ns = 12500 ps.
  SharedBandwidth m(16000000000ULL);
  const int id = m.start(1000, 100, 8000000000ULL, 1);
  CHECK(m.next_end() == std::optional<uint64_t>(13500));
  CHECK(m.advance(13499).empty());
  CHECK(m.advance(13500) == std::vector<int>{id});
  CHECK(m.active() == 0);
}

TEST_CASE("two transfers started together share the memory and end together, twice as late") {
  // 256 B each, caps 16 GB/s, memory 16 GB/s: 8 B/ns each, 32 ns; alone it would be 16 ns.
  SharedBandwidth m(16000000000ULL);
  m.start(0, 256, 16000000000ULL, 1);
  m.start(0, 256, 16000000000ULL, 1);
  CHECK(m.next_end() == std::optional<uint64_t>(32000));
  CHECK(m.advance(32000).size() == 2);
  // One transfer standing for two copies takes the same time.
  SharedBandwidth f(16000000000ULL);
  f.start(0, 256, 16000000000ULL, 2);
  CHECK(f.next_end() == std::optional<uint64_t>(32000));
}

TEST_CASE("a transfer that starts later slows the first only while both run") {
  // Memory 16 B/ns, caps 16 B/ns. A: 256 B from 0. B: 64 B from 8 ns.
  // 0-8 ns: A alone moves 128 B. From 8 ns both at 8 B/ns: B needs 8 ns (ends 16 ns), A moves
  // 64 B meanwhile; A's last 64 B alone take 4 ns: A ends at 20 ns.
  SharedBandwidth m(16000000000ULL);
  const int a = m.start(0, 256, 16000000000ULL, 1);
  CHECK(m.next_end() == std::optional<uint64_t>(16000));
  const int b = m.start(8000, 64, 16000000000ULL, 1);
  CHECK(m.next_end() == std::optional<uint64_t>(16000));
  CHECK(m.advance(16000) == std::vector<int>{b});
  CHECK(m.next_end() == std::optional<uint64_t>(20000));
  CHECK(m.advance(20000) == std::vector<int>{a});
}

TEST_CASE("transfers capped below the fair share leave the rest to the others") {
  // Memory 30 B/ns; caps 5, 20, 20: the 5 keeps 5, the others split 25: 12.5 B/ns each, so
  // 125 B take 10 ns for them and 50 B take 10 ns for the capped one.
  SharedBandwidth m(30000000000ULL);
  m.start(0, 50, 5000000000ULL, 1);
  m.start(0, 125, 20000000000ULL, 1);
  m.start(0, 125, 20000000000ULL, 1);
  CHECK(m.next_end() == std::optional<uint64_t>(10000));
  CHECK(m.advance(10000).size() == 3);
}

TEST_CASE("tables with the same views, places and LRU order are the same whatever their stamps") {
  TensorPermutationTable a(1024), b(1024);
  a.place({request(0x1000, 16)}, 0);
  a.place({request(0x2000, 16)}, 0);
  b.place({request(0x3000, 16)}, 0);  // evicted below: b's stamps run ahead of a's
  b.invalidate(0x3000, 0x3040);
  b.place({request(0x1000, 16)}, 0);
  b.place({request(0x2000, 16)}, 0);
  CHECK(a.same_contents(b));
  CHECK(a.digest() == b.digest());
  TensorPermutationTable c = a;  // a copy shares the entries
  CHECK(c.same_contents(a));
  c.place({request(0x1000, 16)}, 0);  // the same entries, used in the other order
  CHECK(!c.same_contents(a));
  TensorPermutationTable d(1024);  // the same places, one view of another shape
  d.place({request(0x1000, 16)}, 0);
  d.place({StaticRequest{isa::make_tensor(0x2000, isa::DType::f32, {4, 4}), 64}}, 0);
  CHECK(!d.same_contents(a));
  CHECK(!TensorPermutationTable(1024).same_contents(a));
  CHECK(TensorPermutationTable(1024).same_contents(TensorPermutationTable(512)));
}

TEST_CASE("subtrees whose digests collide are told apart by comparing their tables") {
  // tiny: root, two clusters (ids 1, 2), two cores each (3, 4 under 1; 5, 6 under 2). Every
  // digest masked to 0, so the digests cannot tell the clusters apart.
  const MachineSpec spec =
      load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/tiny.yaml");
  MachineTree tree(spec, 0);
  REQUIRE(tree.child(1, 0) == 3);
  REQUIRE(tree.child(2, 0) == 5);
  CHECK(tree.same_below(1, 2));  // cluster 2 mirrors cluster 1 at the start
  MachineTree::FoldRound round;
  round.reps = {1, 2};
  round.members = {{1}, {2}};
  tree.fold(round);  // both concrete now, with their own tables below
  CHECK(tree.same_below(1, 2));
  tree.tpt(3).place({request(0x1000, 16)}, 0);
  tree.update_below_digest(1);
  tree.update_below_digest(2);
  CHECK(tree.below_digest(1) == tree.below_digest(2));
  CHECK(!tree.same_below(1, 2));
  tree.tpt(5).place({request(0x1000, 16)}, 0);
  CHECK(tree.same_below(1, 2));
  tree.tpt(6).place({request(0x2000, 16)}, 0);  // the second core differs
  CHECK(!tree.same_below(1, 2));
}
