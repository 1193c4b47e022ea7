// Reference semantics of the ordering ops: sort, merge and topk (the sort unit) and count.
//
// One key order for every op that compares values (sort, merge and topk all use key_less):
//  integers: the usual order;
//  f32:      the usual order, except that -0 and +0 are equal, and every NaN (any sign, any
//            payload) equals every other NaN and is greater than +inf.
// Descending is the exact reverse of that order (NaN first), and equal keys still keep their
// input order: sort is stable, and merge takes equal keys from the lower run first. That is what
// makes the decomposition exact: sorting balanced chunks of a row and merging the runs gives
// the whole row's stable sort bit for bit, equal keys (+0/-0, NaNs, duplicates) in input order.
//
// topk ranks candidate entries (value, index) by a total order on their bits:
//  1. real entries before fill entries. A fill entry is index -1 with the worst value of the
//     dtype for the direction (f32: -inf for largest, +inf for smallest; integers: min or max),
//     the entry topk writes when it has fewer than K candidates. Fill entries come back as
//     candidates when the decomposer combines partial lists (a partial list of a short chunk
//     is padded with them), so they must rank after every real entry, NaN included: ranking
//     them by value alone would put a +inf fill before a real NaN when smallest.
//  2. value by the key order, largest or smallest first;
//  3. smaller index first (signed);
//  4. the value's bits, as unsigned, smaller first: only entries with equal keys and equal
//     indices get here (+0/-0, NaN payloads, duplicate indices), and this makes the order total
//     so that any two entries either differ in rank or are bit-identical.
// A total order makes "the best K of a set" unique, so the best K of the union of chunks equals
// the best K of the union of the chunks' best K lists (fill entries sinking to the end).
#include "isa/decompose/piece.h"
#include "isa/semantics/semantics.h"

namespace fracsim::isa::semantics {
namespace {

template <typename T>
bool key_less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// The key order of sort and merge, in the requested direction: a strict weak order whose ties
// are broken by position (stability), never by the values' bits.
template <typename T>
struct KeyOrder {
  bool descending = false;
  bool operator()(T a, T b) const { return descending ? key_less(b, a) : key_less(a, b); }
};

template <typename T>
auto value_bits(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof b);
    return b;
  } else {
    return static_cast<std::make_unsigned_t<T>>(v);
  }
}

// Reads a [M,N] operand into rows, before anything is written: in and out may overlap.
template <typename T>
std::vector<std::vector<T>> read_rows(MemoryView mem, const TensorRef& t) {
  std::vector<std::vector<T>> rows(t.shape[0], std::vector<T>(t.shape[1]));
  for (int64_t m = 0; m < t.shape[0]; ++m)
    for (int64_t n = 0; n < t.shape[1]; ++n)
      rows[m][n] = load<T>(mem, t, m * t.strides[0] + n * t.strides[1]);
  return rows;
}

template <typename T>
void write_rows(MemoryView mem, const TensorRef& t, const std::vector<std::vector<T>>& rows) {
  for (int64_t m = 0; m < t.shape[0]; ++m)
    for (int64_t n = 0; n < t.shape[1]; ++n)
      store<T>(mem, t, m * t.strides[0] + n * t.strides[1], rows[m][n]);
}

template <typename T>
struct Sort {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const KeyOrder<T> order{attr(op, in, "descending") != 0};
    std::vector<std::vector<T>> rows = read_rows<T>(mem, in.operands[0]);
    for (std::vector<T>& row : rows) std::stable_sort(row.begin(), row.end(), order);
    write_rows(mem, in.operands[1], rows);
  }
};

template <typename T>
struct Merge {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const KeyOrder<T> order{attr(op, in, "descending") != 0};
    const int64_t runs = attr(op, in, "runs");
    if (runs < 1) throw ConfigError(fmt::format("merge: runs = {}, must be at least 1", runs));
    std::vector<std::vector<T>> rows = read_rows<T>(mem, in.operands[0]);
    const int64_t n = in.operands[0].shape[1];
    // More runs than elements: the runs past the n-th are empty (balanced lengths of 1 and 0).
    std::vector<int64_t> begin, len;
    if (n > 0) balanced_chunks(n, std::min(runs, n), begin, len);
    for (std::vector<T>& row : rows) {
      std::vector<int64_t> head = begin;
      std::vector<T> merged;
      merged.reserve(n);
      for (int64_t i = 0; i < n; ++i) {
        // The smallest head; ties go to the lower run (only a strictly smaller key displaces).
        int64_t best = -1;
        for (size_t r = 0; r < head.size(); ++r) {
          if (head[r] == begin[r] + len[r]) continue;
          if (best < 0 || order(row[head[r]], row[head[best]])) best = static_cast<int64_t>(r);
        }
        merged.push_back(row[head[best]++]);
      }
      row = std::move(merged);
    }
    write_rows(mem, in.operands[1], rows);
  }
};

template <typename T>
struct TopkEntry {
  T value;
  int32_t index;
};

template <typename T>
struct Topk {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    const TensorRef &x = in.operands[0], &idx = in.operands[1], &out = in.operands[2],
                    &out_idx = in.operands[3];
    const bool largest = attr(op, in, "largest") != 0;
    const bool accumulate = attr(op, in, "accumulate") != 0;
    const int64_t M = out.shape[0], K = out.shape[1], N = x.shape[1];
    T worst;
    if constexpr (std::is_floating_point_v<T>)
      worst = largest ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else
      worst = largest ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
    const TopkEntry<T> fill{worst, -1};
    auto is_fill = [&](const TopkEntry<T>& e) {
      return e.index == -1 && value_bits(e.value) == value_bits(worst);
    };
    // The total order of the file comment: true when a ranks before b.
    auto better = [&](const TopkEntry<T>& a, const TopkEntry<T>& b) {
      const bool fa = is_fill(a), fb = is_fill(b);
      if (fa != fb) return fb;
      if (key_less(a.value, b.value)) return !largest;
      if (key_less(b.value, a.value)) return largest;
      if (a.index != b.index) return a.index < b.index;
      return value_bits(a.value) < value_bits(b.value);
    };
    // Every row's candidates are read before any is written.
    std::vector<std::vector<TopkEntry<T>>> cand(M);
    for (int64_t m = 0; m < M; ++m) {
      if (accumulate)
        for (int64_t k = 0; k < K; ++k)
          cand[m].push_back(
              {load<T>(mem, out, m * out.strides[0] + k * out.strides[1]),
               load<int32_t>(mem, out_idx, m * out_idx.strides[0] + k * out_idx.strides[1])});
      for (int64_t n = 0; n < N; ++n)
        cand[m].push_back({load<T>(mem, x, m * x.strides[0] + n * x.strides[1]),
                           load<int32_t>(mem, idx, m * idx.strides[0] + n * idx.strides[1])});
    }
    for (int64_t m = 0; m < M; ++m) {
      std::vector<TopkEntry<T>>& c = cand[m];
      std::sort(c.begin(), c.end(), better);
      c.resize(std::max<size_t>(c.size(), K), fill);
      for (int64_t k = 0; k < K; ++k) {
        store<T>(mem, out, m * out.strides[0] + k * out.strides[1], c[k].value);
        store<int32_t>(mem, out_idx, m * out_idx.strides[0] + k * out_idx.strides[1], c[k].index);
      }
    }
  }
};

template <typename T>
struct Count {
  static void run(const OpDef& op, const Instruction& in, MemoryView mem) {
    if constexpr (std::is_floating_point_v<T>) {
      throw InternalError("count: f32 labels (its dtype rows accept integers only)");
    } else {
      const TensorRef &x = in.operands[0], &out = in.operands[1];
      const int64_t base = attr(op, in, "base");
      const bool accumulate = attr(op, in, "accumulate") != 0;
      const int64_t M = out.shape[0], C = out.shape[1], N = x.shape[1];
      // Counts wrap around in i32 (two's complement), so unsigned arithmetic does the adding.
      std::vector<uint32_t> counts(C);
      for (int64_t m = 0; m < M; ++m) {
        for (int64_t c = 0; c < C; ++c)
          counts[c] = accumulate ? static_cast<uint32_t>(load<int32_t>(
                                       mem, out, m * out.strides[0] + c * out.strides[1]))
                                 : 0u;
        for (int64_t n = 0; n < N; ++n) {
          // Labels are compared exactly, in 64 bits: base + c never wraps to meet a label.
          const int64_t c =
              static_cast<int64_t>(load<T>(mem, x, m * x.strides[0] + n * x.strides[1])) - base;
          if (c >= 0 && c < C) ++counts[c];
        }
        for (int64_t c = 0; c < C; ++c)
          store<int32_t>(mem, out, m * out.strides[0] + c * out.strides[1],
                         static_cast<int32_t>(counts[c]));
      }
    }
  }
};

}  // namespace

void register_ordering(ReferenceTable& t) {
  t["sort"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Sort>(in.operands[0].dtype, op.name, op, in, mem);
  };
  t["merge"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Merge>(in.operands[0].dtype, op.name, op, in, mem);
  };
  t["select_topk"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Topk>(in.operands[0].dtype, op.name, op, in, mem);
  };
  t["count"] = [](const OpDef& op, const Instruction& in, MemoryView mem) {
    by_dtype<Count>(in.operands[0].dtype, op.name, op, in, mem);
  };
}

}  // namespace fracsim::isa::semantics
