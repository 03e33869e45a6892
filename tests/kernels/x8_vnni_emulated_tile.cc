// kernels/x8_vnni_impl.h compiled for an AVX2 CPU, with vpdpbusd (AVX512_VNNI
// + AVX512VL) emulated by SIMDe: everything else in the tile is native AVX2.
// Compiled with -mavx2 -mfma -mf16c (tests/kernels/CMakeLists.txt); call
// only on CPUs with AVX2. Used by x8_vnni_emulated_test.cc and the golden
// test (tests/model).
#define SIMDE_ENABLE_NATIVE_ALIASES
#include "tests/kernels/x8_vnni_emulated_tile.h"

#include <immintrin.h>
#include <simde/x86/avx512/dpbusd.h>

#include "kernels/isa.h"
#include "kernels/x8_vnni_impl.h"

namespace weft::kernels::testing {

const KernelTable& EmulatedVnniTable() {
  static const KernelTable table = [] {
    KernelTable t = GetKernels(Isa::kAvx2);
    t.name = "avx2+emulated-vnni";
    MatMulKernel& k = t.matmul_x8[static_cast<int>(WeightFormat::kQ8_0)];
    k.tile = x8_vnni::TileNQ8_0;
    k.tile_cols = x8_vnni::kCols;
    return t;
  }();
  return table;
}

}  // namespace weft::kernels::testing
