// Lowering of the data-movement layers of the ONNX front end:
// - slice: a strided view of the input (no instruction): offset sum(starts * strides), strides
//   times steps;
// - gather: per constant index k, a copy of the input's slice at k along `axis` into the
//   output's slice at position i;
// - pad: a fill of the output with the pad value, then a copy of the input into the view of
//   the output from the begin pads on;
// - convert, compare, select: one instruction of that op over the inputs broadcast;
// - gather_index: one gather instruction, the input seen [P0, P1, A, Q0, Q1] (the dims before
//   the axis, the axis, the dims after it; the importer allows at most two on either side).
//   GatherElements: the indices and the output have the input's rank; Gather: the indices
//   (flattened to K) are seen with stride 0 along the P and Q dims of the output
//   [outer..., K, inner...].
#include "compiler/graph_lowering.h"

#include <fmt/format.h>

namespace fracsim::compiler {

void GraphLowering::lower_slice(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  View v = x;
  v.shape = l.output.shape;
  for (size_t i = 0; i < x.shape.size(); ++i) {
    v.offset += l.starts[i] * x.strides[i];
    v.strides[i] = x.strides[i] * l.steps[i];
  }
  tensors_[l.name] = v;
}

void GraphLowering::lower_gather(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  View y = output_of(l);
  // The output [outer..., indices..., inner...] seen as [outer..., count, inner...].
  const size_t axis = static_cast<size_t>(l.axis);
  const int64_t count = static_cast<int64_t>(l.indices.size());
  View out = reshaped(y, [&] {
    isa::Shape s(x.shape);
    s[axis] = count;
    return s;
  }());
  for (int64_t i = 0; i < count; ++i) {
    View src = x, dst = out;
    src.shape[axis] = dst.shape[axis] = 1;
    src.offset += l.indices[i] * x.strides[axis];
    dst.offset += i * out.strides[axis];
    copy(src, dst);
  }
}

void GraphLowering::lower_pad(const Layer& l) {
  View x = tensors_.at(l.inputs[0]);
  View y = output_of(l);
  emit("fill", {y}, {{"value", fmt::format("{}", l.alpha)}});
  View inner = y;
  inner.shape = x.shape;
  const size_t rank = x.shape.size();
  for (size_t i = 0; i < rank; ++i) inner.offset += l.padding[i] * y.strides[i];
  copy(x, inner);
}

void GraphLowering::lower_elementwise(const Layer& l) {
  View y = output_of(l);
  std::vector<View> xs;
  for (const std::string& name : l.inputs) xs.push_back(broadcast_to(tensors_.at(name), y.shape));
  xs.push_back(y);
  if (l.kind == LayerKind::convert) return emit("convert", xs, {});
  if (l.kind == LayerKind::select) return emit("select", xs, {});
  emit("compare", xs, {{"fn", l.fn}});
}

void GraphLowering::lower_gather_index(const Layer& l) {
  const View x = tensors_.at(l.inputs[0]);
  View idx = tensors_.at(l.inputs[1]);
  View y = output_of(l);
  const size_t axis = static_cast<size_t>(l.axis);
  const size_t after = x.shape.size() - axis - 1;
  // [P0, P1, A, Q0, Q1] from the dims before the axis (padded in front), the axis and the dims
  // after it (padded behind), with the given extents and strides.
  auto five = [&](const View& v, const isa::Shape& ext, const isa::Shape& str, int64_t mid,
                  int64_t mid_stride) {
    View f{v.buffer, {1, 1, mid, 1, 1}, {0, 0, mid_stride, 0, 0}, v.offset};
    for (size_t i = 0; i < axis; ++i) {
      f.shape[2 - axis + i] = ext[i];
      f.strides[2 - axis + i] = str[i];
    }
    for (size_t i = 0; i < after; ++i) {
      f.shape[3 + i] = ext[axis + 1 + i];
      f.strides[3 + i] = str[axis + 1 + i];
    }
    return f;
  };
  if (!l.flat_axis) {
    // GatherElements: the output's extents, the input's strides.
    const View in = five(x, y.shape, x.strides, x.shape[axis], x.strides[axis]);
    const View iv = five(idx, y.shape, idx.strides, y.shape[axis], idx.strides[axis]);
    const View out = five(y, y.shape, y.strides, y.shape[axis], y.strides[axis]);
    return emit("gather", {in, iv, out}, {});
  }
  if (!idx.contiguous()) {
    View c = whole(add_buffer({l.name + ".indices", buffers_[idx.buffer].desc.dtype, idx.shape},
                              BufferRole::intermediate));
    copy(idx, c);
    idx = c;
  }
  const int64_t k = isa::num_elements(idx.shape);
  isa::Shape laid = x.shape;
  laid[axis] = k;
  const View yk = reshaped(y, laid);
  const View in = five(x, x.shape, x.strides, x.shape[axis], x.strides[axis]);
  const View iv = five(idx, laid, isa::Shape(laid.size(), 0), k, 1);
  const View out = five(yk, laid, yk.strides, k, yk.strides[axis]);
  emit("gather", {in, iv, out}, {});
}

}  // namespace fracsim::compiler
