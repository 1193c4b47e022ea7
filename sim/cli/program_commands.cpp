// `fracsim compile`, `fracsim asm` and `fracsim disasm`: programs between their three forms.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "compiler/lowering.h"
#include "isa/assembly.h"
#include "isa/encoding.h"
#include "sim/cli/command.h"
#include "sim/cli/program_io.h"

namespace po = boost::program_options;

namespace fracsim::cli {

int cmd_compile(const Command& self, const std::vector<std::string>& args) {
  std::string workload, out, asm_out;
  CompileFlags compile_flags;
  po::options_description opts;
  auto add = opts.add_options();
  add("workload", po::value(&workload)->required(),
      "WORKLOAD: a workload .yaml or an ONNX model .onnx (positional)");
  add("output,o", po::value(&out)->required(), "the binary program (.fbin) to write");
  add("asm", po::value(&asm_out), "its assembly text (.fasm) to write too");
  add_compile_flags(opts, compile_flags);
  po::positional_options_description pos;
  pos.add("workload", 1);
  if (!parse_command_line(self, args, opts, pos)) return 0;
  const compiler::CompileOptions options = compile_options(self.name, compile_flags);
  const isa::OpTable& ops = isa::OpTable::builtin();
  compiler::Compilation c = compiler::compile_with_plan(load_workload_file(workload, options), ops);
  const std::vector<uint8_t> bytes = isa::encode_program(c.program);
  write_file_atomically(out, std::string(bytes.begin(), bytes.end()));
  if (!asm_out.empty()) write_file_atomically(asm_out, isa::disassemble(c.program, ops));
  const size_t n = c.program.instructions.size();
  std::cout << fmt::format("{}: {} instruction{}, root-memory footprint {} bytes -> {}\n",
                           c.program.name, n, n == 1 ? "" : "s", c.program.footprint, out);
  return 0;
}

int cmd_asm(const Command& self, const std::vector<std::string>& args) {
  std::string in, out;
  po::options_description opts;
  auto add = opts.add_options();
  add("input", po::value(&in)->required(),
      "IN: the assembly text (.fasm), - for standard input (positional)");
  add("output,o", po::value(&out)->required(), "the binary program (.fbin) to write");
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse_command_line(self, args, opts, pos)) return 0;
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = load_program(in, ops);
  const std::vector<uint8_t> bytes = isa::encode_program(p);
  write_file_atomically(out, std::string(bytes.begin(), bytes.end()));
  return 0;
}

int cmd_disasm(const Command& self, const std::vector<std::string>& args) {
  std::string in, out;
  po::options_description opts;
  auto add = opts.add_options();
  add("input", po::value(&in)->required(), "IN: the binary program (.fbin) (positional)");
  add("output,o", po::value(&out), "the assembly text (.fasm) to write (default: standard output)");
  po::positional_options_description pos;
  pos.add("input", 1);
  if (!parse_command_line(self, args, opts, pos)) return 0;
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = load_program(in, ops);
  const std::string text = isa::disassemble(p, ops);
  if (out.empty())
    std::cout << text;
  else
    write_file_atomically(out, text);
  return 0;
}

}  // namespace fracsim::cli
