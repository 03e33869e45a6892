// kernels/x8_vnni_impl.h compiled for an AVX2 CPU, with vpdpbusd (AVX512_VNNI
// + AVX512VL) emulated by SIMDe: everything else in the tile is native AVX2.
// Compiled with -mavx2 -mfma -mf16c (tests/kernels/CMakeLists.txt); call
// only on CPUs with AVX2. Used by x8_vnni_emulated_test.cc.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include "tests/kernels/x8_vnni_emulated_tile.h"

#include <immintrin.h>
#include <simde/x86/avx512/dpbusd.h>

#include "kernels/x8_vnni_impl.h"

namespace weft::kernels::testing {

TileFn EmulatedVnniQ8_0Tile() { return x8_vnni::TileNQ8_0; }

int EmulatedVnniQ8_0Cols() { return x8_vnni::kCols; }

}  // namespace weft::kernels::testing
