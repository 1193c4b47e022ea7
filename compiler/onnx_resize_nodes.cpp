// Resize (opset 10 on) and Upsample (7 to 9) as compositions: the resampling is separable, so each
// resized axis is one constant [out, in] interpolation matrix M applied along that axis, innermost
// axis first (as ONNX's reference interpolates). An axis whose every row of M picks one input
// element with weight 1 (nearest, or an integral scale's exact sample points) is a gather with
// constant indices (an upsampling by an integral factor one broadcast copy), an exact copy of any
// dtype; the others are a matmul (f32) of M with the input
// viewed [prefix, in, suffix] (the last axis: the input [prefix, in] times M transposed), and,
// with tf_crop_and_resize, an add of extrapolation_value on the rows whose sample point is outside
// the input. An axis that M leaves as it is emits nothing.
//
// The sample points follow ONNX's reference (onnx/backend/test/case/node/resize.py) in double:
// the scale of an axis is the scales input's value (the output extent floor(scale x in)) or
// sizes / in; x_original per coordinate_transformation_mode; the n nearest input indices (n = 2
// for nearest and linear, 4 for cubic; ties to the smaller) of the input padded at its edges by
// ceil(n / 2), with the ratio 1 at an integral x_original; exclude_outside zeroes the weights of
// the padded indices and renormalises. Decided where the spec is open: nearest ignores
// exclude_outside (its one weight is the picked element); Resize at opset 10 and Upsample sample
// at x / scale (asymmetric) and take the floor for nearest, the Upsample reference's np.repeat.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

struct ResizeMode {
  std::string mode = "nearest";  // nearest, linear, cubic
  std::string transform = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// One axis: M [out, in] (row-major) and the rows outside the input (tf_crop_and_resize).
struct AxisMatrix {
  std::vector<double> m;
  std::vector<bool> outside;
};

std::vector<double> coefficients(const ResizeMode& r, double ratio, bool integral) {
  if (r.mode == "nearest") {
    if (integral) return {0, 1};
    if (r.nearest == "round_prefer_floor")
      return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};
    if (r.nearest == "round_prefer_ceil")
      return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (r.nearest == "floor") return {1, 0};
    return {0, 1};  // ceil
  }
  if (r.mode == "linear") return {1 - ratio, ratio};
  const double a = r.cubic_a, t = ratio, u = 1 - ratio;
  return {((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
          ((a + 2) * t - (a + 3)) * t * t + 1, ((a + 2) * u - (a + 3)) * u * u + 1,
          ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a};
}

AxisMatrix axis_matrix(const ResizeMode& r, int64_t in, int64_t out, double scale, double roi_start,
                       double roi_end) {
  AxisMatrix am;
  am.m.assign(static_cast<size_t>(out * in), 0.0);
  am.outside.assign(static_cast<size_t>(out), false);
  const double width = scale * static_cast<double>(in);
  const double last = static_cast<double>(in - 1);
  for (int64_t xi = 0; xi < out; ++xi) {
    const double x = static_cast<double>(xi);
    double xo = 0;
    const std::string& t = r.transform;
    if (t == "align_corners") {
      xo = width == 1 ? 0.0 : x * last / (width - 1);
    } else if (t == "asymmetric") {
      xo = x / scale;
    } else if (t == "tf_crop_and_resize") {
      xo = width == 1 ? (roi_end - roi_start) * last / 2
                      : x * (roi_end - roi_start) * last / (width - 1);
      xo += roi_start * last;
      if (xo < 0 || xo > last) {
        am.outside[xi] = true;
        continue;
      }
    } else if (t == "pytorch_half_pixel") {
      xo = width == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
    } else if (t == "tf_half_pixel_for_nn") {
      xo = (x + 0.5) / scale;
    } else {  // half_pixel
      xo = (x + 0.5) / scale - 0.5;
    }
    const bool integral = xo == std::floor(xo);
    const double ratio = integral ? 1.0 : xo - std::floor(xo);
    std::vector<double> c = coefficients(r, ratio, integral);
    const int64_t n = static_cast<int64_t>(c.size()), pad = (n + 1) / 2;
    // The n nearest indices: from ceil(xo) - n/2 (ratio in (0, 1]), kept within the padding.
    int64_t start = static_cast<int64_t>(std::ceil(xo)) - 1 - n / 2 + 1;
    start = std::clamp<int64_t>(start, -pad, in + pad - n);
    if (r.exclude_outside && r.mode != "nearest") {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (start + j < 0 || start + j >= in) c[j] = 0;
        sum += c[j];
      }
      for (double& v : c) v /= sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t idx = std::clamp<int64_t>(start + j, 0, in - 1);
      am.m[static_cast<size_t>(xi * in + idx)] += c[j];
    }
  }
  return am;
}

}  // namespace

// The node's input i as host values when given (a constant, an initializer or an input given a
// value) and not empty; nullopt when absent or empty (Resize's placeholders).
std::optional<HostTensor> OnnxImporter::optional_constant(const Node& n, int i,
                                                          const std::string& what) const {
  if (!has_input(n, i)) return std::nullopt;
  auto c = constants_.find(n.input(i));
  if (c == constants_.end())
    throw error(n, fmt::format("input '{}' ({}) must be a constant: an initializer, a Constant "
                               "node's output or an input given a value",
                               n.input(i), what));
  auto h = host_tensor(c->second);
  if (!h) throw error(n, fmt::format("input '{}' ({}) has no numeric data", n.input(i), what));
  if (h->v.empty()) return std::nullopt;
  return h;
}

void OnnxImporter::import_resize(const Node& n, bool upsample) {
  ResizeMode r;
  std::vector<double> scales;
  std::optional<HostTensor> sizes, roi;
  const bool legacy = upsample || opset_ < 11;
  std::set<std::string> known = {"mode"};
  if (upsample && opset_ < 9) known.insert("scales");
  if (!legacy)
    known.insert({"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                  "extrapolation_value", "nearest_mode"});
  NodeAttrs a(*this, n, known);
  check_outputs(n, 1);
  r.mode = a.get_string("mode", "nearest");
  if (upsample && r.mode == "bilinear") r.mode = "linear";
  if (r.mode != "nearest" && r.mode != "linear" && (legacy || r.mode != "cubic"))
    throw error(n, fmt::format("attribute 'mode' = '{}' is not supported (nearest, linear{})",
                               r.mode, legacy ? "" : ", cubic"));
  if (legacy) {
    r.transform = "asymmetric";
    r.nearest = "floor";
  } else {
    r.transform = a.get_string("coordinate_transformation_mode", "half_pixel");
    r.nearest = a.get_string("nearest_mode", "round_prefer_floor");
    r.cubic_a = a.get_float("cubic_coeff_a", -0.75);
    r.exclude_outside = a.get_bool("exclude_outside", false);
    r.extrapolation = a.get_float("extrapolation_value", 0);
    static const std::set<std::string> kTransforms = {"half_pixel",           "pytorch_half_pixel",
                                                      "align_corners",        "asymmetric",
                                                      "tf_half_pixel_for_nn", "tf_crop_and_resize"};
    if (!kTransforms.count(r.transform))
      throw error(n, fmt::format("attribute 'coordinate_transformation_mode' = '{}' is not "
                                 "supported",
                                 r.transform));
    static const std::set<std::string> kNearest = {"round_prefer_floor", "round_prefer_ceil",
                                                   "floor", "ceil"};
    if (!kNearest.count(r.nearest))
      throw error(n, fmt::format("attribute 'nearest_mode' = '{}' is not supported", r.nearest));
  }
  const TensorDesc x = data(n, 0, isa_input_dtypes("eltwise", "fn", "max"));
  const size_t rank = x.shape.size();
  if (upsample && opset_ < 9) {
    const onnx::AttributeProto* s = a.find("scales");
    if (!s) throw error(n, "attribute 'scales' is missing");
    for (float v : s->floats()) scales.push_back(v);
  } else {
    const int si = legacy ? 1 : 2;
    if (auto h = optional_constant(n, si, "scales"))
      for (long double v : h->v) scales.push_back(static_cast<double>(v));
    if (!legacy) {
      sizes = optional_constant(n, 3, "sizes");
      if (r.transform == "tf_crop_and_resize") roi = optional_constant(n, 1, "roi");
    }
  }
  if (scales.empty() == !sizes) throw error(n, "exactly one of scales and sizes must be given");
  const size_t count = sizes ? sizes->v.size() : scales.size();
  if (count != rank)
    throw error(n, fmt::format("{} {} values for an input of rank {}", count,
                               sizes ? "sizes" : "scales", rank));
  if (roi && roi->v.size() != 2 * rank)
    throw error(n, fmt::format("roi has {} values; the input of rank {} needs {}", roi->v.size(),
                               rank, 2 * rank));
  Shape out_shape = x.shape;
  std::vector<double> scale(rank);
  for (size_t i = 0; i < rank; ++i) {
    if (sizes) {
      out_shape[i] = static_cast<int64_t>(sizes->v[i]);
      scale[i] = static_cast<double>(out_shape[i]) / static_cast<double>(x.shape[i]);
    } else {
      scale[i] = scales[i];
      out_shape[i] = static_cast<int64_t>(std::floor(scale[i] * static_cast<double>(x.shape[i])));
    }
    if (scale[i] <= 0 || out_shape[i] <= 0)
      throw error(
          n, fmt::format("axis {}: the scale {} gives the extent {}", i, scale[i], out_shape[i]));
  }
  // The axes M changes, innermost first.
  struct Step {
    size_t axis;
    AxisMatrix m;
    bool gather;
  };
  std::vector<Step> steps;
  for (size_t i = rank; i-- > 0;) {
    const int64_t in = x.shape[i], out = out_shape[i];
    const double rs = roi ? static_cast<double>(roi->v[i]) : 0.0;
    const double re = roi ? static_cast<double>(roi->v[rank + i]) : 1.0;
    AxisMatrix m = axis_matrix(r, in, out, scale[i], rs, re);
    bool gather = true, identity = in == out;
    for (int64_t row = 0; row < out; ++row) {
      int64_t ones = 0, others = 0;
      for (int64_t c = 0; c < in; ++c) {
        const double v = m.m[static_cast<size_t>(row * in + c)];
        if (v == 1.0) {
          ++ones;
          if (c != row) identity = false;
        } else if (v != 0.0) {
          ++others;
        }
      }
      if (ones != 1 || others != 0 || m.outside[row]) gather = identity = false;
    }
    if (!identity) steps.push_back({i, std::move(m), gather});
  }
  const std::string y = n.output(0);
  if (steps.empty()) {
    add_layer(n, LayerKind::reshape, {x.name}, x.dtype, x.shape);
    return;
  }
  std::string cur = x.name;
  Shape shape = x.shape;
  for (size_t s = 0; s < steps.size(); ++s) {
    const Step& st = steps[s];
    const bool final = s + 1 == steps.size();
    const size_t ax = st.axis;
    const int64_t in = shape[ax], out = out_shape[ax];
    Shape next = shape;
    next[ax] = out;
    const std::string base = fmt::format("{}.axis{}", y, ax);
    if (st.gather) {
      std::vector<int64_t> idx;
      for (int64_t row = 0; row < out; ++row)
        for (int64_t c = 0; c < in; ++c)
          if (st.m.m[static_cast<size_t>(row * in + c)] == 1.0) idx.push_back(c);
      cur = gather_axis(n, cur, ax, idx, final ? y : base);
      shape = next;
      continue;
    }
    if (x.dtype != DType::f32)
      throw error(n, fmt::format("input '{}' has dtype {}; mode {} takes f32 (nearest takes any)",
                                 x.name, isa::dtype_name(x.dtype), r.mode));
    int64_t prefix = 1, suffix = 1;
    for (size_t i = 0; i < ax; ++i) prefix *= shape[i];
    for (size_t i = ax + 1; i < rank; ++i) suffix *= shape[i];
    const bool last = suffix == 1;
    HostTensor mt{onnx::TensorProto::FLOAT, last ? Shape{in, out} : Shape{out, in}, {}};
    mt.v.resize(static_cast<size_t>(in * out));
    for (int64_t row = 0; row < out; ++row)
      for (int64_t c = 0; c < in; ++c)
        mt.v[static_cast<size_t>(last ? c * out + row : row * in + c)] =
            st.m.m[static_cast<size_t>(row * in + c)];
    const std::string mname = base + ".weights";
    constants_[mname] = to_proto(mt, mname);
    const std::string mw = data_by_name(n, mname).name;
    const Shape viewed = last ? Shape{prefix, in} : Shape{prefix, in, suffix};
    const Shape product = last ? Shape{prefix, out} : Shape{prefix, out, suffix};
    add_layer(n, LayerKind::reshape, {cur}, x.dtype, viewed, base + ".in");
    add_layer(n, LayerKind::matmul,
              last ? std::vector<std::string>{base + ".in", mw}
                   : std::vector<std::string>{mw, base + ".in"},
              DType::f32, product, base + ".product");
    bool extrapolates = false;
    for (bool o : st.m.outside) extrapolates = extrapolates || o;
    std::string done = base + ".product";
    if (extrapolates) {
      add_layer(n, LayerKind::reshape, {done}, x.dtype, next, base + ".sampled");
      HostTensor e{onnx::TensorProto::FLOAT, Shape(rank - ax, 1), {}};
      e.shape[0] = out;
      for (int64_t row = 0; row < out; ++row)
        e.v.push_back(st.m.outside[row] ? r.extrapolation : 0);
      const std::string ename = base + ".extrapolated";
      constants_[ename] = to_proto(e, ename);
      step(n, final ? "" : fmt::format("axis{}", ax), LayerKind::eltwise, "add",
           {base + ".sampled", data_by_name(n, ename).name});
    } else {
      add_layer(n, LayerKind::reshape, {done}, x.dtype, next, final ? y : base);
    }
    cur = final ? y : base;
    shape = next;
  }
}

}  // namespace fracsim::compiler
