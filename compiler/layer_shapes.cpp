// Keys and shape inference of the layers beyond v1: convolution, pooling, normalisation,
// activations, and the layers that only re-view their input (flatten, reshape, transpose).
// Tensors are NCHW; every message names the layer and the key at fault.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/layer_reader.h"

namespace fracsim::compiler {

std::string_view layer_kind_name(LayerKind k) {
  switch (k) {
    case LayerKind::dense:
      return "dense";
    case LayerKind::relu:
      return "relu";
    case LayerKind::add:
      return "add";
    case LayerKind::matmul:
      return "matmul";
    case LayerKind::conv2d:
      return "conv2d";
    case LayerKind::maxpool:
      return "maxpool";
    case LayerKind::avgpool:
      return "avgpool";
    case LayerKind::global_avgpool:
      return "global_avgpool";
    case LayerKind::batchnorm:
      return "batchnorm";
    case LayerKind::softmax:
      return "softmax";
    case LayerKind::layernorm:
      return "layernorm";
    case LayerKind::gelu:
      return "gelu";
    case LayerKind::sigmoid:
      return "sigmoid";
    case LayerKind::tanh:
      return "tanh";
    case LayerKind::flatten:
      return "flatten";
    case LayerKind::reshape:
      return "reshape";
    case LayerKind::transpose:
      return "transpose";
    case LayerKind::concat:
      return "concat";
    case LayerKind::lrn:
      return "lrn";
    case LayerKind::eltwise:
      return "eltwise";
    case LayerKind::leaky_relu:
      return "leaky_relu";
    case LayerKind::exp:
      return "exp";
    case LayerKind::log_softmax:
      return "log_softmax";
    case LayerKind::global_maxpool:
      return "global_maxpool";
    case LayerKind::gemm:
      return "gemm";
    case LayerKind::reduce:
      return "reduce";
    case LayerKind::topk:
      return "topk";
    case LayerKind::zero_insert:
      return "zero_insert";
    case LayerKind::activation:
      return "activation";
    case LayerKind::slice:
      return "slice";
    case LayerKind::gather:
      return "gather";
    case LayerKind::pad:
      return "pad";
    case LayerKind::convert:
      return "convert";
    case LayerKind::compare:
      return "compare";
    case LayerKind::select:
      return "select";
    case LayerKind::gather_index:
      return "gather_index";
  }
  return "?";
}

bool is_view_layer(LayerKind k) {
  return k == LayerKind::flatten || k == LayerKind::reshape || k == LayerKind::transpose ||
         k == LayerKind::slice;
}

namespace {

int64_t node_int(LayerReader& r, const YAML::Node& n, const std::string& key, int64_t min) {
  std::optional<int64_t> v = n.IsScalar() ? parse_int(n.Scalar()) : std::nullopt;
  if (!v || *v < min)
    throw r.error_at(
        n, key,
        fmt::format("expected {} integer, got '{}'", min > 0 ? "a positive" : "a non-negative",
                    n.IsScalar() ? n.Scalar() : "a list or map"));
  return *v;
}

// `key: v` or `key: [h, w]` (also [h_begin, w_begin, h_end, w_end] when `four` is allowed);
// returns the list in full form: [h, w], or the four pads.
std::vector<int64_t> get_hw(LayerReader& r, const std::string& key, std::vector<int64_t> fallback,
                            int64_t min, bool four = false) {
  auto n = r.get(key);
  if (!n) return fallback;
  const size_t want = four ? 4 : 2;
  if (n->IsScalar()) return std::vector<int64_t>(want, node_int(r, *n, key, min));
  if (!n->IsSequence() || (n->size() != 2 && n->size() != want))
    throw r.error(key, four ? "expected an integer, [h, w] or [h_begin, w_begin, h_end, w_end]"
                            : "expected an integer or [h, w]");
  std::vector<int64_t> v;
  for (size_t i = 0; i < n->size(); ++i)
    v.push_back(node_int(r, (*n)[i], fmt::format("{}[{}]", key, i), min));
  if (four && v.size() == 2) v = {v[0], v[1], v[0], v[1]};
  return v;
}

double get_positive_real(LayerReader& r, const std::string& key, double fallback) {
  auto e = r.get(key);
  if (!e) return fallback;
  double v = -1;
  if (e->IsScalar() && !e->Scalar().empty()) {
    char* end = nullptr;
    v = std::strtod(e->Scalar().c_str(), &end);
    if (*end != '\0') v = -1;
  }
  if (!(v > 0) || !std::isfinite(v))
    throw r.error(key, fmt::format("expected a positive number, got '{}'",
                                   e->IsScalar() ? e->Scalar() : "a list or map"));
  return v;
}

void require_f32(LayerReader& r, const std::string& key, const std::string& type,
                 const TensorDesc& t) {
  if (t.dtype != isa::DType::f32)
    throw r.error(key, fmt::format("{} supports only f32, got '{}' of dtype {}", type, t.name,
                                   isa::dtype_name(t.dtype)));
}

void require_nchw(LayerReader& r, const std::string& type, const TensorDesc& x) {
  if (x.shape.size() != 4)
    throw r.error(
        "input", fmt::format("{} needs a rank-4 input [N,C,H,W], got {}", type, shape_and_name(x)));
  require_f32(r, "input", type, x);
}

// Output extent of a window op along one axis; a non-positive extent is the user's mistake.
int64_t window_out(LayerReader& r, const std::string& key, int64_t in, int64_t k, int64_t s,
                   int64_t d, int64_t p0, int64_t p1, char axis) {
  int64_t span = d * (k - 1) + 1;
  if (in + p0 + p1 < span)
    throw r.error(key, fmt::format("the kernel spans {} along {} but the padded input has {}", span,
                                   axis == 'h' ? "H" : "W", in + p0 + p1));
  return (in + p0 + p1 - span) / s + 1;
}

}  // namespace

void infer_conv2d(LayerReader& r, Layer& l, const TensorDesc& x) {
  require_nchw(r, "conv2d", x);
  l.inputs = {x.name};
  l.filters = r.require_positive("filters");
  l.kernel = get_hw(r, "kernel", {0, 0}, 1);
  if (l.kernel[0] == 0) throw r.error("kernel", "missing required key");
  l.stride = get_hw(r, "stride", {1, 1}, 1);
  l.dilation = get_hw(r, "dilation", {1, 1}, 1);
  l.padding = get_hw(r, "padding", {0, 0, 0, 0}, 0, true);
  auto g = r.get("groups");
  l.groups = g ? node_int(r, *g, "groups", 1) : 1;
  l.bias = r.get_bool("bias", true);
  const int64_t c = x.shape[1];
  if (c % l.groups != 0 || l.filters % l.groups != 0)
    throw r.error("groups", fmt::format("{} groups must divide the {} input channels of {} and "
                                        "the {} filters",
                                        l.groups, c, shape_and_name(x), l.filters));
  int64_t ho = window_out(r, "kernel", x.shape[2], l.kernel[0], l.stride[0], l.dilation[0],
                          l.padding[0], l.padding[2], 'h');
  int64_t wo = window_out(r, "kernel", x.shape[3], l.kernel[1], l.stride[1], l.dilation[1],
                          l.padding[1], l.padding[3], 'w');
  l.output.dtype = x.dtype;
  l.output.shape = {x.shape[0], l.filters, ho, wo};
}

void infer_pool(LayerReader& r, Layer& l, const TensorDesc& x) {
  const std::string type = l.kind == LayerKind::maxpool ? "maxpool" : "avgpool";
  require_nchw(r, type, x);
  l.inputs = {x.name};
  l.kernel = get_hw(r, "kernel", {0, 0}, 1);
  if (l.kernel[0] == 0) throw r.error("kernel", "missing required key");
  l.stride = get_hw(r, "stride", l.kernel, 1);
  l.padding = get_hw(r, "padding", {0, 0, 0, 0}, 0, true);
  l.count_include_pad = r.get_bool("count_include_pad", false);
  for (int i = 0; i < 4; ++i)
    if (l.padding[i] >= l.kernel[i % 2])
      throw r.error("padding", fmt::format("padding {} must be smaller than the kernel {}",
                                           l.padding[i], l.kernel[i % 2]));
  int64_t ho = window_out(r, "kernel", x.shape[2], l.kernel[0], l.stride[0], 1, l.padding[0],
                          l.padding[2], 'h');
  int64_t wo = window_out(r, "kernel", x.shape[3], l.kernel[1], l.stride[1], 1, l.padding[1],
                          l.padding[3], 'w');
  l.output.dtype = x.dtype;
  l.output.shape = {x.shape[0], x.shape[1], ho, wo};
}

void infer_global_avgpool(LayerReader& r, Layer& l, const TensorDesc& x) {
  require_nchw(r, "global_avgpool", x);
  l.inputs = {x.name};
  l.kernel = {x.shape[2], x.shape[3]};
  l.stride = l.kernel;
  l.output.dtype = x.dtype;
  l.output.shape = {x.shape[0], x.shape[1], 1, 1};
}

// batchnorm normalises channel dim 1 of [N, C, ...]; softmax and layernorm the last axis.
void infer_normalization(LayerReader& r, Layer& l, const TensorDesc& x) {
  const std::string type(layer_kind_name(l.kind));
  require_f32(r, "input", type, x);
  if (l.kind == LayerKind::batchnorm && x.shape.size() < 2)
    throw r.error("input", fmt::format("batchnorm needs an input [N,C,...] of rank 2 or more, "
                                       "got {}",
                                       shape_and_name(x)));
  if (l.kind != LayerKind::softmax) l.epsilon = get_positive_real(r, "epsilon", 1e-5);
  if (l.kind != LayerKind::batchnorm) l.axis = -1;
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  l.output.shape = x.shape;
}

// ONNX's LRN: x / (bias + alpha / size * sum of x^2 over `size` channels around c)^beta.
void infer_lrn(LayerReader& r, Layer& l, const TensorDesc& x) {
  require_nchw(r, "lrn", x);
  l.size = r.require_positive("size");
  l.alpha = get_positive_real(r, "alpha", 1e-4);
  l.beta = get_positive_real(r, "beta", 0.75);
  l.lrn_bias = get_positive_real(r, "bias", 1.0);
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  l.output.shape = x.shape;
}

void infer_unary(LayerReader& r, Layer& l, const TensorDesc& x) {
  require_f32(r, "input", std::string(layer_kind_name(l.kind)), x);
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  l.output.shape = x.shape;
}

// [N, d1, ..., dk] -> [N, d1*...*dk].
void infer_flatten(LayerReader& r, Layer& l, const TensorDesc& x) {
  if (x.shape.size() < 2)
    throw r.error("input", fmt::format("flatten needs an input of rank 2 or more, got {}",
                                       shape_and_name(x)));
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  l.output.shape = {x.shape[0], isa::num_elements(x.shape) / x.shape[0]};
}

// `shape:` lists the extents; one of them may be -1, inferred from the element count.
void infer_reshape(LayerReader& r, Layer& l, const TensorDesc& x) {
  YAML::Node n = r.require("shape");
  if (!n.IsSequence() || n.size() == 0)
    throw r.error("shape", "expected a non-empty list of extents");
  isa::Shape s;
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string key = fmt::format("shape[{}]", i);
    std::optional<int64_t> v = n[i].IsScalar() ? parse_int(n[i].Scalar()) : std::nullopt;
    if (v && *v == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (!v || *v <= 0) {
      throw r.error_at(n[i], key,
                       fmt::format("expected a positive extent or one -1, got '{}'",
                                   n[i].IsScalar() ? n[i].Scalar() : "a list or map"));
    } else {
      known *= *v;
    }
    s.push_back(*v);  // engaged: an empty v has thrown above
  }
  const int64_t count = isa::num_elements(x.shape);
  if (unknown >= 0 && count % known == 0) s[unknown] = count / known;
  if (isa::num_elements(s) != count || (unknown >= 0 && count % known != 0))
    throw r.error("shape", fmt::format("{} cannot be viewed as {} ({} elements)", shape_and_name(x),
                                       isa::shape_str(s), count));
  l.reshape_leading = unknown == 0 ? -1 : s[0];
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  l.output.shape = s;
}

void infer_transpose(LayerReader& r, Layer& l, const TensorDesc& x) {
  YAML::Node n = r.require("perm");
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm;
  if (n.IsSequence())
    for (size_t i = 0; i < n.size(); ++i)
      perm.push_back(node_int(r, n[i], fmt::format("perm[{}]", i), 0));
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) sorted.clear();
  if (rank > 6)
    throw r.error("input", fmt::format("transpose supports tensors of rank 6 or less, got {}",
                                       shape_and_name(x)));
  if (!n.IsSequence() || perm.size() != rank || sorted.size() != rank)
    throw r.error(
        "perm", fmt::format("expected a permutation of 0..{} for {}", rank - 1, shape_and_name(x)));
  l.perm = perm;
  l.inputs = {x.name};
  l.output.dtype = x.dtype;
  for (int64_t p : perm) l.output.shape.push_back(x.shape[p]);
}

void infer_concat(LayerReader& r, Layer& l, const std::vector<const TensorDesc*>& xs) {
  const TensorDesc& a = *xs[0];
  auto ax = r.get("axis");
  l.axis = ax ? node_int(r, *ax, "axis", 0) : 1;
  if (l.axis >= static_cast<int64_t>(a.shape.size()))
    throw r.error("axis", fmt::format("axis {} is out of range for {}", l.axis, shape_and_name(a)));
  l.output.dtype = a.dtype;
  l.output.shape = a.shape;
  l.output.shape[l.axis] = 0;
  for (const TensorDesc* t : xs) {
    isa::Shape s = t->shape, s0 = a.shape;
    if (s.size() == s0.size()) s[l.axis] = s0[l.axis] = 0;
    if (s != s0 || t->dtype != a.dtype)
      throw r.error("inputs", fmt::format("concat along axis {} needs the same dtype and equal "
                                          "extents elsewhere, got {} and {}",
                                          l.axis, shape_and_name(a), shape_and_name(*t)));
    require_f32(r, "inputs", "concat", *t);
    if (t->shape.size() > 6)
      throw r.error("inputs", fmt::format("concat supports tensors of rank 6 or less, got {}",
                                          shape_and_name(*t)));
    l.inputs.push_back(t->name);
    l.output.shape[l.axis] += t->shape[l.axis];
  }
}

}  // namespace fracsim::compiler
