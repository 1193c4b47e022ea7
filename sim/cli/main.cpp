// The fracsim command. Exit codes: 0 ok, 1 a functional run's outputs differ from the
// reference, 2 bad input (config, workload, program, flags), 3 internal error (a bug).
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <boost/program_options.hpp>

#include "compiler/lowering.h"
#include "compiler/workload.h"
#include "isa/assembly.h"
#include "isa/encoding.h"
#include "isa/error.h"
#include "rtl/rtl_backend.h"
#include "sim/cli/isa_command.h"
#include "sim/cli/program_io.h"
#include "sim/cli/verify_command.h"
#include "sim/machine.h"
#include "sim/machine_spec.h"
#include "sim/node.h"
#include "sim/report.h"
#include "sim/trace.h"
#include "sim/units.h"

namespace po = boost::program_options;
using namespace fracsim;

// jemalloc's options, read at its start (a MALLOC_CONF variable still overrides them): back the
// heap with transparent huge pages where the kernel offers them (madvise mode). A run touches
// its heap for the first time as it goes, and on 4 KiB pages every first touch is a page fault:
// the MLP on the 4096-leaf machine simulates in 1.8 ms instead of 2.4 ms.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface
const char* malloc_conf = "thp:always,metadata_thp:auto";
}

namespace {

constexpr const char* kUsage = R"(usage: fracsim COMMAND [ARGS]

commands:
  run -m CONFIG -w PROGRAM [--mode functional|timing] [--backend model|rtl] [--out DIR]
      [--no-fold] [--trace FILE]
                      run a workload (.yaml, .onnx), binary (.fbin) or assembly (.fasm) on a
                      machine;
                      writes DIR/stats.json (default results/runs/PROGRAM-MACHINE-MODE);
                      --no-fold simulates every node of a timing run (same results, slower);
                      --trace writes a Chrome/Perfetto trace-event timeline of the stages;
                      --backend overrides the leaf backend of the config (rtl: integer
                      matmul/conv, vector ops and merges on the Verilated units, other ops
                      on the C++ model)
  compile WORKLOAD -o X.fbin [--asm X.fasm]
                      compile a workload (.yaml or ONNX .onnx) to a binary program (and its
                      assembly)
  asm IN.fasm|- -o OUT.fbin
                      assemble a text program
  disasm IN.fbin [-o OUT.fasm]
                      disassemble a binary program (to standard output by default)
  config check CONFIG check a machine config and print its shape
  isa list            one line per op of the instruction set
  isa doc [-o FILE]   the op reference in Markdown (isa/README.md is its output)
  verify --unit matrix|vector|sort [--vectors N] [--seed S] [--size RxC] [--lanes L]
         [--width W] [--wave FILE] [--coverage [--coverage-out DIR]]
                      directed and N random vectors through the RTL unit and the reference:
                      results bit for bit, cycles against the model's formula; exit 1 on the
                      first mismatch (--wave writes a VCD of it); --coverage runs the
                      coverage-instrumented build, writes DIR/coverage.dat (default
                      results/runs/verify-UNIT-coverage) and prints points covered per kind
  help                this text
)";

po::variables_map parse(const std::string& command, const std::vector<std::string>& args,
                        const po::options_description& opts,
                        const po::positional_options_description& pos) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(fmt::format("fracsim {}: {} (see 'fracsim help')", command, e.what()));
  }
  return vm;
}

int cmd_run(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string config, workload, mode_text, out_dir, trace_path, backend;
  opts.add_options()("machine,m", po::value(&config)->required(), "machine config")(
      "workload,w", po::value(&workload)->required(), "program")(
      "mode", po::value(&mode_text)->default_value("timing"), "functional or timing")(
      "out", po::value(&out_dir), "output directory")(
      "no-fold", po::bool_switch(), "simulate every node")("trace", po::value(&trace_path),
                                                           "trace-event JSON to write")(
      "backend", po::value(&backend), "leaf backend: model or rtl (overrides the config)");
  const po::variables_map vm = parse("run", args, opts, {});
  sim::Mode mode;
  if (mode_text == "functional")
    mode = sim::Mode::functional;
  else if (mode_text == "timing")
    mode = sim::Mode::timing;
  else
    throw ConfigError(
        fmt::format("fracsim run: --mode: expected functional or timing, got '{}'", mode_text));

  const isa::OpTable& ops = isa::OpTable::builtin();
  if (!backend.empty() && backend != "model" && backend != "rtl")
    throw ConfigError(
        fmt::format("fracsim run: --backend: expected model or rtl, got '{}'", backend));
  sim::MachineSpec spec = sim::load_machine_spec(config);
  if (!backend.empty()) {
    // The flag wins over the config's leaf.backend; the effective config says so.
    spec.levels.back().backend = backend;
    nlohmann::ordered_json& levels = spec.effective["levels"];
    if (levels.is_array() && !levels.empty() && levels.back().contains("leaf")) {
      nlohmann::ordered_json& leaf = levels.back()["leaf"];
      leaf["backend"] = backend;
      if (leaf.contains("defaulted") && leaf["defaulted"].is_array()) {
        nlohmann::ordered_json given = nlohmann::ordered_json::array();
        for (const auto& k : leaf["defaulted"])
          if (k != "backend") given.push_back(k);
        leaf["defaulted"] = given;
      }
    }
  }
  const isa::Program program = cli::load_program(workload, ops);
  if (out_dir.empty())
    out_dir = fmt::format("results/runs/{}-{}-{}", program.name, spec.name, mode_text);

  sim::SimOptions options;
  options.fold = !vm["no-fold"].as<bool>();
  sim::TraceRecorder trace;
  if (!trace_path.empty()) options.trace = &trace;
  // Progress of long runs, on a terminal only, at most a few times a second.
  const auto t0 = std::chrono::steady_clock::now();
  auto last = t0;
  bool shown = false;
  if (isatty(STDERR_FILENO))
    options.progress = [&](const sim::Progress& p) {
      const auto now = std::chrono::steady_clock::now();
      if (p.done < p.total && now - last < std::chrono::milliseconds(200)) return;
      last = now;
      shown = true;
      std::cerr << fmt::format("\r  {} / {} instructions, {:.3f} us simulated", p.done, p.total,
                               static_cast<double>(p.picoseconds) * 1e-6)
                << std::flush;
    };
  sim::RunResult run;
  try {
    run = sim::simulate(spec, ops, program, mode, options);
  } catch (...) {
    if (shown) std::cerr << "\n";
    throw;
  }
  if (shown) std::cerr << "\r\033[K" << std::flush;
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!trace_path.empty()) cli::write_file_atomically(trace_path, trace.json());
  std::vector<sim::OutputCheck> outputs;
  if (mode == sim::Mode::functional) outputs = sim::check_outputs(program, ops, run.memory);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw ConfigError(fmt::format("{}: cannot create directory ({})", out_dir, ec.message()));
  const std::string stats_path = (std::filesystem::path(out_dir) / "stats.json").string();
  cli::write_file_atomically(stats_path, sim::stats_text(spec, program, run, outputs));

  std::cout << sim::summary_text(spec, program, run, outputs);
  // Microseconds: a folded run of thousands of leaves takes a few milliseconds.
  std::cout << fmt::format("  wall time     {:.6f} s\n  stats         {}\n", wall, stats_path);
  for (const sim::OutputCheck& c : outputs)
    if (!c.match()) return 1;
  if (mode == sim::Mode::functional) std::cout << "outputs match the reference\n";
  return 0;
}

int cmd_compile(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string workload, out, asm_out;
  opts.add_options()("workload", po::value(&workload)->required(), "workload")(
      "output,o", po::value(&out)->required(), ".fbin to write")("asm", po::value(&asm_out),
                                                                 ".fasm to write too");
  po::positional_options_description pos;
  pos.add("workload", 1);
  parse("compile", args, opts, pos);
  const isa::OpTable& ops = isa::OpTable::builtin();
  compiler::Compilation c = compiler::compile_with_plan(cli::load_workload_file(workload), ops);
  const std::vector<uint8_t> bytes = isa::encode_program(c.program);
  cli::write_file_atomically(out, std::string(bytes.begin(), bytes.end()));
  if (!asm_out.empty()) cli::write_file_atomically(asm_out, isa::disassemble(c.program, ops));
  std::cout << fmt::format("{}: {} instructions, root-memory footprint {} bytes -> {}\n",
                           c.program.name, c.program.instructions.size(), c.program.footprint, out);
  return 0;
}

int cmd_asm(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string in, out;
  opts.add_options()("input", po::value(&in)->required(), ".fasm or -")(
      "output,o", po::value(&out)->required(), ".fbin to write");
  po::positional_options_description pos;
  pos.add("input", 1);
  parse("asm", args, opts, pos);
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = cli::load_program(in == "-" ? "-" : in, ops);
  const std::vector<uint8_t> bytes = isa::encode_program(p);
  cli::write_file_atomically(out, std::string(bytes.begin(), bytes.end()));
  return 0;
}

int cmd_disasm(const std::vector<std::string>& args) {
  po::options_description opts;
  std::string in, out;
  opts.add_options()("input", po::value(&in)->required(), ".fbin")(
      "output,o", po::value(&out), ".fasm to write (default: standard output)");
  po::positional_options_description pos;
  pos.add("input", 1);
  parse("disasm", args, opts, pos);
  const isa::OpTable& ops = isa::OpTable::builtin();
  const isa::Program p = cli::load_program(in, ops);
  const std::string text = isa::disassemble(p, ops);
  if (out.empty())
    std::cout << text;
  else
    cli::write_file_atomically(out, text);
  return 0;
}

int cmd_config(const std::vector<std::string>& args) {
  if (args.size() != 2 || args[0] != "check")
    throw ConfigError("fracsim config: usage: fracsim config check CONFIG");
  const sim::MachineSpec spec = sim::load_machine_spec(args[1]);
  std::cout << fmt::format("{}: machine {}: {} levels below the root, {} leaves\n", args[1],
                           spec.name, spec.levels.size(), spec.leaves());
  std::cout << fmt::format(
      "  root   memory {} at {}\n",
      sim::format_quantity(spec.root.memory.capacity, sim::QuantityKind::bytes),
      sim::format_quantity(spec.root.memory.bandwidth, sim::QuantityKind::bandwidth));
  for (size_t l = 0; l < spec.levels.size(); ++l) {
    const sim::LevelSpec& ls = spec.levels[l];
    std::cout << fmt::format(
        "  {:<6} x{:<4} ({} nodes) memory {}, link {}{}\n", ls.name, ls.fanout, spec.nodes_at(l),
        sim::format_quantity(ls.memory.capacity, sim::QuantityKind::bytes),
        sim::format_quantity(ls.link.bandwidth, sim::QuantityKind::bandwidth),
        ls.is_leaf ? fmt::format(", matrix {}x{}, vector {} lanes", ls.matrix.rows, ls.matrix.cols,
                                 ls.vector.lanes)
                   : "");
  }
  return 0;
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "run") return cmd_run(args);
  if (command == "compile") return cmd_compile(args);
  if (command == "asm") return cmd_asm(args);
  if (command == "disasm") return cmd_disasm(args);
  if (command == "config") return cmd_config(args);
  if (command == "isa") return cli::cmd_isa(args);
  if (command == "verify") return cli::cmd_verify(args);
  if (command == "help" || command == "--help" || command == "-h") {
    std::cout << kUsage;
    return 0;
  }
  throw ConfigError(fmt::format("fracsim: unknown command '{}' (see 'fracsim help')", command));
}

}  // namespace

// libsystemc provides main() and calls sc_main() from it.
// libsystemc prints its banner before calling sc_main() unless told not to, so say so before
// main() runs.
static const bool kQuietSystemC = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0;

extern "C" int sc_main(int argc, char** argv) {
  try {
    rtl::register_backends();
    return dispatch(argc, argv);
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what()
              << "\nThis is a bug in fracsim; please report it with the command and its inputs.\n";
    return 3;
  }
}
