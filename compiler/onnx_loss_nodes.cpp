// The ONNX front end's losses as compositions: NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss (log-softmax along the class axis, then the former).
//
// NLL over input [N, C, d...] and target [N, d...] (class indices), optional weight [C]:
// - mask = (target seen [N, 1, d...] == iota [C, 1...]) (compare: a u8 one-hot); the iota holds
//   no value for ignore_index, so an ignored element matches no class, as does an index
//   outside [0, C) (an error in ONNX);
// - picked = select(mask, input, 0), times the weight seen [C, 1...] when given;
// - none: 0 - sum over C of picked; sum: -sum of everything; mean: -(sum of picked) / (sum of
//   select(mask, weight, 0)) (with no weight, the count of elements not ignored).
#include <fmt/format.h>

#include "compiler/onnx_fold.h"
#include "compiler/onnx_importer.h"
#include "compiler/onnx_tensor.h"

namespace fracsim::compiler {

using isa::DType;
using isa::Shape;

void OnnxImporter::import_nll(const Node& n, bool softmax) {
  NodeAttrs a(*this, n, {"reduction", "ignore_index"});
  check_outputs(n, softmax ? 2 : 1);
  const TensorDesc x = data(n, 0);
  require_rank(n, x, 2, 6);
  const TensorDesc t = data(n, 1, {DType::i64, DType::i32});
  const std::string reduction = a.get_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    throw error(n, fmt::format("attribute 'reduction' = '{}' is not none, sum or mean", reduction));
  const int64_t c = x.shape[1];
  Shape tshape = x.shape;
  tshape.erase(tshape.begin() + 1);
  if (t.shape != tshape)
    throw error(n, fmt::format("target {} must have the shape {}", isa::shape_str(t.shape),
                               isa::shape_str(tshape)));
  std::string scores = x.name;
  if (softmax) {
    const bool named = n.output_size() > 1 && !n.output(1).empty();
    Layer& l = add_layer(n, LayerKind::log_softmax, {x.name}, x.dtype, x.shape,
                         named ? n.output(1) : n.output(0) + ".log_prob");
    l.axis = 1;
    scores = l.name;
  }
  const std::string out = n.output(0);
  const size_t rank = x.shape.size();
  // The class axis' view of a [C] tensor: [C, 1, ...] against [N, C, d...].
  Shape class_shape(rank - 1, 1);
  class_shape[0] = c;
  HostTensor iota{
      t.dtype == DType::i64 ? onnx::TensorProto::INT64 : onnx::TensorProto::INT32, class_shape, {}};
  const bool ignoring = a.has("ignore_index");
  const int64_t ignore = a.get_int("ignore_index", 0);
  // An ignored class gets a label no target of this dtype holds but the dtype's minimum, which
  // is no class either.
  const long double none = t.dtype == DType::i64 ? static_cast<long double>(INT64_MIN)
                                                 : static_cast<long double>(INT32_MIN);
  for (int64_t k = 0; k < c; ++k)
    iota.v.push_back(ignoring && k == ignore ? none : static_cast<long double>(k));
  const std::string iota_name = out + ".classes";
  constants_[iota_name] = to_proto(iota, iota_name);
  Shape tv = x.shape;
  tv[1] = 1;
  const std::string target = out + ".target";
  add_layer(n, LayerKind::reshape, {t.name}, t.dtype, tv, target);
  const std::string mask = out + ".mask";
  add_layer(n, LayerKind::compare, {target, data_by_name(n, iota_name).name}, DType::u8, x.shape,
            mask)
      .fn = "eq";
  const std::string zero = data_by_name(n, scalar_constant(n, "zero", 0, DType::f32)).name;
  std::string picked = out + ".picked";
  add_layer(n, LayerKind::select, {mask, scores, zero}, DType::f32, x.shape, picked);
  std::string weight;
  if (has_input(n, 2)) {
    const TensorDesc w = data(n, 2);
    if (w.shape != Shape{c})
      throw error(n, fmt::format("weight {} must have the shape [{}]", isa::shape_str(w.shape), c));
    weight = out + ".weight";
    add_layer(n, LayerKind::reshape, {w.name}, DType::f32, class_shape, weight);
    picked = step(n, "weighted", LayerKind::eltwise, "mul", {picked, weight});
  }
  auto reduce = [&](const std::string& in, std::vector<int64_t> axes, const std::string& name) {
    const Shape& s = w_.tensor(in).shape;
    Shape kept;
    for (size_t i = 0; i < s.size(); ++i)
      if (std::find(axes.begin(), axes.end(), static_cast<int64_t>(i)) == axes.end())
        kept.push_back(s[i]);
    Layer& l = add_layer(n, LayerKind::reduce, {in}, DType::f32, kept, name);
    l.fn = "sum";
    l.axes = std::move(axes);
    return l.name;
  };
  std::vector<int64_t> all;
  for (size_t i = 0; i < rank; ++i) all.push_back(static_cast<int64_t>(i));
  if (reduction == "none") {
    const std::string s = reduce(picked, {1}, out + ".sum");
    step(n, "", LayerKind::eltwise, "sub", {zero, s});
    return;
  }
  const std::string total = reduce(picked, all, out + ".sum");
  if (reduction == "sum") {
    step(n, "", LayerKind::eltwise, "sub", {zero, total});
    return;
  }
  const std::string counted =
      weight.empty() ? data_by_name(n, scalar_constant(n, "one", 1, DType::f32)).name : weight;
  const std::string w_sel = out + ".weights";
  add_layer(n, LayerKind::select, {mask, counted, zero}, DType::f32, x.shape, w_sel);
  const std::string den = reduce(w_sel, all, out + ".count");
  const std::string mean = step(n, "mean", LayerKind::eltwise, "div", {total, den});
  step(n, "", LayerKind::eltwise, "sub", {zero, mean});
}

}  // namespace fracsim::compiler
