#include "compiler/lowering.h"

#include "compiler/graph_lowering.h"
#include "compiler/layer_fusion.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::compiler {

using isa::Shape;

uint64_t segment_seed(uint64_t seed, uint64_t index) { return seed * 1000003u + index; }

Compilation GraphLowering::run() {
  for (const TensorDesc& in : w_.inputs) {
    bool integer = isa::is_integer(in.dtype);
    const BufferRole role = w_.weights.count(in.name) ? BufferRole::weight : BufferRole::input;
    auto range = w_.random_ranges.find(in.name);
    int b = range != w_.random_ranges.end()
                ? add_buffer(in, role, range->second.first, range->second.second)
                : add_buffer(in, role, integer ? -8.0 : -1.0, integer ? 8.0 : 1.0);
    auto given = w_.contents.find(in.name);
    if (given != w_.contents.end()) buffers_[b].bytes = given->second;
    tensors_[in.name] = whole(b);
  }
  plan_concat_slices();
  plan_fusion();
  plan_permuted_outputs();
  for (const Layer& l : w_.layers) lower_layer(l);
  // An output that is a view of another tensor keeps that tensor's buffer alive throughout.
  for (const std::string& name : w_.outputs) buffers_[tensors_.at(name).buffer].output = true;
  Compilation c;
  c.plan = MemoryPlan::first_fit(lifetimes());
  c.program = materialize(c.plan);
  isa::validate_program(c.program, ops_, w_.file.empty() ? w_.name : w_.file);
  return c;
}

void GraphLowering::lower_layer(const Layer& l) {
  layer_name_ = l.node.empty() ? l.name : l.node;
  if (fused_away_.count(l.name)) return;
  auto chain = chains_.find(l.name);
  if (chain != chains_.end()) return lower_fused(chain->second);
  switch (l.kind) {
    case LayerKind::dense:
      return lower_dense(l);
    case LayerKind::relu:
      return lower_activation(l, "relu");
    case LayerKind::leaky_relu:
      return lower_activation(l, "leaky_relu");
    case LayerKind::exp:
      return lower_activation(l, "exp");
    case LayerKind::gelu:
      return lower_activation(l, "gelu");
    case LayerKind::sigmoid:
      return lower_activation(l, "sigmoid");
    case LayerKind::tanh:
      return lower_activation(l, "tanh");
    case LayerKind::add:
      return lower_add(l);
    case LayerKind::matmul:
      return lower_matmul(l);
    case LayerKind::conv2d:
      return lower_conv2d(l);
    case LayerKind::maxpool:
    case LayerKind::avgpool:
    case LayerKind::global_avgpool:
    case LayerKind::global_maxpool:
      return lower_pool(l);
    case LayerKind::batchnorm:
      return lower_batchnorm(l);
    case LayerKind::softmax:
      return lower_softmax(l);
    case LayerKind::layernorm:
      return lower_layernorm(l);
    case LayerKind::flatten:
    case LayerKind::reshape:
    case LayerKind::transpose:
      return lower_view(l);
    case LayerKind::concat:
      return lower_concat(l);
    case LayerKind::lrn:
      return lower_lrn(l);
    case LayerKind::eltwise:
      return lower_eltwise(l, l.fn);
    case LayerKind::gemm:
      return lower_gemm(l);
    case LayerKind::reduce:
      return lower_reduce(l);
    case LayerKind::log_softmax:
      return lower_log_softmax(l);
    case LayerKind::topk:
      return lower_topk(l);
    case LayerKind::zero_insert:
      return lower_zero_insert(l);
    case LayerKind::activation:
      return lower_activation(l, l.fn);
    case LayerKind::slice:
      return lower_slice(l);
    case LayerKind::gather:
      return lower_gather(l);
    case LayerKind::pad:
      return lower_pad(l);
    case LayerKind::convert:
    case LayerKind::compare:
    case LayerKind::select:
      return lower_elementwise(l);
    case LayerKind::gather_index:
      return lower_gather_index(l);
  }
}

int GraphLowering::add_buffer(const TensorDesc& desc, BufferRole role, double lo, double hi) {
  Buffer b;
  b.desc = desc;
  b.role = role;
  b.output = w_.is_output(desc.name);
  b.lo = lo;
  b.hi = hi;
  if (role != BufferRole::intermediate) b.seed_slot = next_seed_slot_++;
  buffers_.push_back(std::move(b));
  return static_cast<int>(buffers_.size()) - 1;
}

int GraphLowering::add_weight(const Layer& l, const std::string& suffix, isa::Shape shape,
                              double lo, double hi) {
  return add_buffer({l.name + "." + suffix, isa::DType::f32, std::move(shape)}, BufferRole::weight,
                    lo, hi);
}

View GraphLowering::output_of(const Layer& l) {
  auto layout = permuted_outputs_.find(l.name);
  if (layout != permuted_outputs_.end()) {
    // A buffer in the transpose's layout, seen back in the output's order (as input_rows lays
    // out its copy).
    const std::vector<int64_t>& perm = layout->second;
    isa::Shape laid;
    for (int64_t d : perm) laid.push_back(l.output.shape[static_cast<size_t>(d)]);
    const View v =
        permuted(whole(add_buffer({l.output.name, l.output.dtype, laid}, BufferRole::intermediate)),
                 inverse(perm));
    tensors_[l.name] = v;
    return v;
  }
  auto slice = slices_.find(l.name);
  View v = slice == slices_.end() ? whole(add_buffer(l.output, BufferRole::intermediate))
                                  : reshaped(whole(concat_buffer(slice->second.first)),
                                             l.output.shape, slice->second.second);
  tensors_[l.name] = v;
  return v;
}

View GraphLowering::whole(int b) const {
  const isa::Shape& s = buffers_[b].desc.shape;
  return View{b, s, isa::contiguous_strides(s), 0};
}

View GraphLowering::dense(const std::string& name) {
  View v = tensors_.at(name);
  if (v.contiguous()) return v;
  const Buffer& src = buffers_[v.buffer];
  View d = whole(add_buffer({name + ".dense", src.desc.dtype, v.shape}, BufferRole::intermediate));
  copy(v, d);
  tensors_[name] = d;
  return d;
}

View GraphLowering::as_matrix(View v) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < v.shape.size(); ++i) rows *= v.shape[i];
  // Read before v is moved: the order in which arguments are evaluated is unspecified.
  const int64_t cols = v.shape.empty() ? 1 : v.shape.back();
  return reshaped(std::move(v), {rows, cols});
}

View GraphLowering::reshaped(View v, const isa::Shape& shape, int64_t offset) {
  FRACSIM_ASSERT(v.contiguous(), "reshape of a strided view");
  FRACSIM_ASSERT(offset + isa::num_elements(shape) <= isa::num_elements(v.shape),
                 "reshape beyond the view");
  return View{v.buffer, shape, isa::contiguous_strides(shape), v.offset + offset};
}

void GraphLowering::copy(const View& src, const View& dst) {
  emit("eltwise", {src, src, dst}, {{"fn", "max"}});
}

void GraphLowering::emit(const std::string& op_name, std::vector<View> operands,
                         const AttrValues& values) {
  const isa::OpDef& op = ops_.get(op_name);
  FRACSIM_ASSERT(!layer_name_.empty(), "op {} emitted outside a layer", op_name);
  PendingInstruction in;
  in.op = &op;
  in.name = layer_name_;
  // Views of a lower rank than the op's operands gain leading dims of extent 1 (a matrix is a
  // batch of one for matmul; eltwise sees up to 6 dims).
  for (size_t k = 0; k < operands.size(); ++k) {
    View& v = operands[k];
    const size_t rank = op.operands.at(k).dims.size();
    FRACSIM_ASSERT(v.shape.size() <= rank, "op {}: rank-{} view for a rank-{} operand", op_name,
                   v.shape.size(), rank);
    v.shape.insert(v.shape.begin(), rank - v.shape.size(), 1);
    v.strides.insert(v.strides.begin(), rank - v.strides.size(), 0);
  }
  in.operands = std::move(operands);
  for (const isa::AttrDef& a : op.attributes) in.attrs.push_back(a.default_value);
  for (const auto& [name, value] : values) {
    int i = op.attr_index(name);
    FRACSIM_ASSERT(i >= 0, "op {} has no attribute {}", op_name, name);
    const isa::AttrDef& a = op.attributes[i];
    if (a.type == isa::AttrType::enumeration) {
      auto it = std::find(a.values.begin(), a.values.end(), value);
      FRACSIM_ASSERT(it != a.values.end(), "op {}: {} has no value {}", op_name, name, value);
      in.attrs[i] = it - a.values.begin();
    } else if (a.type == isa::AttrType::real) {
      in.attrs[i] = isa::real_to_attr(std::stod(value));
    } else {
      in.attrs[i] = std::stoll(value);
    }
  }
  pending_.push_back(std::move(in));
}

// dense = matmul + eltwise add of the bias row, seen [M,N] with strides [0,1].
void GraphLowering::lower_dense(const Layer& l) {
  View x = dense(l.inputs[0]);
  const int64_t m = x.shape[0], k = x.shape[1];
  // Keeps the variance of each output like that of the inputs (LeCun-style uniform init).
  const double range = 1.0 / std::sqrt(static_cast<double>(k));
  int weight = add_weight(l, "weight", {k, l.units}, -range, range);
  int bias = l.bias ? add_weight(l, "bias", {l.units}, -range, range) : -1;
  View y = output_of(l);
  emit("matmul", {x, whole(weight), y}, {{"accumulate", "0"}});
  if (bias >= 0) emit("eltwise", {y, View{bias, {m, l.units}, {0, 1}, 0}, y}, {{"fn", "add"}});
}

void GraphLowering::lower_activation(const Layer& l, const std::string& fn) {
  View x = dense(l.inputs[0]);
  View y = output_of(l);
  AttrValues attrs = {{"fn", fn}};
  if (l.kind == LayerKind::leaky_relu || l.kind == LayerKind::activation)
    attrs.emplace_back("alpha", fmt::format("{}", l.alpha));
  emit("activation", {as_matrix(x), as_matrix(y)}, attrs);
}

void GraphLowering::lower_add(const Layer& l) {
  View a = as_matrix(dense(l.inputs[0]));
  View b = dense(l.inputs[1]);
  View y = output_of(l);
  // b [N] broadcast over the rows of a [..., N]: stride 0 along the rows.
  View vb = b.shape != l.output.shape ? View{b.buffer, {a.shape[0], b.shape[0]}, {0, 1}, b.offset}
                                      : as_matrix(b);
  emit("eltwise", {a, vb, as_matrix(y)}, {{"fn", "add"}});
}

void GraphLowering::lower_matmul(const Layer& l) {
  const Shape& sa = w_.tensor(l.inputs[0]).shape;
  const Shape& sb = w_.tensor(l.inputs[1]).shape;
  if (sa.size() != 2 || sb.size() != 2) return lower_batched_matmul(l);
  View a = dense(l.inputs[0]);
  View b = dense(l.inputs[1]);
  View y = output_of(l);
  emit("matmul", {a, b, y}, {{"accumulate", "0"}});
}

std::vector<TensorLifetime> GraphLowering::lifetimes() const {
  // A program of views only (a reshape of an input) still places its tensors, at instruction 0.
  const int last = std::max(0, static_cast<int>(pending_.size()) - 1);
  std::vector<TensorLifetime> out;
  for (size_t b = 0; b < buffers_.size(); ++b) {
    const Buffer& buf = buffers_[b];
    const uint64_t bytes =
        static_cast<uint64_t>(isa::num_elements(buf.desc.shape)) * isa::dtype_size(buf.desc.dtype);
    TensorLifetime t{buf.desc.name, buf.dropped ? 0 : bytes, 0, last};
    if (buf.role == BufferRole::intermediate && !buf.output) {
      t.first = last + 1;
      t.last = -1;
      for (int i = 0; i < static_cast<int>(pending_.size()); ++i)
        for (const View& v : pending_[i].operands)
          if (v.buffer == static_cast<int>(b)) {
            t.first = std::min(t.first, i);
            t.last = std::max(t.last, i);
          }
      FRACSIM_ASSERT(t.first <= t.last, "tensor {} is used by no instruction", t.name);
    }
    out.push_back(t);
  }
  return out;
}

isa::Program GraphLowering::materialize(const MemoryPlan& plan) {
  isa::Program p;
  p.name = w_.name;
  p.footprint = plan.footprint();
  auto ref = [&](const View& v) {
    const isa::DType dt = buffers_[v.buffer].desc.dtype;
    const uint64_t at =
        plan.tensors()[v.buffer].address + static_cast<uint64_t>(v.offset) * isa::dtype_size(dt);
    return isa::TensorRef{at, dt, v.shape, v.strides};
  };
  for (const PendingInstruction& pi : pending_) {
    isa::Instruction in;
    in.opcode = pi.op->opcode;
    in.attrs = pi.attrs;
    for (const View& v : pi.operands) in.operands.push_back(ref(v));
    p.instructions.push_back(std::move(in));
    p.instruction_names.push_back(pi.name);
  }
  for (size_t b = 0; b < buffers_.size(); ++b) {
    Buffer& buf = buffers_[b];
    if (buf.role == BufferRole::intermediate || buf.dropped) continue;
    isa::DataSegment d;
    d.address = plan.tensors()[b].address;
    d.dtype = buf.desc.dtype;
    d.count = static_cast<uint64_t>(isa::num_elements(buf.desc.shape));
    if (!buf.bytes.empty()) {
      d.kind = isa::DataSegment::Kind::bytes;
      d.bytes = std::move(buf.bytes);
    } else {
      d.kind = isa::DataSegment::Kind::random;
      FRACSIM_ASSERT(buf.seed_slot >= 0, "random buffer {} without a seed", buf.desc.name);
      d.seed = segment_seed(w_.seed, static_cast<uint64_t>(buf.seed_slot));
      d.lo = buf.lo;
      d.hi = buf.hi;
    }
    p.data.push_back(std::move(d));
    isa::SymbolRole role =
        buf.role == BufferRole::input ? isa::SymbolRole::input : isa::SymbolRole::weight;
    p.symbols.push_back({buf.desc.name, role, ref(whole(static_cast<int>(b)))});
  }
  for (const std::string& name : w_.outputs) {
    p.symbols.push_back({name, isa::SymbolRole::output, ref(tensors_.at(name))});
  }
  return p;
}

Compilation compile_with_plan(const Workload& w, const isa::OpTable& ops) {
  if (w.fuse)
    if (std::optional<Workload> fused = fuse_layer_patterns(w))
      return GraphLowering(*fused, ops).run();
  return GraphLowering(w, ops).run();
}

isa::Program compile(const Workload& w, const isa::OpTable& ops) {
  return compile_with_plan(w, ops).program;
}

}  // namespace fracsim::compiler
