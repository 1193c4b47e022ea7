// What a user may ask of the compiler beyond the workload itself.
#pragma once

#include <cstdint>
#include <optional>

namespace fracsim::compiler {

struct CompileOptions {
  // The workload at this batch: the leading dim of every input that carries the batch is set
  // to it and shape inference carries it through (batch.h); nullopt: the workload as written.
  std::optional<int64_t> batch;
};

}  // namespace fracsim::compiler
