// Folding: a timing run that simulates one child per class of congruent children gives the
// cycles and every node's counters of the run that simulates every node.
#include <algorithm>

#include <doctest/doctest.h>

#include <fmt/format.h>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/reference.h"
#include "sim/machine.h"
#include "sim/report.h"
#include "tests/common/compile_helpers.h"

using namespace fracsim;
using namespace fracsim::sim;

namespace {

const std::string kRoot = FRACSIM_SOURCE_DIR;

// Unfused, as its matmuls and bias adds give the overlap below the root something to overlap.
const isa::Program& mlp() {
  static const isa::Program p =
      compiler::compile(compiler::load_workload(kRoot + "/workloads/mlp.yaml", testing::unfused()),
                        isa::OpTable::builtin());
  return p;
}

// As compiled by default: one epilogue op per layer.
const isa::Program& fused_mlp() {
  static const isa::Program p = compiler::compile(
      compiler::load_workload(kRoot + "/workloads/mlp.yaml"), isa::OpTable::builtin());
  return p;
}

// The timing run of `p` on `spec` with every node simulated.
RunResult unfolded(const MachineSpec& spec, const isa::Program& p) {
  SimOptions no_fold;
  no_fold.fold = false;
  return simulate(spec, isa::OpTable::builtin(), p, Mode::timing, no_fold);
}

// Per level (the root first), the sum of its nodes' `pieces` counters.
std::vector<uint64_t> pieces_per_level(const MachineSpec& spec, const RunResult& r) {
  std::vector<uint64_t> pieces;
  for (const NodeStats& t : level_totals(spec, r)) pieces.push_back(t[Counter::pieces]);
  return pieces;
}

void check_same(const RunResult& folded, const RunResult& unfolded) {
  CHECK(folded.folded);
  CHECK(!unfolded.folded);
  CHECK(folded.cycles == unfolded.cycles);
  CHECK(folded.picoseconds == unfolded.picoseconds);
  REQUIRE(folded.nodes.size() == unfolded.nodes.size());
  for (size_t i = 0; i < folded.nodes.size(); ++i) {
    CAPTURE(i);
    CHECK(folded.nodes[i].level == unfolded.nodes[i].level);
    CHECK(folded.nodes[i].stats.value == unfolded.nodes[i].stats.value);
  }
}

}  // namespace

TEST_CASE("folded and unfolded timing runs of the MLP agree on every scale machine to 256 leaves") {
  for (const char* leaves : {"0001", "0004", "0016", "0064", "0256"}) {
    CAPTURE(leaves);
    const MachineSpec spec =
        load_machine_spec(fmt::format("{}/configs/scale/leaves-{}.yaml", kRoot, leaves));
    const RunResult f = simulate(spec, isa::OpTable::builtin(), mlp(), Mode::timing);
    const RunResult u = unfolded(spec, mlp());
    CHECK(static_cast<int64_t>(u.nodes.size()) == [&] {
      int64_t n = 1;
      for (size_t l = 0; l < spec.levels.size(); ++l) n += spec.nodes_at(l);
      return n;
    }());
    check_same(f, u);
    // stats.json differs only in the field that records the folding.
    nlohmann::ordered_json jf = stats_json(spec, mlp(), f, {}), ju = stats_json(spec, mlp(), u, {});
    CHECK(jf["folded"] == true);
    CHECK(ju["folded"] == false);
    // The pieces simulated: unfolded, every node's; folded, no more.
    CHECK(ju["simulated_pieces"] == nlohmann::ordered_json(u.simulated_pieces));
    const std::vector<uint64_t> pieces = pieces_per_level(spec, u);
    CHECK(u.simulated_pieces == pieces);
    for (size_t l = 0; l < pieces.size(); ++l) CHECK(f.simulated_pieces[l] <= pieces[l]);
    for (const char* key : {"folded", "simulated_pieces"}) {
      jf.erase(key);
      ju.erase(key);
    }
    CHECK(jf.dump() == ju.dump());
  }
}

namespace {

// A scale machine with every data-movement feature on at every level.
MachineSpec movement_on(const char* leaves, bool overlap, bool posted_writes) {
  MachineSpec spec =
      load_machine_spec(fmt::format("{}/configs/scale/leaves-{}.yaml", kRoot, leaves));
  for (LevelSpec& l : spec.levels) {
    l.link.multicast = true;
    l.link.pipelined = true;
    l.link.posted_writes = posted_writes;
    l.keep_outputs = true;
    l.resident_partial_sums = true;
    l.hold_partial_sums = true;
    l.overlap = overlap;
  }
  return spec;
}

}  // namespace

TEST_CASE("with the data-movement features on, folded and unfolded runs agree") {
  // Broadcast over shared links (its groups split classes by their part in it), outputs kept
  // in the permutation tables and instructions overlapping in the children, on the MLP up to
  // 256 leaves and the shared-weights program. A piece issued beside the ones before sends
  // each child its own copy of a shared tile (no broadcast round), so broadcasts are looked for
  // with overlap off too.
  uint64_t overlapped = 0;
  for (const char* leaves : {"0004", "0016", "0064", "0256"})
    for (const bool overlap : {true, false}) {
      CAPTURE(leaves);
      CAPTURE(overlap);
      const MachineSpec spec = movement_on(leaves, overlap, false);
      const RunResult f = simulate(spec, isa::OpTable::builtin(), mlp(), Mode::timing);
      check_same(f, unfolded(spec, mlp()));
      check_same(simulate(spec, isa::OpTable::builtin(), fused_mlp(), Mode::timing),
                 unfolded(spec, fused_mlp()));
      uint64_t broadcast = 0, resident = 0;
      for (const NodeReport& n : f.nodes) {
        broadcast += n.stats[Counter::broadcast_bytes];
        resident += n.stats[Counter::resident_bytes];
        overlapped += n.stats[Counter::overlapped_pieces];
      }
      if (!overlap) CHECK(broadcast > 0);
      CHECK(resident > 0);
    }
  CHECK(overlapped > 0);
}

TEST_CASE("with posted write-backs, folded and unfolded runs agree") {
  // Pieces retire when their writes land, after their sub-blocks are free for the next: the
  // scale machines with every data-movement feature on and every write posted.
  for (const char* leaves : {"0016", "0256"}) {
    CAPTURE(leaves);
    const MachineSpec spec = movement_on(leaves, true, true);
    check_same(simulate(spec, isa::OpTable::builtin(), mlp(), Mode::timing), unfolded(spec, mlp()));
    check_same(simulate(spec, isa::OpTable::builtin(), fused_mlp(), Mode::timing),
               unfolded(spec, fused_mlp()));
  }
}

TEST_CASE("a pool too small for the classes at once is grown, with the same results") {
  // The reduced ResNet-50 on 64 leaves needs more simulated nodes at once than the first pools
  // hold; the run starts again with full pools and still agrees with the unfolded run. The MLP
  // fits its first pools when halved.
  MachineSpec spec = load_machine_spec(kRoot + "/configs/scale/leaves-0064.yaml");
  spec.decomposer = isa::Policy::halving;
  const isa::Program resnet = compiler::compile(
      compiler::load_workload(kRoot + "/workloads/resnet50-small.yaml"), isa::OpTable::builtin());
  const RunResult folded = simulate(spec, isa::OpTable::builtin(), resnet, Mode::timing);
  CHECK(folded.pools_outgrown);
  check_same(folded, unfolded(spec, resnet));
  CHECK(!simulate(spec, isa::OpTable::builtin(), mlp(), Mode::timing).pools_outgrown);
}

TEST_CASE("functional runs never fold") {
  const MachineSpec spec = load_machine_spec(kRoot + "/configs/tiny.yaml");
  CHECK(!simulate(spec, isa::OpTable::builtin(), mlp(), Mode::functional).folded);
  CHECK(simulate(spec, isa::OpTable::builtin(), mlp(), Mode::timing).folded);
}

namespace {
// Three matmuls against the same weights b[1,32,48] (then an eltwise that rewrites b, then a
// fourth matmul): static operands, permutation table hits and invalidations at every level.
isa::Program shared_weights() {
  const isa::OpTable& ops = isa::OpTable::builtin();
  auto f32 = [](uint64_t a, isa::Shape s) { return isa::make_tensor(a, isa::DType::f32, s); };
  const isa::OpDef& mm = ops.get("matmul");
  const isa::OpDef& elt = ops.get("eltwise");
  isa::Program p;
  p.name = "weights";
  const isa::TensorRef b = f32(0x10000, {1, 32, 48});
  for (int i = 0; i < 3; ++i)
    p.instructions.push_back(isa::Instruction{
        mm.opcode,
        {f32(0x20000 * (i + 1), {1, 96, 32}), b, f32(0x100000 + 0x10000 * i, {1, 96, 48})},
        {0}});
  auto as6 = [&](uint64_t a) { return f32(a, {1, 1, 1, 1, 32, 48}); };
  p.instructions.push_back(
      isa::Instruction{elt.opcode, {as6(0x10000), as6(0x18000), as6(0x10000)}, {0}});
  p.instructions.push_back(p.instructions[0]);
  p.footprint = 0x140000;
  isa::DataSegment d;
  d.kind = isa::DataSegment::Kind::random;
  d.count = p.footprint / 4;
  d.seed = 3;
  d.lo = -1;
  d.hi = 1;
  p.data = {d};
  p.symbols = {isa::Symbol{"out", isa::SymbolRole::output, p.instructions.back().operands[2]}};
  return p;
}
}  // namespace

TEST_CASE("folding agrees when children keep weights resident across instructions") {
  const std::string yaml = R"(machine: w
root:
  clock: 1 GHz
  lfu_throughput: 16
  memory: {capacity: 64 MiB, bandwidth: 64 GB/s, latency: 20 ns}
levels:
  - name: cluster
    fanout: 3
    lfu_throughput: 16
    memory: {capacity: 96 KiB, bandwidth: 64 GB/s, latency: 2 ns}
    link: {bandwidth: 32 GB/s, latency: 10 ns}
  - name: core
    fanout: 4
    memory: {capacity: 24 KiB, bandwidth: 64 GB/s}
    link: {bandwidth: 16 GB/s, latency: 5 ns}
    leaf:
      matrix: {rows: 4, cols: 4}
      vector: {lanes: 8}
)";
  // As written (kept outputs on, point-to-point links), then with both links shared; each with
  // resident partial sums on (as written) and off. Either way the search keeps b whole at the
  // cores, a static operand that shared links broadcast.
  for (auto [multicast, resident] : {std::pair{false, true}, std::pair{true, true},
                                     std::pair{false, false}, std::pair{true, false}}) {
    CAPTURE(multicast);
    CAPTURE(resident);
    MachineSpec spec = parse_machine_spec(yaml, "w.yaml");
    for (LevelSpec& l : spec.levels) {
      l.link.multicast = multicast;
      l.resident_partial_sums = resident;
    }
    const isa::Program p = shared_weights();
    const RunResult f = simulate(spec, isa::OpTable::builtin(), p, Mode::timing);
    const RunResult u = unfolded(spec, p);
    check_same(f, u);
    uint64_t hits = 0, broadcast = 0;
    for (const NodeReport& n : u.nodes) {
      hits += n.stats[Counter::static_hits];
      broadcast += n.stats[Counter::broadcast_bytes];
    }
    CHECK(hits > 0);
    CHECK((broadcast > 0) == multicast);
    // And the data is right: the functional run checks every hit against the reference.
    const RunResult fn = simulate(spec, isa::OpTable::builtin(), p, Mode::functional);
    CHECK(fn.cycles == u.cycles);
    CHECK(fn.memory == isa::run_reference(p, isa::OpTable::builtin()));
  }
}

TEST_CASE("folding agrees on a sort whose runs are merged at every level") {
  // One row of 2^24 f32 (64 MiB), too long for a chip, a cluster or a core: runs sorted piece by
  // piece are merged by finalize passes, and children's by the LFU.
  const isa::OpDef& sort = isa::OpTable::builtin().get("sort");
  isa::Program p;
  p.name = "sort";
  const isa::TensorRef x = isa::make_tensor(0, isa::DType::f32, {1, 1 << 24});
  const isa::TensorRef y = isa::make_tensor(64 << 20, isa::DType::f32, {1, 1 << 24});
  p.instructions.push_back(isa::Instruction{sort.opcode, {x, y}, {1}});
  p.footprint = 128 << 20;
  const MachineSpec spec = load_machine_spec(kRoot + "/configs/scale/leaves-0064.yaml");
  const RunResult f = simulate(spec, isa::OpTable::builtin(), p, Mode::timing);
  const RunResult u = unfolded(spec, p);
  check_same(f, u);
  uint64_t lfu = 0;
  for (const NodeReport& n : u.nodes) lfu += n.stats[Counter::lfu_elements];
  CHECK(lfu > 0);
}

TEST_CASE("with every subtree digest colliding, folding gives the same results") {
  // Every subtree digest cleared to 0: each pair of congruent children with the same layout is
  // a candidate class, and the exact comparison of the tables below them decides alone. (On
  // these runs the layouts already part every class the digests would; the comparison itself is
  // tested in test_tensor_permutation_table.cpp.)
  const isa::Program resnet = compiler::compile(
      compiler::load_workload(kRoot + "/workloads/resnet50-small.yaml"), isa::OpTable::builtin());
  for (const char* leaves : {"0016", "0064"}) {
    CAPTURE(leaves);
    const MachineSpec spec =
        load_machine_spec(fmt::format("{}/configs/scale/leaves-{}.yaml", kRoot, leaves));
    SimOptions collide;
    collide.fold_digest_mask = 0;
    const RunResult u = unfolded(spec, resnet);
    check_same(simulate(spec, isa::OpTable::builtin(), resnet, Mode::timing, collide), u);
    check_same(simulate(spec, isa::OpTable::builtin(), resnet, Mode::timing), u);
  }
}

namespace {

// The instructions of `workload` (compiled as by default) lowered from the named layers.
isa::Program layers_of(const std::string& workload, const std::vector<std::string>& names) {
  isa::Program p = compiler::compile(
      compiler::load_workload(kRoot + "/workloads/" + workload + ".yaml"), isa::OpTable::builtin());
  isa::Program q = p;
  q.instructions.clear();
  q.instruction_names.clear();
  for (size_t i = 0; i < p.instructions.size(); ++i)
    if (std::find(names.begin(), names.end(), p.instruction_names[i]) != names.end()) {
      q.instructions.push_back(p.instructions[i]);
      q.instruction_names.push_back(p.instruction_names[i]);
    }
  REQUIRE(q.instructions.size() == names.size());
  return q;
}

}  // namespace

TEST_CASE("folding agrees where the order of the processes within a time step could decide") {
  // VGG-16's fc6 on f100: a cluster decides whether to issue its next piece beside its cores'
  // running ones in the very time step they end, and a core whether to split its loads around
  // a hold that ends in that time step. Both wait until the time step has settled; the order
  // the kernel runs the processes in (which folding changes) no longer decides.
  const MachineSpec f100 = load_machine_spec(kRoot + "/configs/f100.yaml");
  const isa::Program fc6 = layers_of("vgg16", {"fc6"});
  const RunResult f = simulate(f100, isa::OpTable::builtin(), fc6, Mode::timing);
  check_same(f, unfolded(f100, fc6));
  uint64_t overlapped = 0;
  for (const NodeReport& n : f.nodes) overlapped += n.stats[Counter::overlapped_pieces];
  CHECK(overlapped > 0);
}

TEST_CASE(
    "folding agrees where children issued beside their earlier instructions read what a "
    "sibling wrote") {
  // VGG-16's fc6 then fc7 on scale/leaves-0016: the root issues fc7 beside fc6, and the
  // clusters' first pieces read what some of them wrote. A cluster would wait for its own
  // write-back and the others for the root's piece, so the four, alike in all else, would not
  // run as one (folded 64 cycles short of unfolded); they all wait for the root's piece
  // (Job::parent_orders).
  const MachineSpec spec = load_machine_spec(kRoot + "/configs/scale/leaves-0016.yaml");
  const isa::Program two = layers_of("vgg16", {"fc6", "fc7"});
  const RunResult f = simulate(spec, isa::OpTable::builtin(), two, Mode::timing);
  check_same(f, unfolded(spec, two));
  CHECK(f.nodes[0].stats[Counter::overlapped_pieces] > 0);
}

TEST_CASE("leaves that place alike tiles in different places of their memories fold as one") {
  // VGG-16's conv1_1 then conv1_2 on f1: conv1_1's pieces leave the cores' tables in
  // different states, so conv1_2's tiles land at different addresses in different cores. A
  // leaf's timing reads which tiles hit, not where they lie: such cores still run as one class.
  const MachineSpec f1 = load_machine_spec(kRoot + "/configs/f1.yaml");
  const isa::Program two = layers_of("vgg16", {"conv1_1", "conv1_2"});
  const RunResult f = simulate(f1, isa::OpTable::builtin(), two, Mode::timing);
  const RunResult u = unfolded(f1, two);
  check_same(f, u);
  // Unfolded, every piece of every node is simulated: per level, the sum of its nodes' pieces.
  const std::vector<uint64_t> pieces = pieces_per_level(f1, u);
  CHECK(u.simulated_pieces == pieces);
  CHECK(pieces == std::vector<uint64_t>{2, 40, 4352});
  // Folded, the 4352 leaf pieces take 576 simulated ones (measured; 656 when a class needed
  // equal addresses).
  CHECK(f.simulated_pieces == std::vector<uint64_t>{2, 40, 576});
}

TEST_CASE("pool pieces that differ only in where they lie in the whole input fold as one") {
  // VGG-16's pool1 on f1: a 2x2 max pool, stride 2, no padding; the chip cuts it into 16
  // pieces, each across the 32 cores. Each core's piece has an input frame (the whole input's
  // rows and columns before and after its own), which made every core's instruction a class of
  // its own: all 512 leaf pieces simulated. No window reaches past its piece's input, so the
  // frame is cut to 0 (isa::slice_instruction): the 32 cores of each chip piece are one class.
  const MachineSpec f1 = load_machine_spec(kRoot + "/configs/f1.yaml");
  const isa::Program pool = layers_of("vgg16", {"pool1"});
  const RunResult f = simulate(f1, isa::OpTable::builtin(), pool, Mode::timing);
  const RunResult u = unfolded(f1, pool);
  check_same(f, u);
  CHECK(pieces_per_level(f1, u) == std::vector<uint64_t>{1, 16, 512});
  CHECK(f.simulated_pieces == std::vector<uint64_t>{1, 16, 16});
}
