#include "compiler/lowering.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::compiler {

uint64_t segment_seed(uint64_t seed, uint64_t index) { return seed * 1000003u + index; }

namespace {

enum class BufferRole { input, weight, intermediate };

// A tensor to be placed in the root memory.
struct Buffer {
  TensorDesc desc;
  BufferRole role = BufferRole::intermediate;
  bool output = false;
  double lo = 0, hi = 0;  // inputs and weights: the range of their random contents
};

// A strided view of a buffer, as one operand of an instruction sees it.
struct View {
  int buffer = 0;
  isa::Shape shape;
  isa::Shape strides;
};

struct PendingInstruction {
  const isa::OpDef* op = nullptr;
  std::vector<View> operands;
  std::vector<int64_t> attrs;
};

using AttrValues = std::vector<std::pair<std::string, std::string>>;

class GraphLowering {
 public:
  GraphLowering(const Workload& w, const isa::OpTable& ops) : w_(w), ops_(ops) {}

  Compilation run() {
    for (const TensorDesc& in : w_.inputs) {
      bool integer = isa::is_integer(in.dtype);
      add_buffer(in, BufferRole::input, integer ? -8.0 : -1.0, integer ? 8.0 : 1.0);
    }
    for (const Layer& l : w_.layers) {
      switch (l.kind) {
        case LayerKind::dense:
          lower_dense(l);
          break;
        case LayerKind::relu:
          lower_relu(l);
          break;
        case LayerKind::add:
          lower_add(l);
          break;
        case LayerKind::matmul:
          lower_matmul(l);
          break;
      }
    }
    Compilation c;
    c.plan = MemoryPlan::first_fit(lifetimes());
    c.program = materialize(c.plan);
    isa::validate_program(c.program, ops_, w_.file.empty() ? w_.name : w_.file);
    return c;
  }

 private:
  int add_buffer(const TensorDesc& desc, BufferRole role, double lo = 0, double hi = 0) {
    Buffer b;
    b.desc = desc;
    b.role = role;
    b.output = w_.is_output(desc.name);
    b.lo = lo;
    b.hi = hi;
    buffers_.push_back(std::move(b));
    return static_cast<int>(buffers_.size()) - 1;
  }

  int buffer_of(const std::string& name) const {
    for (size_t i = 0; i < buffers_.size(); ++i)
      if (buffers_[i].desc.name == name) return static_cast<int>(i);
    FRACSIM_ASSERT(false, "no buffer for tensor {}", name);
    return -1;
  }

  // The output of `l`, allocated as the layer is lowered.
  int output_of(const Layer& l) { return add_buffer(l.output, BufferRole::intermediate); }

  View whole(int b) const {
    const isa::Shape& s = buffers_[b].desc.shape;
    return View{b, s, isa::contiguous_strides(s)};
  }

  // [d0, ..., dn-1] as [d0*...*dn-2, dn-1]; a rank-1 [N] as [1, N].
  View as_matrix(int b) const {
    const isa::Shape& s = buffers_[b].desc.shape;
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < s.size(); ++i) rows *= s[i];
    return View{b, {rows, s.back()}, {s.back(), 1}};
  }

  // A row [N] repeated `rows` times without copying: stride 0 along the rows.
  View row_broadcast(int b, int64_t rows) const {
    const isa::Shape& s = buffers_[b].desc.shape;
    FRACSIM_ASSERT(s.size() == 1, "broadcast of a rank-{} tensor", s.size());
    return View{b, {rows, s[0]}, {0, 1}};
  }

  void emit(const std::string& op_name, std::vector<View> operands, const AttrValues& values) {
    const isa::OpDef& op = ops_.get(op_name);
    PendingInstruction in;
    in.op = &op;
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

  void lower_dense(const Layer& l) {
    int x = buffer_of(l.inputs[0]);
    const isa::Shape& xs = buffers_[x].desc.shape;
    const int64_t m = xs[0], k = xs[1];
    // Keeps the variance of each output like that of the inputs (LeCun-style uniform init).
    const double range = 1.0 / std::sqrt(static_cast<double>(k));
    int weight = add_buffer({l.name + ".weight", isa::DType::f32, {k, l.units}}, BufferRole::weight,
                            -range, range);
    int bias = l.bias ? add_buffer({l.name + ".bias", isa::DType::f32, {l.units}},
                                   BufferRole::weight, -range, range)
                      : -1;
    int y = output_of(l);
    emit("matmul", {whole(x), whole(weight), whole(y)}, {{"accumulate", "0"}});
    if (bias >= 0) emit("eltwise", {whole(y), row_broadcast(bias, m), whole(y)}, {{"fn", "add"}});
  }

  void lower_relu(const Layer& l) {
    int x = buffer_of(l.inputs[0]);
    int y = output_of(l);
    emit("activation", {as_matrix(x), as_matrix(y)}, {{"fn", "relu"}});
  }

  void lower_add(const Layer& l) {
    int a = buffer_of(l.inputs[0]);
    int b = buffer_of(l.inputs[1]);
    int y = output_of(l);
    View va = as_matrix(a);
    View vb = buffers_[b].desc.shape == buffers_[a].desc.shape ? as_matrix(b)
                                                               : row_broadcast(b, va.shape[0]);
    emit("eltwise", {va, vb, as_matrix(y)}, {{"fn", "add"}});
  }

  void lower_matmul(const Layer& l) {
    int a = buffer_of(l.inputs[0]);
    int b = buffer_of(l.inputs[1]);
    int y = output_of(l);
    emit("matmul", {whole(a), whole(b), whole(y)}, {{"accumulate", "0"}});
  }

  std::vector<TensorLifetime> lifetimes() const {
    const int last = static_cast<int>(pending_.size()) - 1;
    std::vector<TensorLifetime> out;
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const Buffer& buf = buffers_[b];
      const uint64_t bytes = static_cast<uint64_t>(isa::num_elements(buf.desc.shape)) *
                             isa::dtype_size(buf.desc.dtype);
      TensorLifetime t{buf.desc.name, bytes, 0, last};
      if (buf.role == BufferRole::intermediate && !buf.output) {
        t.first = last + 1;
        t.last = -1;
        for (int i = 0; i <= last; ++i)
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

  isa::Program materialize(const MemoryPlan& plan) const {
    isa::Program p;
    p.name = w_.name;
    p.footprint = plan.footprint();
    auto ref = [&](int b, const isa::Shape& shape, const isa::Shape& strides) {
      return isa::TensorRef{plan.tensors()[b].address, buffers_[b].desc.dtype, shape, strides};
    };
    for (const PendingInstruction& pi : pending_) {
      isa::Instruction in;
      in.opcode = pi.op->opcode;
      in.attrs = pi.attrs;
      for (const View& v : pi.operands) in.operands.push_back(ref(v.buffer, v.shape, v.strides));
      p.instructions.push_back(std::move(in));
    }
    for (size_t b = 0; b < buffers_.size(); ++b) {
      const Buffer& buf = buffers_[b];
      if (buf.role == BufferRole::intermediate) continue;
      isa::DataSegment d;
      d.kind = isa::DataSegment::Kind::random;
      d.address = plan.tensors()[b].address;
      d.dtype = buf.desc.dtype;
      d.count = static_cast<uint64_t>(isa::num_elements(buf.desc.shape));
      d.seed = segment_seed(w_.seed, p.data.size());
      d.lo = buf.lo;
      d.hi = buf.hi;
      p.data.push_back(std::move(d));
      isa::SymbolRole role =
          buf.role == BufferRole::input ? isa::SymbolRole::input : isa::SymbolRole::weight;
      View v = whole(static_cast<int>(b));
      p.symbols.push_back({buf.desc.name, role, ref(v.buffer, v.shape, v.strides)});
    }
    for (const std::string& name : w_.outputs) {
      View v = whole(buffer_of(name));
      p.symbols.push_back({name, isa::SymbolRole::output, ref(v.buffer, v.shape, v.strides)});
    }
    return p;
  }

  const Workload& w_;
  const isa::OpTable& ops_;
  std::vector<Buffer> buffers_;  // inputs, then per layer its weights and its output
  std::vector<PendingInstruction> pending_;
};

}  // namespace

Compilation compile_with_plan(const Workload& w, const isa::OpTable& ops) {
  return GraphLowering(w, ops).run();
}

isa::Program compile(const Workload& w, const isa::OpTable& ops) {
  return compile_with_plan(w, ops).program;
}

}  // namespace fracsim::compiler
