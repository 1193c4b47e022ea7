// The binary program format `.fbin`: what `fracsim compile` writes and every machine runs.
//
// Little-endian throughout, written field by field (never a struct image), so the file is the
// same on every host:
//   "FBIN", u16 version (kFbinVersion), u16 flags (0),
//   u32 name length + name bytes, u64 footprint,
//   u32 instruction count, u32 data segment count, u32 symbol count,
//   instructions:  u16 opcode, u8 operand count, u8 attribute count,
//                  operands as tensors, attributes as i64 each
//   data segments: u8 kind, u64 address, u8 dtype, u64 count (elements), then
//                  bytes: count * dtype_size bytes | random: u64 seed, f64 lo, f64 hi (IEEE bits)
//   symbols:       u32 name length + name bytes, u8 role, tensor
//   sections:      (version 2) absent when the program has none, so that a file without
//                  sections is laid out as version 1 was; else u32 section count (at least 1),
//                  then per section a 4-byte tag, u16 section version, u32 payload length and
//                  the payload
//   u32 FNV-1a checksum of every byte before it.
// where
//   tensor:        u64 address, u8 dtype, u8 rank, rank x (i64 extent, i64 stride)
//
// Sections carry what a program may or may not have. A decoder skips a section whose tag it
// does not know (and does not keep it), so that a later version can add sections older readers
// ignore; a known tag at a version it does not know, or given twice, is an error. Tags:
//   "NAME" version 1: Program::instruction_names, written when they are not empty: u32 name
//                  count, the names (u32 length + bytes; distinct and not empty, in order of
//                  first use), then per instruction a u32 index into them, or kUnnamed.
// Version 1 files (no sections) are still read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "isa/program.h"

namespace fracsim::isa {

constexpr uint16_t kFbinVersion = 2;
// The oldest version decode_program reads.
constexpr uint16_t kFbinOldestVersion = 1;
// The index of an unnamed instruction in the names section.
constexpr uint32_t kUnnamed = 0xffffffffu;
// Largest tensor rank the formats carry; decode rejects more rather than trusting a count.
constexpr int kMaxRank = 8;

// Throws ConfigError ("program 'NAME': ...") when `p` holds something the formats cannot carry
// back exactly: a rank above kMaxRank, shape and strides of different lengths, more than 255
// operands or attributes, a bytes segment whose byte count is not count * dtype_size or that
// carries seed/lo/hi, a random segment with bytes, a count or name past 32 bits.
void check_representable(const Program& p);

// Runs check_representable, then writes the program.
std::vector<uint8_t> encode_program(const Program& p);

// Parses a whole .fbin. Every malformed input is a ConfigError naming `source` and, past the
// magic and version, the byte offset ("x.fbin: byte 42: ..."). Order: magic, version, flags
// (must be 0), checksum, then the body, so corruption is reported as such. Structure only:
// opcodes, dtype combinations and footprints are left to validate_program, which the caller runs.
Program decode_program(const std::vector<uint8_t>& bytes, const std::string& source);

// FNV-1a, 32 bits: the trailing checksum of a .fbin.
uint32_t fnv1a32(const uint8_t* data, size_t size);

// Whole-file I/O. ConfigError "PATH: cannot open file" (or "cannot write file").
void write_file_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace fracsim::isa
