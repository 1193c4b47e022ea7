#include "isa/decompose/cost_model.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "isa/decompose/localize.h"
#include "isa/decompose/parallel.h"
#include "isa/decompose/piece.h"
#include "isa/decompose/sequential.h"
#include "isa/error.h"

namespace fracsim::isa {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

uint64_t sub_block(uint64_t bytes, int n) { return bytes / n / kTileAlign * kTileAlign; }

// Bytes the piece reads and writes in its parent's memory (broadcast dims once).
void piece_traffic(const OpDef& op, const Instruction& piece, double& read, double& written) {
  read = written = 0;
  for (size_t o = 0; o < op.operands.size(); ++o) {
    const double b = static_cast<double>(piece.operands[o].stored_bytes());
    if (operand_is_read(op, piece, o)) read += b;
    if (op.operands[o].role == OperandRole::out) written += b;
  }
}

// The piece of `instr` with the longest chunk of every dim that `parts` splits it into.
Instruction largest_part(const OpDef& op, const Instruction& instr,
                         const std::vector<int64_t>& parts) {
  const std::vector<int64_t> ext = dim_extents(op, instr);
  PieceRange r{std::vector<int64_t>(ext.size(), 0), ext};
  for (size_t d = 0; d < ext.size(); ++d)
    if (ext[d] > 0) r.len[d] = ceil_div(ext[d], parts[d]);
  return slice_instruction(op, instr, r);
}

// 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ...
int64_t next_parts(int64_t p) {
  if (p < 4) return p + 1;
  const int64_t pow2 = int64_t{1} << (63 - __builtin_clzll(static_cast<uint64_t>(p)));
  return p == pow2 ? p + p / 2 : 2 * pow2;
}

}  // namespace

std::string_view policy_name(Policy p) { return p == Policy::halving ? "halving" : "search"; }

std::optional<Policy> policy_named(std::string_view name) {
  if (name == "halving") return Policy::halving;
  if (name == "search") return Policy::search;
  return std::nullopt;
}

std::vector<int64_t> shape_key(const Instruction& instr) {
  std::vector<int64_t> key{instr.opcode};
  key.insert(key.end(), instr.attrs.begin(), instr.attrs.end());
  for (const TensorRef& t : instr.operands) {
    key.push_back(static_cast<int64_t>(t.dtype));
    key.push_back(t.rank());
    for (size_t a = 0; a < t.shape.size(); ++a)
      key.push_back(t.strides[a] == 0 ? -t.shape[a] - 1 : t.shape[a]);
  }
  return key;
}

CostModel::CostModel(Policy policy, std::vector<LevelCost> levels)
    : policy_(policy),
      levels_(std::move(levels)),
      node_cache_(levels_.size()),
      quick_cache_(levels_.size()),
      parts_cache_(levels_.size() + 1) {}

double CostModel::execute_cycles(int l, const OpDef& op, const OpTable& ops,
                                 const Instruction& piece) const {
  const LevelCost& lc = level(l);
  if (lc.leaf) return static_cast<double>(leaf_cycles(op, piece, lc.unit));
  const std::vector<int64_t> ext = dim_extents(op, piece);
  bool parallel_dim = false;
  for (size_t d = 0; d < ext.size(); ++d)
    parallel_dim = parallel_dim || (op.dims[d].kind == DimKind::parallel && ext[d] > 1);
  if (parallel_dim) {
    // The children of one split run at once: the largest sets the time.
    const Instruction child = largest_part(op, piece, parallel_parts(l, op, ops, piece, lc.fanout));
    return quick_cycles(l + 1, op, ops, child) * lc.child_clock_ratio;
  }
  // A reduce dim split across the children (parallel's fallback), combined by the LFU.
  const ParallelSplit split =
      parallel(op, ops, localize(op, piece, 0).local, lc.fanout, 0, this, l);
  double children = 0, lfu = 0;
  for (const Instruction& c : split.children)
    children = std::max(children, quick_cycles(l + 1, op, ops, c));
  for (const Instruction& r : split.reductions)
    lfu += std::ceil(static_cast<double>(r.operands.back().elements()) /
                     static_cast<double>(lc.lfu_throughput));
  return children * lc.child_clock_ratio + lfu;
}

double CostModel::tiling_cycles(int l, const OpDef& op, const OpTable& ops,
                                const Instruction& instr, const std::vector<int64_t>& tile) const {
  const LevelCost& lc = level(l);
  const std::vector<int64_t> ext = dim_extents(op, instr);
  double pieces = 1, reduce_parts = 1;
  std::vector<int64_t> len(ext.size());
  for (size_t d = 0; d < ext.size(); ++d) {
    const int64_t parts = ext[d] == 0 ? 1 : ceil_div(ext[d], tile[d]);
    len[d] = parts == 0 ? 0 : ceil_div(ext[d], parts);
    pieces *= static_cast<double>(parts);
    if (op.dims[d].kind == DimKind::reduce) reduce_parts *= static_cast<double>(parts);
  }
  const Instruction piece = worst_case_piece(op, instr, len);
  // Inputs whole in every piece are loaded once, with the first; pieces past the first along a
  // reduce dim also read the output they accumulate onto.
  const double stat = static_cast<double>(static_footprint(op, instr, tile));
  double read = 0, written = 0;
  piece_traffic(op, piece, read, written);
  double accumulated = 0;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == OperandRole::out && !op.operands[o].read_if.empty() &&
        !operand_is_read(op, piece, o))
      accumulated += static_cast<double>(piece.operands[o].stored_bytes());
  const double ld = lc.latency_cycles + std::max(0.0, read - stat) / lc.bytes_per_cycle;
  const double wb = lc.latency_cycles + written / lc.bytes_per_cycle;
  const double ex = execute_cycles(l, op, ops, piece);
  const double steady = std::max({ld, ex, wb, static_cast<double>(lc.decode_cycles)});
  // The first sweep over the output tiles pipelines. A piece that accumulates reads its output
  // tile, and a node's LD waits for every earlier piece in flight whose write-back span overlaps
  // what it reads (spans, not elements: the strided tiles of one output overlap): each such
  // piece runs alone, load, execute and write-back in turn.
  const double first = pieces / reduce_parts;
  if (lc.resident && resident_split(op, instr, tile)) {
    // Resident partial sums: no piece reloads its output tile, so none waits for a write-back,
    // and one write-back serves the reduce_parts pieces of a tile.
    const double resident_steady =
        std::max({ld, ex, wb / reduce_parts, static_cast<double>(lc.decode_cycles)});
    return stat / lc.bytes_per_cycle + ld + ex + wb + (pieces - 1) * resident_steady;
  }
  const double serial = (ld + accumulated / lc.bytes_per_cycle) + ex + wb;
  return stat / lc.bytes_per_cycle + ld + ex + wb + (first - 1) * steady +
         (pieces - first) * serial;
}

double CostModel::quick_cycles(int l, const OpDef& op, const OpTable& ops,
                               const Instruction& instr) const {
  auto& cache = quick_cache_.at(static_cast<size_t>(l));
  std::vector<int64_t> key = shape_key(instr);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const LevelCost& lc = level(l);
  double read = 0, written = 0;
  piece_traffic(op, instr, read, written);
  const double t = std::max({read / lc.bytes_per_cycle, written / lc.bytes_per_cycle,
                             execute_cycles(l, op, ops, instr)}) +
                   2 * lc.latency_cycles;
  cache.emplace(std::move(key), t);
  return t;
}

double CostModel::node_cycles(int l, const OpDef& op, const OpTable& ops,
                              const Instruction& instr) const {
  auto& cache = node_cache_.at(static_cast<size_t>(l));
  std::vector<int64_t> key = shape_key(instr);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const LevelCost& lc = level(l);
  NodeBudget budget{sub_block(lc.capacity, lc.depth), lc.fanout, lc.name};
  budget.model = this;
  budget.level = l;
  budget.resident = lc.resident;
  std::vector<int64_t> tile;
  try {
    NodeBudget whole = budget;
    whole.capacity = lc.capacity;
    whole.depth = lc.depth;
    tile = choose_tiling(op, ops, instr, lc.depth > 1 ? whole : budget);
  } catch (const ConfigError&) {
    tile = choose_tiling(op, ops, instr, budget);
  }
  const double t = tiling_cycles(l, op, ops, instr, tile);
  cache.emplace(std::move(key), t);
  return t;
}

const std::vector<int64_t>& CostModel::parallel_parts(int l, const OpDef& op, const OpTable& ops,
                                                      const Instruction& piece, int fanout) const {
  auto& cache = parts_cache_.at(static_cast<size_t>(l + 1));  // the root is level -1
  std::vector<int64_t> key = shape_key(piece);
  key.push_back(fanout);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  const std::vector<int64_t> ext = dim_extents(op, piece);
  std::vector<int> dims;
  for (size_t d = 0; d < ext.size(); ++d)
    if (op.dims[d].kind == DimKind::parallel && ext[d] > 1) dims.push_back(static_cast<int>(d));
  // Candidates: parts per parallel dim with product <= fanout; each judged by the estimated
  // time of its largest child (children of one split run at once). Ties: fewer children.
  std::vector<int64_t> parts(ext.size(), 1), best = parts;
  double best_t = quick_cycles(l + 1, op, ops, piece);
  int64_t best_children = 1;
  // Splits that leave more than half the children idle are not tried when a split can use
  // more.
  int64_t most = 1;
  for (int d : dims) most *= std::min<int64_t>(ext[d], fanout);
  const int64_t least = std::min<int64_t>(most, fanout) / 2 + 1;
  std::map<std::vector<int64_t>, double> seen;  // largest child's lengths -> its time
  std::function<void(size_t, int64_t)> search = [&](size_t i, int64_t used) {
    if (i == dims.size()) {
      if (used < least) return;
      std::vector<int64_t> len(ext.size());
      for (size_t d = 0; d < ext.size(); ++d) len[d] = ceil_div(ext[d], parts[d]);
      auto [it, fresh] = seen.try_emplace(len, 0.0);
      if (fresh) it->second = quick_cycles(l + 1, op, ops, largest_part(op, piece, parts));
      const double t = it->second;
      if (t < best_t || (t == best_t && used < best_children)) {
        best = parts;
        best_t = t;
        best_children = used;
      }
      return;
    }
    const int d = dims[i];
    // Parts of the form 2^k or 3 * 2^k that change the chunk length, product within the
    // fanout.
    int64_t last_len = -1;
    for (int64_t p = 1; p <= ext[d] && used * p <= fanout; p = next_parts(p)) {
      const int64_t len = ceil_div(ext[d], p);
      if (len == last_len) continue;
      last_len = len;
      parts[d] = p;
      search(i + 1, used * p);
    }
    parts[d] = 1;
  };
  search(0, 1);
  return cache.emplace(std::move(key), best).first->second;
}

}  // namespace fracsim::isa
