// Property tests of the decomposition engine, for every op in isa/ops/ and every dtype row it
// accepts: for random shapes, attributes, budgets and fan-outs, running the serial pieces, the
// children and the LFU reductions with the reference semantics gives what the whole instruction
// gives. Integer results are bit-exact. f32 results are bit-exact unless a reduce dim was split
// across children (the LFU then reassociates a sum) or the op declares `reassociates`: they are
// then held to the bound of isa/reassociation.h.
//
// FRACSIM_PROPERTY_CASES sets the number of cases per op and dtype row (100 in the quick set;
// the long set runs 2,000).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>

#include "isa/decompose/cost_model.h"
#include "isa/decompose/execute.h"
#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"
#include "isa/reassociation.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

const OpTable& ops() { return OpTable::builtin(); }

Instruction make_instr(const OpDef& op, std::vector<TensorRef> operands,
                       std::vector<int64_t> attrs) {
  Instruction in;
  in.opcode = op.opcode;
  in.operands = std::move(operands);
  in.attrs = std::move(attrs);
  return in;
}

int property_cases() {
  const char* env = std::getenv("FRACSIM_PROPERTY_CASES");
  return env ? std::atoi(env) : 100;
}

struct Case {
  Instruction instr;
  std::vector<uint8_t> memory;
};

// A random instruction of `op` with operand dtypes `row`, its operands laid out one after
// another and filled with values. Window dims get consistent kernels, strides, dilations and pads.
// Whether int attribute `name` scales a dim's offset (pool2d_argmax's index strides).
bool is_offset_scale(const OpDef& op, const std::string& name) {
  return std::any_of(op.dims.begin(), op.dims.end(),
                     [&](const DimDef& d) { return d.offset_scale == name; });
}

// Random contents of element i of t (little endian): f32, f16 and f64 uniform in [-2, 2); i8,
// i16 and i32 in [-128, 127]; u8 and u16 over their whole range; u32, u64 and i64 random bits.
void random_element(std::mt19937_64& rng, const TensorRef& t, uint8_t* base, int64_t i) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const uint32_t size = dtype_size(t.dtype);
  uint8_t* at = base + size * i;
  switch (t.dtype) {
    case DType::f32: {
      const float v = std::uniform_real_distribution<float>(-2, 2)(rng);
      std::memcpy(at, &v, 4);
      return;
    }
    case DType::f16: {
      const uint16_t v = half_from_double(std::uniform_real_distribution<double>(-2, 2)(rng));
      std::memcpy(at, &v, 2);
      return;
    }
    case DType::f64: {
      const double v = std::uniform_real_distribution<double>(-2, 2)(rng);
      std::memcpy(at, &v, 8);
      return;
    }
    case DType::u8:
    case DType::u16: {
      const int64_t v = pick(0, (int64_t{1} << (8 * size)) - 1);
      std::memcpy(at, &v, size);
      return;
    }
    case DType::u32:
    case DType::u64:
    case DType::i64: {
      const uint64_t v = rng();
      std::memcpy(at, &v, size);
      return;
    }
    default: {
      const int64_t v = pick(-128, 127);
      std::memcpy(at, &v, size);
      return;
    }
  }
}

// With `taps`, a case for splitting a kernel's taps: a long kernel and few outputs.
Case random_case(const OpDef& op, std::mt19937_64& rng, size_t row_index, bool taps = false) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const std::vector<DType>& row = op.dtypes[row_index];
  const DTypeRowLimit& limit = op.dtype_limits[row_index];
  bool integer_operands = false;
  for (DType t : row) integer_operands = integer_operands || is_integer(t);
  std::vector<int64_t> attrs;
  for (const AttrDef& a : op.attributes) {
    if (a.type == AttrType::enumeration) {
      // Values defined for f32 only are not drawn for integer operands, nor values the row's
      // `only:` leaves out.
      std::vector<int64_t> allowed;
      for (size_t v = 0; v < a.values.size(); ++v)
        if ((!integer_operands || std::find(a.float_only.begin(), a.float_only.end(),
                                            a.values[v]) == a.float_only.end()) &&
            (limit.attr != a.name || std::find(limit.values.begin(), limit.values.end(),
                                               a.values[v]) != limit.values.end()))
          allowed.push_back(static_cast<int64_t>(v));
      attrs.push_back(allowed[pick(0, static_cast<int64_t>(allowed.size()) - 1)]);
    } else if (a.type == AttrType::integer && is_offset_scale(op, a.name)) {
      attrs.push_back(pick(0, 50));
    } else {
      attrs.push_back(a.type == AttrType::boolean ? pick(0, 1) : a.default_value);
    }
  }
  // Extents: most dims small, one or two splittable dims large, so that operands stay a few
  // thousand elements and the decomposer has something to split.
  std::map<std::string, int64_t> ext;
  std::vector<std::string> splittable;
  const int64_t windows = std::count_if(op.dims.begin(), op.dims.end(),
                                        [](const DimDef& d) { return d.kind == DimKind::window; });
  bool has_reduce = false;
  for (const DimDef& d : op.dims) {
    if (d.kind == DimKind::window) continue;
    const bool kernel = op.is_taps(static_cast<size_t>(&d - op.dims.data()));
    ext[d.name] = d.kind == DimKind::whole || kernel ? pick(1, 3) : pick(1, taps ? 2 : 4);
    // A taps case: a kernel long enough that its window outgrows a tile's alignment (64
    // bytes), so that splitting its taps saves room (its cube stays small at three axes).
    if (kernel && taps) ext[d.name] = pick(2, windows == 1 ? 64 : windows == 2 ? 10 : 5);
    // Not a kernel's taps: a long kernel makes a window op's input the cube of it.
    if ((d.kind == DimKind::parallel || d.kind == DimKind::reduce) && !kernel && !taps)
      splittable.push_back(d.name);
    has_reduce = has_reduce || (d.kind == DimKind::reduce &&
                                !op.is_taps(static_cast<size_t>(&d - op.dims.data())));
  }
  for (int big = 0; big < 2 && !splittable.empty(); ++big) {
    const std::string& d = splittable[pick(0, static_cast<int64_t>(splittable.size()) - 1)];
    ext[d] = pick(2, op.dim(d).kind == DimKind::reduce ? 80 : 32);
  }
  // Half the cases keep only reduce dims > 1 so that they must be split across children.
  if (has_reduce && pick(0, 1) == 0)
    for (const DimDef& d : op.dims)
      if (d.kind == DimKind::parallel) ext[d.name] = 1;
  for (const DimDef& d : op.dims) {
    if (d.kind != DimKind::window) continue;
    const WindowDef& w = d.window;
    auto set_term = [&](const WindowTerm& t, int64_t lo, int64_t hi) {
      if (t.name.empty()) return t.value;
      if (op.dim_index(t.name) >= 0) return ext[t.name];
      return attrs[op.attr_index(t.name)] = pick(lo, hi);
    };
    const int64_t K = set_term(w.kernel, 1, 3), st = set_term(w.stride, 1, 3),
                  dil = set_term(w.dilation, 1, 2), span = (K - 1) * dil + 1;
    // (taps cases: narrow pads, so that the input is about as long as a window)
    const int64_t most_pad = taps ? std::min<int64_t>(span - 1, 2) : span - 1;
    int64_t pb = pick(0, most_pad), pe = pick(0, most_pad);
    int64_t W = (ext[w.of] - 1) * st + span - pb - pe + pick(0, st - 1);
    while (W < 1) {  // pads larger than the input: shrink them
      pb = pb > 0 ? pb - 1 : 0;
      pe = pe > 0 ? pe - 1 : 0;
      W = (ext[w.of] - 1) * st + span - pb - pe;
    }
    if (op.dim_index(w.kernel.name) >= 0 && !op.dim(w.kernel.name).extent_attr.empty())
      attrs[op.attr_index(op.dim(w.kernel.name).extent_attr)] = K;
    attrs[op.attr_index(w.pad_begin)] = pb;
    attrs[op.attr_index(w.pad_end)] = pe;
    ext[d.name] = W;
    ext[w.of] = (W + pb + pe - span) / st + 1;
  }
  Case c;
  c.instr.opcode = op.opcode;
  c.instr.attrs = attrs;
  uint64_t at = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    Shape s;
    for (const std::string& d : op.operands[o].dims) s.push_back(ext[d]);
    TensorRef ref = make_tensor(at, row[o], s);
    // Inputs sometimes broadcast along one dim (stride 0).
    if (op.operands[o].role == OperandRole::in && ref.rank() > 0 && pick(0, 3) == 0)
      ref.strides[pick(0, ref.rank() - 1)] = 0;
    ref = ref.packed_at(at);
    at = align_up(at + ref.stored_bytes(), 64);
    c.instr.operands.push_back(ref);
  }
  c.memory.assign(at, 0);
  // A product of f32 terms takes factors +-e^u, |u| <= 0.1: thousands of them stay normal
  // floats, where products of [-2, 2) underflow and subnormals lose the relative bound.
  const bool product = op.attr_index("fn") >= 0 &&
                       op.attributes[op.attr_index("fn")].type == AttrType::enumeration &&
                       op.enum_value("fn", attrs) == "prod";
  for (const TensorRef& t : c.instr.operands) {
    uint8_t* base = c.memory.data() + t.address;
    for (int64_t i = 0; i < t.stored_elements(); ++i) {
      random_element(rng, t, base, i);
      if (product && t.dtype == DType::f32) {
        const float v = std::exp(std::uniform_real_distribution<float>(-0.1f, 0.1f)(rng)) *
                        (pick(0, 1) ? 1.0f : -1.0f);
        std::memcpy(base + 4 * i, &v, 4);
      }
    }
  }
  return c;
}

bool integer_operands(const Instruction& in) {
  return std::any_of(in.operands.begin(), in.operands.end(),
                     [](const TensorRef& t) { return is_integer(t.dtype); });
}

// The smallest piece's footprint: every splittable dim at extent 1 (a kernel's taps too where
// they split; with `taps_whole`, the taps whole and the other dims at 1).
uint64_t smallest_footprint(const OpDef& op, const Instruction& in, int fanout,
                            bool taps_whole = false) {
  std::vector<int64_t> tile = dim_extents(op, in);
  for (size_t d = 0; d < tile.size(); ++d) {
    if (op.is_taps(d) && (taps_whole || !op.splits_for(d, integer_operands(in), in.attrs)))
      continue;
    if (op.dims[d].kind == DimKind::parallel || op.dims[d].kind == DimKind::reduce)
      tile[d] = std::min<int64_t>(tile[d], 1);
  }
  return tiling_footprint(op, ops(), in, tile, fanout);
}

// With `taps`, the first level has too little room for one output's whole window, so that the
// kernel's taps must split where they can.
std::vector<NodeBudget> random_levels(std::mt19937_64& rng, const OpDef& op, const Case& c,
                                      bool taps = false) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<NodeBudget> levels;
  const int depth = pick(1, 3);
  const uint64_t whole = c.memory.size();
  for (int l = 0; l < depth; ++l) {
    NodeBudget b;
    b.fanout = l + 1 == depth ? 1 : pick(1, 6);
    const uint64_t floor = smallest_footprint(op, c.instr, b.fanout) * 2;
    // Some budgets hold everything, most force splits.
    const uint64_t cap = pick(0, 4) == 0 ? whole * 2 + 4096 : whole / (1u << pick(0, 6));
    b.bytes = std::max<uint64_t>(cap, floor);
    b.where = fmt::format("level {}", l);
    levels.push_back(b);
  }
  if (taps) {
    const int f = levels[0].fanout;
    levels[0].bytes = std::max<uint64_t>(smallest_footprint(op, c.instr, f),
                                         smallest_footprint(op, c.instr, f, true) - 1);
  }
  return levels;
}

// Bit for bit, or, when reassociated, within the bound of isa/reassociation.h.
void check_equal(const OpDef& op, const Case& c, const std::vector<uint8_t>& got,
                 const std::vector<uint8_t>& want, bool reassociated, const TensorRef& out) {
  MemoryView g{const_cast<uint8_t*>(got.data()), got.size()};
  MemoryView w{const_cast<uint8_t*>(want.data()), want.size()};
  // The magnitude S of each element: the op on the absolute values of its operands.
  std::vector<uint8_t> mag = c.memory;
  MemoryView m{mag.data(), mag.size()};
  if (reassociated) {
    absolute_operands(c.instr, m);
    execute_reference(op, c.instr, m);
  }
  const ElementCheck r =
      compare_elements(out, g, w, reassociated ? &m : nullptr, terms_per_output(op, c.instr));
  CHECK_MESSAGE(r.holds(), op.name, " ", tensor_str(out));
}

// A cost model of the random levels, for the `search` policy: each level's sub-block as its
// memory, unit sizes that the random shapes straddle.
CostModel search_model(const std::vector<NodeBudget>& levels) {
  std::vector<LevelCost> lc;
  for (size_t l = 0; l < levels.size(); ++l) {
    LevelCost c;
    c.name = levels[l].where;
    c.capacity = levels[l].bytes;
    c.fanout = levels[l].fanout;
    c.leaf = l + 1 == levels.size();
    c.bytes_per_cycle = 16;
    c.latency_cycles = 10;
    for (auto& m : c.unit.matrix) m = {4, 4};
    c.unit.lanes = 8;
    c.unit.width = 4;
    lc.push_back(c);
  }
  return CostModel(Policy::search, lc);
}

// With `taps`, a quarter of the cases, each sized so that a kernel's taps must split.
void property(const OpDef& op, size_t row, uint64_t seed, bool taps = false) {
  std::mt19937_64 rng(seed);
  int split_serially = 0, split_across_children = 0, reduced = 0, searched = 0, taps_split = 0;
  const int cases = taps ? std::max(1, property_cases() / 4) : property_cases();
  for (int i = 0; i < cases; ++i) {
    Case c = random_case(op, rng, row, taps);
    std::vector<NodeBudget> levels = random_levels(rng, op, c, taps);
    // Every third case is decomposed by the search policy instead of halving.
    const bool search = i % 3 == 2;
    const CostModel model = search_model(levels);
    if (search) {
      ++searched;
      for (size_t l = 0; l < levels.size(); ++l) {
        levels[l].model = &model;
        levels[l].level = static_cast<int>(l);
      }
    }
    std::vector<uint8_t> want = c.memory, got = c.memory;
    execute_reference(op, c.instr, MemoryView{want.data(), want.size()});
    DecompositionStats st;
    execute_decomposed(op, ops(), c.instr, MemoryView{got.data(), got.size()}, levels, &st);
    CAPTURE(i);
    const std::string text = instruction_str(op, c.instr);
    CAPTURE(text);
    for (size_t o = 0; o < op.operands.size(); ++o)
      if (op.operands[o].role == OperandRole::out)
        check_equal(op, c, got, want, st.reductions > 0 || op.reassociates, c.instr.operands[o]);
    if (taps) {
      // Whether the first level splits a kernel's taps (they split only when nothing else can).
      const std::vector<int64_t> tile = choose_tiling(op, ops(), c.instr, levels[0]);
      const std::vector<int64_t> ext = dim_extents(op, c.instr);
      for (size_t d = 0; d < ext.size(); ++d)
        if (op.is_taps(d) && tile[d] < ext[d]) {
          ++taps_split;
          break;
        }
    }
    if (search || taps) continue;  // the counts below are of the halving cases
    split_serially += st.pieces > static_cast<int64_t>(levels.size());
    split_across_children += st.leaf_runs > 1;
    reduced += st.reductions > 0;
    // Inputs are never written.
    for (size_t o = 0; o < c.instr.operands.size(); ++o) {
      if (op.operands[o].role != OperandRole::in) continue;
      auto [lo, hi] = c.instr.operands[o].byte_span();
      CHECK(std::memcmp(got.data() + lo, c.memory.data() + lo, hi - lo) == 0);
    }
  }
  if (taps) {
    // Integer average pools do not split their taps; the max cases of the row do.
    CHECK_MESSAGE(taps_split > 0, op.name, ": no case split the kernel's taps");
    return;
  }
  // The random budgets and fan-outs really exercise the decomposer.
  const int halved = cases - searched;
  CHECK(searched > 0);
  CHECK(split_serially > halved / 2);
  CHECK(split_across_children > halved / 2);
  // Reduce dims other than a kernel's taps split across children too (taps split serially).
  bool has_reduce = false;
  for (size_t d = 0; d < op.dims.size(); ++d)
    has_reduce = has_reduce || (op.dims[d].kind == DimKind::reduce && !op.is_taps(d));
  if (has_reduce) CHECK(reduced > halved / 10);
}

}  // namespace

TEST_CASE("decomposition equals the whole op, for every op and dtype row") {
  uint64_t seed = 1;
  for (const OpDef& op : ops().ops())
    for (size_t row = 0; row < op.dtypes.size(); ++row) {
      std::string name = op.name;
      for (DType t : op.dtypes[row]) name += std::string(" ") + std::string(dtype_name(t));
      SUBCASE(name.c_str()) { property(op, row, seed); }
      ++seed;
    }
}

TEST_CASE("decomposition equals the whole op when a kernel's taps split, every window op") {
  uint64_t seed = 1000;
  for (const OpDef& op : ops().ops()) {
    bool kernel = false;
    for (size_t d = 0; d < op.dims.size(); ++d) kernel = kernel || op.is_taps(d);
    if (!kernel) continue;
    for (size_t row = 0; row < op.dtypes.size(); ++row) {
      std::string name = op.name;
      for (DType t : op.dtypes[row]) name += std::string(" ") + std::string(dtype_name(t));
      SUBCASE(name.c_str()) { property(op, row, seed, true); }
      ++seed;
    }
  }
}

TEST_CASE("every serial piece fits its sub-block") {
  std::mt19937_64 rng(11);
  for (const OpDef& op : ops().ops())
    for (int i = 0; i < 20; ++i) {
      Case c = random_case(op, rng, 0);
      for (const NodeBudget& b : random_levels(rng, op, c))
        for (const Instruction& p : sequential(op, ops(), c.instr, b))
          REQUIRE(piece_footprint(op, ops(), p, b.fanout) <= b.bytes);
    }
}

TEST_CASE("sequential split of a matmul, by hand") {
  // a[8,16] x b[16,8] f32: tiles of 512 + 512 + 256 bytes = 1280 > 1024. Halving M saves
  // 256+128 = 384, N the same, K 256+256 = 512: K is halved (640+... fits: 256+256+256 = 768).
  const OpDef& op = ops().get("matmul");
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 8, 16}), make_tensor(512, DType::f32, {1, 16, 8}),
                  make_tensor(1024, DType::f32, {1, 8, 8})},
                 {0});
  auto pieces = sequential(op, ops(), in, NodeBudget{1024, 1, "leaf"});
  REQUIRE(pieces.size() == 2);
  CHECK(tensor_str(pieces[0].operands[0]) == "f32@0x0[1,8,8:128,16,1]");
  CHECK(tensor_str(pieces[1].operands[0]) == "f32@0x20[1,8,8:128,16,1]");
  CHECK(tensor_str(pieces[1].operands[1]) == "f32@0x300[1,8,8:128,8,1]");
  CHECK(pieces[0].attrs[0] == 0);
  CHECK(pieces[1].attrs[0] == 1);  // the second K piece accumulates
}

TEST_CASE("parallel split prefers parallel dims and balances remainders") {
  const OpDef& op = ops().get("matmul");
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 10, 4}), make_tensor(4096, DType::f32, {1, 4, 3}),
                  make_tensor(8192, DType::f32, {1, 10, 3})},
                 {0});
  ParallelSplit s = parallel(op, ops(), in, 4, 1 << 20);
  // M=10,N=3 on 4 children: M in 4 parts gives max work 3*3*4 = 36; M2xN2 gives 5*2*4 = 40.
  REQUIRE(s.children.size() == 4);
  CHECK(s.reductions.empty());
  CHECK(s.scratch_bytes == 0);
  CHECK(s.children[0].operands[0].shape == Shape{1, 3, 4});
  CHECK(s.children[1].operands[0].shape == Shape{1, 3, 4});
  CHECK(s.children[2].operands[0].shape == Shape{1, 2, 4});
  CHECK(s.children[3].operands[0].shape == Shape{1, 2, 4});
  CHECK(s.children[2].operands[2].address == 8192 + 6 * 3 * 4);
}

TEST_CASE("parallel split falls back to the reduce dim with LFU reductions") {
  const OpDef& op = ops().get("matmul");
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 1, 10}), make_tensor(64, DType::f32, {1, 10, 1}),
                  make_tensor(128, DType::f32, {1, 1, 1})},
                 {1});
  ParallelSplit s = parallel(op, ops(), in, 3, 1024);
  REQUIRE(s.children.size() == 3);
  CHECK(s.children[0].operands[0].shape == Shape{1, 1, 4});
  CHECK(s.children[1].operands[0].shape == Shape{1, 1, 3});
  CHECK(s.children[0].attrs[0] == 1);  // child 0 keeps accumulate and writes the output
  CHECK(s.children[1].attrs[0] == 0);
  CHECK(s.children[0].operands[2].address == 128);
  CHECK(s.children[1].operands[2].address == 1024);
  CHECK(s.children[2].operands[2].address == 1024 + 64);
  CHECK(s.scratch_bytes == 128);
  REQUIRE(s.reductions.size() == 2);
  CHECK(s.reductions[0].operands[1].address == 1024);
  CHECK(s.reductions[1].operands[1].address == 1024 + 64);
}

namespace {
// a[1,4,6] x b[1,6,2] f32 at 0, 512 and 1024, not accumulating.
Instruction matmul_4x6x2() {
  return make_instr(ops().get("matmul"),
                    {make_tensor(0, DType::f32, {1, 4, 6}), make_tensor(512, DType::f32, {1, 6, 2}),
                     make_tensor(1024, DType::f32, {1, 4, 2})},
                    {0});
}
}  // namespace

TEST_CASE("a reduce dim split beside a parallel dim: each child's partial folds into its part") {
  // a[1,4,6] x b[1,6,2] f32 with parts M 2, K 3 (children row-major, K fastest): children 0-2
  // take rows 0-1 and K chunks 0-1, 2-3, 4-5; children 3-5 rows 2-3. The K-chunk-0 children
  // write their part of the output (rows 0-1 at 1024, rows 2-3 at 1024 + 2 x 2 x 4 = 1040);
  // the others write dense 2x2 partials (16 bytes, a 64-byte tile each) from the scratch base
  // 4096 on, and the LFU adds each into its own part of the output, chunk 1 before chunk 2.
  const OpDef& op = ops().get("matmul");
  Instruction in = matmul_4x6x2();
  CHECK(reduce_splits_across(op, in, 3));
  CHECK(splits_reduce(op, {1, 2, 1, 3}));
  const ParallelSplit s = split_by_parts(op, ops(), in, {1, 2, 1, 3}, 4096);
  REQUIRE(s.children.size() == 6);
  CHECK(tensor_str(s.children[1].operands[0]) == "f32@0x8[1,2,2:24,6,1]");
  CHECK(tensor_str(s.children[4].operands[0]) == "f32@0x38[1,2,2:24,6,1]");
  CHECK(s.children[0].operands[2].address == 1024);
  CHECK(s.children[3].operands[2].address == 1040);
  CHECK(s.children[1].operands[2].address == 4096);
  CHECK(s.children[2].operands[2].address == 4096 + 64);
  CHECK(s.children[4].operands[2].address == 4096 + 128);
  CHECK(s.children[5].operands[2].address == 4096 + 192);
  CHECK(s.scratch_bytes == 256);
  REQUIRE(s.reductions.size() == 4);
  const std::vector<std::pair<uint64_t, uint64_t>> folds{
      {1024, 4096}, {1024, 4096 + 64}, {1040, 4096 + 128}, {1040, 4096 + 192}};
  for (size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    CHECK(s.reductions[r].operands[0].address == folds[r].first);
    CHECK(s.reductions[r].operands[1].address == folds[r].second);
    CHECK(s.reductions[r].operands[0].elements() == 4);
    CHECK(lfu_cycles(s.reductions[r], 3) == 2);  // 4 elements at 3 per cycle
  }
}

TEST_CASE("split apart (search), every partial goes to scratch and the first fold writes out") {
  // The case above with `apart`: the K-chunk-0 children write dense partials too, each child's
  // from 4096 in child order (64-byte tiles): children 0-2 at 4096, 4160, 4224, children 3-5
  // at 4288, 4352, 4416. The first fold of each part of the output adds partials 0 and 1 into
  // it, the second adds partial 2 onto it.
  const OpDef& op = ops().get("matmul");
  Instruction in = matmul_4x6x2();
  const ParallelSplit s = split_by_parts(op, ops(), in, {1, 2, 1, 3}, 4096, true);
  REQUIRE(s.children.size() == 6);
  for (size_t c = 0; c < 6; ++c) {
    CAPTURE(c);
    CHECK(s.children[c].operands[2].address == 4096 + 64 * c);
    CHECK(s.children[c].attrs[0] == 0);
  }
  CHECK(s.scratch_bytes == 384);
  REQUIRE(s.reductions.size() == 4);
  const std::vector<std::array<uint64_t, 3>> folds{
      {4096, 4160, 1024}, {1024, 4224, 1024}, {4288, 4352, 1040}, {1040, 4416, 1040}};
  for (size_t r = 0; r < 4; ++r) {
    CAPTURE(r);
    for (size_t o = 0; o < 3; ++o) CHECK(s.reductions[r].operands[o].address == folds[r][o]);
    CHECK(s.reductions[r].operands[2].elements() == 4);
  }
  // Accumulating onto the output, chunk 0 reads its old value: it writes the output itself.
  in.attrs[0] = 1;
  const ParallelSplit acc = split_by_parts(op, ops(), in, {1, 2, 1, 3}, 4096, true);
  CHECK(acc.children[0].operands[2].address == 1024);
  CHECK(acc.children[0].attrs[0] == 1);
  CHECK(acc.children[3].operands[2].address == 1040);
  CHECK(acc.scratch_bytes == 256);
  CHECK(acc.reductions[0].operands[0].address == 1024);
}

TEST_CASE("a reduce dim split beside parallel dims equals the whole op, every op that allows it") {
  // Random cases and random partitions (up to 3 parts per parallel dim, 2 or 3 along one reduce
  // dim that reduce_splits_across allows): the children, then the LFU's reductions in order,
  // within the reassociation bound of the reference (integers bit for bit).
  std::mt19937_64 rng(77);
  int tried = 0;
  for (const OpDef& op : ops().ops())
    for (size_t row = 0; row < op.dtypes.size(); ++row)
      for (int i = 0; i < 8; ++i) {
        Case c = random_case(op, rng, row);
        const std::vector<int64_t> ext = dim_extents(op, c.instr);
        std::vector<int> reducible;
        for (size_t d = 0; d < ext.size(); ++d)
          if (ext[d] > 1 && reduce_splits_across(op, c.instr, d))
            reducible.push_back(static_cast<int>(d));
        if (reducible.empty()) continue;
        auto pick = [&](int64_t lo, int64_t hi) {
          return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
        };
        std::vector<int64_t> parts(ext.size(), 1);
        for (size_t d = 0; d < ext.size(); ++d)
          if (op.dims[d].kind == DimKind::parallel && ext[d] > 1)
            parts[d] = pick(1, std::min<int64_t>(ext[d], 3));
        const int r =
            reducible[static_cast<size_t>(pick(0, static_cast<int64_t>(reducible.size()) - 1))];
        parts[static_cast<size_t>(r)] = pick(2, std::min<int64_t>(ext[static_cast<size_t>(r)], 3));
        const uint64_t base = align_up(c.memory.size(), kTileAlign);
        std::vector<uint8_t> want = c.memory;
        execute_reference(op, c.instr, MemoryView{want.data(), want.size()});
        CAPTURE(op.name);
        const std::string text = instruction_str(op, c.instr);
        CAPTURE(text);
        // Both ways of placing chunk 0's partials (`apart`: search's) give the same bytes.
        std::vector<uint8_t> plain;
        for (bool apart : {false, true}) {
          CAPTURE(apart);
          const ParallelSplit s = split_by_parts(op, ops(), c.instr, parts, base, apart);
          std::vector<uint8_t> got = c.memory;
          got.resize(base + s.scratch_bytes, 0);
          MemoryView g{got.data(), got.size()};
          for (const Instruction& child : s.children) execute_reference(op, child, g);
          for (const Instruction& red : s.reductions)
            execute_reference(ops().get(red.opcode), red, g);
          got.resize(c.memory.size());
          for (size_t o = 0; o < op.operands.size(); ++o)
            if (op.operands[o].role == OperandRole::out)
              check_equal(op, c, got, want, true, c.instr.operands[o]);
          if (apart)
            CHECK(got == plain);
          else
            plain = got;
        }
        ++tried;
      }
  CHECK(tried > 50);
}

TEST_CASE("a piece that can never fit is an error naming level, op and operand") {
  const OpDef& op = ops().get("matmul");
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 4, 4}), make_tensor(64, DType::f32, {1, 4, 4}),
                  make_tensor(128, DType::f32, {1, 4, 4})},
                 {0});
  CHECK_THROWS_WITH_AS(sequential(op, ops(), in, NodeBudget{100, 1, "level 2 (core)"}),
                       "level 2 (core): matmul: the smallest piece needs 192 bytes but a cyclic "
                       "sub-block holds 100 (operand a alone needs 4 bytes)",
                       ConfigError);
}

TEST_CASE("sized against the whole memory, reused inputs stay whole and everything fits") {
  // a[1,64,8] x b[1,8,16] f32: a 2 KiB, b 512 B, out[1,64,16] 4 KiB, in 4 KiB of local memory
  // with N = 3 sub-blocks. The cost of a tiling is the inputs it leaves whole (static, once)
  // plus 3 times the rest of its largest piece; each step halves the dim that lowers it most:
  //   whole:  static a + b 2560, rest out 4096:        2560 + 3 * 4096 = 14848
  //   N = 8:  a 2048 static; b 256 + out 2048:         2048 + 3 * 2304 =  8960 (M = 32: 9728)
  //   N = 4:  a static;      b 128 + out 1024:         2048 + 3 * 1152 =  5504 (M = 32: 6912)
  //   N = 2:  a static;      b 64 + out 512:           2048 + 3 *  576 =  3776 <= 4096
  // so a (the larger input) stays whole and N splits into 8 pieces.
  const OpDef& op = ops().get("matmul");
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 64, 8}), make_tensor(4096, DType::f32, {1, 8, 16}),
                  make_tensor(8192, DType::f32, {1, 64, 16})},
                 {0});
  NodeBudget b{4096 / 3, 1, "leaf"};
  b.capacity = 4096;
  b.depth = 3;
  SequentialPlan plan = plan_sequential(op, ops(), in, b);
  REQUIRE(plan.pieces.size() == 8);
  for (const Instruction& p : plan.pieces) {
    CHECK(p.operands[0] == in.operands[0]);  // a whole in every piece
    CHECK(p.operands[1].shape == Shape{1, 8, 2});
  }
  CHECK(static_footprint(op, in, {1, 64, 2, 8}) == 2048);  // tile: B, M, N, K
  // The classic budget (one sub-block of 1365 bytes for everything) cannot keep a whole.
  std::vector<Instruction> classic = sequential(op, ops(), in, NodeBudget{4096 / 3, 1, "leaf"});
  CHECK(classic.front().operands[0] != in.operands[0]);
}

TEST_CASE("whole-memory tilings fit: static inputs once plus N times the rest") {
  std::mt19937_64 rng(21);
  for (const OpDef& op : ops().ops())
    for (int i = 0; i < 20; ++i) {
      Case c = random_case(op, rng, 0);
      for (NodeBudget b : random_levels(rng, op, c)) {
        b.depth = 3;
        b.capacity = b.bytes * 3;
        const SequentialPlan plan = plan_sequential(op, ops(), c.instr, b);
        const std::vector<int64_t> ext = dim_extents(op, c.instr);
        uint64_t largest = 0;
        for (const Instruction& p : plan.pieces)
          largest = std::max(largest, piece_footprint(op, ops(), p, b.fanout));
        // Inputs identical in every piece (and not written in place) are the static ones.
        uint64_t stat = 0;
        for (size_t o = 0; o < op.operands.size(); ++o) {
          if (op.operands[o].role != OperandRole::in) continue;
          bool same = true;
          for (const Instruction& p : plan.pieces)
            same = same && p.operands[o] == plan.pieces[0].operands[o];
          for (size_t w = 0; w < op.operands.size(); ++w) {
            if (op.operands[w].role != OperandRole::out) continue;
            auto [a0, a1] = c.instr.operands[o].byte_span();
            auto [w0, w1] = c.instr.operands[w].byte_span();
            same = same && !(a0 < w1 && w0 < a1);
          }
          if (same) stat += align_up(plan.pieces[0].operands[o].stored_bytes(), kTileAlign);
        }
        stat = std::min(stat, largest);
        REQUIRE(stat + 3 * (largest - stat) <= b.capacity);
      }
    }
}

TEST_CASE("a fused epilogue runs on the piece that completes the sum only") {
  const OpDef& op = ops().get("matmul_bias_act");
  const int acc = op.attr_index("accumulate"), fin = op.attr_index("epilogue");
  std::vector<int64_t> attrs;
  for (const AttrDef& a : op.attributes) attrs.push_back(a.default_value);
  // Serially along K: only the second K piece applies the epilogue.
  Instruction in =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 8, 16}), make_tensor(512, DType::f32, {1, 16, 8}),
                  make_tensor(1024, DType::f32, {8}), make_tensor(1088, DType::f32, {1, 8, 8})},
                 attrs);
  auto pieces = sequential(op, ops(), in, NodeBudget{1280, 1, "leaf"});
  REQUIRE(pieces.size() == 2);
  CHECK(pieces[0].attrs[acc] == 0);
  CHECK(pieces[0].attrs[fin] == 0);
  CHECK(pieces[1].attrs[acc] == 1);
  CHECK(pieces[1].attrs[fin] == 1);
  // The piece that starts the tile the last accumulates onto has neither set: the first.
  const std::optional<Instruction> start = starting_instruction(op, pieces[1]);
  REQUIRE(start);
  CHECK(start->attrs == pieces[0].attrs);
  for (size_t o = 0; o < op.operands.size(); ++o)
    CHECK(start->operands[o].shape == pieces[0].operands[o].shape);
  CHECK_FALSE(starting_instruction(op, pieces[0]));
  // Across children: no child applies it; the LFU adds the partial, then runs the op over K = 0.
  Instruction dot =
      make_instr(op,
                 {make_tensor(0, DType::f32, {1, 1, 8}), make_tensor(64, DType::f32, {1, 8, 1}),
                  make_tensor(128, DType::f32, {1}), make_tensor(192, DType::f32, {1, 1, 1})},
                 attrs);
  ParallelSplit s = parallel(op, ops(), dot, 2, 1 << 20);
  REQUIRE(s.children.size() == 2);
  for (const Instruction& c : s.children) CHECK(c.attrs[fin] == 0);
  REQUIRE(s.reductions.size() == 2);
  CHECK(s.reductions[0].opcode == ops().get("eltwise").opcode);
  CHECK(s.reductions[1].opcode == op.opcode);
  CHECK(s.reductions[1].operands[0].shape == Shape{1, 1, 0});
  CHECK(s.reductions[1].attrs[acc] == 1);
  CHECK(s.reductions[1].attrs[fin] == 1);
}
