// Lowering of the data-movement layers of the ONNX front end:
// - slice: a strided view of the input (no instruction): offset sum(starts * strides), strides
//   times steps;
// - gather: per constant index k, a copy of the input's slice at k along `axis` into the
//   output's slice at position i;
// - pad: a fill of the output with the pad value, then a copy of the input into the view of
//   the output from the begin pads on.
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

}  // namespace fracsim::compiler
