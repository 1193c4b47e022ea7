// The committed op reference (isa/ops/README.md) is what `fracsim isa doc` generates now.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "isa/op_doc.h"

TEST_CASE("isa/ops/README.md is the current output of fracsim isa doc") {
  std::ifstream in(std::string(FRACSIM_SOURCE_DIR) + "/isa/ops/README.md");
  std::stringstream committed;
  committed << in.rdbuf();
  const std::string now = fracsim::isa::op_reference_markdown(fracsim::isa::OpTable::builtin());
  CHECK_MESSAGE(
      committed.str() == now,
      "isa/ops/README.md is stale; regenerate it with: build/fracsim isa doc -o isa/ops/README.md");
}

TEST_CASE("isa list names every op once, with its opcode and unit") {
  const std::string list = fracsim::isa::op_list(fracsim::isa::OpTable::builtin());
  CHECK(list.find("0x0001  matmul       matrix    out[B,M,N] = a[B,M,K] x b[B,K,N]") == 0);
  CHECK(list.find("0x0100  softmax      extension ") != std::string::npos);
  size_t lines = 0;
  for (char c : list) lines += c == '\n';
  CHECK(lines == fracsim::isa::OpTable::builtin().ops().size());
}
