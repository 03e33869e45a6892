// Entry points of the AArch64 kernel files. Plain declarations only; the
// tables are built in isa.cc. neon_x8.cc needs nothing beyond ARMv8-A's
// Advanced SIMD (every AArch64 CPU); neon_x8_dotprod.cc is compiled with
// +dotprod and may only be called where the CPU has SDOT (HWCAP_ASIMDDP).
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels::neon {

// Overwrite the x8 tiles of Q4_0, Q5_0, Q8_0, Q4_K and Q6_K in `t` (Q5_K
// keeps the scalar twin's).
void FillX8(KernelTable* t);         // neon_x8.cc: SMULL + SADALP
void FillX8Dotprod(KernelTable* t);  // neon_x8_dotprod.cc: SDOT

}  // namespace weft::kernels::neon
