#include "sim/instruction_check.h"

#include <algorithm>
#include <cstring>

#include "isa/error.h"
#include "isa/reassociation.h"
#include "isa/tensor.h"

namespace fracsim::sim {

namespace {

// An instruction with its operands moved into one small buffer: their byte spans in the main
// memory, merged where they meet, laid end to end (each at its address's offset within 64
// bytes), so that the reference can run on copies of just what it touches.
struct Compacted {
  isa::Instruction instr;                            // the operands at their buffer addresses
  std::vector<std::pair<uint64_t, uint64_t>> spans;  // [begin, end) in the main memory
  std::vector<uint64_t> at;                          // where each span lies in the buffer
  uint64_t bytes = 0;

  void gather(isa::MemoryView memory, std::vector<uint8_t>& buffer) const {
    FRACSIM_ASSERT(spans.empty() || spans.back().second <= memory.size,
                   "an instruction's operands outside the main memory");
    buffer.assign(bytes, 0);
    for (size_t i = 0; i < spans.size(); ++i)
      std::memcpy(buffer.data() + at[i], memory.data + spans[i].first,
                  spans[i].second - spans[i].first);
  }
};

Compacted compacted(const isa::Instruction& in) {
  Compacted c;
  c.instr = in;
  std::vector<std::pair<uint64_t, uint64_t>> s;
  for (const isa::TensorRef& t : in.operands) {
    const auto span = t.byte_span();
    if (span.first < span.second) s.push_back(span);
  }
  std::sort(s.begin(), s.end());
  for (const auto& [b, e] : s)
    if (!c.spans.empty() && b <= c.spans.back().second)
      c.spans.back().second = std::max(c.spans.back().second, e);
    else
      c.spans.emplace_back(b, e);
  for (const auto& [b, e] : c.spans) {
    c.at.push_back((c.bytes + 63) / 64 * 64 + b % 64);
    c.bytes = c.at.back() + (e - b);
  }
  for (isa::TensorRef& t : c.instr.operands) {
    const auto span = t.byte_span();
    if (span.first == span.second) {
      t.address = 0;
      continue;
    }
    const size_t i = static_cast<size_t>(
        std::upper_bound(c.spans.begin(), c.spans.end(), std::make_pair(span.first, UINT64_MAX)) -
        c.spans.begin() - 1);
    t.address = c.at[i] + (t.address - c.spans[i].first);
  }
  return c;
}

}  // namespace

InstructionChecker::InstructionChecker(const isa::Program& program, const isa::OpTable& ops)
    : program_(program), ops_(ops), memory_(program.footprint, 0) {
  isa::MemoryView mem{memory_.data(), memory_.size()};
  for (const isa::DataSegment& seg : program.data) isa::fill_data_segment(seg, mem);
}

void InstructionChecker::retired(size_t k, isa::MemoryView memory) {
  const isa::Instruction& in = program_.instructions.at(k);
  const isa::OpDef& op = ops_.get(in.opcode);
  const Compacted c = compacted(in);
  // Before: the operands as the instructions so far computed them; want: the reference's
  // outputs from there; got: the machine's.
  std::vector<uint8_t> before, want, got;
  isa::MemoryView mine{memory_.data(), memory_.size()};
  c.gather(mine, before);
  want = before;
  isa::execute_reference(op, c.instr, isa::MemoryView{want.data(), want.size()});
  c.gather(memory, got);
  const isa::MemoryView w{want.data(), want.size()}, g{got.data(), got.size()};
  bool exact = true;
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == isa::OperandRole::out) {
      const isa::ElementCheck e = isa::compare_elements(c.instr.operands[o], g, w, nullptr, 0);
      exact = exact && e.bit_exact == e.elements;
    }
  ++result_.instructions;
  if (exact) {
    ++result_.bit_exact;
  } else {
    // S: the op on the absolute values of its operands.
    std::vector<uint8_t> magnitude;
    const bool bound = isa::may_reassociate(op);
    if (bound) {
      magnitude = std::move(before);
      const isa::MemoryView m{magnitude.data(), magnitude.size()};
      isa::absolute_operands(c.instr, m);
      isa::execute_reference(op, c.instr, m);
    }
    const isa::MemoryView m{magnitude.data(), magnitude.size()};
    const int64_t terms = isa::terms_per_output(op, c.instr);
    InstructionDifference f{k, isa::instruction_name(program_, k), op.name};
    for (size_t o = 0; o < op.operands.size(); ++o)
      if (op.operands[o].role == isa::OperandRole::out) {
        const isa::ElementCheck e =
            isa::compare_elements(c.instr.operands[o], g, w, bound ? &m : nullptr, terms);
        f.elements += e.elements;
        f.differing += e.elements - e.bit_exact;
        f.beyond += e.elements - e.within_bound;
        f.max_abs_diff = std::max(f.max_abs_diff, e.max_abs_diff);
        f.bound_used = std::max(f.bound_used, e.max_bound_use);
      }
    if (f.beyond == 0) {
      ++result_.within_bound;
      result_.reassociated.push_back(std::move(f));
    } else {
      result_.failures.push_back(std::move(f));
    }
  }
  // From here on the memory holds what the machine computed.
  for (size_t o = 0; o < op.operands.size(); ++o)
    if (op.operands[o].role == isa::OperandRole::out)
      isa::copy_tensor(in.operands[o], memory, in.operands[o], mine);
}

}  // namespace fracsim::sim
