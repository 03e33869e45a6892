// The AVX-512 kernel table (src/kernels/avx512_kernels.cc) built for AVX2
// CPUs, with every AVX-512 intrinsic emulated (SIMDe, plus the few SIMDe 0.7
// lacks, in avx512_emulated.cc): the same source, so CPUs without AVX-512
// can run the AVX-512 table's kernels through the same checks as the
// native tables. Only its results are meaningful, not its speed.
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels::testing {

// The AVX2 table with avx512::Fill's entries (AVX512_BF16 included), as
// GetKernels(Isa::kAvx512) builds it on a CPU with AVX512_BF16; named
// "avx512-emulated". Call only where the CPU has AVX2.
const KernelTable& EmulatedAvx512Table();

}  // namespace weft::kernels::testing
