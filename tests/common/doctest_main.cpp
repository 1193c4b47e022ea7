// The entry point of every fracsim test executable.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "tests/common/doctest_guard.h"

DOCTEST_REGISTER_LISTENER("fracsim_counting", 1, fracsim::test::CountingListener);

int main(int argc, char** argv) { return fracsim::test::run_tests(argc, argv); }
