// The window ops of the ONNX front end: Conv, ConvTranspose and the pools, with their pads
// (explicit, auto_pad or ceil_mode) worked out as the ISA's window ops take them.
#include <algorithm>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

namespace {

using isa::DType;
using isa::Shape;

const std::vector<DType> kAllTypes = {DType::f32, DType::i32, DType::i16, DType::i8};

int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::vector<int64_t> OnnxImporter::spatial_ints(const Node& n, const NodeAttrs& a,
                                                const std::string& name, size_t count,
                                                int64_t fallback, size_t spatial_dims) const {
  std::vector<int64_t> v = a.get_ints(name).value_or(std::vector<int64_t>(count, fallback));
  if (v.size() != count)
    throw error(n, fmt::format("attribute '{}' has {} values; the input has {} spatial dims", name,
                               v.size(), spatial_dims));
  return v;
}

void OnnxImporter::add_bias(const Node& n, int64_t filters, std::vector<std::string>& inputs) {
  if (!has_input(n, 2)) return;
  const TensorDesc b = data(n, 2);
  if (b.shape != Shape{filters})
    throw error(n, fmt::format("the bias '{}' {} must have the shape [{}]", b.name,
                               isa::shape_str(b.shape), filters));
  inputs.push_back(b.name);
}

OnnxImporter::Window OnnxImporter::window(const Node& n, const NodeAttrs& a, const Shape& spatial,
                                          const std::vector<int64_t>& kernel,
                                          bool ceil_mode) const {
  const size_t k = spatial.size();
  Window w;
  w.kernel = kernel;
  auto list = [&](const std::string& name, size_t count, int64_t fallback) {
    return spatial_ints(n, a, name, count, fallback, k);
  };
  if (kernel.size() != k)
    throw error(n, fmt::format("attribute 'kernel_shape' has {} values; the input has {} spatial "
                               "dims",
                               kernel.size(), k));
  w.stride = list("strides", k, 1);
  w.dilation = a.find("dilations") ? list("dilations", k, 1) : std::vector<int64_t>(k, 1);
  for (size_t i = 0; i < k; ++i)
    if (w.stride[i] < 1 || w.dilation[i] < 1 || kernel[i] < 1)
      throw error(n, fmt::format("kernel_shape {}, strides {} and dilations {} must be positive",
                                 kernel, w.stride, w.dilation));
  const std::string pad = a.get_string("auto_pad", "NOTSET");
  if (pad == "NOTSET") {
    w.padding = list("pads", 2 * k, 0);
  } else if (pad == "VALID") {
    w.padding.assign(2 * k, 0);
  } else if (pad == "SAME_UPPER" || pad == "SAME_LOWER") {
    // The output keeps ceil(in / stride) positions; the extra pad goes at the end (SAME_UPPER)
    // or at the beginning (SAME_LOWER).
    w.padding.assign(2 * k, 0);
    for (size_t i = 0; i < k; ++i) {
      const int64_t span = (kernel[i] - 1) * w.dilation[i] + 1;
      const int64_t total = std::max<int64_t>(
          0, (cdiv(spatial[i], w.stride[i]) - 1) * w.stride[i] + span - spatial[i]);
      const int64_t small = total / 2;
      w.padding[i] = pad == "SAME_UPPER" ? small : total - small;
      w.padding[k + i] = total - w.padding[i];
    }
  } else {
    throw error(n, fmt::format("attribute 'auto_pad' = '{}' is not supported", pad));
  }
  for (size_t i = 0; i < k; ++i) {
    const int64_t span = (kernel[i] - 1) * w.dilation[i] + 1;
    int64_t& p0 = w.padding[i];
    int64_t& p1 = w.padding[k + i];
    if (p0 < 0 || p1 < 0)
      throw error(n, fmt::format("attribute 'pads' = {} has a negative pad", w.padding));
    const int64_t room = spatial[i] + p0 + p1 - span;
    if (room < 0)
      throw error(n, fmt::format("the kernel spans {} along spatial dim {} but the padded input "
                                 "has {}",
                                 span, i, spatial[i] + p0 + p1));
    int64_t out = room / w.stride[i] + 1;
    if (ceil_mode) {
      out = cdiv(room, w.stride[i]) + 1;
      // The last window must start inside the input or its begin padding.
      if ((out - 1) * w.stride[i] >= spatial[i] + p0) --out;
      // Windows that reach past the end see more end padding.
      p1 += std::max<int64_t>(0, (out - 1) * w.stride[i] + span - (spatial[i] + p0 + p1));
    }
    if (p0 >= span || p1 >= span)
      throw error(n, fmt::format("pads {} and {} along spatial dim {} reach past the dilated "
                                 "kernel ({}); the window ops take smaller pads",
                                 p0, p1, i, span));
    w.out.push_back(out);
  }
  return w;
}

void OnnxImporter::import_conv(const Node& n) {
  NodeAttrs a(*this, n, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 3, 5);
  const TensorDesc wt = data(n, 1);
  if (wt.shape.size() != x.shape.size())
    throw error(n, fmt::format("the weight '{}' {} must have the rank of the input {}", wt.name,
                               isa::shape_str(wt.shape), isa::shape_str(x.shape)));
  const int64_t g = a.get_int("group", 1), c = x.shape[1], f = wt.shape[0];
  if (g < 1 || c % g != 0 || f % g != 0 || wt.shape[1] != c / g)
    throw error(n, fmt::format("attribute 'group' = {} does not fit the input {} and the weight {}",
                               g, isa::shape_str(x.shape), isa::shape_str(wt.shape)));
  const std::vector<int64_t> kernel(wt.shape.begin() + 2, wt.shape.end());
  auto ks = a.get_ints("kernel_shape");
  if (ks && *ks != kernel)
    throw error(
        n, fmt::format("attribute 'kernel_shape' = {} differs from the weight's {}", *ks, kernel));
  const Window win = window(n, a, Shape(x.shape.begin() + 2, x.shape.end()), kernel, false);
  std::vector<std::string> inputs = {x.name, wt.name};
  add_bias(n, f, inputs);
  Shape out = {x.shape[0], f};
  out.insert(out.end(), win.out.begin(), win.out.end());
  Layer& l = add_layer(n, LayerKind::conv2d, inputs, DType::f32, out);
  l.filters = f;
  l.groups = g;
  l.kernel = win.kernel;
  l.stride = win.stride;
  l.dilation = win.dilation;
  l.padding = win.padding;
  l.bias = inputs.size() > 2;
}

void OnnxImporter::import_pool(const Node& n, LayerKind kind) {
  const bool max = kind == LayerKind::maxpool;
  NodeAttrs a(*this, n,
              max ? std::set<std::string>{"auto_pad", "ceil_mode", "dilations", "kernel_shape",
                                          "pads", "storage_order", "strides"}
                  : std::set<std::string>{"auto_pad", "ceil_mode", "count_include_pad",
                                          "kernel_shape", "pads", "strides"});
  check_outputs(n, max ? 2 : 1);
  // MaxPool takes what the ISA's pool rows with fn max take (u8 in 2-D only).
  const TensorDesc x =
      data(n, 0, max ? isa_input_dtypes("pool2d", "fn", "max") : std::vector<DType>{DType::f32});
  require_rank(n, x, 3, 5);
  if (max) {
    const std::string op = fmt::format("pool{}d", x.shape.size() - 2);
    const std::vector<DType> types = isa_input_dtypes(op, "fn", "max");
    if (std::find(types.begin(), types.end(), x.dtype) == types.end())
      throw error(n, fmt::format("input '{}' {} has dtype {}, which the ISA's {} does not take",
                                 x.name, isa::shape_str(x.shape), isa::dtype_name(x.dtype), op));
  }
  const bool indices = max && n.output_size() > 1 && !n.output(1).empty();
  auto kernel = a.get_ints("kernel_shape");
  if (!kernel) throw error(n, "attribute 'kernel_shape' is missing");
  const bool ceil_mode = a.get_bool("ceil_mode", false);
  const bool include_pad = a.get_bool("count_include_pad", false);
  if (ceil_mode && include_pad)
    throw error(n,
                "attribute 'ceil_mode' = 1 together with count_include_pad = 1 is not "
                "supported");
  const Window win = window(n, a, Shape(x.shape.begin() + 2, x.shape.end()), *kernel, ceil_mode);
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), win.out.begin(), win.out.end());
  Layer& l = add_layer(n, kind, {x.name}, x.dtype, out);
  l.kernel = win.kernel;
  l.stride = win.stride;
  l.dilation = win.dilation;
  l.padding = win.padding;
  l.count_include_pad = include_pad;
  if (!indices) return;
  // Indices: the flattened position of each max in the input, by the ISA's pool2d_argmax (i32
  // where ONNX has int64).
  if (x.shape.size() != 4)
    throw error(n, fmt::format("output 1 ('{}', the indices) is supported for 2-D pooling only, "
                               "not for the input {}",
                               n.output(1), isa::shape_str(x.shape)));
  if (isa::num_elements(x.shape) > std::numeric_limits<int32_t>::max())
    throw error(n, fmt::format("output 1 ('{}', the indices): the input {} has 2^31 elements "
                               "or more, beyond the i32 indices",
                               n.output(1), isa::shape_str(x.shape)));
  l.storage_order = a.get_int("storage_order", 0);
  if (l.storage_order != 0 && l.storage_order != 1)
    throw error(n, fmt::format("attribute 'storage_order' = {} is not 0 or 1", l.storage_order));
  l.more_outputs = {{n.output(1), DType::i32, l.output.shape}};
}

void OnnxImporter::import_global_pool(const Node& n, LayerKind kind) {
  NodeAttrs a(*this, n, {});
  check_outputs(n, 1);
  const TensorDesc x =
      data(n, 0, kind == LayerKind::global_maxpool ? kAllTypes : std::vector<DType>{});
  require_rank(n, x, 3, 5);
  const size_t k = x.shape.size() - 2;
  Shape out = {x.shape[0], x.shape[1]};
  out.resize(x.shape.size(), 1);
  Layer& l = add_layer(n, kind, {x.name}, x.dtype, out);
  l.kernel.assign(x.shape.begin() + 2, x.shape.end());
  l.stride.assign(k, 1);
  l.dilation.assign(k, 1);
  l.padding.assign(2 * k, 0);
}

// ConvTranspose as a convolution: the input spread out by the strides into a zero tensor
// (zero_insert), then a stride-1 convolution with the weight [C, F/G, k...] turned into
// [F, C/G, k...] with every kernel flipped. Along each spatial dim, with S = (k - 1) * d + 1
// and the output's extent `out`, the spread input of length out + S - 1 starts at
// q = S - 1 - pad_begin. The weight must be an initializer or a graph input: one with data is
// rearranged here, one without (an input without a value: timing mode) becomes a random weight
// of the new shape.
void OnnxImporter::import_conv_transpose(const Node& n) {
  NodeAttrs a(*this, n,
              {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape",
               "pads", "strides"});
  check_outputs(n, 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 3, 5);
  const std::string& wname = n.input(1);
  // A graph input without a value stands for a weight without data (a random one).
  onnx::TensorProto shape_only;
  auto wc = constants_.find(wname);
  auto gi = graph_inputs_.find(wname);
  if (wc == constants_.end() && gi != graph_inputs_.end()) {
    const auto& tt = gi->second->type().tensor_type();
    shape_only.set_name(wname);
    shape_only.set_data_type(tt.elem_type());
    for (const auto& d : tt.shape().dim()) shape_only.add_dims(d.dim_value());
  } else if (wc == constants_.end()) {
    throw error(n, fmt::format("the weight '{}' must be a constant: an initializer or a graph "
                               "input",
                               wname));
  }
  const onnx::TensorProto& wt = wc != constants_.end() ? wc->second : shape_only;
  if (wt.data_type() != onnx::TensorProto::FLOAT)
    throw error(n, fmt::format("the weight '{}' has dtype {}; this op takes FLOAT", wname,
                               onnx_type_name(wt.data_type())));
  const Shape ws = tensor_shape(wt);
  const size_t k = x.shape.size() - 2;
  const int64_t g = a.get_int("group", 1), c = x.shape[1];
  if (ws.size() != x.shape.size() || g < 1 || c % g != 0 || ws[0] != c)
    throw error(n, fmt::format("the weight '{}' {} and attribute 'group' = {} do not fit the "
                               "input {}",
                               wname, isa::shape_str(ws), g, isa::shape_str(x.shape)));
  const int64_t fg = ws[1], f = fg * g, cg = c / g;
  const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  auto ks = a.get_ints("kernel_shape");
  if (ks && *ks != kernel)
    throw error(
        n, fmt::format("attribute 'kernel_shape' = {} differs from the weight's {}", *ks, kernel));
  auto list = [&](const std::string& name, size_t count, int64_t fallback) {
    return spatial_ints(n, a, name, count, fallback, k);
  };
  const std::vector<int64_t> stride = list("strides", k, 1), dilation = list("dilations", k, 1);
  const std::vector<int64_t> out_pad = list("output_padding", k, 0);
  const std::string pad = a.get_string("auto_pad", "NOTSET");
  if (pad != "NOTSET" && pad != "VALID" && pad != "SAME_UPPER" && pad != "SAME_LOWER")
    throw error(n, fmt::format("attribute 'auto_pad' = '{}' is not supported", pad));
  const auto out_shape = a.get_ints("output_shape");
  if (out_shape && out_shape->size() != k)
    throw error(n, fmt::format("attribute 'output_shape' has {} values; the input has {} spatial "
                               "dims",
                               out_shape->size(), k));
  const std::vector<int64_t> pads = list("pads", 2 * k, 0);
  auto floor_half = [](int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); };
  Shape up = {x.shape[0], c}, out = {x.shape[0], f};
  std::vector<int64_t> offset;
  for (size_t i = 0; i < k; ++i) {
    const int64_t in = x.shape[2 + i], span = (kernel[i] - 1) * dilation[i] + 1;
    const int64_t natural = stride[i] * (in - 1) + out_pad[i] + span;
    int64_t begin = 0, extent = 0;
    if (out_shape || pad == "SAME_UPPER" || pad == "SAME_LOWER") {
      // ONNX: total = natural - out, split with the larger half at the end for SAME_UPPER.
      extent = out_shape ? (*out_shape)[i] : in * stride[i];
      const int64_t total = natural - extent;
      begin = pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else {
      if (pad == "NOTSET") begin = pads[i];
      extent = natural - begin - (pad == "NOTSET" ? pads[k + i] : 0);
    }
    const int64_t q = span - 1 - begin, length = extent + span - 1;
    if (extent < 1 || q < 0 || q + (in - 1) * stride[i] + 1 > length)
      throw error(n, fmt::format("pads {} crop the spread input along spatial dim {}; fracsim "
                                 "supports pads up to the dilated kernel",
                                 pads, i));
    up.push_back(length);
    out.push_back(extent);
    offset.push_back(q);
  }
  // The weight [C, F/G, k...] as [F, C/G, k...] with flipped kernels: element (gi, fo, ci, kk)
  // of the result is (gi * C/G + ci, fo, flipped kk) of the weight.
  onnx::TensorProto flipped;
  flipped.set_name(wname + ".transposed");
  flipped.set_data_type(onnx::TensorProto::FLOAT);
  Shape fs = {f, cg};
  fs.insert(fs.end(), kernel.begin(), kernel.end());
  for (int64_t d : fs) flipped.add_dims(d);
  if (tensor_has_data(wt)) {
    const std::vector<uint8_t> src = tensor_bytes(wt, DType::f32);
    const int64_t kk = isa::num_elements(kernel);
    std::vector<float> v(static_cast<size_t>(f * cg * kk));
    for (int64_t gi = 0; gi < g; ++gi)
      for (int64_t fo = 0; fo < fg; ++fo)
        for (int64_t ci = 0; ci < cg; ++ci)
          for (int64_t e = 0; e < kk; ++e) {
            const int64_t from = ((gi * cg + ci) * fg + fo) * kk + (kk - 1 - e);
            std::memcpy(&v[static_cast<size_t>(((gi * fg + fo) * cg + ci) * kk + e)],
                        src.data() + 4 * from, 4);
          }
    for (float e : v) flipped.add_float_data(e);
  }
  if (constants_.count(flipped.name()) == 0) constants_[flipped.name()] = flipped;
  const std::string spread = n.output(0) + ".spread";
  Layer& z = add_layer(n, LayerKind::zero_insert, {x.name}, DType::f32, up, spread);
  z.stride = stride;
  z.padding = offset;
  std::vector<std::string> inputs = {spread};
  Node conv = n;
  conv.set_input(0, spread);
  conv.set_input(1, flipped.name());
  inputs.push_back(data(conv, 1).name);
  add_bias(n, f, inputs);
  Layer& l = add_layer(n, LayerKind::conv2d, inputs, DType::f32, out);
  l.filters = f;
  l.groups = g;
  l.kernel = kernel;
  l.stride.assign(k, 1);
  l.dilation = dilation;
  l.padding.assign(2 * k, 0);
  l.bias = inputs.size() > 2;
}

}  // namespace fracsim::compiler
