// The FRISA inefficiency demonstration (Cambricon-FR): TopK of k = 8 over 2^20 f32 elements on
// configs/f1.yaml, written (a) with built-in ops only, a full sort followed by a slice, and (b)
// with `topk`, the fractal op a user defines in YAML (isa/ops/ext/topk.yaml: split rule plus the
// leaf's select_topk). It never sorts or writes back the whole array: at every level it keeps 8
// elements, so it moves fewer bytes and takes fewer cycles.
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "isa/program.h"
#include "sim/machine.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

constexpr int64_t kN = int64_t{1} << 20;
constexpr int64_t kK = 8;

isa::DataSegment random_f32(uint64_t address, int64_t count, uint64_t seed) {
  isa::DataSegment d;
  d.kind = isa::DataSegment::Kind::random;
  d.address = address;
  d.dtype = isa::DType::f32;
  d.count = static_cast<uint64_t>(count);
  d.seed = seed;
  d.lo = -1;
  d.hi = 1;
  return d;
}

// (a) out = sort(x) descending; the answer is out[0:8], copied out by an eltwise max(v, v).
isa::Program sort_then_slice() {
  const isa::OpTable& ops = isa::OpTable::builtin();
  isa::Program p;
  p.name = "topk-by-sort";
  const uint64_t bytes = kN * 4;
  isa::TensorRef x = isa::make_tensor(0, isa::DType::f32, {1, kN});
  isa::TensorRef sorted = isa::make_tensor(bytes, isa::DType::f32, {1, kN});
  isa::TensorRef top = isa::make_tensor(2 * bytes, isa::DType::f32, {1, kK});
  p.footprint = 2 * bytes + 64;
  const isa::OpDef& sort = ops.get("sort");
  p.instructions.push_back(isa::Instruction{sort.opcode, {x, sorted}, {1}});
  const isa::OpDef& elt = ops.get("eltwise");
  isa::TensorRef head = isa::with_leading_dims(sorted.slice(1, 0, kK), 6);
  isa::Instruction copy{elt.opcode, {head, head, isa::with_leading_dims(top, 6)}, {0}};
  copy.attrs[elt.attr_index("fn")] = 4;  // max(v, v) = v
  p.instructions.push_back(copy);
  p.data = {random_f32(0, kN, 7)};
  p.symbols = {isa::Symbol{"top", isa::SymbolRole::output, top}};
  return p;
}

// (b) topk with the element indices as its second input.
isa::Program topk_op() {
  const isa::OpTable& ops = isa::OpTable::builtin();
  isa::Program p;
  p.name = "topk-op";
  const uint64_t bytes = kN * 4;
  isa::TensorRef x = isa::make_tensor(0, isa::DType::f32, {1, kN});
  isa::TensorRef idx = isa::make_tensor(bytes, isa::DType::i32, {1, kN});
  isa::TensorRef top = isa::make_tensor(2 * bytes, isa::DType::f32, {1, kK});
  isa::TensorRef top_idx = isa::make_tensor(2 * bytes + 64, isa::DType::i32, {1, kK});
  p.footprint = 2 * bytes + 128;
  const isa::OpDef& topk = ops.get("topk");
  p.instructions.push_back(isa::Instruction{topk.opcode, {x, idx, top, top_idx}, {1, 0}});
  isa::DataSegment iota;
  iota.kind = isa::DataSegment::Kind::bytes;
  iota.address = bytes;
  iota.dtype = isa::DType::i32;
  iota.count = kN;
  iota.bytes.resize(bytes);
  for (int64_t i = 0; i < kN; ++i)
    for (int b = 0; b < 4; ++b) iota.bytes[4 * i + b] = static_cast<uint8_t>(i >> (8 * b));
  p.data = {random_f32(0, kN, 7), iota};
  p.symbols = {isa::Symbol{"top", isa::SymbolRole::output, top},
               isa::Symbol{"top_idx", isa::SymbolRole::output, top_idx}};
  return p;
}

uint64_t bytes_moved(const RunResult& r) {
  uint64_t b = 0;
  for (const NodeReport& n : r.nodes)
    b += n.stats[Counter::load_bytes] + n.stats[Counter::store_bytes];
  return b;
}

}  // namespace

TEST_CASE("TopK on f1: the topk fractal op beats sort-then-slice in cycles and bytes moved") {
  // The bytes below are derived for the halving decomposer's pieces.
  MachineSpec spec = load_machine_spec(std::string(FRACSIM_SOURCE_DIR) + "/configs/f1.yaml");
  spec.decomposer = isa::Policy::halving;
  const isa::OpTable& ops = isa::OpTable::builtin();
  const RunResult a = simulate(spec, ops, sort_then_slice(), Mode::timing);
  const RunResult b = simulate(spec, ops, topk_op(), Mode::timing);
  const uint64_t bytes_a = bytes_moved(a), bytes_b = bytes_moved(b);
  MESSAGE(
      fmt::format("sort then slice: {} cycles, {} bytes moved; topk op: {} cycles, {} bytes "
                  "moved",
                  a.cycles, bytes_a, b.cycles, bytes_b));
  CHECK(b.cycles < a.cycles);
  CHECK(bytes_b < bytes_a);
  // Where the bytes go (4 MiB = the 2^20 values, or their 2^20 indices):
  //  (a) the chip loads the values and writes the sorted array back (8 MiB), the cores load and
  //      write back their chunks (8 MiB), and the chip's merge pass streams the runs from the
  //      main memory and back (8 MiB); the slice copies 32 bytes in, 32 out, at two levels.
  //  (b) the chip and the cores each load values and indices once (2 x 8 MiB); only lists of 8
  //      values and 8 indices (64 B) come back: the chip's 8 serial pieces keep their list
  //      resident (resident_partial_sums) and write it back once, 64 B; each of the 32 cores
  //      writes its list back for each of the 8 chip pieces, 16,384 B; core 0, whose list is
  //      the chip's, reloads it for the 7 pieces past the first, 448 B: 16,896 bytes in all.
  //      Without resident partial sums the chip writes its list back 8 times (512 B) and
  //      reloads it 7 times (448 B): 17,792 bytes.
  constexpr uint64_t kMiB4 = uint64_t{4} << 20;
  CHECK(bytes_a == 6 * kMiB4 + 128);
  CHECK(bytes_b == 4 * kMiB4 + 16896);
  CHECK(bytes_a - bytes_b == 8371840);
  for (LevelSpec& l : spec.levels) l.resident_partial_sums = false;
  CHECK(bytes_moved(simulate(spec, ops, topk_op(), Mode::timing)) == 4 * kMiB4 + 17792);
}
