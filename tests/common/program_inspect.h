// Reading a compiled program in tests: its symbols by name, its ops in order, and the initial
// contents of a symbol.
#pragma once

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "isa/op_def.h"
#include "isa/program.h"
#include "isa/reference.h"

namespace fracsim::testing {

inline const isa::Symbol& symbol(const isa::Program& p, const std::string& name) {
  for (const isa::Symbol& s : p.symbols)
    if (s.name == name) return s;
  FAIL("no symbol ", name);
  return p.symbols.front();
}

// The op of every instruction, with its fn where it has one ("eltwise add").
inline std::vector<std::string> op_names(const isa::Program& p) {
  const isa::OpTable& ops = isa::OpTable::builtin();
  std::vector<std::string> names;
  for (const isa::Instruction& in : p.instructions) {
    const isa::OpDef& op = ops.get(in.opcode);
    const int fn = op.attr_index("fn");
    names.push_back(fn < 0 ? op.name : op.name + " " + op.enum_value("fn", in.attrs));
  }
  return names;
}

// The elements of symbol `name` in `image` (its initial contents for a weight).
template <typename T>
std::vector<T> values(const isa::Program& p, const std::vector<uint8_t>& image,
                      const std::string& name) {
  const isa::TensorRef& t = symbol(p, name).tensor;
  std::vector<T> out;
  isa::for_each_offset(t, [&](int64_t off) {
    T v;
    std::memcpy(&v, image.data() + t.address + off * sizeof(T), sizeof(T));
    out.push_back(v);
  });
  return out;
}

}  // namespace fracsim::testing
