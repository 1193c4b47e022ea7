// The compiler's options of tests that derive the plain lowering by hand: one instruction per
// layer, no epilogue fusion and no batchnorm folding (tests/compiler/test_fusion.cpp derives
// those passes, which are on by default).
#pragma once

#include "compiler/compile_options.h"

namespace fracsim::testing {

inline compiler::CompileOptions unfused() {
  compiler::CompileOptions o;
  o.fuse = false;
  o.fold_batchnorm = false;
  return o;
}

}  // namespace fracsim::testing
