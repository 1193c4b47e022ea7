#include "isa/assembly.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "isa/asm_syntax.h"
#include "isa/encoding.h"
#include "isa/error.h"

namespace fracsim::isa {
namespace {

using namespace asm_syntax;

struct Token {
  std::string text;
  bool quoted = false;  // only names may be quoted
};

class Assembler {
 public:
  Assembler(const std::string& source, const OpTable& ops) : source_(source), ops_(ops) {}

  void line(int number, std::string_view text) {
    line_ = number;
    std::vector<Token> tokens = tokenize(text);
    if (tokens.empty()) return;
    const std::string& head = tokens[0].text;
    // Quoted tokens are names, allowed only where a directive takes a name.
    size_t name_at = head == ".program" || head == ".layer" ? 1 : head == ".symbol" ? 2 : 0;
    for (size_t i = 0; i < tokens.size(); ++i)
      if (tokens[i].quoted && i != name_at)
        throw error(i == 0 ? "" : head,
                    fmt::format("unexpected quoted string \"{}\"", tokens[i].text));
    if (head == ".program")
      program_name(tokens);
    else if (head == ".footprint")
      footprint(tokens);
    else if (head == ".symbol")
      symbol(tokens);
    else if (head == ".data")
      data(tokens);
    else if (head == ".layer")
      layer(tokens);
    else if (head[0] == '.')
      throw error("", fmt::format("unknown directive '{}'", head));
    else
      instruction(tokens);
  }

  Program finish() {
    if (program_line_ == 0) throw config_error_at(source_, 0, "", "missing .program directive");
    if (footprint_line_ == 0) throw config_error_at(source_, 0, "", "missing .footprint directive");
    return std::move(p_);
  }

 private:
  ConfigError error(const std::string& key, const std::string& message) const {
    return config_error_at(source_, line_, key, message);
  }

  std::vector<Token> tokenize(std::string_view s) const {
    std::vector<Token> tokens;
    size_t i = 0;
    while (i < s.size()) {
      if (is_space(s[i])) {
        ++i;
        continue;
      }
      if (s[i] == ';') break;
      Token t;
      if (s[i] == '"') {
        t.quoted = true;
        bool closed = false;
        for (++i; i < s.size() && !closed;) {
          char c = s[i++];
          if (c == '"')
            closed = true;
          else if (c != '\\')
            t.text += c;
          else if (i < s.size() && (s[i] == '"' || s[i] == '\\'))
            t.text += s[i++];
          else if (i + 2 < s.size() && s[i] == 'x' && hex_value(s[i + 1]) >= 0 &&
                   hex_value(s[i + 2]) >= 0) {
            t.text += static_cast<char>(hex_value(s[i + 1]) * 16 + hex_value(s[i + 2]));
            i += 3;
          } else {
            throw error("", fmt::format("bad escape in quoted name \"{}\" (use \\\", \\\\ or "
                                        "\\xHH)",
                                        t.text));
          }
        }
        if (!closed) throw error("", fmt::format("unterminated quoted name \"{}", t.text));
        if (i < s.size() && !is_space(s[i]) && s[i] != ';')
          throw error("", fmt::format("expected a space after the quoted name \"{}\"", t.text));
      } else {
        size_t begin = i;
        while (i < s.size() && !is_space(s[i]) && s[i] != ';') ++i;
        t.text = std::string(s.substr(begin, i - begin));
        if (t.text.find('"') != std::string::npos)
          throw error("", fmt::format("unexpected '\"' in '{}'", t.text));
      }
      tokens.push_back(std::move(t));
    }
    return tokens;
  }

  void expect_args(const std::vector<Token>& t, size_t n, std::string_view usage) const {
    if (t.size() != n + 1)
      throw error(t[0].text, fmt::format("expected {}, got {} argument{}", usage, t.size() - 1,
                                         t.size() == 2 ? "" : "s"));
  }

  void once(int& seen, const std::string& directive) {
    if (seen != 0) throw error(directive, fmt::format("given twice (first on line {})", seen));
    seen = line_;
  }

  void program_name(const std::vector<Token>& t) {
    expect_args(t, 1, "NAME");
    once(program_line_, t[0].text);
    p_.name = t[1].text;
  }

  // From the first .layer on, every instruction is named (those before it unnamed); a program
  // without .layer names none.
  void layer(const std::vector<Token>& t) {
    expect_args(t, 1, "NAME");
    if (!named_) p_.instruction_names.resize(p_.instructions.size());
    named_ = true;
    layer_ = t[1].text;
  }

  void footprint(const std::vector<Token>& t) {
    expect_args(t, 1, "BYTES");
    once(footprint_line_, t[0].text);
    auto v = parse_number<uint64_t>(t[1].text);
    if (!v)
      throw error(t[0].text, fmt::format("expected a decimal byte count, got '{}'", t[1].text));
    p_.footprint = *v;
  }

  TensorRef tensor(const std::string& key, const std::string& what, const std::string& text) const {
    try {
      return parse_tensor(text);
    } catch (const ConfigError& e) {
      throw error(key, what + e.what());
    }
  }

  void symbol(const std::vector<Token>& t) {
    expect_args(t, 3, "ROLE NAME TENSOR");
    Symbol s;
    const std::string& role = t[1].text;
    int r = 0;
    while (r < 3 && symbol_role_name(static_cast<SymbolRole>(r)) != role) ++r;
    if (r == 3)
      throw error(".symbol",
                  fmt::format("unknown role '{}' (expected input, weight or output)", role));
    s.role = static_cast<SymbolRole>(r);
    s.name = t[2].text;
    s.tensor = tensor(".symbol", "", t[3].text);
    p_.symbols.push_back(std::move(s));
  }

  // The value of `key=value` at a fixed position of a .data random line.
  std::string keyed(const std::vector<Token>& t, size_t i, std::string_view key) const {
    const std::string& tok = t[i].text;
    if (tok.size() <= key.size() || tok.compare(0, key.size(), key) != 0 || tok[key.size()] != '=')
      throw error(".data",
                  fmt::format("expected {}=... in '{}', got '{}'", key, kUsageRandom, tok));
    return tok.substr(key.size() + 1);
  }

  void data(const std::vector<Token>& t) {
    if (t.size() < 2) throw error(".data", "expected bytes or random");
    DataSegment d;
    const bool bytes = t[1].text == "bytes";
    if (!bytes && t[1].text != "random")
      throw error(".data", fmt::format("unknown kind '{}' (expected bytes or random)", t[1].text));
    if (bytes && t.size() != 5 && t.size() != 6) expect_args(t, 5, kUsageBytes);
    if (!bytes) expect_args(t, 7, kUsageRandom);
    d.kind = bytes ? DataSegment::Kind::bytes : DataSegment::Kind::random;
    auto address = parse_address(t[2].text);
    if (!address)
      throw error(".data", fmt::format("bad address '{}' (expected hex, as 0x40)", t[2].text));
    auto dtype = parse_dtype(t[3].text);
    if (!dtype) throw error(".data", fmt::format("unknown dtype '{}'", t[3].text));
    d.address = *address;
    d.dtype = *dtype;
    auto count = parse_number<uint64_t>(t[4].text);
    if (!count) throw error(".data", fmt::format("bad element count '{}'", t[4].text));
    d.count = *count;
    if (bytes) {
      const std::string hex = t.size() == 6 ? t[5].text : "";
      d.bytes.reserve(hex.size() / 2);
      for (size_t i = 0; i + 1 < hex.size(); i += 2) {
        int hi = hex_value(hex[i]), lo = hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0)
          throw error(".data", fmt::format("bad hex byte '{}'", hex.substr(i, 2)));
        d.bytes.push_back(static_cast<uint8_t>(hi * 16 + lo));
      }
      const uint64_t size = dtype_size(d.dtype);
      if (hex.size() % 2 != 0 || d.bytes.size() / size != d.count || d.bytes.size() % size != 0)
        throw error(".data", fmt::format("{} elements of {} need {} hex digits, got {}", d.count,
                                         dtype_name(d.dtype), 2 * d.count * size, hex.size()));
    } else {
      std::string v = keyed(t, 5, "seed");
      auto seed = parse_number<uint64_t>(v);
      if (!seed) throw error(".data", fmt::format("bad seed '{}'", v));
      d.seed = *seed;
      for (auto [i, key, out] : {std::tuple{6, "lo", &d.lo}, std::tuple{7, "hi", &d.hi}}) {
        v = keyed(t, i, key);
        auto x = parse_double(v);
        if (!x) throw error(".data", fmt::format("bad {} '{}' (expected a number)", key, v));
        *out = *x;
      }
    }
    p_.data.push_back(std::move(d));
  }

  // Attributes are not defaulted: a missing one is an error, so that a .fasm means the same
  // program whatever defaults a later op table declares.
  void instruction(const std::vector<Token>& t) {
    const OpDef* op = ops_.find(t[0].text);
    if (!op) throw error("", fmt::format("unknown op '{}'", t[0].text));
    Instruction in;
    in.opcode = op->opcode;
    in.operands.resize(op->operands.size());
    in.attrs.resize(op->attributes.size());
    std::vector<bool> have_operand(op->operands.size()), have_attr(op->attributes.size());
    for (size_t i = 1; i < t.size(); ++i) {
      const std::string& tok = t[i].text;
      size_t eq = tok.find('=');
      if (eq == std::string::npos)
        throw error(op->name, fmt::format("expected name=value, got '{}'", tok));
      const std::string name = tok.substr(0, eq), value = tok.substr(eq + 1);
      // Operand names win over attribute names (OpTable should keep them apart).
      if (int k = op->operand_index(name); k >= 0) {
        if (have_operand[k])
          throw error(op->name, fmt::format("operand '{}' is given twice", name));
        have_operand[k] = true;
        in.operands[k] = tensor(op->name, fmt::format("operand {}: ", name), value);
        const auto& dims = op->operands[k].dims;
        if (in.operands[k].rank() != static_cast<int>(dims.size()))
          throw error(op->name, fmt::format("operand {}: rank {} in '{}', but the op declares "
                                            "{} dims ({})",
                                            name, in.operands[k].rank(), value, dims.size(),
                                            fmt::join(dims, ",")));
        continue;
      }
      int a = op->attr_index(name);
      if (a < 0) throw error(op->name, fmt::format("unknown operand or attribute '{}'", name));
      if (have_attr[a]) throw error(op->name, fmt::format("attribute '{}' is given twice", name));
      have_attr[a] = true;
      in.attrs[a] = attr_value(*op, op->attributes[a], value);
    }
    for (size_t k = 0; k < have_operand.size(); ++k)
      if (!have_operand[k])
        throw error(op->name, fmt::format("missing operand '{}'", op->operands[k].name));
    for (size_t a = 0; a < have_attr.size(); ++a)
      if (!have_attr[a])
        throw error(op->name, fmt::format("missing attribute '{}' (assembly does not apply "
                                          "defaults)",
                                          op->attributes[a].name));
    p_.instructions.push_back(std::move(in));
    if (named_) p_.instruction_names.push_back(layer_);
  }

  int64_t attr_value(const OpDef& op, const AttrDef& ad, const std::string& v) const {
    if (ad.type == AttrType::enumeration) {
      for (size_t i = 0; i < ad.values.size(); ++i)
        if (ad.values[i] == v) return static_cast<int64_t>(i);
      throw error(op.name, fmt::format("attribute {}: '{}' is not one of {}", ad.name, v,
                                       fmt::join(ad.values, ", ")));
    }
    if (ad.type == AttrType::real) {
      auto d = parse_double(v);
      if (!d)
        throw error(op.name,
                    fmt::format("attribute {}: expected a real number, got '{}'", ad.name, v));
      return real_to_attr(*d);
    }
    if (ad.type == AttrType::boolean) {
      if (v != "0" && v != "1")
        throw error(op.name, fmt::format("attribute {}: expected 0 or 1, got '{}'", ad.name, v));
      return v == "1";
    }
    auto n = parse_number<int64_t>(v);
    if (!n)
      throw error(op.name, fmt::format("attribute {}: expected an integer, got '{}'", ad.name, v));
    if (!ad.accepts(*n)) throw error(op.name, attr_value_error(ad, *n));
    return *n;
  }

  const std::string& source_;
  const OpTable& ops_;
  Program p_;
  int line_ = 0;
  int program_line_ = 0;
  int footprint_line_ = 0;
  bool named_ = false;  // a .layer was seen
  std::string layer_;   // the name of the instructions that follow
};

}  // namespace

std::string disassemble(const Program& p, const OpTable& ops) {
  check_representable(p);
  auto fail = [&](const std::string& where, const std::string& msg) {
    return ConfigError(fmt::format("program '{}': {}: {}", p.name, where, msg));
  };
  std::string out(kHeader);
  out += fmt::format(".program {}\n.footprint {}\n", name_str(p.name), p.footprint);
  for (const Symbol& s : p.symbols)
    out += fmt::format(".symbol {} {} {}\n", symbol_role_name(s.role), name_str(s.name),
                       tensor_str(s.tensor));
  for (const DataSegment& d : p.data) {
    if (d.kind == DataSegment::Kind::bytes) {
      out += fmt::format(".data bytes {:#x} {} {}", d.address, dtype_name(d.dtype), d.count);
      if (!d.bytes.empty()) out += ' ';
      for (uint8_t b : d.bytes) out += {kHexDigits[b >> 4], kHexDigits[b & 15]};
    } else {
      // "nan" would read back as some NaN, not necessarily this one; and it bounds nothing.
      if (std::isnan(d.lo) || std::isnan(d.hi))
        throw fail(fmt::format("data segment at {:#x}", d.address), "lo or hi is NaN");
      out += fmt::format(".data random {:#x} {} {} seed={} lo={} hi={}", d.address,
                         dtype_name(d.dtype), d.count, d.seed, d.lo, d.hi);
    }
    out += '\n';
  }
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    const OpDef* op = ops.find(in.opcode);
    if (!op)
      throw fail(fmt::format("instruction {}", i), fmt::format("unknown opcode {:#x}", in.opcode));
    const std::string where = fmt::format("instruction {} ({})", i, op->name);
    // Where the name changes; before the first instruction even when it is unnamed, so that
    // the names (all of them or none) read back as they are.
    if (!p.instruction_names.empty() &&
        (i == 0 || p.instruction_names[i] != p.instruction_names[i - 1]))
      out += fmt::format(".layer {}\n", name_str(p.instruction_names[i]));
    if (in.operands.size() != op->operands.size() || in.attrs.size() != op->attributes.size())
      throw fail(where, fmt::format("{} operands and {} attributes, but the op declares {} and {}",
                                    in.operands.size(), in.attrs.size(), op->operands.size(),
                                    op->attributes.size()));
    out += op->name;
    for (size_t k = 0; k < in.operands.size(); ++k) {
      const TensorRef& t = in.operands[k];
      const OperandDef& od = op->operands[k];
      if (t.rank() != static_cast<int>(od.dims.size()))
        throw fail(where, fmt::format("operand {} has rank {}, but the op declares {} dims",
                                      od.name, t.rank(), od.dims.size()));
      out += fmt::format(" {}={}", od.name, tensor_str(t));
    }
    for (size_t a = 0; a < in.attrs.size(); ++a) {
      const AttrDef& ad = op->attributes[a];
      const int64_t v = in.attrs[a];
      if (!ad.accepts(v)) throw fail(where, attr_value_error(ad, v));
      out += fmt::format(" {}={}", ad.name, op->attr_value_str(static_cast<int>(a), v));
    }
    out += '\n';
  }
  return out;
}

Program assemble(const std::string& text, const std::string& source, const OpTable& ops) {
  Assembler as(source, ops);
  size_t begin = 0;
  int number = 1;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    as.line(number++, std::string_view(text).substr(begin, end - begin));
    begin = end + 1;
  }
  return as.finish();
}

}  // namespace fracsim::isa
