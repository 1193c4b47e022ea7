// The text program format `.fasm`: `fracsim disasm` writes it, `fracsim asm` reads it, and the
// two round-trip exactly (assemble(disassemble(p)) encodes to the same bytes as p).
//
//   ; fracsim assembly, format 1            ';' starts a comment; blank lines are ignored
//   .program mlp                            exactly once; a name that is not one printable
//   .footprint 8392960                      token is written quoted: "my net\x01" (\" \\ \xHH)
//   .symbol input x f32@0x0[64,784:784,1]   ROLE NAME TENSOR
//   .data random 0x0 f32 50176 seed=1000004 lo=-1 hi=1
//   .data bytes 0x100 i8 4 01ff7f80         the hex is omitted when the segment is empty
//   .layer fc1                              names the instructions after it, up to the next
//   matmul a=f32@0x0[64,784:784,1] b=... out=... accumulate=0     .layer (a name quoted as for
//   eltwise a=... b=... out=... fn=add                            .program); .layer "" goes
//   .layer ""                                                     back to unnamed
//   activation in=... out=... fn=relu alpha=0 frac_bits=0
//
// Without any .layer the program names no instruction (Program::instruction_names is empty and
// instruction_name gives "#0", "#1", ...); from the first .layer on, every instruction has an
// entry ("" for those before it). disassemble writes .layer before each instruction whose name
// differs from the previous one's, and before the first instruction of a program with names
// even when it is unnamed, so that the names read back exactly.
//
// An instruction is its op's name followed by name=value for every operand and attribute, in
// any order (disassemble writes the op's declared order). Tensors are written as tensor_str
// writes them, addresses in hex; enum attributes by value name, bools as 0 or 1, ints in
// decimal; lo and hi in the shortest decimal form that reads back to the same double.
#pragma once

#include <string>
#include <string_view>

#include "isa/op_def.h"
#include "isa/program.h"

namespace fracsim::isa {

// Throws ConfigError ("program 'NAME': instruction 3 (matmul): ...") when `p` holds something
// the text cannot carry back: an opcode missing from `ops`, operands or attributes that do not
// match the op's declaration (count, rank), a bool or enum out of range, a NaN bound, or a
// segment that encode_program would reject. Anything it accepts assembles back exactly.
std::string disassemble(const Program& p, const OpTable& ops);

// Parses a .fasm text. Every error is a ConfigError "SOURCE:LINE: ..." naming the offending
// token. Checks syntax and each instruction against its op's declared operands (names, ranks)
// and attributes (names, types, enum values); dtype combinations, dim agreement and footprints
// are left to validate_program, which the caller runs.
Program assemble(const std::string& text, const std::string& source, const OpTable& ops);

// Parses tensor_str's form "f32@0x40[64,784:784,1]" (rank 0: "f32@0x0[:]"). Throws ConfigError
// "bad tensor 'TEXT': reason", without a location (callers add it).
TensorRef parse_tensor(std::string_view text);

}  // namespace fracsim::isa
