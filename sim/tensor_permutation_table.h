// The tensor permutation table (TPT) of a node, and the layout of its local memory around it.
//
// The TPT maps a tensor view in the parent's memory (address, dtype, shape, strides) to the
// local address of a dense copy held in the node's static segment. A later instruction whose
// static operand is the same view finds it here and skips the load (a hit).
//
// Layout: the static segment is allocated from both ends of the local memory toward the middle;
// the cyclic segment (N sub-blocks) is one contiguous range in the free space between. A node
// re-plans the layout at the start of every instruction (its pipeline is empty then, or, with
// LevelSpec::overlap, the earlier instruction's memory is kept clear: place_beside).
//
// Replacement: least recently used. An entry is used when it is inserted or hit; entries the
// current instruction hits are pinned. When the requests and the cyclic segment do not fit, the
// least recently used unpinned entry is evicted and the placement retried; if only pinned
// entries remain, pinned entries are evicted too (their hits become loads), so a placement
// always exists when the requests plus the cyclic segment fit the memory at all.
//
// Coherence: an entry is a copy of parent memory, so any write to an overlapping span of the
// parent memory (a write-back by this node or a sibling, a load or LFU write by the parent)
// must call invalidate(); the owner of the parent memory does so.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "isa/tensor.h"

namespace fracsim::sim {

// What a static request asks of the table.
enum class StaticUse : uint8_t {
  load,      // an input: found resident (a hit) or given room and loaded
  output,    // the instruction's whole output: room only, no entry until it is kept (keep())
  resident,  // an entry already held (containing()), kept in place for the instruction: a hit,
             // or, when it had to be evicted after all, a miss given no room
  room,      // an input no piece of the instruction reads (an epilogue's operand, read only by
             // the last piece of a split reduce dim, on an instruction before that one), which
             // the parent has not loaded (Node::loaded_here): found resident (a hit), or given
             // room only, neither loaded nor entered
};

// One operand the current instruction keeps in the static segment.
struct StaticRequest {
  isa::TensorRef view;  // in the parent's memory
  uint64_t bytes = 0;   // its dense tile (a multiple of isa::kTileAlign)
  StaticUse use = StaticUse::load;
};

// An entry of the table: a view of the parent's memory and its dense copy here.
struct ResidentView {
  isa::TensorRef view;
  uint64_t local = 0, bytes = 0;
};

// An input of the instruction that lies whole in an entry of the table (an output the node
// kept): its pieces read it there, none loads it.
struct ResidentInput {
  int operand = 0;
  // The entry's view in the parent's memory; a node reading it places it by `offset` from its
  // own operand (Node::make_piece), not by this address, which is its class's first member's.
  isa::TensorRef entry;
  // The operand's address minus the entry's: what places the operand in it, the same for
  // instructions that differ only by addresses (a fold class's members).
  int64_t offset = 0;
  uint64_t local = 0, bytes = 0;  // the entry's dense copy

  bool operator==(const ResidentInput& o) const {
    return operand == o.operand && offset == o.offset && local == o.local && bytes == o.bytes &&
           entry.dtype == o.entry.dtype && entry.shape == o.entry.shape &&
           entry.strides == o.entry.strides;
  }
};

struct SegmentLayout {
  uint64_t cyclic_base = 0;     // the cyclic segment starts here
  std::vector<uint64_t> local;  // per request: where its tile is
  std::vector<bool> hit;        // per request: already resident, no load needed
  std::vector<bool> room;       // per request: given room only (StaticUse::room), never loaded
  // The output tile the first piece accumulates onto is the node's own kept output, already at
  // the start of the cyclic segment (its first accumulator): not loaded again.
  bool out_hit = false;
  std::vector<ResidentInput> resident;  // in operand order

  bool operator==(const SegmentLayout& o) const {
    return cyclic_base == o.cyclic_base && local == o.local && hit == o.hit && room == o.room &&
           out_hit == o.out_hit && resident == o.resident;
  }
};

class TensorPermutationTable {
 public:
  explicit TensorPermutationTable(uint64_t capacity = 0) : capacity_(capacity) {}

  // Places `requests` (each resident already, or allocated now) and a free range of
  // `cyclic_bytes` for the cyclic segment; updates the table (insertions, evictions, LRU).
  // Throws InternalError when the requests and the cyclic segment exceed the capacity.
  SegmentLayout place(const std::vector<StaticRequest>& requests, uint64_t cyclic_bytes);

  // The same while earlier instructions still run on the node (LevelSpec::overlap): the `busy`
  // ranges of the local memory (their static tiles and cyclic segments) are kept, neither
  // reused nor needed to stay in the table; the cyclic segment continues at `ring` when given
  // (a busy cyclic segment of `cyclic_bytes`), else takes free space. Empty, the table
  // unchanged, when the requests do not fit beside the busy ranges.
  std::optional<SegmentLayout> place_beside(const std::vector<StaticRequest>& requests,
                                            uint64_t cyclic_bytes,
                                            const std::vector<std::pair<uint64_t, uint64_t>>& busy,
                                            std::optional<uint64_t> ring);

  // A trial (Node::dispatch_beside places every child's instruction, then keeps the placements
  // only if the children come out alike): from begin_trial() on, place() and place_beside()
  // record what their changes overwrite; end_trial(false) puts it back (the table as it was,
  // its order of use too), end_trial(true) keeps the changes. A record of a few entries instead
  // of a copy of the table, which such a placement mostly keeps. Trials nest; keep() and
  // invalidate() are not called during one.
  void begin_trial();
  void end_trial(bool keep);

  // The local address of `view` when resident (does not count as a use).
  std::optional<uint64_t> lookup(const isa::TensorRef& view) const;

  // The first whole output kept (keep()'s `whole`, in local order) that holds every element of
  // `view` (isa::view_within).
  std::optional<ResidentView> containing(const isa::TensorRef& view) const;

  // Whether [begin, end) lies in the memory and holds no entry.
  bool is_free(uint64_t begin, uint64_t end) const;

  // Records that `view` (in the parent's memory) is resident at `local` in `bytes` bytes: an
  // output the node has just written back and still holds; `whole`: an instruction's whole
  // output (InstructionPlan::kept_out), whose parts later instructions read (containing()).
  // Entries it makes stale (the same parent bytes, or the same local bytes) are dropped first.
  void keep(const isa::TensorRef& view, uint64_t local, uint64_t bytes, bool whole = false);

  // Drops every entry whose span in the parent memory overlaps [begin, end); returns how many.
  int invalidate(uint64_t begin, uint64_t end);

  size_t size() const { return entries_ ? entries_->list.size() : 0; }
  uint64_t capacity() const { return capacity_; }
  // The capacity in whole tiles (isa::kTileAlign): what placements may use.
  uint64_t usable_bytes() const;
  // A digest of the views and their places (not the order of use, which only same_contents()
  // compares): equal tables have equal digests. Folding uses it to pick the nodes that may
  // behave alike; same_contents() decides.
  uint64_t digest() const;
  // The same contents up to renaming of use stamps: the same views at the same places, in the
  // same LRU order. What digest() stands for, compared exactly.
  bool same_contents(const TensorPermutationTable& o) const;

 private:
  // An entry of the table but its view (Entries::views): what every scan of the table reads,
  // kept small.
  struct Entry {
    uint64_t span_begin = 0, span_end = 0;  // the view's bytes in the parent memory
    uint64_t local = 0, bytes = 0;
    uint64_t last_use = 0;
    bool whole = false;   // keep()'s
    uint64_t digest = 0;  // of the view, its place, size and kind: digest()'s term for the entry
  };
  static Entry make_entry(const isa::TensorRef& view, uint64_t local, uint64_t bytes,
                          uint64_t last_use, bool whole = false);
  // Tries to place the misses and the cyclic range around the current entries and the busy
  // ranges (the cyclic range at `ring` when given).
  bool try_place(const std::vector<uint64_t>& miss_bytes, uint64_t cyclic_bytes,
                 const std::vector<std::pair<uint64_t, uint64_t>>& busy,
                 std::optional<uint64_t> ring, std::vector<uint64_t>& miss_local,
                 uint64_t& cyclic_base) const;
  // place() and place_beside(): empty when only evicting everything would not make room
  // (without `evict`: when the requests do not fit beside the entries as they are, the table
  // unchanged).
  std::optional<SegmentLayout> place_among(const std::vector<StaticRequest>& requests,
                                           uint64_t cyclic_bytes,
                                           const std::vector<std::pair<uint64_t, uint64_t>>& busy,
                                           std::optional<uint64_t> ring, bool evict);

  // The entries in the order of their local addresses (they never overlap there), so that the
  // free gaps are found in one pass, their views in the same order apart, and their spans in
  // order of their begins: invalidate() is called for every span the node or a sibling writes
  // and seldom finds anything, which one binary search tells (meets()). Changed only through
  // insert, erase_at and erase_if, which keep them in step.
  struct Entries {
    std::vector<Entry> list;
    // views[i]: list[i]'s, in the parent's memory; shared, never changed, so that a copy of
    // the entries (copy on write, below) copies pointers, not views.
    std::vector<std::shared_ptr<const isa::TensorRef>> views;
    // The entries' spans sorted, and reach[i]: the largest end among spans[0..i].
    std::vector<std::pair<uint64_t, uint64_t>> spans;
    std::vector<uint64_t> reach;
    void reach_from(size_t k);  // recomputes reach[k..] after spans changed there
    // Whether an entry's span shares a byte with [begin, end).
    bool meets(uint64_t begin, uint64_t end) const;
    void insert(Entry e, const isa::TensorRef& view);  // at its place in local order
    void insert(Entry e, std::shared_ptr<const isa::TensorRef> view);
    // The index of the entry placed at `local` of `bytes` bytes (there is one).
    size_t at(uint64_t local, uint64_t bytes) const;
    void erase_at(size_t i);
    // Drops every entry i (its index in `list`) for which stale(i) holds; returns how many.
    template <typename Stale>
    size_t erase_if(Stale stale);
  };
  // Copy on write: folding copies whole subtrees of tables, most of them unchanged since.
  // The only way to change the entries; it forgets the cached digest.
  Entries& entries();

  // What a trial's changes overwrote, undone in reverse order: an entry inserted (`entry` names
  // its place), an entry erased (with its view) or an entry used (its former last_use).
  struct Undo {
    enum class Kind : uint8_t { inserted, erased, used } kind;
    Entry entry;
    std::shared_ptr<const isa::TensorRef> view;
  };
  struct Trial {
    size_t undo = 0;  // undo_'s size at begin_trial()
    uint64_t clock = 0, digest = 0;
    bool digest_known = false;
  };
  void record(Undo::Kind kind, const Entry& e, std::shared_ptr<const isa::TensorRef> view = {}) {
    if (!trials_.empty()) undo_.push_back({kind, e, std::move(view)});
  }

  uint64_t capacity_;
  uint64_t clock_ = 0;  // use stamps
  std::shared_ptr<Entries> entries_;
  // digest() of the entries, once computed: folding asks for the digests of every child after
  // each instruction, and most tables (copies among them) have not changed since.
  mutable uint64_t digest_ = 0;
  mutable bool digest_known_ = false;
  std::vector<Undo> undo_;
  std::vector<Trial> trials_;
};

}  // namespace fracsim::sim
