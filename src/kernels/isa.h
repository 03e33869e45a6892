// Runtime choice of the instruction set the kernels use. The best ISA the
// CPU supports is picked once on first use (CPUID, util/cpu_features.h;
// on AArch64 the auxiliary vector's HWCAP bits);
// tests and benchmarks may force another with SetIsa or ask for a given
// ISA's table with GetKernels.
//
// Thread safety: all functions are thread-safe. SetIsa swaps the active table
// atomically; kernels already running keep the table they started with.
#pragma once

#include <string_view>
#include <vector>

#include "kernels/kernel_table.h"

namespace weft::kernels {

enum class Isa : int {
  kScalar = 0,  // portable C++ (every CPU; the reference twins)
  kAvx2 = 1,    // AVX2 + FMA + F16C
  kAvx512 = 2,  // AVX-512 F/BW/VL/DQ + VNNI (BF16 used when present)
  kNeon = 3,    // AArch64 Advanced SIMD (SDOT used when present)
  kAmx = 4,     // kAvx512 + AMX-INT8 tiles for products of several rows
};

std::string_view IsaName(Isa isa);  // "scalar", "avx2", "avx512", "neon", "amx"
// Parses "scalar", "avx2", "avx512", "neon", "amx"; false when unknown.
bool ParseIsa(std::string_view name, Isa* isa);

// Whether this build has the ISA and this CPU (and OS) can run it.
bool IsaSupported(Isa isa);
// The supported ISAs, scalar first, the fastest last.
std::vector<Isa> SupportedIsas();
// The fastest supported ISA.
Isa BestIsa();

// The ISA in use (BestIsa() until SetIsa is called).
Isa ActiveIsa();
// Forces `isa`. REQUIRES: IsaSupported(isa).
void SetIsa(Isa isa);

// The active table.
const KernelTable& Kernels();
// The table of `isa`. REQUIRES: IsaSupported(isa).
const KernelTable& GetKernels(Isa isa);

}  // namespace weft::kernels
