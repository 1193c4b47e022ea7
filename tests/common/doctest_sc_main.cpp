// The entry point of test executables that link SystemC: libsystemc owns main() and calls
// sc_main(), which runs doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdlib>

#include "tests/common/doctest_guard.h"

DOCTEST_REGISTER_LISTENER("fracsim_counting", 1, fracsim::test::CountingListener);

// libsystemc prints its banner before calling sc_main() unless told not to, so say so before
// main() runs.
static const bool kQuietSystemC = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1) == 0;

extern "C" int sc_main(int argc, char** argv) { return fracsim::test::run_tests(argc, argv); }
