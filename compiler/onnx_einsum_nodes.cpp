// Einsum of one or two operands (f32, f64), as views, reduce sums and a matmul:
// - the equation: letters, one "..." per term (its dims broadcast right-aligned across the
//   operands, equal extents only), spaces ignored; without "->" the output is the ellipsis dims,
//   then the letters used once, in ASCII order (numpy's rule);
// - a letter repeated in an operand takes the diagonal: the two axes made adjacent (a transpose),
//   merged into one of n * n (a view) and sliced with step n + 1 (a strided view);
// - a letter only one operand has and the output lacks is summed there (a reduce sum);
// - two operands: a seen [batch, free of a, contracted] and b [batch, contracted, free of b]
//   (transposes and views) are multiplied as [Nb, M, K] x [Nb, K, N]: a batched matmul in f32;
//   in f64, which the matrix unit lacks, an eltwise mul of a viewed [Nb, M, K, 1] and b viewed
//   [Nb, 1, K, N] and a reduce sum over K;
// - the result is transposed into the output's order (a view).
// Steps are layers "<output>.<step>", their instructions named by the node.
#include <algorithm>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_importer.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

// A label: a letter's code, or -1 - k for dim k of the broadcast ellipsis.
using Labels = std::vector<int>;

// One term's subscripts: its letters in order, and where its "..." stands (letters before it),
// or -1 without one.
struct Term {
  std::string letters;
  int ellipsis = -1;
};

std::string label_str(int l) {
  return l >= 0 ? std::string(1, static_cast<char>(l)) : fmt::format("...[{}]", -1 - l);
}

}  // namespace

void OnnxImporter::import_einsum(const Node& n) {
  NodeAttrs a(*this, n, {"equation"});
  check_outputs(n, 1);
  if (!a.has("equation")) throw error(n, "attribute 'equation' is missing");
  const std::string written = a.get_string("equation", "");
  std::string eq;
  for (char ch : written)
    if (ch != ' ') eq += ch;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  auto parse = [&](const std::string& s) {
    Term t;
    for (size_t i = 0; i < s.size(); ++i) {
      if (std::isalpha(static_cast<unsigned char>(s[i]))) {
        t.letters += s[i];
      } else if (s.compare(i, 3, "...") == 0 && t.ellipsis < 0) {
        t.ellipsis = static_cast<int>(t.letters.size());
        i += 2;
      } else {
        throw error(n, fmt::format("equation '{}': '{}' is no subscript (letters and one '...' "
                                   "per term)",
                                   written, s.substr(i, 1)));
      }
    }
    return t;
  };
  std::vector<Term> terms;
  for (size_t from = 0;;) {
    const size_t comma = lhs.find(',', from);
    terms.push_back(parse(lhs.substr(from, comma - from)));
    if (comma == std::string::npos) break;
    from = comma + 1;
  }
  if (static_cast<int>(terms.size()) != n.input_size())
    throw error(n, fmt::format("equation '{}' has {} operands; the node has {} inputs", written,
                               terms.size(), n.input_size()));
  if (terms.size() > 2)
    throw error(n, fmt::format("equation '{}': an Einsum of {} operands is not supported (one "
                               "or two)",
                               written, terms.size()));
  std::vector<TensorDesc> xs;
  for (int i = 0; i < n.input_size(); ++i) {
    xs.push_back(data(n, i, {DType::f32, DType::f64}));
    if (xs[i].dtype != xs[0].dtype)
      throw error(
          n, fmt::format("inputs '{}' ({}) and '{}' ({}) differ in dtype", xs[0].name,
                         isa::dtype_name(xs[0].dtype), xs[i].name, isa::dtype_name(xs[i].dtype)));
  }
  const DType dtype = xs[0].dtype;

  // The labels of each operand's dims, and the extent of each label.
  int ellipsis_rank = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int rank = static_cast<int>(xs[i].shape.size());
    const int letters = static_cast<int>(terms[i].letters.size());
    if (terms[i].ellipsis < 0 ? letters != rank : letters > rank)
      throw error(n, fmt::format("equation '{}': operand {} has {} subscripts for input '{}' {}",
                                 written, i, letters, xs[i].name, isa::shape_str(xs[i].shape)));
    if (terms[i].ellipsis >= 0) ellipsis_rank = std::max(ellipsis_rank, rank - letters);
  }
  std::map<int, int64_t> extent;
  std::map<int, int> uses;
  std::vector<Labels> labels(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    const int e = static_cast<int>(xs[i].shape.size() - t.letters.size());
    for (int k = 0; k <= static_cast<int>(t.letters.size()); ++k) {
      if (k == t.ellipsis)
        for (int j = 0; j < e; ++j) labels[i].push_back(-1 - (ellipsis_rank - e + j));
      if (k < static_cast<int>(t.letters.size())) labels[i].push_back(t.letters[k]);
    }
    for (size_t dim = 0; dim < labels[i].size(); ++dim) {
      const int l = labels[i][dim];
      ++uses[l];
      auto [it, fresh] = extent.try_emplace(l, xs[i].shape[dim]);
      if (!fresh && it->second != xs[i].shape[dim])
        throw error(n, fmt::format("equation '{}': '{}' has the extents {} and {} (broadcasting "
                                   "is not supported)",
                                   written, label_str(l), it->second, xs[i].shape[dim]));
    }
  }
  Labels out;
  if (arrow == std::string::npos) {
    for (int k = 0; k < ellipsis_rank; ++k) out.push_back(-1 - k);
    for (const auto& [l, count] : uses)
      if (l >= 0 && count == 1) out.push_back(l);
  } else {
    const Term t = parse(eq.substr(arrow + 2));
    for (int k = 0; k <= static_cast<int>(t.letters.size()); ++k) {
      if (k == t.ellipsis)
        for (int j = 0; j < ellipsis_rank; ++j) out.push_back(-1 - j);
      if (k < static_cast<int>(t.letters.size())) {
        const int l = t.letters[k];
        if (!uses.count(l))
          throw error(n, fmt::format("equation '{}': output subscript '{}' is in no operand",
                                     written, t.letters[k]));
        if (std::count(out.begin(), out.end(), l))
          throw error(n, fmt::format("equation '{}': output subscript '{}' appears twice", written,
                                     t.letters[k]));
        out.push_back(l);
      }
    }
  }
  const auto has = [](const Labels& ls, int l) {
    return std::find(ls.begin(), ls.end(), l) != ls.end();
  };

  const std::string y = n.output(0);
  int step_index = 0;
  auto name_of = [&](const std::string& what) {
    return fmt::format("{}.{}{}", y, what, step_index++);
  };
  auto shape_of = [&](const Labels& ls) {
    Shape s;
    for (int l : ls) s.push_back(extent.at(l));
    return s;
  };
  auto reshape = [&](const std::string& in, const Shape& s) {
    if (w_.tensor(in).shape == s) return in;
    return add_layer(n, LayerKind::reshape, {in}, dtype, s, name_of("view")).name;
  };
  // `in` (labelled `from`) with its dims in the order `to`.
  auto transpose = [&](const std::string& in, const Labels& from, const Labels& to,
                       const std::string& name) {
    std::vector<int64_t> perm;
    for (int l : to) perm.push_back(std::find(from.begin(), from.end(), l) - from.begin());
    std::vector<int64_t> identity(perm.size());
    std::iota(identity.begin(), identity.end(), 0);
    if (perm == identity && name.empty()) return in;
    if (perm == identity)
      return add_layer(n, LayerKind::reshape, {in}, dtype, shape_of(to), name).name;
    Layer& l = add_layer(n, LayerKind::transpose, {in}, dtype, shape_of(to),
                         name.empty() ? name_of("moved") : name);
    l.perm = perm;
    return l.name;
  };

  // Per operand: its diagonals, then the sums of its labels no one else has.
  std::vector<std::string> cur;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::string t = xs[i].name;
    Labels& ls = labels[i];
    for (;;) {
      size_t p = 0, q = 0;
      for (size_t u = 0; u < ls.size() && q == 0; ++u)
        for (size_t v = u + 1; v < ls.size() && q == 0; ++v)
          if (ls[u] == ls[v]) p = u, q = v;
      if (q == 0) break;
      Labels adjacent = ls;
      adjacent.erase(adjacent.begin() + static_cast<std::ptrdiff_t>(q));
      adjacent.insert(adjacent.begin() + static_cast<std::ptrdiff_t>(p) + 1, ls[q]);
      if (q != p + 1) {
        std::vector<int64_t> perm(ls.size());
        std::iota(perm.begin(), perm.end(), 0);
        perm.erase(perm.begin() + static_cast<std::ptrdiff_t>(q));
        perm.insert(perm.begin() + static_cast<std::ptrdiff_t>(p) + 1, static_cast<int64_t>(q));
        Layer& l =
            add_layer(n, LayerKind::transpose, {t}, dtype, shape_of(adjacent), name_of("moved"));
        l.perm = perm;
        t = l.name;
      }
      const int64_t e = extent.at(ls[p]);
      Shape merged = shape_of(adjacent);
      merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(p) + 1);
      merged[p] = e * e;
      t = reshape(t, merged);
      Shape diag = merged;
      diag[p] = e;
      Layer& l = add_layer(n, LayerKind::slice, {t}, dtype, diag, name_of("diagonal"));
      l.starts.assign(diag.size(), 0);
      l.steps.assign(diag.size(), 1);
      l.steps[p] = e + 1;
      t = l.name;
      adjacent.erase(adjacent.begin() + static_cast<std::ptrdiff_t>(p) + 1);
      ls = adjacent;
    }
    std::vector<int64_t> axes;
    Labels kept;
    for (size_t dim = 0; dim < ls.size(); ++dim) {
      const bool elsewhere = terms.size() == 2 && has(labels[1 - i], ls[dim]);
      if (!has(out, ls[dim]) && !elsewhere)
        axes.push_back(static_cast<int64_t>(dim));
      else
        kept.push_back(ls[dim]);
    }
    if (!axes.empty()) {
      Layer& l = add_layer(n, LayerKind::reduce, {t}, dtype, shape_of(kept), name_of("sum"));
      l.fn = "sum";
      l.axes = axes;
      t = l.name;
      ls = kept;
    }
    cur.push_back(t);
  }

  std::string result = cur[0];
  Labels result_labels = labels[0];
  if (terms.size() == 2) {
    const Labels &la = labels[0], &lb = labels[1];
    Labels batch, free_a, contracted, free_b;
    for (int l : out) {
      if (has(la, l) && has(lb, l)) batch.push_back(l);
      if (has(la, l) && !has(lb, l)) free_a.push_back(l);
      if (!has(la, l) && has(lb, l)) free_b.push_back(l);
    }
    for (int l : la)
      if (has(lb, l) && !has(out, l)) contracted.push_back(l);
    auto joined = [](std::initializer_list<const Labels*> parts) {
      Labels all;
      for (const Labels* p : parts) all.insert(all.end(), p->begin(), p->end());
      return all;
    };
    auto count = [&](const Labels& ls) {
      int64_t c = 1;
      for (int l : ls) c *= extent.at(l);
      return c;
    };
    const int64_t nb = count(batch), m = count(free_a), k = count(contracted), nn = count(free_b);
    const std::string ta = transpose(cur[0], la, joined({&batch, &free_a, &contracted}), "");
    const std::string tb = transpose(cur[1], lb, joined({&batch, &contracted, &free_b}), "");
    std::string product;
    if (dtype == DType::f32) {
      product = add_layer(n, LayerKind::matmul, {reshape(ta, {nb, m, k}), reshape(tb, {nb, k, nn})},
                          dtype, {nb, m, nn}, name_of("product"))
                    .name;
    } else {
      Layer& mul = add_layer(n, LayerKind::eltwise,
                             {reshape(ta, {nb, m, k, 1}), reshape(tb, {nb, 1, k, nn})}, dtype,
                             {nb, m, k, nn}, name_of("terms"));
      mul.fn = "mul";
      Layer& sum =
          add_layer(n, LayerKind::reduce, {mul.name}, dtype, {nb, m, nn}, name_of("product"));
      sum.fn = "sum";
      sum.axes = {2};
      product = sum.name;
    }
    result_labels = joined({&batch, &free_a, &free_b});
    result = reshape(product, shape_of(result_labels));
  }
  transpose(result, result_labels, out, y);
}

}  // namespace fracsim::compiler
