// The kernel tables the tests run their checks on (kernels_test, the golden
// tests).
#pragma once

#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_table.h"
#ifdef WEFT_EMULATED_AVX512
#include "tests/kernels/avx512_emulated.h"
#endif

namespace weft::kernels::testing {

// Every ISA this CPU supports (scalar first) and, in builds with SIMDe on a
// CPU with AVX2 but not AVX-512, the AVX-512 table with AVX-512 emulated
// (avx512_emulated.h).
inline std::vector<const KernelTable*> TablesUnderTest() {
  std::vector<const KernelTable*> tables;
  for (Isa isa : SupportedIsas()) tables.push_back(&GetKernels(isa));
#ifdef WEFT_EMULATED_AVX512
  if (IsaSupported(Isa::kAvx2) && !IsaSupported(Isa::kAvx512)) {
    tables.push_back(&EmulatedAvx512Table());
  }
#endif
  return tables;
}

}  // namespace weft::kernels::testing
