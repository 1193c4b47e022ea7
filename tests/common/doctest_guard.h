// Shared by both test entry points: a run that selects test cases by name and runs none of them
// fails, so that a CTest entry whose name no longer matches its test case (a name holding a
// character CTest or doctest split on) cannot pass without testing anything.
#pragma once

#include <cstdio>
#include <cstring>

#include <doctest/doctest.h>

namespace fracsim::test {

struct CountingListener : doctest::IReporter {
  static inline int started = 0;
  explicit CountingListener(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData&) override { ++started; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats&) override {}
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}
};

// Runs doctest; 1 when a --test-case filter selected nothing.
inline int run_tests(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--test-case=", 12) == 0 || std::strncmp(argv[i], "-tc=", 4) == 0) {
      if (CountingListener::started == 0) {
        std::fprintf(stderr, "no test case matches %s\n", argv[i]);
        return 1;
      }
    }
  }
  return result;
}

}  // namespace fracsim::test
