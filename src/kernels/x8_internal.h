// Fill functions of the x8-layout kernels (packed_x8.h). Plain declarations
// only; the AVX2 one may only be called on CPUs with AVX2 (isa.cc).
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels {

// scalar_x8.cc: the reference x8 tiles, reading activations made by
// `quantize_q8x32` (the table's Q8x32 conversion).
void FillScalarX8(KernelTable* t, QuantizeActFn quantize_q8x32);

namespace avx2 {
// avx2_x8.cc: overwrites the x8 tiles (after FillFloatAndLegacy and
// FillKQuants, whose activation conversions they reuse).
void FillX8(KernelTable* t);
}  // namespace avx2

}  // namespace weft::kernels
