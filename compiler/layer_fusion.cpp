#include "compiler/layer_fusion.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "isa/reference.h"

namespace fracsim::compiler {
namespace {

// Who produces and who reads each tensor of a workload.
class LayerGraph {
 public:
  explicit LayerGraph(const Workload& w) : w_(w) {
    for (const Layer& l : w.layers) {
      producer_[l.name] = &l;
      for (const std::string& in : l.inputs) ++reads_[in];
    }
  }

  // The layer producing `name` when it is an element-wise `fn` of two inputs; nullptr otherwise.
  const Layer* eltwise(const std::string& name, const char* fn) const {
    const Layer* l = producer(name);
    return l && l->kind == LayerKind::eltwise && l->fn == fn && l->inputs.size() == 2 ? l : nullptr;
  }

  const Workload& workload() const { return w_; }

  const Layer* producer(const std::string& name) const {
    auto it = producer_.find(name);
    return it == producer_.end() ? nullptr : it->second;
  }

  // Whether `name` is an f32 initializer of one element whose value is `v`, bit for bit.
  bool is_scalar_constant(const std::string& name, float v) const {
    const std::optional<float> c = w_.scalar_constant(name);
    return c && std::memcmp(&*c, &v, sizeof(float)) == 0;
  }

  // The operand of the two-input layer `l` other than the scalar constant `v`; "" when neither
  // operand is that constant.
  std::string operand_besides(const Layer& l, float v) const {
    if (is_scalar_constant(l.inputs[1], v)) return l.inputs[0];
    if (is_scalar_constant(l.inputs[0], v)) return l.inputs[1];
    return "";
  }

  // Whether the intermediate `name` can disappear into a fused layer: read exactly `reads`
  // times, no workload output, the only output of its layer, f32 of the shape `shape`.
  bool is_private(const std::string& name, const isa::Shape& shape, int reads = 1) const {
    const Layer* l = producer(name);
    auto r = reads_.find(name);
    return l && l->more_outputs.empty() && !w_.is_output(name) && r != reads_.end() &&
           r->second == reads && l->output.dtype == isa::DType::f32 && l->output.shape == shape;
  }

 private:
  const Workload& w_;
  std::map<std::string, const Layer*> producer_;
  std::map<std::string, int> reads_;  // read occurrences: Mul(x, x) reads x twice
};

// The operand of the two-input layer `l` other than `x`; "" when `l` does not read `x` once.
std::string other_operand(const Layer& l, const std::string& x) {
  if (l.inputs[0] == x && l.inputs[1] != x) return l.inputs[1];
  if (l.inputs[1] == x && l.inputs[0] != x) return l.inputs[0];
  return "";
}

bool is_tanh(const Layer* l) {
  return l && l->inputs.size() == 1 &&
         (l->kind == LayerKind::tanh || (l->kind == LayerKind::activation && l->fn == "tanh"));
}

// The layers of a GELU ending at `y` (see layer_fusion.h), and its input x.
struct Gelu {
  std::string x;
  std::vector<const Layer*> fused;  // the intermediates' layers
};

// The GELU whose last layer is `y`, when the pattern matches exactly.
std::optional<Gelu> match_gelu_tanh(const LayerGraph& g, const Layer& y) {
  if (y.kind != LayerKind::eltwise || y.fn != "mul" || y.inputs.size() != 2 ||
      y.output.dtype != isa::DType::f32)
    return std::nullopt;
  const isa::Shape& shape = y.output.shape;
  for (int order = 0; order < 2; ++order) {
    const std::string &half_x = y.inputs[order], &one_plus = y.inputs[1 - order];
    const Layer* half_l = g.eltwise(half_x, "mul");
    const Layer* one_plus_l = g.eltwise(one_plus, "add");
    if (!half_l || !one_plus_l) continue;
    const std::string x = g.operand_besides(*half_l, 0.5f);
    const Layer* t_l = g.producer(g.operand_besides(*one_plus_l, 1.0f));
    if (x.empty() || !is_tanh(t_l)) continue;
    const Layer* arg_l = g.eltwise(t_l->inputs[0], "mul");
    if (!arg_l) continue;
    const Layer* inner_l = g.eltwise(g.operand_besides(*arg_l, isa::kGeluTanhK), "add");
    if (!inner_l) continue;
    // inner = x + cx3, cx3 = x3 * c, x3 = x2 * x, x2 = x * x.
    const Layer* cx3_l = g.eltwise(other_operand(*inner_l, x), "mul");
    if (!cx3_l) continue;
    const Layer* x3_l = g.eltwise(g.operand_besides(*cx3_l, isa::kGeluTanhC), "mul");
    if (!x3_l) continue;
    const Layer* x2_l = g.eltwise(other_operand(*x3_l, x), "mul");
    if (!x2_l || x2_l->inputs[0] != x || x2_l->inputs[1] != x) continue;
    Gelu m{x, {x2_l, x3_l, cx3_l, inner_l, arg_l, t_l, one_plus_l, half_l}};
    bool all_private = true;
    for (const Layer* l : m.fused) all_private = all_private && g.is_private(l->name, shape);
    const TensorDesc* xt = g.workload().find_tensor(x);
    if (all_private && xt && xt->dtype == isa::DType::f32 && xt->shape == shape) return m;
  }
  return std::nullopt;
}

// The GELU (erf form) whose last layer is `y`, when the pattern matches exactly: y = m * 0.5,
// m = x * a, a = e + 1, e = erf(d), d = x / s.
std::optional<Gelu> match_gelu_erf(const LayerGraph& g, const Layer& y) {
  if (y.kind != LayerKind::eltwise || y.fn != "mul" || y.inputs.size() != 2 ||
      y.output.dtype != isa::DType::f32)
    return std::nullopt;
  const isa::Shape& shape = y.output.shape;
  const Layer* m_l = g.eltwise(g.operand_besides(y, 0.5f), "mul");
  if (!m_l) return std::nullopt;
  for (int order = 0; order < 2; ++order) {
    const std::string &x = m_l->inputs[order], &a = m_l->inputs[1 - order];
    const Layer* a_l = g.eltwise(a, "add");
    if (!a_l || x == a) continue;
    const Layer* e_l = g.producer(g.operand_besides(*a_l, 1.0f));
    if (!e_l || e_l->kind != LayerKind::activation || e_l->fn != "erf" || e_l->inputs.size() != 1)
      continue;
    const Layer* d_l = g.eltwise(e_l->inputs[0], "div");
    if (!d_l || d_l->inputs[0] != x || !g.is_scalar_constant(d_l->inputs[1], isa::kGeluErfS))
      continue;
    Gelu m{x, {d_l, e_l, a_l, m_l}};
    bool all_private = true;
    for (const Layer* l : m.fused) all_private = all_private && g.is_private(l->name, shape);
    const TensorDesc* xt = g.workload().find_tensor(x);
    if (all_private && xt && xt->dtype == isa::DType::f32 && xt->shape == shape) return m;
  }
  return std::nullopt;
}

// A LayerNorm over the last axis spelt as ONNX nodes, ending at `y` (see layer_fusion.h).
struct LayerNormChain {
  std::string x, gamma, beta;
  float epsilon = 0;
  std::vector<const Layer*> fused;
};

std::optional<LayerNormChain> match_layernorm(const LayerGraph& g, const Layer& y) {
  if (y.kind != LayerKind::eltwise || y.fn != "add" || y.inputs.size() != 2 ||
      y.output.dtype != isa::DType::f32 || y.output.shape.empty())
    return std::nullopt;
  const isa::Shape& shape = y.output.shape;
  isa::Shape row = shape;  // a statistic's shape: one per row
  row.back() = 1;
  const int64_t last = static_cast<int64_t>(shape.size()) - 1;
  // A mean over the last axis only, its dim kept.
  auto row_mean = [&](const std::string& name) -> const Layer* {
    const Layer* l = g.producer(name);
    return l && l->kind == LayerKind::reduce && l->fn == "mean" && l->inputs.size() == 1 &&
                   l->axes == std::vector<int64_t>{last} && g.is_private(name, row)
               ? l
               : nullptr;
  };
  // A vector of the normalised dim's length: gamma's and beta's shape, or [1, ..., N].
  auto is_vector = [&](const std::string& name) {
    const TensorDesc* t = g.workload().find_tensor(name);
    return t && t->dtype == isa::DType::f32 && !t->shape.empty() &&
           t->shape.back() == shape.back() && isa::num_elements(t->shape) == shape.back();
  };
  for (int order = 0; order < 2; ++order) {
    LayerNormChain m;
    const Layer* scaled_l = g.eltwise(y.inputs[order], "mul");
    m.beta = y.inputs[1 - order];
    if (!scaled_l || !is_vector(m.beta) || !g.is_private(scaled_l->name, shape)) continue;
    for (int k = 0; k < 2 && m.fused.empty(); ++k) {
      const Layer* div_l = g.eltwise(scaled_l->inputs[k], "div");
      m.gamma = scaled_l->inputs[1 - k];
      if (!div_l || !is_vector(m.gamma) || !g.is_private(div_l->name, shape)) continue;
      const Layer* sd_l = g.producer(div_l->inputs[1]);
      if (!sd_l || sd_l->kind != LayerKind::activation || sd_l->fn != "sqrt" ||
          sd_l->inputs.size() != 1 || !g.is_private(sd_l->name, row))
        continue;
      const Layer* ve_l = g.eltwise(sd_l->inputs[0], "add");
      if (!ve_l || !g.is_private(ve_l->name, row)) continue;
      const int e =
          g.workload().scalar_constant(ve_l->inputs[0]) ? 0 : 1;  // Add(var, eps) or Add(eps, var)
      const Layer* var_l = row_mean(ve_l->inputs[1 - e]);
      const std::optional<float> eps = g.workload().scalar_constant(ve_l->inputs[e]);
      if (!var_l || !eps) continue;
      const Layer* sq_l = g.eltwise(var_l->inputs[0], "pow");
      // d = x - mean: read by the square and the division.
      const std::string d = div_l->inputs[0];
      if (!sq_l || sq_l->inputs[0] != d || !g.is_scalar_constant(sq_l->inputs[1], 2.0f) ||
          !g.is_private(sq_l->name, shape) || !g.is_private(d, shape, 2))
        continue;
      const Layer* d_l = g.eltwise(d, "sub");
      if (!d_l) continue;
      const Layer* mean_l = row_mean(d_l->inputs[1]);
      if (!mean_l || mean_l->inputs[0] != d_l->inputs[0]) continue;
      m.x = d_l->inputs[0];
      m.epsilon = *eps;
      m.fused = {mean_l, d_l, sq_l, var_l, ve_l, sd_l, div_l, scaled_l};
    }
    const TensorDesc* xt = g.workload().find_tensor(m.x);
    if (!m.fused.empty() && xt && xt->dtype == isa::DType::f32 && xt->shape == shape) return m;
  }
  return std::nullopt;
}

// A softmax whose input is scores / divisor (+ mask), and the layers that compute its input.
struct ScaledSoftmax {
  std::string scores, mask;
  float divisor = 1;
  std::vector<const Layer*> fused;
};

// Whether `mask` broadcasts over the leading dims of `shape` as one [M, N] block: its shape
// without its leading 1s is a non-empty suffix of `shape`.
bool is_row_mask(const TensorDesc* mask, const isa::Shape& shape) {
  if (!mask || mask->dtype != isa::DType::f32) return false;
  isa::Shape m = mask->shape;
  while (!m.empty() && m.front() == 1) m.erase(m.begin());
  return !m.empty() && m.size() <= shape.size() &&
         std::equal(m.begin(), m.end(), shape.end() - static_cast<std::ptrdiff_t>(m.size()));
}

std::optional<ScaledSoftmax> match_scaled_softmax(const LayerGraph& g, const Layer& y) {
  const isa::Shape& shape = y.output.shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (y.kind != LayerKind::softmax || y.divided || y.inputs.size() != 1 || rank == 0 ||
      y.output.dtype != isa::DType::f32 || (y.axis < 0 ? y.axis + rank : y.axis) != rank - 1)
    return std::nullopt;
  ScaledSoftmax m;
  std::string scaled = y.inputs[0];
  if (const Layer* add = g.eltwise(scaled, "add")) {
    if (!g.is_private(scaled, shape)) return std::nullopt;
    const int order = g.eltwise(add->inputs[0], "div") ? 0 : 1;
    m.mask = add->inputs[1 - order];
    if (!is_row_mask(g.workload().find_tensor(m.mask), shape) || m.mask == add->inputs[order])
      return std::nullopt;
    m.fused.push_back(add);
    scaled = add->inputs[order];
  }
  const Layer* div = g.eltwise(scaled, "div");
  if (!div || !g.is_private(scaled, shape)) return std::nullopt;
  const std::optional<float> s = g.workload().scalar_constant(div->inputs[1]);
  const TensorDesc* scores = g.workload().find_tensor(div->inputs[0]);
  if (!s || !scores || scores->dtype != isa::DType::f32 || scores->shape != shape)
    return std::nullopt;
  m.scores = div->inputs[0];
  m.divisor = *s;
  m.fused.push_back(div);
  return m;
}

}  // namespace

std::optional<Workload> fuse_layer_patterns(const Workload& w) {
  const LayerGraph g(w);
  std::map<std::string, Layer> replaced;  // by the name of the pattern's last layer
  std::set<std::string> removed;
  for (const Layer& y : w.layers) {
    if (removed.count(y.name)) continue;
    std::optional<Gelu> gelu = match_gelu_tanh(g, y);
    const char* fn = "gelu_tanh";
    if (!gelu) {
      gelu = match_gelu_erf(g, y);
      fn = "gelu_erf";
    }
    if (gelu) {
      Layer a;
      a.name = y.name;
      a.node = y.node;
      a.kind = LayerKind::activation;
      a.fn = fn;
      a.inputs = {gelu->x};
      a.output = y.output;
      replaced[y.name] = a;
      for (const Layer* l : gelu->fused) removed.insert(l->name);
    } else if (auto m = match_layernorm(g, y)) {
      Layer a;
      a.name = y.name;
      a.node = y.node;
      a.kind = LayerKind::layernorm;
      a.inputs = {m->x, m->gamma, m->beta};
      a.axis = static_cast<int64_t>(y.output.shape.size()) - 1;
      a.epsilon = m->epsilon;
      a.sqrt_divide = true;
      a.output = y.output;
      replaced[y.name] = a;
      for (const Layer* l : m->fused) removed.insert(l->name);
    } else if (auto m = match_scaled_softmax(g, y)) {
      Layer a = y;
      a.divided = true;
      a.divisor = m->divisor;
      a.inputs = {m->scores};
      if (!m->mask.empty()) a.inputs.push_back(m->mask);
      replaced[y.name] = a;
      for (const Layer* l : m->fused) removed.insert(l->name);
    }
  }
  if (replaced.empty()) return std::nullopt;
  Workload out = w;
  out.layers.clear();
  for (const Layer& l : w.layers) {
    if (removed.count(l.name)) continue;
    auto r = replaced.find(l.name);
    out.layers.push_back(r == replaced.end() ? l : r->second);
  }
  return out;
}

}  // namespace fracsim::compiler
