#include "isa/encoding.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

#include "isa/error.h"

namespace fracsim::isa {
namespace {

constexpr char kMagic[4] = {'F', 'B', 'I', 'N'};
constexpr size_t kChecksumBytes = 4;
// Fewest bytes each record can take; counts read from the file are bounded by these so that a
// corrupt count fails cleanly instead of allocating gigabytes.
constexpr size_t kMinTensorBytes = 8 + 1 + 1;
constexpr size_t kMinInstructionBytes = 2 + 1 + 1;
constexpr size_t kMinSegmentBytes = 1 + 8 + 1 + 8;
constexpr size_t kMinSymbolBytes = 4 + 1 + kMinTensorBytes;
constexpr size_t kMinSectionBytes = 4 + 2 + 4;
constexpr size_t kMinNameBytes = 4;

constexpr char kNamesTag[4] = {'N', 'A', 'M', 'E'};
constexpr uint16_t kNamesVersion = 1;

class ByteWriter {
 public:
  void u8(uint8_t v) { out_.push_back(v); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void u64(uint64_t v) { put(v, 8); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put(bits, 8);
  }
  void raw(const std::vector<uint8_t>& b) { out_.insert(out_.end(), b.begin(), b.end()); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  std::vector<uint8_t>& out() { return out_; }

 private:
  void put(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out_.push_back(static_cast<uint8_t>(v >> (8 * i)));
  }
  std::vector<uint8_t> out_;
};

// Reads fields from [offset, end) and turns every overrun into a ConfigError with the offset.
// Field names are plain strings and the record ("instruction 3 operand 1") is kept as numbers:
// messages are formatted only on failure, not once per field of a large program.
class ByteReader {
 public:
  ByteReader(const std::vector<uint8_t>& bytes, size_t end, std::string source)
      : bytes_(bytes), end_(end), source_(std::move(source)) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }
  void set_end(size_t end) { end_ = end; }
  void skip(size_t n) { pos_ += n; }
  // The record that fields belong to, for messages; kind nullptr for the header.
  void enter(const char* kind, uint32_t index, int operand = -1) {
    kind_ = kind;
    index_ = index;
    operand_ = operand;
  }
  std::string record() const {
    if (!kind_) return "";
    std::string r = fmt::format("{} {}", kind_, index_);
    return operand_ < 0 ? r : fmt::format("{} operand {}", r, operand_);
  }

  ConfigError error(size_t at, const std::string& message) const {
    return ConfigError(fmt::format("{}: byte {}: {}", source_, at, message));
  }
  void need(size_t n, const char* field, const char* suffix = "") const {
    if (remaining() < n) {
      std::string rec = record();
      throw error(pos_, fmt::format("truncated: {}{}{}{} needs {} bytes, {} remain", rec,
                                    rec.empty() ? "" : " ", field, suffix, n, remaining()));
    }
  }
  uint64_t uint(int n, const char* field, const char* suffix = "") {
    need(n, field, suffix);
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes_[pos_ + i]) << (8 * i);
    pos_ += n;
    return v;
  }
  uint8_t u8(const char* field) { return static_cast<uint8_t>(uint(1, field)); }
  uint16_t u16(const char* field) { return static_cast<uint16_t>(uint(2, field)); }
  uint32_t u32(const char* field) { return static_cast<uint32_t>(uint(4, field)); }
  uint64_t u64(const char* field) { return uint(8, field); }
  int64_t i64(const char* field) { return static_cast<int64_t>(uint(8, field)); }
  double f64(const char* field) {
    uint64_t bits = uint(8, field);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  std::vector<uint8_t> raw(size_t n, const char* field) {
    need(n, field);
    std::vector<uint8_t> b(bytes_.data() + pos_, bytes_.data() + pos_ + n);
    pos_ += n;
    return b;
  }
  // u32 length + bytes; the length is checked against the remaining bytes before allocating.
  std::string str(const char* field) {
    uint32_t n = static_cast<uint32_t>(uint(4, field, " length"));
    need(n, field);
    std::string s(bytes_.data() + pos_, bytes_.data() + pos_ + n);
    pos_ += n;
    return s;
  }
  // A record count, rejected when the remaining bytes cannot hold that many records.
  uint32_t count(const char* kind, size_t min_record_bytes) {
    size_t at = pos_;
    uint32_t n = static_cast<uint32_t>(uint(4, kind, " count"));
    if (n > remaining() / min_record_bytes)
      throw error(at, fmt::format("{} count {} is more than the remaining {} bytes can hold", kind,
                                  n, remaining()));
    return n;
  }

 private:
  const std::vector<uint8_t>& bytes_;
  size_t pos_ = 0;
  size_t end_;
  std::string source_;
  const char* kind_ = nullptr;
  uint32_t index_ = 0;
  int operand_ = -1;
};

void write_tensor(ByteWriter& w, const TensorRef& t) {
  w.u64(t.address);
  w.u8(static_cast<uint8_t>(t.dtype));
  w.u8(static_cast<uint8_t>(t.rank()));
  for (int d = 0; d < t.rank(); ++d) {
    w.i64(t.shape[d]);
    w.i64(t.strides[d]);
  }
}

DType read_dtype(ByteReader& r) {
  size_t at = r.offset();
  uint8_t code = r.u8("dtype");
  auto dt = dtype_from_code(code);
  if (!dt) throw r.error(at, fmt::format("invalid dtype code {} in {}", code, r.record()));
  return *dt;
}

TensorRef read_tensor(ByteReader& r) {
  TensorRef t;
  t.address = r.u64("address");
  t.dtype = read_dtype(r);
  size_t at = r.offset();
  uint8_t rank = r.u8("rank");
  if (rank > kMaxRank)
    throw r.error(at, fmt::format("{} has rank {} (at most {})", r.record(), rank, kMaxRank));
  for (int d = 0; d < rank; ++d) {
    t.shape.push_back(r.i64("extent"));
    t.strides.push_back(r.i64("stride"));
  }
  return t;
}

// The NAME section's payload: the distinct names in order of first use, then one index per
// instruction.
std::vector<uint8_t> names_payload(const Program& p) {
  std::vector<const std::string*> names;
  std::unordered_map<std::string, uint32_t> index;
  std::vector<uint32_t> ids;
  ids.reserve(p.instruction_names.size());
  for (const std::string& n : p.instruction_names) {
    if (n.empty()) {
      ids.push_back(kUnnamed);
      continue;
    }
    auto [it, fresh] = index.emplace(n, static_cast<uint32_t>(names.size()));
    if (fresh) names.push_back(&n);
    ids.push_back(it->second);
  }
  ByteWriter w;
  w.u32(static_cast<uint32_t>(names.size()));
  for (const std::string* n : names) w.str(*n);
  for (uint32_t id : ids) w.u32(id);
  return std::move(w.out());
}

// Reads a NAME payload that ends at the reader's end. Only the form names_payload writes is
// accepted (names distinct, not empty, in order of first use, each used), so that every file
// decode accepts re-encodes to the same bytes.
void read_names(ByteReader& r, uint32_t section, size_t n_instr, Program& p) {
  r.enter("section", section);
  const uint32_t n_names = r.count("name", kMinNameBytes);
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> seen;
  names.reserve(n_names);
  for (uint32_t k = 0; k < n_names; ++k) {
    const size_t at = r.offset();
    names.push_back(r.str("name"));
    if (names.back().empty())
      throw r.error(at, fmt::format("section {}: name {} is empty (an unnamed instruction has the "
                                    "index {:#x})",
                                    section, k, kUnnamed));
    auto [it, fresh] = seen.emplace(names.back(), k);
    if (!fresh)
      throw r.error(at, fmt::format("section {}: name {} '{}' repeats name {}", section, k,
                                    names.back(), it->second));
  }
  p.instruction_names.reserve(n_instr);
  uint32_t next_new = 0;  // names are listed in order of first use
  for (size_t i = 0; i < n_instr; ++i) {
    r.enter("instruction", static_cast<uint32_t>(i));
    const size_t at = r.offset();
    const uint32_t id = r.u32("name index");
    if (id == kUnnamed) {
      p.instruction_names.emplace_back();
      continue;
    }
    if (id >= n_names)
      throw r.error(
          at, fmt::format("instruction {} has name index {}, past the {} names", i, id, n_names));
    if (id > next_new)
      throw r.error(at, fmt::format("instruction {} uses name {} before name {} (names are "
                                    "listed in order of first use)",
                                    i, id, next_new));
    if (id == next_new) ++next_new;
    p.instruction_names.push_back(names[id]);
  }
  if (next_new != n_names)
    throw r.error(r.offset(), fmt::format("section {}: name {} '{}' names no instruction", section,
                                          next_new, names[next_new]));
}

// The sections of a version-2 file, from the reader's position to `body_end`.
void read_sections(ByteReader& r, size_t body_end, size_t n_instr, Program& p) {
  r.enter(nullptr, 0);
  const size_t at = r.offset();
  const uint32_t n = r.count("section", kMinSectionBytes);
  if (n == 0) throw r.error(at, "section count 0 (a file without sections ends after its symbols)");
  bool have_names = false;
  for (uint32_t i = 0; i < n; ++i) {
    r.enter("section", i);
    const size_t tag_at = r.offset();
    const std::vector<uint8_t> tag = r.raw(4, "tag");
    const size_t version_at = r.offset();
    const uint16_t version = r.u16("version");
    const uint32_t length = r.u32("length");
    r.need(length, "payload");
    const size_t end = r.offset() + length;
    if (std::memcmp(tag.data(), kNamesTag, sizeof kNamesTag) != 0) {
      r.skip(length);  // a tag this version does not know (a later one's): skipped
      continue;
    }
    if (have_names) throw r.error(tag_at, fmt::format("section {}: a second NAME section", i));
    have_names = true;
    if (n_instr == 0)  // never written: a program without instructions names none
      throw r.error(tag_at, fmt::format("section {}: a NAME section without instructions", i));
    if (version != kNamesVersion)
      throw r.error(version_at, fmt::format("section {}: NAME section version {} is not supported "
                                            "(this fracsim reads version {})",
                                            i, version, kNamesVersion));
    r.set_end(end);
    read_names(r, i, n_instr, p);
    if (r.remaining() != 0)
      throw r.error(r.offset(), fmt::format("section {}: {} unexpected bytes at the end of the "
                                            "NAME section",
                                            i, r.remaining()));
    r.set_end(body_end);
  }
}

}  // namespace

uint32_t fnv1a32(const uint8_t* data, size_t size) {
  uint32_t h = 0x811c9dc5u;
  for (size_t i = 0; i < size; ++i) {
    h ^= data[i];
    h *= 0x01000193u;
  }
  return h;
}

void check_representable(const Program& p) {
  // Messages are built only on failure: this runs over every instruction of large programs.
  auto fail = [&](const std::string& where, const std::string& msg) {
    return ConfigError(fmt::format("program '{}': {}: {}", p.name, where, msg));
  };
  auto check_u32 = [&](size_t n, const char* what) {
    if (n > std::numeric_limits<uint32_t>::max())
      throw fail(what, fmt::format("{} exceeds the format's 32-bit limit", n));
  };
  auto check_tensor = [&](const TensorRef& t, const auto& where) {
    if (t.shape.size() != t.strides.size())
      throw fail(where(),
                 fmt::format("{} extents but {} strides", t.shape.size(), t.strides.size()));
    if (t.rank() > kMaxRank)
      throw fail(where(),
                 fmt::format("rank {} exceeds the format's maximum of {}", t.rank(), kMaxRank));
  };
  check_u32(p.name.size(), "name length");
  check_u32(p.instructions.size(), "instruction count");
  check_u32(p.data.size(), "data segment count");
  check_u32(p.symbols.size(), "symbol count");
  if (!p.instruction_names.empty() && p.instruction_names.size() != p.instructions.size())
    throw fail("instruction names", fmt::format("{} names for {} instructions",
                                                p.instruction_names.size(), p.instructions.size()));
  for (const std::string& n : p.instruction_names) check_u32(n.size(), "instruction name length");
  for (size_t i = 0; i < p.instructions.size(); ++i) {
    const Instruction& in = p.instructions[i];
    if (in.operands.size() > 255 || in.attrs.size() > 255)
      throw fail(fmt::format("instruction {}", i),
                 fmt::format("{} operands and {} attributes (at most 255 each)", in.operands.size(),
                             in.attrs.size()));
    for (size_t k = 0; k < in.operands.size(); ++k)
      check_tensor(in.operands[k], [&] { return fmt::format("instruction {}: operand {}", i, k); });
  }
  for (const DataSegment& d : p.data) {
    auto where = [&] { return fmt::format("data segment at {:#x}", d.address); };
    if (d.kind == DataSegment::Kind::bytes) {
      // Compared by division: count * size may overflow.
      const uint64_t size = dtype_size(d.dtype);
      if (d.bytes.size() % size != 0 || d.bytes.size() / size != d.count)
        throw fail(where(), fmt::format("{} bytes for {} elements of {}", d.bytes.size(), d.count,
                                        dtype_name(d.dtype)));
      // Not written, so they would not survive a round trip.
      if (d.seed != 0 || d.lo != 0 || d.hi != 0 || std::signbit(d.lo) || std::signbit(d.hi))
        throw fail(where(), "a bytes segment cannot carry seed, lo or hi");
    } else if (!d.bytes.empty()) {
      throw fail(where(), "a random segment cannot carry bytes");
    }
  }
  for (const Symbol& s : p.symbols) {
    check_u32(s.name.size(), "symbol name length");
    check_tensor(s.tensor, [&] { return "symbol " + s.name; });
  }
}

std::vector<uint8_t> encode_program(const Program& p) {
  check_representable(p);
  ByteWriter w;
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u16(kFbinVersion);
  w.u16(0);
  w.str(p.name);
  w.u64(p.footprint);
  w.u32(static_cast<uint32_t>(p.instructions.size()));
  w.u32(static_cast<uint32_t>(p.data.size()));
  w.u32(static_cast<uint32_t>(p.symbols.size()));
  for (const Instruction& in : p.instructions) {
    w.u16(in.opcode);
    w.u8(static_cast<uint8_t>(in.operands.size()));
    w.u8(static_cast<uint8_t>(in.attrs.size()));
    for (const TensorRef& t : in.operands) write_tensor(w, t);
    for (int64_t a : in.attrs) w.i64(a);
  }
  for (const DataSegment& d : p.data) {
    w.u8(static_cast<uint8_t>(d.kind));
    w.u64(d.address);
    w.u8(static_cast<uint8_t>(d.dtype));
    w.u64(d.count);
    if (d.kind == DataSegment::Kind::bytes) {
      w.raw(d.bytes);
    } else {
      w.u64(d.seed);
      w.f64(d.lo);
      w.f64(d.hi);
    }
  }
  for (const Symbol& s : p.symbols) {
    w.str(s.name);
    w.u8(static_cast<uint8_t>(s.role));
    write_tensor(w, s.tensor);
  }
  if (!p.instruction_names.empty()) {
    const std::vector<uint8_t> names = names_payload(p);
    if (names.size() > std::numeric_limits<uint32_t>::max())
      throw ConfigError(
          fmt::format("program '{}': instruction names: {} bytes exceed the "
                      "format's 32-bit limit",
                      p.name, names.size()));
    w.u32(1);  // section count
    for (char c : kNamesTag) w.u8(static_cast<uint8_t>(c));
    w.u16(kNamesVersion);
    w.u32(static_cast<uint32_t>(names.size()));
    w.raw(names);
  }
  std::vector<uint8_t>& out = w.out();
  w.u32(fnv1a32(out.data(), out.size()));
  return std::move(out);
}

Program decode_program(const std::vector<uint8_t>& bytes, const std::string& source) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw ConfigError(fmt::format("{}: not a fracsim binary (bad magic)", source));
  ByteReader r(bytes, bytes.size(), source);
  r.skip(sizeof kMagic);
  uint16_t version = r.u16("format version");
  if (version < kFbinOldestVersion || version > kFbinVersion)
    throw ConfigError(
        fmt::format("{}: format version {} is not supported (this fracsim reads "
                    "versions {} to {})",
                    source, version, kFbinOldestVersion, kFbinVersion));
  size_t at = r.offset();
  uint16_t flags = r.u16("flags");
  if (flags != 0)
    throw r.error(
        at, fmt::format("unsupported flags {:#06x} (version {} defines none)", flags, version));

  // The checksum is checked before the body is interpreted, so that a corrupted file is reported
  // as such rather than as whatever garbage field the corruption happens to hit first.
  r.need(kChecksumBytes, "checksum");
  const size_t body_end = bytes.size() - kChecksumBytes;
  uint32_t stored = 0;
  for (size_t i = 0; i < kChecksumBytes; ++i)
    stored |= static_cast<uint32_t>(bytes[body_end + i]) << (8 * i);
  uint32_t computed = fnv1a32(bytes.data(), body_end);
  if (stored != computed)
    throw r.error(body_end, fmt::format("checksum mismatch (stored {:#010x}, computed {:#010x}): "
                                        "the file is corrupted or truncated",
                                        stored, computed));
  r.set_end(body_end);

  Program p;
  p.name = r.str("program name");
  p.footprint = r.u64("footprint");
  // The three counts come before the records, so each bound assumes the other sections empty;
  // the records themselves are still read with overrun checks.
  uint32_t n_instr = r.count("instruction", kMinInstructionBytes);
  uint32_t n_data = r.count("data segment", kMinSegmentBytes);
  uint32_t n_sym = r.count("symbol", kMinSymbolBytes);

  p.instructions.reserve(n_instr);
  for (uint32_t i = 0; i < n_instr; ++i) {
    r.enter("instruction", i);
    Instruction in;
    in.opcode = r.u16("opcode");
    uint8_t n_ops = r.u8("operand count");
    uint8_t n_attrs = r.u8("attribute count");
    for (uint8_t k = 0; k < n_ops; ++k) {
      r.enter("instruction", i, k);
      in.operands.push_back(read_tensor(r));
    }
    r.enter("instruction", i);
    for (uint8_t k = 0; k < n_attrs; ++k) in.attrs.push_back(r.i64("attribute"));
    p.instructions.push_back(std::move(in));
  }

  p.data.reserve(n_data);
  for (uint32_t i = 0; i < n_data; ++i) {
    r.enter("data segment", i);
    DataSegment d;
    size_t kind_at = r.offset();
    uint8_t kind = r.u8("kind");
    if (kind > static_cast<uint8_t>(DataSegment::Kind::random))
      throw r.error(kind_at, fmt::format("invalid kind code {} in {}", kind, r.record()));
    d.kind = static_cast<DataSegment::Kind>(kind);
    d.address = r.u64("address");
    d.dtype = read_dtype(r);
    size_t count_at = r.offset();
    d.count = r.u64("element count");
    if (d.kind == DataSegment::Kind::bytes) {
      const uint64_t size = dtype_size(d.dtype);
      if (d.count > r.remaining() / size)
        throw r.error(count_at,
                      fmt::format("truncated: {} holds {} elements of {}, more than the "
                                  "remaining {} bytes",
                                  r.record(), d.count, dtype_name(d.dtype), r.remaining()));
      d.bytes = r.raw(d.count * size, "bytes");
    } else {
      d.seed = r.u64("seed");
      d.lo = r.f64("lo");
      d.hi = r.f64("hi");
    }
    p.data.push_back(std::move(d));
  }

  p.symbols.reserve(n_sym);
  for (uint32_t i = 0; i < n_sym; ++i) {
    r.enter("symbol", i);
    Symbol s;
    s.name = r.str("name");
    size_t role_at = r.offset();
    uint8_t role = r.u8("role");
    if (role > static_cast<uint8_t>(SymbolRole::output))
      throw r.error(role_at, fmt::format("invalid role code {} in {}", role, r.record()));
    s.role = static_cast<SymbolRole>(role);
    s.tensor = read_tensor(r);
    p.symbols.push_back(std::move(s));
  }

  if (version >= 2 && r.remaining() != 0) read_sections(r, body_end, n_instr, p);
  if (r.remaining() != 0)
    throw r.error(r.offset(),
                  fmt::format("{} unexpected bytes before the checksum", r.remaining()));
  return p;
}

void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw ConfigError(fmt::format("{}: cannot open file", path));
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) throw ConfigError(fmt::format("{}: cannot write file", path));
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::error_code ec;
  std::ifstream f(path, std::ios::binary);
  if (!f || std::filesystem::is_directory(path, ec))
    throw ConfigError(fmt::format("{}: cannot open file", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) throw ConfigError(fmt::format("{}: cannot read file", path));
  return bytes;
}

}  // namespace fracsim::isa
