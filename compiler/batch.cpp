#include "compiler/batch.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/layer_reader.h"
#include "isa/error.h"

namespace fracsim::compiler {

std::optional<std::string> BatchTracker::refuse(const std::string& why) const {
  return fmt::format("--batch {}: {}", batch_, why);
}

std::optional<std::string> BatchTracker::add_input(const TensorDesc& input) {
  if (input.shape.empty())
    return refuse(fmt::format(
        "input '{}' is a scalar (rank 0): it has no leading dim to carry the batch", input.name));
  if (written_batch_ == 0) {
    written_batch_ = input.shape[0];
    first_input_ = shape_and_name(input);
  } else if (input.shape[0] != written_batch_) {
    return refuse(fmt::format("input {} and input {} disagree on the batch (dim 0: {} and {})",
                              shape_and_name(input), first_input_, input.shape[0], written_batch_));
  }
  carriers_.insert(input.name);
  return std::nullopt;
}

std::optional<std::string> BatchTracker::add_layer(const Workload& w, const Layer& l) {
  if (std::none_of(l.inputs.begin(), l.inputs.end(),
                   [&](const std::string& t) { return carries(t); }))
    return std::nullopt;
  if (auto why = reason(w, l)) return refuse(*why);
  const std::vector<const TensorDesc*> outputs = [&] {
    std::vector<const TensorDesc*> out = {&l.output};
    // BatchNormalization's running statistics are per channel, of the whole batch.
    if (l.kind != LayerKind::batchnorm)
      for (const TensorDesc& t : l.more_outputs) out.push_back(&t);
    return out;
  }();
  for (const TensorDesc* t : outputs) {
    if (t->shape.empty())
      return refuse(fmt::format(
          "its output '{}' is a scalar (rank 0), with no dim to carry the batch", t->name));
    if (t->shape[0] % written_batch_ != 0)
      return refuse(fmt::format(
          "dim 0 of its output {} is not a multiple of the batch {}: its rows would mix samples",
          shape_and_name(*t), written_batch_));
    if (!t->name.empty()) carriers_.insert(t->name);
  }
  return std::nullopt;
}

std::optional<std::string> BatchTracker::reason(const Workload& w, const Layer& l) const {
  const auto desc = [&](size_t i) { return shape_and_name(w.tensor(l.inputs[i])); };
  const auto rank = [&](size_t i) { return w.tensor(l.inputs[i]).shape.size(); };
  const auto lead = [&](size_t i) { return w.tensor(l.inputs[i]).shape[0]; };
  const auto in = [&](size_t i) { return carries(l.inputs[i]); };
  const size_t out_rank = l.output.shape.size();
  const auto axis = [&](int64_t a) { return a < 0 ? a + static_cast<int64_t>(out_rank) : a; };
  // An operand without the batch, of the result's rank: its dim 0 must broadcast (be 1).
  const auto meets = [&](size_t i) -> std::optional<std::string> {
    if (in(i) || rank(i) != out_rank || lead(i) == 1) return std::nullopt;
    return fmt::format("{} does not carry the batch, but its dim 0 ({}) meets the batch", desc(i),
                       lead(i));
  };
  const auto moved = [&](size_t i) {
    return fmt::format("{} carries the batch, but broadcasting it to rank {} moves its dim 0",
                       desc(i), out_rank);
  };
  switch (l.kind) {
    case LayerKind::conv2d:
    case LayerKind::batchnorm:
    case LayerKind::layernorm:
      for (size_t i = 1; i < l.inputs.size(); ++i)
        if (in(i)) return fmt::format("its weight {} carries the batch", desc(i));
      if (l.kind == LayerKind::layernorm && axis(l.axis) == 0)
        return std::string("it normalises over dim 0, which carries the batch");
      return std::nullopt;
    case LayerKind::softmax:
    case LayerKind::log_softmax:
      if (axis(l.axis) == 0)
        return std::string("it normalises over dim 0, which carries the batch");
      return std::nullopt;
    case LayerKind::reduce:
      if (std::find(l.axes.begin(), l.axes.end(), 0) != l.axes.end())
        return std::string("it reduces over dim 0, which carries the batch");
      return std::nullopt;
    case LayerKind::gather_index:
      if (l.axis == 0) return std::string("it gathers along dim 0, which carries the batch");
      return std::nullopt;
    case LayerKind::topk:
      if (axis(l.axis) == 0) return std::string("it sorts along dim 0, which carries the batch");
      return std::nullopt;
    case LayerKind::flatten:
      if (l.axis == 0)
        return std::string("it flattens at axis 0, which moves the batch into dim 1");
      return std::nullopt;
    case LayerKind::reshape:
      if (l.reshape_leading >= 0)
        return fmt::format(
            "the shape's leading entry {} fixes dim 0, which carries the batch (-1 there "
            "would follow it)",
            l.reshape_leading);
      return std::nullopt;
    case LayerKind::transpose:
      if (l.perm[0] != 0) {
        const auto at = std::find(l.perm.begin(), l.perm.end(), 0) - l.perm.begin();
        return fmt::format("it moves dim 0, which carries the batch, to dim {}", at);
      }
      return std::nullopt;
    case LayerKind::concat:
      if (l.axis == 0) return std::string("it concatenates along dim 0, which carries the batch");
      for (size_t i = 0; i < l.inputs.size(); ++i)
        if (!in(i))
          return fmt::format("it concatenates {}, which does not carry the batch", desc(i));
      return std::nullopt;
    case LayerKind::add:
    case LayerKind::eltwise:
    case LayerKind::compare:
    case LayerKind::select:
      for (size_t i = 0; i < l.inputs.size(); ++i) {
        if (in(i) && rank(i) != out_rank) return moved(i);
        if (auto why = meets(i)) return why;
      }
      return std::nullopt;
    case LayerKind::matmul: {
      // [..., M, K] x [..., K, N]; a rank-1 a is [K], a rank-1 b is [K].
      if (in(0) && rank(0) == 1)
        return fmt::format("it contracts dim 0 of {}, which carries the batch", desc(0));
      if (in(0) && rank(0) == 2 && out_rank != 2)
        return fmt::format("the rows of {}, which carry the batch, become dim {} of the product",
                           desc(0), out_rank - 2);
      if (in(1) && rank(1) <= 2)
        return fmt::format("it contracts dim 0 of {}, which carries the batch", desc(1));
      for (size_t i = 0; i < 2; ++i) {
        if (in(i) && rank(i) >= 3 && rank(i) != out_rank) return moved(i);
        if (rank(i) >= 3)
          if (auto why = meets(i)) return why;
      }
      return std::nullopt;
    }
    case LayerKind::gemm:
      // a [M,K] (transA: [K,M]) x b [K,N] (transB: [N,K]) + c, broadcast to [M,N].
      if (in(0) && l.trans_a)
        return fmt::format("it contracts dim 0 of {} (transA), which carries the batch", desc(0));
      if (in(1))
        return l.trans_b
                   ? fmt::format(
                         "dim 0 of {} (transB), which carries the batch, becomes "
                         "dim 1 of the product",
                         desc(1))
                   : fmt::format("it contracts dim 0 of {}, which carries the batch", desc(1));
      if (!in(0))
        return fmt::format("dim 0 of the product comes from {}, which does not carry the batch",
                           desc(0));
      if (l.inputs.size() > 2) {
        if (in(2) && rank(2) != 2) return moved(2);
        if (auto why = meets(2)) return why;
      }
      return std::nullopt;
    default:
      // One data input, the batch kept in dim 0: dense, the activations, pooling, lrn,
      // zero_insert.
      return std::nullopt;
  }
}

std::set<std::string> weight_inputs(const Workload& w) {
  std::set<std::string> weights;
  for (const Layer& l : w.layers) {
    const size_t out_rank = l.output.shape.size();
    switch (l.kind) {
      case LayerKind::conv2d:
      case LayerKind::batchnorm:
      case LayerKind::layernorm:
      case LayerKind::gemm:
        weights.insert(l.inputs.begin() + 1, l.inputs.end());
        break;
      case LayerKind::matmul:
        if (w.tensor(l.inputs[1]).shape.size() <= 2) weights.insert(l.inputs[1]);
        break;
      case LayerKind::add:
      case LayerKind::eltwise:
      case LayerKind::compare:
      case LayerKind::select:
        for (const std::string& t : l.inputs)
          if (w.tensor(t).shape.size() < out_rank) weights.insert(t);
        break;
      default:
        break;
    }
  }
  // A view of a weight is the weight, seen otherwise.
  for (auto l = w.layers.rbegin(); l != w.layers.rend(); ++l)
    if (is_view_layer(l->kind) && weights.count(l->name)) weights.insert(l->inputs[0]);
  std::set<std::string> out;
  for (const TensorDesc& t : w.inputs)
    if (weights.count(t.name)) out.insert(t.name);
  return out;
}

void check_batched_shapes(const Workload& written, const Workload& batched,
                          const BatchTracker& tracker, int64_t batch) {
  std::map<std::string, const TensorDesc*> shapes;  // of `batched`, by name
  for (const TensorDesc& t : batched.inputs) shapes[t.name] = &t;
  for (const Layer& l : batched.layers) {
    shapes[l.name] = &l.output;
    for (const TensorDesc& t : l.more_outputs) shapes[t.name] = &t;
  }
  const auto check = [&](const TensorDesc& t, const std::string& layer) {
    isa::Shape want = t.shape;
    if (tracker.carries(t.name)) want[0] = want[0] / tracker.written_batch() * batch;
    const auto found = shapes.find(t.name);
    const TensorDesc* got = found == shapes.end() ? nullptr : found->second;
    if (got && got->shape == want) return;
    throw ConfigError(fmt::format(
        "{}: --batch {}: {} '{}' is {} at batch {}, {} at batch {}: it does not follow the batch",
        written.file, batch, layer.empty() ? "input" : "layer '" + layer + "': output", t.name,
        got ? isa::shape_str(got->shape) : "missing", batch, isa::shape_str(t.shape),
        tracker.written_batch()));
  };
  for (const TensorDesc& t : written.inputs) check(t, "");
  for (const Layer& l : written.layers) {
    check(l.output, l.name);
    for (const TensorDesc& t : l.more_outputs)
      if (!t.name.empty()) check(t, l.name);
  }
}

}  // namespace fracsim::compiler
