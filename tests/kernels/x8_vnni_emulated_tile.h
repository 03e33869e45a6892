// The AVX-512 table's VNNI Q8_0 x8 tile built for AVX2 CPUs with vpdpbusd
// emulated (x8_vnni_emulated_tile.cc).
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels::testing {

// The AVX2 table with that tile as its Q8_0 x8 entry, as the AVX-512 table
// has it (call only where the CPU has AVX2).
const KernelTable& EmulatedVnniTable();

}  // namespace weft::kernels::testing
