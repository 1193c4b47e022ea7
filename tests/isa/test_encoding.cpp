// The binary (.fbin) and text (.fasm) program formats: exact bytes, exact round trips, and the
// exact message of every rejection.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <random>
#include <set>

#include <doctest/doctest.h>

#include "isa/assembly.h"
#include "isa/encoding.h"
#include "isa/error.h"

using namespace fracsim;
using namespace fracsim::isa;

namespace {

template <typename Fn>
std::string config_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TensorRef tensor(uint64_t address, DType dtype, Shape shape, Shape strides) {
  TensorRef t;
  t.address = address;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.strides = std::move(strides);
  return t;
}

// The program whose encoding is written out by hand below.
Program tiny_program() {
  Program p;
  p.name = "t";
  p.footprint = 0x40;
  p.instructions.push_back({0x0102, {tensor(0x10, DType::i8, {2, 3}, {0, 1})}, {-2}});
  DataSegment bytes;
  bytes.address = 0x20;
  bytes.dtype = DType::i16;
  bytes.count = 1;
  bytes.bytes = {0x34, 0x12};
  DataSegment random;
  random.kind = DataSegment::Kind::random;
  random.address = 0x30;
  random.count = 2;
  random.seed = 7;
  random.lo = -1.0;
  random.hi = 2.5;
  p.data = {bytes, random};
  p.symbols.push_back({"y", SymbolRole::output, tensor(0x10, DType::i8, {3}, {1})});
  return p;
}

// clang-format off
const std::vector<uint8_t> kTinyBytes = {
    'F', 'B', 'I', 'N', 2, 0, 0, 0,                 // 0: magic, version 2, flags 0
    1, 0, 0, 0, 't',                                // 8: name
    0x40, 0, 0, 0, 0, 0, 0, 0,                      // 13: footprint
    1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0,             // 21: instruction, data, symbol counts
    0x02, 0x01, 1, 1,                               // 33: opcode 0x102, 1 operand, 1 attribute
    0x10, 0, 0, 0, 0, 0, 0, 0, 5, 2,                // 37: address, dtype i8 (45), rank 2 (46)
    2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, // 47: extent 2, stride 0
    3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // 63: extent 3, stride 1
    0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // 79: attribute -2
    0, 0x20, 0, 0, 0, 0, 0, 0, 0, 4,                // 87: kind bytes, address, dtype i16
    1, 0, 0, 0, 0, 0, 0, 0, 0x34, 0x12,             // 97: count 1, the bytes
    1, 0x30, 0, 0, 0, 0, 0, 0, 0, 0,                // 107: kind random, address, dtype f32
    2, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, // 117: count 2, seed 7
    0, 0, 0, 0, 0, 0, 0xf0, 0xbf,                   // 133: lo -1.0
    0, 0, 0, 0, 0, 0, 0x04, 0x40,                   // 141: hi 2.5
    1, 0, 0, 0, 'y', 2,                             // 149: symbol name, role output (154)
    0x10, 0, 0, 0, 0, 0, 0, 0, 5, 1,                // 155: address, dtype i8, rank 1
    3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // 165: extent 3, stride 1
    0xd0, 0xc8, 0x79, 0x75,                         // 181: FNV-1a 0x7579c8d0 (no sections)
};
// clang-format on

// Replaces the trailing checksum, so that a test reaches the structural check it aims at.
std::vector<uint8_t> reseal(std::vector<uint8_t> b) {
  b.resize(b.size() - 4);
  uint32_t h = fnv1a32(b.data(), b.size());
  for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(h >> (8 * i)));
  return b;
}

std::vector<uint8_t> with_bytes(std::vector<uint8_t> b, size_t at, std::vector<uint8_t> v) {
  std::copy(v.begin(), v.end(), b.begin() + at);
  return reseal(b);
}

// Four instructions (bare opcodes: the encoding checks structure only) named by two layers,
// one instruction unnamed: the names section's bytes are written out below.
Program named_program() {
  Program p;
  p.name = "n";
  p.instructions.assign(4, Instruction{1, {}, {}});
  p.instruction_names = {"fc1", "fc1", "", "b"};
  return p;
}

// clang-format off
const std::vector<uint8_t> kNamedBytes = {
    'F', 'B', 'I', 'N', 2, 0, 0, 0,                 // 0: magic, version 2, flags 0
    1, 0, 0, 0, 'n',                                // 8: name
    0, 0, 0, 0, 0, 0, 0, 0,                         // 13: footprint
    4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,             // 21: instruction, data, symbol counts
    1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, // 33: 4 x opcode 1, no operands or attrs
    1, 0, 0, 0,                                     // 49: section count
    'N', 'A', 'M', 'E', 1, 0, 32, 0, 0, 0,          // 53: tag, version 1 (57), length (59)
    2, 0, 0, 0,                                     // 63: name count
    3, 0, 0, 0, 'f', 'c', '1', 1, 0, 0, 0, 'b',     // 67: "fc1", "b" (74)
    0, 0, 0, 0, 0, 0, 0, 0,                         // 79: instructions 0 and 1: name 0
    0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0,             // 87: instruction 2 unnamed, 3: name 1
    0x39, 0x4c, 0x98, 0x50,                         // 95: FNV-1a 0x50984c39
};
// clang-format on

// `b` with `v` inserted at `at`, resealed.
std::vector<uint8_t> with_inserted(std::vector<uint8_t> b, size_t at, std::vector<uint8_t> v) {
  b.insert(b.begin() + static_cast<long>(at), v.begin(), v.end());
  return reseal(b);
}

// Awkward values of a real attribute: signed zero, the smallest subnormal, the largest
// subnormal, huge, not exact in binary, infinities, the largest finite.
const std::vector<double> kRealValues = {-0.0,
                                         5e-324,
                                         2.2250738585072009e-308,
                                         1e300,
                                         0.1,
                                         -2.5e-8,
                                         -std::numeric_limits<double>::infinity(),
                                         std::numeric_limits<double>::infinity(),
                                         std::numeric_limits<double>::max()};
const std::vector<int64_t> kIntValues = {-7, 0, std::numeric_limits<int64_t>::min(),
                                         std::numeric_limits<int64_t>::max()};

// The values the feature program gives an attribute besides its default: every value of an enum
// or a bool, the awkward values above for ints and reals.
std::vector<int64_t> attr_variants(const AttrDef& ad) {
  std::vector<int64_t> values;
  switch (ad.type) {
    case AttrType::boolean:
      return {0, 1};
    case AttrType::enumeration:
      for (size_t v = 0; v < ad.values.size(); ++v) values.push_back(static_cast<int64_t>(v));
      return values;
    case AttrType::real:
      for (double d : kRealValues) values.push_back(real_to_attr(d));
      return values;
    case AttrType::integer:  // the extremes it accepts, and its bounds
      for (int64_t v : kIntValues)
        if (ad.accepts(v)) values.push_back(v);
      if (ad.min != INT64_MIN) values.push_back(ad.min);
      if (ad.max != INT64_MAX) values.push_back(ad.max);
      return values;
  }
  return values;
}

// Every feature of the formats: each op of `ops` with each value of each attribute, every dtype,
// stride-0 dims, both segment kinds with awkward doubles, every role, names that need quoting.
Program feature_program(const OpTable& ops, const std::string& name) {
  Program p;
  p.name = name;
  p.footprint = 0x123456789;
  int n = 0;
  auto next_tensor = [&](size_t rank) {
    TensorRef t;
    t.address = 0x40 * static_cast<uint64_t>(++n);
    t.dtype = static_cast<DType>(n % kDTypeCount);
    for (size_t d = 0; d < rank; ++d) {
      t.shape.push_back(static_cast<int64_t>(d + 2));
      t.strides.push_back((n + d) % 3 == 0 ? 0 : static_cast<int64_t>(d + 5));
    }
    return t;
  };
  for (const OpDef& op : ops.ops()) {
    std::vector<int64_t> defaults;
    for (const AttrDef& a : op.attributes) defaults.push_back(a.default_value);
    std::vector<std::vector<int64_t>> variants = {defaults};
    for (size_t a = 0; a < op.attributes.size(); ++a) {
      for (int64_t v : attr_variants(op.attributes[a])) {
        variants.push_back(defaults);
        variants.back()[a] = v;
      }
    }
    for (const auto& attrs : variants) {
      Instruction in;
      in.opcode = op.opcode;
      for (const OperandDef& od : op.operands) in.operands.push_back(next_tensor(od.dims.size()));
      in.attrs = attrs;
      p.instructions.push_back(in);
    }
  }
  for (int t = 0; t < kDTypeCount; ++t) {
    DataSegment d;
    d.address = 0x1000 * static_cast<uint64_t>(t);
    d.dtype = static_cast<DType>(t);
    d.count = 3;
    for (uint32_t i = 0; i < 3 * dtype_size(d.dtype); ++i)
      d.bytes.push_back((0x7f + 0x45 * i) & 0xff);
    p.data.push_back(d);
  }
  p.data.push_back(DataSegment{});  // an empty bytes segment
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<std::pair<double, double>> bounds = {
      {-1, 1}, {0.1, 1e300}, {-0.0, 5e-324}, {-inf, inf}, {-2.5e-8, 0.30000000000000004}};
  for (size_t i = 0; i < bounds.size(); ++i) {
    DataSegment d;
    d.kind = DataSegment::Kind::random;
    d.address = 0x8000 + i;
    d.dtype = static_cast<DType>(i % kDTypeCount);
    d.count = 1000003 * i;
    d.seed = i == 0 ? std::numeric_limits<uint64_t>::max() : i;
    d.lo = bounds[i].first;
    d.hi = bounds[i].second;
    p.data.push_back(d);
  }
  const std::vector<std::string> names = {"x",
                                          "input.1",
                                          "/l1/conv/Conv_output_0",
                                          "with space",
                                          "q\"uo;te\\",
                                          std::string("\x01\xff\0z", 4),
                                          ""};
  for (size_t i = 0; i < names.size(); ++i)
    p.symbols.push_back({names[i], static_cast<SymbolRole>(i % 3), next_tensor(i % 4)});
  p.symbols.push_back({"rank8", SymbolRole::weight,
                       tensor(std::numeric_limits<uint64_t>::max(), DType::bf16,
                              {1, 2, 3, 4, 5, 6, 7, -8}, {0, -1, 2, 0, 4, 5, 6, 7})});
  return p;
}

// An op of its own, independent of the built-in set: a rank-0 operand, and an attribute of each
// of the int, bool and enum types.
const OpTable& test_ops() {
  static const OpTable table = [] {
    OpTable t;
    t.add_yaml(R"(op: scale
opcode: 0x7f
unit: vector
dims: {N: parallel}
operands:
  - {name: s, role: in, dims: []}
  - {name: x, role: in, dims: [N]}
  - {name: out, role: out, dims: [N]}
attributes:
  - {name: shift, type: int, default: 3}
  - {name: saturate, type: bool, default: true}
  - {name: mode, type: enum, values: [near, zero], default: zero}
dtypes: [[i32, i32, i32]]
work: N
cycles: cdiv(N, lanes)
)",
               "scale.yaml");
    return t;
  }();
  return table;
}

}  // namespace

TEST_CASE("encoding: the bytes of a tiny program, field by field") {
  CHECK(encode_program(tiny_program()) == kTinyBytes);
  CHECK(decode_program(kTinyBytes, "t.fbin") == tiny_program());
  CHECK(fnv1a32(reinterpret_cast<const uint8_t*>("a"), 1) == 0xe40c292cu);  // published vector
}

TEST_CASE("encoding: a version-1 file still loads") {
  // The tiny program as version 1 wrote it: the same layout, version 1, its own checksum.
  const std::vector<uint8_t> v1 = with_bytes(kTinyBytes, 4, {1});
  CHECK(std::vector<uint8_t>(v1.end() - 4, v1.end()) ==
        std::vector<uint8_t>{0xad, 0x19, 0x4a, 0x22});
  CHECK(decode_program(v1, "v1.fbin") == tiny_program());
  CHECK(encode_program(decode_program(v1, "v1.fbin")) == kTinyBytes);  // written as version 2
  // Version 1 has no sections: bytes after the symbols are an error, not a section table.
  std::vector<uint8_t> longer = v1;
  longer.insert(longer.end() - 4, {1, 0, 0, 0});
  CHECK(config_error_of([&] { decode_program(reseal(longer), "v1.fbin"); }) ==
        "v1.fbin: byte 181: 4 unexpected bytes before the checksum");
}

TEST_CASE("encoding: binary round trip of every feature") {
  for (const OpTable* ops : {&OpTable::builtin(), &test_ops()}) {
    const Program p = feature_program(*ops, "features");
    const std::vector<uint8_t> bytes = encode_program(p);
    const Program back = decode_program(bytes, "f.fbin");
    CHECK(back == p);
    CHECK(std::signbit(back.data.at(p.data.size() - 3).lo));  // -0.0 kept, not just == 0
    CHECK(encode_program(back) == bytes);
  }
}

// The generator above reaches every value that matters of every attribute of every built-in op,
// whatever ops isa/ops/ holds: checked here against the op table, not against the generator.
TEST_CASE("encoding: the feature program covers every attribute value of every built-in op") {
  const OpTable& ops = OpTable::builtin();
  const Program p = feature_program(ops, "features");
  std::map<std::pair<uint16_t, size_t>, std::set<int64_t>> seen;
  for (const Instruction& in : p.instructions)
    for (size_t a = 0; a < in.attrs.size(); ++a) seen[{in.opcode, a}].insert(in.attrs[a]);
  int real_attrs = 0;
  for (const OpDef& op : ops.ops())
    for (size_t a = 0; a < op.attributes.size(); ++a) {
      const AttrDef& ad = op.attributes[a];
      INFO(op.name, ".", ad.name);
      const std::set<int64_t>& s = seen[{op.opcode, a}];
      std::set<int64_t> want;
      if (ad.type == AttrType::boolean) want = {0, 1};
      if (ad.type == AttrType::enumeration)
        for (size_t v = 0; v < ad.values.size(); ++v) want.insert(static_cast<int64_t>(v));
      if (ad.type == AttrType::integer) {  // the extremes within its range, and its bounds
        for (int64_t v : {int64_t{-7}, int64_t{0}, std::numeric_limits<int64_t>::min(),
                          std::numeric_limits<int64_t>::max(), ad.min, ad.max, ad.default_value})
          if (ad.accepts(v)) want.insert(v);
        for (int64_t v : s) CHECK(ad.accepts(v));
      }
      if (ad.type == AttrType::real) {
        ++real_attrs;
        // -0.0 and +0.0 are different bit patterns; both must survive.
        for (double d : {-0.0, 5e-324, 1e300, 0.1, attr_to_real(ad.default_value)})
          want.insert(real_to_attr(d));
        for (int64_t bits : s) CHECK_FALSE(std::isnan(attr_to_real(bits)));  // NaN is not valid
      }
      CHECK(s.size() >= want.size());
      for (int64_t v : want) CHECK(s.count(v) == 1);
    }
  CHECK(real_attrs >= 1);  // activation's alpha at least
}

TEST_CASE("encoding: instruction names, field by field") {
  CHECK(encode_program(named_program()) == kNamedBytes);
  CHECK(decode_program(kNamedBytes, "n.fbin") == named_program());
  CHECK(decode_program(kNamedBytes, "n.fbin").instruction_names ==
        std::vector<std::string>{"fc1", "fc1", "", "b"});
  // All unnamed is not the same as no names: the section is kept, with no names in it.
  Program unnamed = named_program();
  unnamed.instruction_names.assign(4, "");
  const std::vector<uint8_t> bytes = encode_program(unnamed);
  CHECK(bytes.size() == 53 + 10 + 4 + 16 + 4);
  CHECK(decode_program(bytes, "u.fbin") == unnamed);
  // No names: no section at all.
  Program none = named_program();
  none.instruction_names.clear();
  CHECK(encode_program(none).size() == 49 + 4);
  CHECK(decode_program(encode_program(none), "x.fbin") == none);
}

TEST_CASE("encoding: sections of unknown tags are skipped") {
  // "XTRA" version 9 with 3 bytes, before and after the names.
  const std::vector<uint8_t> xtra = {'X', 'T', 'R', 'A', 9, 0, 3, 0, 0, 0, 7, 7, 7};
  std::vector<uint8_t> before = with_inserted(with_bytes(kNamedBytes, 49, {2}), 53, xtra);
  CHECK(decode_program(before, "n.fbin") == named_program());
  std::vector<uint8_t> after = with_inserted(with_bytes(kNamedBytes, 49, {2}), 95, xtra);
  CHECK(decode_program(after, "n.fbin") == named_program());
  // Alone, it leaves the program without names; re-encoding drops it.
  std::vector<uint8_t> alone(kTinyBytes.begin(), kTinyBytes.end() - 4);
  alone.insert(alone.end(), {1, 0, 0, 0});
  alone.insert(alone.end(), xtra.begin(), xtra.end());
  alone.insert(alone.end(), {0, 0, 0, 0});
  CHECK(decode_program(reseal(alone), "t.fbin") == tiny_program());
  // A tag that differs from NAME in its last byte is another tag.
  CHECK(decode_program(with_inserted(with_bytes(kNamedBytes, 49, {2}), 53,
                                     {'N', 'A', 'M', 'F', 1, 0, 0, 0, 0, 0}),
                       "n.fbin") == named_program());
}

TEST_CASE("encoding: decode rejects malformed sections with exact messages") {
  auto err = [](const std::vector<uint8_t>& b) {
    return config_error_of([&] { decode_program(b, "n.fbin"); });
  };
  const std::vector<uint8_t>& n = kNamedBytes;
  std::vector<uint8_t> cut(n.begin(), n.end() - 4);  // resealed: the last index missing
  CHECK(err(reseal(cut)) ==
        "n.fbin: byte 63: truncated: section 0 payload needs 32 bytes, 28 remain");
  CHECK(err(with_bytes(reseal(cut), 59, {28})) ==
        "n.fbin: byte 91: truncated: instruction 3 name index needs 4 bytes, 0 remain");
  CHECK(err(with_inserted(with_bytes(n, 49, {2}), 95, {'X', 'T', 'R', 'A', 1})) ==
        "n.fbin: byte 99: truncated: section 1 version needs 2 bytes, 1 remain");
  CHECK(err(with_bytes(n, 49, {0})) ==
        "n.fbin: byte 49: section count 0 (a file without sections ends after its symbols)");
  CHECK(err(with_bytes(n, 49, {5})) ==
        "n.fbin: byte 49: section count 5 is more than the remaining 42 bytes can hold");
  CHECK(err(with_bytes(n, 57, {2})) ==
        "n.fbin: byte 57: section 0: NAME section version 2 is not supported (this fracsim reads "
        "version 1)");
  CHECK(err(with_bytes(n, 63, {9})) ==
        "n.fbin: byte 63: name count 9 is more than the remaining 28 bytes can hold");
  CHECK(err(with_bytes(n, 67, {0})) ==
        "n.fbin: byte 67: section 0: name 0 is empty (an unnamed instruction has the index "
        "0xffffffff)");
  CHECK(err(with_bytes(n, 91, {2})) ==
        "n.fbin: byte 91: instruction 3 has name index 2, past the 2 names");
  CHECK(err(with_bytes(n, 79, {1})) ==
        "n.fbin: byte 79: instruction 0 uses name 1 before name 0 (names are listed in order of "
        "first use)");
  CHECK(err(with_bytes(n, 91, {0})) ==
        "n.fbin: byte 95: section 0: name 1 'b' names no instruction");
  CHECK(err(with_bytes(n, 59, {31})) ==
        "n.fbin: byte 91: truncated: instruction 3 name index needs 4 bytes, 3 remain");
  CHECK(err(with_inserted(n, 95, {0, 0})) ==
        "n.fbin: byte 95: 2 unexpected bytes before the checksum");
  CHECK(err(with_inserted(with_bytes(n, 59, {33}), 95, {0})) ==
        "n.fbin: byte 95: section 0: 1 unexpected bytes at the end of the NAME section");
  Program dup = named_program();
  dup.instruction_names = {"a", "a", "", "b"};  // "a" at 71, "b" at 76
  CHECK(err(with_bytes(encode_program(dup), 76, {'a'})) ==
        "n.fbin: byte 72: section 0: name 1 'a' repeats name 0");
  std::vector<uint8_t> twice(n.begin() + 53, n.end() - 4);  // the NAME section again
  CHECK(err(with_inserted(with_bytes(n, 49, {2}), 95, twice)) ==
        "n.fbin: byte 95: section 1: a second NAME section");
  Program empty = named_program();
  empty.instructions.clear();
  empty.instruction_names.clear();
  std::vector<uint8_t> e = encode_program(empty);
  e.insert(e.end() - 4, {1, 0, 0, 0, 'N', 'A', 'M', 'E', 1, 0, 4, 0, 0, 0, 0, 0, 0, 0});
  CHECK(err(reseal(e)) == "n.fbin: byte 37: section 0: a NAME section without instructions");
}

TEST_CASE("encoding: every corruption of the names section fails cleanly or round-trips") {
  int accepted = 0, rejected = 0;
  for (size_t at = 49; at + 4 < kNamedBytes.size(); ++at)
    for (uint8_t v : {0x00, 0x01, 0x02, 0x62, 0xff}) {
      std::vector<uint8_t> b = kNamedBytes;
      if (b[at] == v) continue;
      b[at] = v;
      b = reseal(b);
      Program p;
      try {
        p = decode_program(b, "n.fbin");
      } catch (const ConfigError&) {
        ++rejected;
        continue;
      }
      ++accepted;
      const std::vector<uint8_t> again = encode_program(p);
      // A changed tag makes the section unknown: skipped, and not written back.
      if (at >= 53 && at < 57)
        CHECK(p.instruction_names.empty());
      else
        CHECK(again == b);
    }
  // Only name bytes, and tag bytes (an unknown section), take other values.
  CHECK(accepted == 40);
  CHECK(rejected == 153);
}

TEST_CASE("encoding: instruction names must match the instructions") {
  Program p = named_program();
  p.instruction_names.pop_back();
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 'n': instruction names: 3 names for 4 instructions");
  CHECK(config_error_of([&] { validate_program(p, OpTable::builtin(), "n.fasm"); }) ==
        "n.fasm: 3 instruction names for 4 instructions");
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 'n': instruction names: 3 names for 4 instructions");
  p = named_program();
  CHECK(instruction_name(p, 0) == "fc1");
  CHECK(instruction_name(p, 2) == "#2");
  CHECK(instruction_name(p, 3) == "b");
  p.instruction_names.clear();
  CHECK(instruction_name(p, 0) == "#0");
  CHECK(instruction_name(p, 3) == "#3");
}

TEST_CASE("encoding: decode rejects malformed files with exact messages") {
  auto err = [](const std::vector<uint8_t>& b) {
    return config_error_of([&] { decode_program(b, "t.fbin"); });
  };
  const std::vector<uint8_t>& t = kTinyBytes;
  CHECK(err({}) == "t.fbin: not a fracsim binary (bad magic)");
  CHECK(err({'F', 'B', 'I', 'X', 1, 0, 0, 0}) == "t.fbin: not a fracsim binary (bad magic)");
  CHECK(err({'F', 'B', 'I', 'N'}) ==
        "t.fbin: byte 4: truncated: format version needs 2 bytes, 0 remain");
  CHECK(err(with_bytes(t, 4, {7})) ==
        "t.fbin: format version 7 is not supported (this fracsim reads versions 1 to 2)");
  CHECK(err(with_bytes(t, 4, {0})) ==
        "t.fbin: format version 0 is not supported (this fracsim reads versions 1 to 2)");
  CHECK(err(with_bytes(t, 6, {1})) ==
        "t.fbin: byte 6: unsupported flags 0x0001 (version 2 defines none)");
  CHECK(err(with_bytes(with_bytes(t, 4, {1}), 6, {1})) ==
        "t.fbin: byte 6: unsupported flags 0x0001 (version 1 defines none)");
  CHECK(err({'F', 'B', 'I', 'N', 1, 0, 0, 0}) ==
        "t.fbin: byte 8: truncated: checksum needs 4 bytes, 0 remain");
  std::vector<uint8_t> flipped = t;
  flipped[13] ^= 1;
  CHECK(err(flipped) ==
        "t.fbin: byte 181: checksum mismatch (stored 0x7579c8d0, computed "
        "0xe95921e1): the file is corrupted or truncated");
  std::vector<uint8_t> cut(t.begin(), t.end() - 10);  // ends 6 bytes into the symbol's extent
  CHECK(err(reseal(cut)) == "t.fbin: byte 165: truncated: symbol 0 extent needs 8 bytes, 6 remain");
  CHECK(err(with_bytes(t, 45, {12})) ==
        "t.fbin: byte 45: invalid dtype code 12 in instruction 0 operand 0");
  CHECK(err(with_bytes(t, 46, {9})) ==
        "t.fbin: byte 46: instruction 0 operand 0 has rank 9 (at most 8)");
  CHECK(err(with_bytes(t, 87, {2})) == "t.fbin: byte 87: invalid kind code 2 in data segment 0");
  CHECK(err(with_bytes(t, 96, {0xff})) ==
        "t.fbin: byte 96: invalid dtype code 255 in data segment 0");
  CHECK(err(with_bytes(t, 154, {3})) == "t.fbin: byte 154: invalid role code 3 in symbol 0");
  // Absurd counts and lengths fail on the bound, before any allocation.
  CHECK(err(with_bytes(t, 21, {0xff, 0xff, 0xff, 0xff})) ==
        "t.fbin: byte 21: instruction count 4294967295 is more than the remaining 156 bytes can "
        "hold");
  CHECK(err(with_bytes(t, 29, {0x0b})) ==
        "t.fbin: byte 29: symbol count 11 is more than the remaining 148 bytes can hold");
  CHECK(err(with_bytes(t, 8, {0xff, 0xff, 0xff, 0x7f})) ==
        "t.fbin: byte 12: truncated: program name needs 2147483647 bytes, 169 remain");
  CHECK(err(with_bytes(t, 97, {0, 0, 0, 0, 0, 0, 0, 0x10})) ==
        "t.fbin: byte 97: truncated: data segment 0 holds 1152921504606846976 elements of i16, "
        "more than the remaining 76 bytes");
  std::vector<uint8_t> longer = t;
  longer.insert(longer.end() - 4, {0, 0});
  // After the symbols of a version-2 file comes the section table.
  CHECK(err(reseal(longer)) ==
        "t.fbin: byte 181: truncated: section count needs 4 bytes, 2 remain");
}

// Any file decode accepts re-encodes to the same bytes; anything else is a ConfigError (never a
// crash, another exception type or a huge allocation).
TEST_CASE("encoding: every single-byte corruption and truncation fails cleanly or round-trips") {
  int accepted = 0, rejected = 0;
  for (size_t at = 0; at + 4 < kTinyBytes.size(); ++at)
    for (uint8_t v : {0x00, 0x01, 0x09, 0x80, 0xff}) {
      std::vector<uint8_t> b = kTinyBytes;
      if (b[at] == v) continue;
      b[at] = v;
      b = reseal(b);
      Program p;
      try {
        p = decode_program(b, "t.fbin");
      } catch (const ConfigError&) {
        ++rejected;
        continue;
      }
      ++accepted;
      // A version-1 file (version byte 0x01) is written back as version 2.
      CHECK(encode_program(p) == (at == 4 && v == 1 ? kTinyBytes : b));
    }
  // Addresses, extents, attributes, payload bytes and doubles take any value; magic, version
  // (but 1), flags, counts, lengths, codes and ranks do not. Exact, so that a looser decoder
  // shows up. (0x09 in the tiny program's three dtype bytes is u64: accepted.)
  CHECK(accepted == 568);
  CHECK(rejected == 187);
  for (size_t n = 0; n < kTinyBytes.size(); ++n) {
    std::vector<uint8_t> prefix(kTinyBytes.begin(), kTinyBytes.begin() + static_cast<long>(n));
    CHECK_THROWS_AS(decode_program(prefix, "t.fbin"), ConfigError);
    if (n >= 12) CHECK_THROWS_AS(decode_program(reseal(prefix), "t.fbin"), ConfigError);
  }
}

TEST_CASE("encoding: encode rejects what the format cannot hold") {
  Program p = tiny_program();
  p.instructions[0].operands[0] = tensor(0, DType::f32, Shape(9, 1), Shape(9, 1));
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 't': instruction 0: operand 0: rank 9 exceeds the format's maximum of 8");
  p = tiny_program();
  p.symbols[0].tensor.strides.push_back(1);
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 't': symbol y: 1 extents but 2 strides");
  p = tiny_program();
  p.data[0].bytes.push_back(0);
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 't': data segment at 0x20: 3 bytes for 1 elements of i16");
  p = tiny_program();
  p.data[0].hi = 1;
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 't': data segment at 0x20: a bytes segment cannot carry seed, lo or hi");
  p = tiny_program();
  p.data[1].bytes = {1};
  CHECK(config_error_of([&] { encode_program(p); }) ==
        "program 't': data segment at 0x30: a random segment cannot carry bytes");
}

TEST_CASE("encoding: a view with an empty extent is empty whatever the product of the others") {
  // 2^40 x 2^40 does not fit int64_t: the element count must not multiply them (a fuzzer's
  // finding, signed overflow under UBSan, in the validation every decoded file goes through).
  const Program p = assemble(
      ".program e\n"
      ".footprint 64\n"
      ".symbol output y f32@0x0[1099511627776,1099511627776,0:1,1,1]\n"
      "fill out=f32@0x0[1,1,1,1,1,16:16,16,16,16,16,1] value=0\n",
      "e.fasm", OpTable::builtin());
  REQUIRE(p.symbols.size() == 1);
  CHECK(p.symbols[0].tensor.elements() == 0);
  CHECK(p.symbols[0].tensor.byte_span() == std::pair<uint64_t, uint64_t>{0, 0});
  CHECK(decode_program(encode_program(p), "e.fbin").symbols[0].tensor == p.symbols[0].tensor);
}

TEST_CASE("encoding: files") {
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("fracsim_test_encoding_{}.fbin", std::random_device{}()))
                               .string();
  write_file_bytes(path, kTinyBytes);
  CHECK(read_file_bytes(path) == kTinyBytes);
  std::remove(path.c_str());
  CHECK(config_error_of([&] { read_file_bytes(path); }) == path + ": cannot open file");
  CHECK(config_error_of([] { read_file_bytes("/"); }) == "/: cannot open file");
  CHECK(config_error_of([] { write_file_bytes("/nonexistent-dir/x.fbin", {}); }) ==
        "/nonexistent-dir/x.fbin: cannot open file");
}

TEST_CASE("assembly: exact text of a program") {
  Program p = tiny_program();
  p.name = "tiny net";
  const OpDef& elt = OpTable::builtin().get("eltwise");
  const OpDef& act = OpTable::builtin().get("activation");
  const Shape s6 = {1, 1, 1, 1, 2, 3};
  p.instructions = {{elt.opcode,
                     {tensor(0x10, DType::i8, s6, {0, 0, 0, 0, 0, 1}),
                      tensor(0x10, DType::i8, s6, {0, 0, 0, 0, 3, 1}),
                      tensor(0x0, DType::i8, s6, {0, 0, 0, 0, 3, 1})},
                     {4}},
                    {act.opcode,
                     {tensor(0x0, DType::i8, s6, {0, 0, 0, 0, 3, 1}),
                      tensor(0x0, DType::i8, s6, {0, 0, 0, 0, 3, 1})},
                     {1, real_to_attr(0.1), 3}},
                    {act.opcode,
                     {tensor(0x0, DType::i8, s6, {0, 0, 0, 0, 3, 1}),
                      tensor(0x0, DType::i8, s6, {0, 0, 0, 0, 3, 1})},
                     {0, real_to_attr(-0.0), 31}}};
  const std::string text =
      "; fracsim assembly, format 1\n"
      ".program \"tiny net\"\n"
      ".footprint 64\n"
      ".symbol output y i8@0x10[3:1]\n"
      ".data bytes 0x20 i16 1 3412\n"
      ".data random 0x30 f32 2 seed=7 lo=-1 hi=2.5\n"
      "eltwise a=i8@0x10[1,1,1,1,2,3:0,0,0,0,0,1] b=i8@0x10[1,1,1,1,2,3:0,0,0,0,3,1] "
      "out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] fn=max\n"
      "activation in=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] "
      "fn=leaky_relu alpha=0.1 frac_bits=3\n"
      "activation in=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] "
      "fn=relu alpha=-0 frac_bits=31\n";
  CHECK(disassemble(p, OpTable::builtin()) == text);
  CHECK(assemble(text, "t.fasm", OpTable::builtin()) == p);
  // Comments, blank lines, CRLF, any operand order, tabs and any spelling of a real read the same.
  const std::string loose =
      "; hand written\r\n\r\n.footprint 64 ; bytes\r\n.program \"tiny net\"\r\n"
      ".symbol output y i8@0x10[3:1]\n.data bytes 0x20 i16 1 3412\n"
      ".data random 0x30 f32 2 seed=7 lo=-1.0 hi=25e-1\n"
      "  eltwise\tfn=max out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] b=i8@0x10[1,1,1,1,2,3:0,0,0,0,3,1] "
      "a=i8@0x10[1,1,1,1,2,3:0,0,0,0,0,1];done\n"
      "activation frac_bits=3 alpha=1.0e-1 fn=leaky_relu out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] "
      "in=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1]\r\n"
      "activation in=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] out=i8@0x0[1,1,1,1,2,3:0,0,0,0,3,1] "
      "fn=relu alpha=-0.000e7 frac_bits=31\n";
  CHECK(assemble(loose, "t.fasm", OpTable::builtin()) == p);
  // -0 stays -0 (an attribute compares by its bits, so == above already tells it from +0).
  CHECK(std::signbit(
      attr_to_real(assemble(loose, "t.fasm", OpTable::builtin()).instructions[2].attrs[1])));
}

TEST_CASE("assembly: text round trip is byte-identical for every feature") {
  for (const OpTable* ops : {&OpTable::builtin(), &test_ops()}) {
    for (const std::string& name : {std::string("features"), std::string("a b\"\\\t\x7f")}) {
      const Program p = feature_program(*ops, name);
      const std::string text = disassemble(p, *ops);
      const Program back = assemble(text, "f.fasm", *ops);
      CHECK(encode_program(back) == encode_program(p));
      CHECK(back == p);
      CHECK(disassemble(back, *ops) == text);
      // And with names: runs, returns to unnamed, names that need quoting.
      Program named = p;
      const std::vector<std::string> layers = {
          "", "conv 1", "conv 1", "#7", "q\"uo;te\\", std::string("\x01\xff\0z", 4), "", "fc"};
      for (size_t i = 0; i < named.instructions.size(); ++i)
        named.instruction_names.push_back(layers[i / 3 % layers.size()]);
      const Program named_back = assemble(disassemble(named, *ops), "f.fasm", *ops);
      CHECK(named_back == named);
      CHECK(encode_program(named_back) == encode_program(named));
      CHECK(decode_program(encode_program(named), "f.fbin") == named);
    }
  }
  // Reals print as the shortest decimal that reads back to the same bits.
  const std::string builtin =
      disassemble(feature_program(OpTable::builtin(), "b"), OpTable::builtin());
  for (const char* alpha : {" alpha=-0 ", " alpha=5e-324 ", " alpha=2.225073858507201e-308 ",
                            " alpha=1e+300 ", " alpha=0.1 ", " alpha=-2.5e-08 ", " alpha=-inf ",
                            " alpha=inf ", " alpha=1.7976931348623157e+308 ", " alpha=0.01 "}) {
    INFO(std::string(alpha));
    CHECK(builtin.find(std::string(" fn=relu") + alpha + "frac_bits=0\n") != std::string::npos);
  }
  CHECK(builtin.find(" fn=gelu alpha=0.01 frac_bits=0\n") != std::string::npos);
  CHECK(builtin.find(" fn=relu alpha=0.01 frac_bits=31\n") != std::string::npos);
  const std::string text = disassemble(feature_program(test_ops(), "s"), test_ops());
  CHECK(text.find(" s=f16@0x40[:] x=") != std::string::npos);  // rank 0
  CHECK(text.find(" shift=-9223372036854775808 saturate=1 mode=zero\n") != std::string::npos);
  CHECK(text.find(".symbol output \"\\x01\\xff\\x00z\" ") != std::string::npos);
  CHECK(text.find(" lo=-0 hi=5e-324\n") != std::string::npos);
  CHECK(text.find(" lo=-inf hi=inf\n") != std::string::npos);
  CHECK(text.find(".data bytes 0x0 f32 0\n") != std::string::npos);  // empty: no hex token
}

TEST_CASE("assembly: instruction names") {
  const OpDef& act = OpTable::builtin().get("activation");
  const TensorRef v = tensor(0, DType::f32, {1, 1, 1, 1, 1, 4}, {0, 0, 0, 0, 0, 1});
  const std::string line =
      "activation in=f32@0x0[1,1,1,1,1,4:0,0,0,0,0,1] out=f32@0x0[1,1,1,1,1,4:0,0,0,0,0,1] "
      "fn=relu alpha=0 frac_bits=0\n";
  Program p;
  p.name = "n";
  p.footprint = 16;
  p.instructions.assign(5, Instruction{act.opcode, {v, v}, {0, real_to_attr(0.0), 0}});
  const std::string head = "; fracsim assembly, format 1\n.program n\n.footprint 16\n";
  // A name that needs quoting, a return to unnamed, a name used again.
  p.instruction_names = {"relu 1", "relu 1", "", "fc", "relu 1"};
  const std::string text = head + ".layer \"relu 1\"\n" + line + line + ".layer \"\"\n" + line +
                           ".layer fc\n" + line + ".layer \"relu 1\"\n" + line;
  CHECK(disassemble(p, OpTable::builtin()) == text);
  CHECK(assemble(text, "n.fasm", OpTable::builtin()) == p);
  // Unnamed first: .layer "" before it, so that the names are kept.
  p.instruction_names = {"", "", "x", "x", "x"};
  const std::string unnamed_first =
      head + ".layer \"\"\n" + line + line + ".layer x\n" + line + line + line;
  CHECK(disassemble(p, OpTable::builtin()) == unnamed_first);
  CHECK(assemble(unnamed_first, "n.fasm", OpTable::builtin()) == p);
  // Instructions before the first .layer are unnamed; a .layer before an instruction of the same
  // name changes nothing; a .layer after the last instruction names none.
  const std::string loose = head + line + line + ".layer x\n.layer x\n" + line + line +
                            ".layer x\n" + line + ".layer y\n";
  CHECK(assemble(loose, "n.fasm", OpTable::builtin()) == p);
  // No .layer: no names; instructions are named by their index.
  const Program bare = assemble(head + line + line, "n.fasm", OpTable::builtin());
  CHECK(bare.instruction_names.empty());
  CHECK(instruction_name(bare, 0) == "#0");
  CHECK(instruction_name(bare, 1) == "#1");
  CHECK(disassemble(bare, OpTable::builtin()) == head + line + line);
  auto err = [&](const std::string& body) {
    return config_error_of([&] { assemble(head + body, "n.fasm", OpTable::builtin()); });
  };
  CHECK(err(".layer\n") == "n.fasm:4: .layer: expected NAME, got 0 arguments");
  CHECK(err(".layer a b\n") == "n.fasm:4: .layer: expected NAME, got 2 arguments");
  CHECK(err(".layer \"a\" \"b\"\n") == "n.fasm:4: .layer: unexpected quoted string \"b\"");
}

TEST_CASE("assembly: disassemble rejects what the text cannot carry back") {
  Program p = tiny_program();
  p.instructions[0].opcode = 0x7777;  // no op has it
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': instruction 0: unknown opcode 0x7777");
  const OpDef& mm = OpTable::builtin().get("matmul");
  const TensorRef m = tensor(0, DType::f32, {1, 2, 2}, {0, 2, 1});
  p.instructions = {{mm.opcode, {m, m, m}, {2}}};
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': instruction 0 (matmul): attribute accumulate has an invalid value 2");
  p.instructions = {{mm.opcode, {m, m}, {0}}};
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': instruction 0 (matmul): 2 operands and 1 attributes, but the op declares 3 "
        "and 1");
  const TensorRef m2 = tensor(0, DType::f32, {2, 2}, {2, 1});
  p.instructions = {{mm.opcode, {m2, m2, m2}, {0}}};
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': instruction 0 (matmul): operand a has rank 2, but the op declares 3 dims");
  // A NaN real would not read back as the same bits (and means nothing as a slope).
  const OpDef& act = OpTable::builtin().get("activation");
  const TensorRef v = tensor(0, DType::f32, {1, 1, 1, 1, 1, 4}, {0, 0, 0, 0, 0, 1});
  p.instructions = {{act.opcode, {v, v}, {1, real_to_attr(std::nan("")), 0}}};
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': instruction 0 (activation): attribute alpha has an invalid value " +
            std::to_string(real_to_attr(std::nan(""))));
  CHECK(real_to_attr(std::nan("")) == 0x7ff8000000000000);
  p.instructions.clear();
  p.data[1].hi = std::nan("");
  CHECK(config_error_of([&] { disassemble(p, OpTable::builtin()); }) ==
        "program 't': data segment at 0x30: lo or hi is NaN");
}

TEST_CASE("assembly: every error names the line and token") {
  const std::string t22 = "f32@0x0[1,1,1,1,2,2:0,0,0,0,2,1]";  // rank 6, as eltwise's operands
  const std::string elt = "eltwise a=" + t22 + " b=" + t22 + " out=" + t22;
  const std::string m22 = "f32@0x0[1,2,2:0,2,1]";  // rank 3, as matmul's
  const std::string act = "activation in=" + t22 + " out=" + t22 + " fn=leaky_relu frac_bits=0";
  auto err = [](const std::string& body, const OpTable& ops = OpTable::builtin()) {
    return config_error_of([&] { assemble(".program p\n.footprint 64\n" + body, "t.fasm", ops); });
  };
  CHECK(err(elt + " fn=add") == "(no ConfigError)");
  CHECK(err(elt + " fn=min") == "(no ConfigError)");
  CHECK(err(act + " alpha=0.5") == "(no ConfigError)");
  CHECK(err(act + " alpha=nan") ==
        "t.fasm:3: activation: attribute alpha: expected a real number, got 'nan'");
  CHECK(err(act + " alpha=0x1p-3") ==
        "t.fasm:3: activation: attribute alpha: expected a real number, got '0x1p-3'");
  CHECK(err(act + " alpha=1e400") ==
        "t.fasm:3: activation: attribute alpha: expected a real number, got '1e400'");
  CHECK(err(act + " alpha=") ==
        "t.fasm:3: activation: attribute alpha: expected a real number, got ''");
  CHECK(err("activation in=" + t22 + " out=" + t22 + " fn=relu alpha=1 frac_bits=0.5") ==
        "t.fasm:3: activation: attribute frac_bits: expected an integer, got '0.5'");
  CHECK(err("matmull a=" + t22) == "t.fasm:3: unknown op 'matmull'");
  CHECK(err(elt + " fn=add c=" + t22) == "t.fasm:3: eltwise: unknown operand or attribute 'c'");
  CHECK(err("eltwise a=" + t22 + " out=" + t22 + " fn=add") ==
        "t.fasm:3: eltwise: missing operand 'b'");
  CHECK(err(elt) == "t.fasm:3: eltwise: missing attribute 'fn' (assembly does not apply defaults)");
  CHECK(err(elt + " a=" + t22 + " fn=add") == "t.fasm:3: eltwise: operand 'a' is given twice");
  CHECK(err(elt + " fn=add fn=mul") == "t.fasm:3: eltwise: attribute 'fn' is given twice");
  CHECK(err(elt + " fn=exp") ==
        "t.fasm:3: eltwise: attribute fn: 'exp' is not one of add, sub, mul, div, max, min, pow, "
        "mod, fmod");
  CHECK(err(elt + " fn") == "t.fasm:3: eltwise: expected name=value, got 'fn'");
  CHECK(err(elt + " \"fn\"") == "t.fasm:3: eltwise: unexpected quoted string \"fn\"");
  const std::string bad_tensor = "t.fasm:3: eltwise: operand a: bad tensor ";
  auto with_a = [&](const std::string& a) { return err("eltwise a=" + a + " b=" + t22); };
  CHECK(with_a("f32@0x0[2,2]") ==
        bad_tensor + "'f32@0x0[2,2]': expected one ':' between extents and strides");
  CHECK(with_a("f32@0x0[2,2:2,1") ==
        bad_tensor + "'f32@0x0[2,2:2,1': expected [EXTENTS:STRIDES] after the address");
  CHECK(with_a("f32[2:1]") == bad_tensor + "'f32[2:1]': expected DTYPE@ADDRESS[EXTENTS:STRIDES]");
  CHECK(with_a("f128@0x0[2:1]") == bad_tensor + "'f128@0x0[2:1]': unknown dtype 'f128'");
  CHECK(with_a("f32@40[2:1]") ==
        bad_tensor + "'f32@40[2:1]': bad address '40' (expected hex, as 0x40)");
  CHECK(with_a("f32@0x0[2,x:2,1]") == bad_tensor + "'f32@0x0[2,x:2,1]': bad extent 'x'");
  CHECK(with_a("f32@0x0[2,2:2,]") == bad_tensor + "'f32@0x0[2,2:2,]': bad stride ''");
  CHECK(with_a("f32@0x0[2,2:1]") == bad_tensor + "'f32@0x0[2,2:1]': 2 extents but 1 strides");
  CHECK(with_a("f32@0x0[1,1,1,1,1,1,1,1,1:1,1,1,1,1,1,1,1,1]") ==
        bad_tensor +
            "'f32@0x0[1,1,1,1,1,1,1,1,1:1,1,1,1,1,1,1,1,1]': rank 9 exceeds the maximum of 8");
  CHECK(with_a("f32@0x0[4:1]") ==
        "t.fasm:3: eltwise: operand a: rank 1 in 'f32@0x0[4:1]', but the op declares 6 dims "
        "(D0,D1,D2,D3,D4,D5)");
  CHECK(err("matmul a=f32@0x0[2,2:2,1] b=" + m22 + " out=" + m22 + " accumulate=0") ==
        "t.fasm:3: matmul: operand a: rank 2 in 'f32@0x0[2,2:2,1]', but the op declares 3 dims "
        "(B,M,K)");
  CHECK(err("matmul a=" + m22 + " b=" + m22 + " out=" + m22 + " accumulate=0") ==
        "(no ConfigError)");
  CHECK(err("matmul a=" + m22 + " b=" + m22 + " out=" + m22 + " accumulate=true") ==
        "t.fasm:3: matmul: attribute accumulate: expected 0 or 1, got 'true'");
  CHECK(err("scale s=i32@0x0[:] x=i32@0x0[2:1] out=i32@0x0[2:1] shift=1.5 saturate=0 mode=near",
            test_ops()) == "t.fasm:3: scale: attribute shift: expected an integer, got '1.5'");
  CHECK(err(".foo 1") == "t.fasm:3: unknown directive '.foo'");
  CHECK(err(".program q") == "t.fasm:3: .program: given twice (first on line 1)");
  CHECK(err(".footprint") == "t.fasm:3: .footprint: expected BYTES, got 0 arguments");
  CHECK(config_error_of([] { assemble(".program p\n", "t.fasm", OpTable::builtin()); }) ==
        "t.fasm: missing .footprint directive");
  CHECK(config_error_of([] { assemble(".footprint 0x40", "t.fasm", OpTable::builtin()); }) ==
        "t.fasm:1: .footprint: expected a decimal byte count, got '0x40'");
  CHECK(err(".program \"abc") == "t.fasm:3: unterminated quoted name \"abc");
  CHECK(err(".program \"a\\n\"") ==
        "t.fasm:3: bad escape in quoted name \"a\" (use \\\", \\\\ or \\xHH)");
  CHECK(err(".symbol in x " + t22) ==
        "t.fasm:3: .symbol: unknown role 'in' (expected input, weight or output)");
  CHECK(err(".symbol input x") == "t.fasm:3: .symbol: expected ROLE NAME TENSOR, got 2 arguments");
  CHECK(err(".symbol input x f32@0x0[2:]") ==
        "t.fasm:3: .symbol: bad tensor 'f32@0x0[2:]': 1 extents but 0 strides");
  CHECK(err(".data rand 0x0 f32 1") ==
        "t.fasm:3: .data: unknown kind 'rand' (expected bytes or random)");
  CHECK(err(".data bytes 0x0 i16 2 0102") ==
        "t.fasm:3: .data: 2 elements of i16 need 8 hex digits, got 4");
  CHECK(err(".data bytes 0x0 i8 1 zz") == "t.fasm:3: .data: bad hex byte 'zz'");
  CHECK(err(".data bytes 0x0 f128 1 00") == "t.fasm:3: .data: unknown dtype 'f128'");
  CHECK(err(".data bytes 0 i8 1 00") == "t.fasm:3: .data: bad address '0' (expected hex, as 0x40)");
  CHECK(err(".data random 0x0 f32 1 seed=1 lo=nan hi=1") ==
        "t.fasm:3: .data: bad lo 'nan' (expected a number)");
  CHECK(err(".data random 0x0 f32 1 seed=1 hi=1 lo=0") ==
        "t.fasm:3: .data: expected lo=... in 'random ADDRESS DTYPE COUNT seed=S lo=L hi=H', got "
        "'hi=1'");
  CHECK(err(".data random 0x0 f32 1 seed=-1 lo=0 hi=1") == "t.fasm:3: .data: bad seed '-1'");
}

TEST_CASE(
    "a program encoded before its op gained an attribute decodes with that attribute's default") {
  // layernorm gained `divide` (default false, its earlier semantics) after `epsilon`: a program
  // that wrote one attribute for it still loads, as multiplying by the rsqrt.
  const OpTable& ops = OpTable::builtin();
  const OpDef& ln = ops.get("layernorm");
  REQUIRE(ln.attributes.size() == 2);
  CHECK(ln.attributes[1].name == "divide");
  Program p;
  p.name = "ln";
  p.footprint = 0x100;
  const TensorRef rows = tensor(0x0, DType::f32, {2, 4}, {4, 1});
  const TensorRef vec = tensor(0x40, DType::f32, {4}, {1});
  const TensorRef out = tensor(0x80, DType::f32, {2, 4}, {4, 1});
  const int64_t eps = real_to_attr(1e-5);
  p.instructions.push_back({ln.opcode, {rows, vec, vec, out}, {eps}});
  Program decoded = decode_program(encode_program(p), "old.fbin");
  CHECK(config_error_of([&] { validate_program(decoded, ops, "old.fbin"); }) ==
        "old.fbin: instruction 0: layernorm: expected 2 attributes, got 1");
  default_appended_attributes(decoded, ops);
  CHECK(decoded.instructions[0].attrs == std::vector<int64_t>{eps, 0});
  validate_program(decoded, ops, "old.fbin");
  // More attributes than the op has stay as they are, for validate_program to reject.
  p.instructions[0].attrs = {eps, 1, 7};
  Program more = decode_program(encode_program(p), "new.fbin");
  default_appended_attributes(more, ops);
  CHECK(more.instructions[0].attrs.size() == 3);
}
