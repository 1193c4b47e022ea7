// The fracsim command. Exit codes: 0 ok, 1 a functional run's outputs differ from the
// reference, 2 bad input (config, workload, program, flags, a limit), 3 internal error (a bug),
// 130 and 143 stopped by SIGINT and SIGTERM (interrupt.h).
// The commands are listed in command.cpp; each lives in a file of its own.
#include <cstdlib>
#include <exception>
#include <iostream>

#include "isa/error.h"
#include "rtl/rtl_backend.h"
#include "sim/cli/command.h"
#include "sim/cli/interrupt.h"

// jemalloc's options, read at its start (a MALLOC_CONF variable still overrides them): back the
// heap with transparent huge pages where the kernel offers them (madvise mode). A run touches
// its heap for the first time as it goes, and on 4 KiB pages every first touch is a page fault:
// the MLP on the 4096-leaf machine simulates in 1.8 ms instead of 2.4 ms.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface
const char* malloc_conf = "thp:always,metadata_thp:auto";
}

// libsystemc provides main() and calls sc_main() from it.
// libsystemc prints its banner before calling sc_main() unless told not to, so say so before
// main() runs.
static const bool kQuietSystemC = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0;

extern "C" int sc_main(int argc, char** argv) {
  using namespace fracsim;
  try {
    cli::install_interrupt_handlers();
    rtl::register_backends();
    return cli::dispatch(argc, argv);
  } catch (const cli::Interrupted& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 128 + e.signal();
  } catch (const ConfigError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what()
              << "\nThis is a bug in fracsim; please report it with the command and its inputs.\n";
    return 3;
  }
}
