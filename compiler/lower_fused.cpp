// Epilogue fusion and batchnorm folding (CompileOptions::fuse, fold_batchnorm).
//
// A chain is a conv2d (2-D, f32) or a matmul (dense, 2-D MatMul, Gemm with alpha 1) followed by
// layers each of which is the only reader of the previous one's output (which is no workload
// output and no concat slice): optionally a batchnorm (inference, folded into the conv), an Add
// of a row that is an input after a matmul (its bias; an input seen through ONNX's Identity
// too), an add of another tensor of the same shape (a residual; after a matmul, also through
// reshapes and transposes of size-1 dims, which keep the element order) and an activation (relu,
// leaky_relu, sigmoid, tanh, gelu, and gelu_tanh and gelu_erf, which layer_fusion.h makes of a
// GELU's element-wise chains; or a clip, ONNX's Clip as imported: an eltwise max with a scalar
// constant, then an eltwise min with another). It becomes one epilogue op
// (isa/ops/ext/*_bias_act.yaml, *_bias_add_act.yaml), emitted where the chain's last layer was
// (every input is ready there), named by the head layer (its instructions carry the conv's or
// matmul's name), writing the last layer's tensor. The adds keep the unfused order: sum, bias,
// residual, activation, so the fused program's results equal the unfused one's bit for bit.
//
// Folding: w' = w * k and b' = (b - mean) * k + beta per output channel, k = gamma /
// sqrt(var + eps), computed in double from the f32 values and rounded once to f32. A weight's
// values are its given bytes (ONNX initializers) or its seeded random values (YAML weights, ONNX
// weights without data), so folding applies to both; the folded weight and bias become byte
// segments (the batchnorm's parameters are dropped, their seeds still reserved, so the other
// segments keep theirs). A folded conv's outputs differ from the unfolded graph's by the
// rounding of w' and b' (a few ulps of the conv's sum of |terms|).
#include <cmath>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "compiler/graph_lowering.h"
#include "isa/error.h"
#include "isa/reference.h"

namespace fracsim::compiler {
namespace {

bool is_input(const Workload& w, const std::string& name) {
  for (const TensorDesc& t : w.inputs)
    if (t.name == name) return true;
  return false;
}

// The activation fn a layer applies, or "" when it is none the epilogue ops know.
std::string activation_fn(const Layer& l) {
  switch (l.kind) {
    case LayerKind::relu:
      return "relu";
    case LayerKind::leaky_relu:
      return "leaky_relu";
    case LayerKind::sigmoid:
      return "sigmoid";
    case LayerKind::tanh:
      return "tanh";
    case LayerKind::gelu:
      return "gelu";
    case LayerKind::activation:
      for (const char* fn :
           {"relu", "leaky_relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "gelu_erf"})
        if (l.fn == fn) return fn;
      return "";
    default:
      return "";
  }
}

// Whether `l` is an eltwise `fn` of `in` and a scalar f32 constant (Workload::scalar_constant),
// and if so its value.
bool scalar_bound(const Workload& w, const Layer& l, const std::string& fn, const std::string& in,
                  double& value) {
  if (l.kind != LayerKind::eltwise || l.fn != fn || l.inputs.size() != 2 || l.inputs[0] != in ||
      l.output.dtype != isa::DType::f32)
    return false;
  const std::optional<float> c = w.scalar_constant(l.inputs[1]);
  if (c) value = *c;
  return c.has_value();
}

// A reshape, or a transpose that moves only dims of extent 1: the same elements in the same
// order, a view of its input's bytes.
bool keeps_order(const Layer& l) {
  if (l.kind == LayerKind::reshape || l.kind == LayerKind::flatten) return l.inputs.size() == 1;
  if (l.kind != LayerKind::transpose || l.inputs.size() != 1) return false;
  int64_t last = -1;
  for (size_t i = 0; i < l.perm.size(); ++i) {
    if (l.output.shape.at(i) == 1) continue;
    if (l.perm[i] < last) return false;
    last = l.perm[i];
  }
  return true;
}

bool is_add_of_two(const Layer& l) {
  return (l.kind == LayerKind::add || (l.kind == LayerKind::eltwise && l.fn == "add")) &&
         l.inputs.size() == 2 && l.inputs[0] != l.inputs[1];
}

}  // namespace

void GraphLowering::plan_fusion() {
  if (!w_.fuse && !w_.fold_batchnorm) return;
  std::map<std::string, int> readers;
  std::map<std::string, const Layer*> reader;
  for (const Layer& l : w_.layers)
    for (const std::string& in : l.inputs) {
      ++readers[in];
      reader[in] = &l;
    }
  std::set<std::string> claimed;
  // The only reader of `t`, when t may disappear into a chain; nullptr otherwise.
  auto next = [&](const Layer& t) -> const Layer* {
    if (readers[t.name] != 1 || w_.is_output(t.name) || slices_.count(t.name) ||
        !t.more_outputs.empty())
      return nullptr;
    const Layer* r = reader.at(t.name);
    return claimed.count(r->name) ? nullptr : r;
  };
  // An input, or a reshape of one (ONNX's Identity, which an exporter writes for an initializer
  // equal to another it keeps): bytes there before any layer runs.
  auto input_bytes = [&](std::string name) {
    for (const Layer* p = w_.find_layer(name);
         p && p->kind == LayerKind::reshape && p->inputs.size() == 1; p = w_.find_layer(name))
      name = p->inputs[0];
    return is_input(w_, name);
  };
  auto sole_input = [&](const std::string& name) {
    return is_input(w_, name) && readers[name] == 1 && !w_.is_output(name);
  };
  for (const Layer& h : w_.layers) {
    if (claimed.count(h.name) || h.output.dtype != isa::DType::f32) continue;
    FusedChain c;
    c.head = c.tail = &h;
    bool has_bias = false;
    if (h.kind == LayerKind::conv2d) {
      if (h.kernel.size() != 2) continue;
      has_bias = h.bias || h.inputs.size() > 2;
    } else if (h.kind == LayerKind::dense) {
      has_bias = h.bias;
    } else if (h.kind == LayerKind::matmul) {
      if (w_.tensor(h.inputs[1]).shape.size() != 2 || w_.tensor(h.inputs[0]).shape.size() < 2)
        continue;
    } else if (h.kind == LayerKind::gemm) {
      if (h.alpha != 1.0) continue;
      if (h.inputs.size() > 2 && h.gemm_beta != 0.0) {
        const isa::Shape& cs = w_.tensor(h.inputs[2]).shape;
        const int64_t n = h.output.shape.back();
        if (h.gemm_beta != 1.0 || !(cs == isa::Shape{n} || cs == isa::Shape{1, n})) continue;
        has_bias = true;
      }
    } else {
      continue;
    }
    const Layer* f = next(h);
    if (f && w_.fold_batchnorm && h.kind == LayerKind::conv2d && f->kind == LayerKind::batchnorm &&
        !f->training) {
      bool foldable = h.inputs.size() == 1 && f->inputs.size() == 1;  // YAML
      if (h.inputs.size() > 1 && f->inputs.size() == 5) {             // ONNX
        foldable = true;
        for (size_t i = 1; i < h.inputs.size(); ++i) foldable = foldable && sole_input(h.inputs[i]);
        for (size_t i = 1; i < 5; ++i) foldable = foldable && sole_input(f->inputs[i]);
      }
      if (foldable) {
        c.batchnorm = c.tail = f;
        has_bias = true;
        f = next(*f);
      }
    }
    if (w_.fuse) {
      if (f && (h.kind == LayerKind::matmul || h.kind == LayerKind::gemm) && !has_bias &&
          is_add_of_two(*f)) {
        const std::string& other = f->inputs[0] == c.tail->name ? f->inputs[1] : f->inputs[0];
        const isa::Shape& os = w_.tensor(other).shape;
        const int64_t n = h.output.shape.back();
        if (input_bytes(other) && (os == isa::Shape{n} || os == isa::Shape{1, n})) {
          c.bias_add = c.tail = f;
          c.bias_input = other;
          has_bias = true;
          f = next(*f);
        }
      }
      // After a matmul, views that keep the element order and the rows may come before the
      // residual add (PyTorch's attention: its output projection's [L, E] seen as [L, 1, E],
      // then [1, L, E]).
      std::vector<const Layer*> views;
      if (h.kind == LayerKind::matmul || h.kind == LayerKind::gemm)
        for (const Layer* v = f; v && keeps_order(*v) && !v->output.shape.empty() &&
                                 v->output.shape.back() == h.output.shape.back();
             v = next(*v))
          views.push_back(v);
      const Layer* r = views.empty() ? f : next(*views.back());
      const Layer* value = views.empty() ? c.tail : views.back();
      if (r && is_add_of_two(*r)) {
        const std::string& other = r->inputs[0] == value->name ? r->inputs[1] : r->inputs[0];
        const TensorDesc& ot = w_.tensor(other);
        if (ot.shape == value->output.shape && ot.dtype == isa::DType::f32) {
          c.views = views;
          c.residual = c.tail = r;
          c.residual_input = other;
          f = next(*r);
        }
      }
      if (f && !activation_fn(*f).empty()) {
        c.act = c.tail = f;
        f = nullptr;
      }
      // A clip as ONNX's Clip imports it: max with a scalar lo, then min with a scalar hi.
      double lo = 0, hi = 0;
      const Layer* g = f && scalar_bound(w_, *f, "max", c.tail->name, lo) ? next(*f) : nullptr;
      if (g && scalar_bound(w_, *g, "min", f->name, hi)) {
        c.clip_lower = f;
        c.act = c.tail = g;
        c.lo = lo;
        c.hi = hi;
      }
    }
    // Worth a chain: something fused into the matrix op, or its own bias add.
    if (!c.batchnorm && !c.bias_add && !c.residual && !c.act && !(w_.fuse && has_bias)) continue;
    std::vector<const Layer*> members = {c.head,     c.batchnorm,  c.bias_add,
                                         c.residual, c.clip_lower, c.act};
    members.insert(members.end(), c.views.begin(), c.views.end());
    for (const Layer* l : members)
      if (l) {
        claimed.insert(l->name);
        if (l != c.tail) fused_away_.insert(l->name);
      }
    chains_[c.tail->name] = c;
  }
}

void GraphLowering::contents_into(int b, uint8_t* out) const {
  const Buffer& buf = buffers_[b];
  FRACSIM_ASSERT(buf.desc.dtype == isa::DType::f32, "values of {}: not f32", buf.desc.name);
  const size_t n = static_cast<size_t>(isa::num_elements(buf.desc.shape));
  if (!buf.bytes.empty()) {
    std::memcpy(out, buf.bytes.data(), n * 4);
    return;
  }
  isa::DataSegment d;
  d.kind = isa::DataSegment::Kind::random;
  d.dtype = isa::DType::f32;
  d.count = n;
  d.seed = segment_seed(w_.seed, static_cast<uint64_t>(buf.seed_slot));
  d.lo = buf.lo;
  d.hi = buf.hi;
  isa::fill_data_segment(d, isa::MemoryView{out, n * 4});
}

std::vector<float> GraphLowering::values_of(int b) const {
  std::vector<float> v(static_cast<size_t>(isa::num_elements(buffers_[b].desc.shape)));
  contents_into(b, reinterpret_cast<uint8_t*>(v.data()));
  return v;
}

std::vector<uint8_t> GraphLowering::bytes_of(int b) const {
  std::vector<uint8_t> v(static_cast<size_t>(isa::num_elements(buffers_[b].desc.shape)) * 4);
  contents_into(b, v.data());
  return v;
}

// stats: scale, bias, mean, var. `bias` < 0: the conv has none; a constant is made.
void GraphLowering::fold_batchnorm(const Layer& bn, int weight, int& bias,
                                   const std::vector<int>& stats, const std::string& bias_name) {
  const std::vector<float> gamma = values_of(stats[0]), beta = values_of(stats[1]),
                           mean = values_of(stats[2]), var = values_of(stats[3]);
  auto bytes = [](const std::vector<float>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  // The weight is scaled in place in its bytes (the largest tensor: one copy of it, not two).
  std::vector<uint8_t> w = bytes_of(weight);
  const size_t f = gamma.size(), per = w.size() / 4 / f;
  std::vector<float> b = bias >= 0 ? values_of(bias) : std::vector<float>(f, 0.0f);
  for (size_t o = 0; o < f; ++o) {
    const double k =
        static_cast<double>(gamma[o]) / std::sqrt(static_cast<double>(var[o]) + bn.epsilon);
    for (size_t i = 0; i < per; ++i) {
      uint8_t* at = w.data() + 4 * (o * per + i);
      float x;
      std::memcpy(&x, at, 4);
      x = static_cast<float>(static_cast<double>(x) * k);
      std::memcpy(at, &x, 4);
    }
    b[o] = static_cast<float>((static_cast<double>(b[o]) - mean[o]) * k + beta[o]);
  }
  buffers_[weight].bytes = std::move(w);
  if (bias >= 0) {
    buffers_[bias].bytes = bytes(b);
  } else {
    bias = add_constant(bias_name, isa::DType::f32, {static_cast<int64_t>(f)}, bytes(b));
    buffers_[bias].seed_slot = -1;
    --next_seed_slot_;
  }
  for (int s : stats) buffers_[s].dropped = true;
}

void GraphLowering::lower_fused(const FusedChain& c) {
  const Layer& h = *c.head;
  layer_name_ = h.node.empty() ? h.name : h.node;
  Epilogue e;
  if (c.clip_lower) {
    e.act = "clip";
    e.lo = c.lo;
    e.hi = c.hi;
  } else if (c.act) {
    e.act = activation_fn(*c.act);
    e.alpha = c.act->alpha;
  }
  View res;
  if (c.residual) {
    res = dense(c.residual_input);
    e.res = &res;
  }
  auto zero_bias = [&](int64_t n) {
    const int b = add_constant(h.name + ".bias", isa::DType::f32, {n},
                               std::vector<uint8_t>(static_cast<size_t>(n) * 4, 0));
    buffers_[b].seed_slot = -1;
    --next_seed_slot_;
    return b;
  };
  if (h.kind == LayerKind::conv2d) {
    View x = dense(h.inputs[0]);
    const int64_t ci = x.shape[1] / h.groups, f = h.filters;
    int weight = -1, bias = -1;
    const View* bias_view = nullptr;
    View wsrc;
    if (h.inputs.size() > 1) {
      // A view of a weight (a reshape) as its dense bytes; a folded weight is a graph input.
      wsrc = dense(h.inputs[1]);
      weight = wsrc.buffer;
      if (h.inputs.size() > 2) bias_view = &tensors_.at(h.inputs[2]);
    } else {
      const double range = 1.0 / std::sqrt(static_cast<double>(ci * isa::num_elements(h.kernel)));
      isa::Shape ws = {f, ci};
      ws.insert(ws.end(), h.kernel.begin(), h.kernel.end());
      weight = add_weight(h, "weight", ws, -range, range);
      wsrc = whole(weight);
      if (h.bias) bias = add_weight(h, "bias", {f}, -range, range);
    }
    if (c.batchnorm) {
      const Layer& bn = *c.batchnorm;
      std::vector<int> stats;
      if (bn.inputs.size() == 5) {
        for (size_t i = 1; i < 5; ++i) stats.push_back(tensors_.at(bn.inputs[i]).buffer);
      } else {
        stats = {add_weight(bn, "scale", {f}, 0.5, 1.5), add_weight(bn, "bias", {f}, -0.5, 0.5),
                 add_weight(bn, "mean", {f}, -0.5, 0.5), add_weight(bn, "var", {f}, 0.5, 1.5)};
      }
      if (bias_view) bias = bias_view->buffer;
      bias_view = nullptr;
      fold_batchnorm(bn, weight, bias, stats, h.name + ".bias");
    }
    if (bias < 0 && !bias_view && w_.fuse) bias = zero_bias(f);
    const View y = output_of(*c.tail);
    emit_conv(h, x, wsrc, bias, bias_view, y, w_.fuse ? &e : nullptr);
    return;
  }
  // The matmuls: a [M, K] x b [K, N] (+ bias [N]) as one batch of the epilogue op.
  View a, b;
  int bias = -1;
  View bias_view;
  bool has_bias_view = false;
  if (h.kind == LayerKind::dense) {
    a = dense(h.inputs[0]);
    const int64_t k = a.shape.back();
    const double range = 1.0 / std::sqrt(static_cast<double>(k));
    b = whole(add_weight(h, "weight", {k, h.units}, -range, range));
    if (h.bias) bias = add_weight(h, "bias", {h.units}, -range, range);
  } else if (h.kind == LayerKind::gemm) {
    a = tensors_.at(h.inputs[0]);
    b = tensors_.at(h.inputs[1]);
    if (h.trans_a) a = permuted(a, {1, 0});
    if (h.trans_b) b = permuted(b, {1, 0});
    if (h.inputs.size() > 2 && h.gemm_beta != 0.0) {
      bias_view = tensors_.at(h.inputs[2]);
      has_bias_view = true;
    }
  } else {
    a = dense(h.inputs[0]);
    b = dense(h.inputs[1]);
  }
  if (c.bias_add) {
    bias_view = tensors_.at(c.bias_input);
    has_bias_view = true;
  }
  if (!a.contiguous() && a.shape.size() > 2) a = dense(h.inputs[0]);
  if (a.shape.size() > 2) a = as_matrix(a);
  const int64_t m = a.shape[0], n = b.shape[1];
  if (has_bias_view) {
    // [N] or [1, N]: the last dim.
    bias_view = View{bias_view.buffer, {n}, {bias_view.strides.back()}, bias_view.offset};
  } else {
    bias_view = whole(bias >= 0 ? bias : zero_bias(n));
  }
  const View y = as_matrix(output_of(*c.tail));
  std::vector<View> operands = {a, b, bias_view};
  if (e.res) operands.push_back(View{res.buffer, {m, n}, {n, 1}, res.offset});
  operands.push_back(y);
  emit(e.res ? "matmul_bias_add_act" : "matmul_bias_act", operands, e.attrs());
}

AttrValues Epilogue::attrs() const {
  AttrValues a = {{"act", act}, {"alpha", fmt::format("{}", alpha)}};
  if (act == "clip") {
    a.emplace_back("lo", fmt::format("{}", lo));
    a.emplace_back("hi", fmt::format("{}", hi));
  }
  return a;
}

}  // namespace fracsim::compiler
