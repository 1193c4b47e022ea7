#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vvector_unit_bug.h"
#include "rtl/vector_unit_bug.h"
#include "rtl/verilated_vector_unit.h"

namespace fracsim::rtl {

std::unique_ptr<VectorUnitPort> make_buggy_vector_unit() {
  return std::make_unique<VerilatedVectorUnit<Vvector_unit_bug, true>>(8);
}

}  // namespace fracsim::rtl
