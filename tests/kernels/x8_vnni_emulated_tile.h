// The AVX-512 table's VNNI Q8_0 x8 tile built for AVX2 CPUs with vpdpbusd
// emulated (x8_vnni_emulated_tile.cc).
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels::testing {

// The tile (a TileFn: call only where the CPU has AVX2) and its columns.
TileFn EmulatedVnniQ8_0Tile();
int EmulatedVnniQ8_0Cols();

}  // namespace weft::kernels::testing
