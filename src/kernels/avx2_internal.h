// Entry points of the x86 kernel files. Plain function declarations only:
// safe to include anywhere, but the functions may only be called on CPUs
// with the ISA. The tables themselves are built in isa.cc (a file without
// ISA flags) so that no KernelTable member function is ever compiled with
// -mavx*.
#pragma once

#include "kernels/kernel_table.h"

namespace weft::kernels {
namespace avx2 {

// Overwrite the entries of `t` they vectorise.
void FillFloatAndLegacy(KernelTable* t);  // avx2_matmul.cc
void FillKQuants(KernelTable* t);         // avx2_kquants.cc
void FillLegacyTiles(KernelTable* t);     // avx2_legacy_tiles.cc (after FillFloatAndLegacy)
void FillOps(KernelTable* t);             // avx2_ops.cc
void FillAttention(KernelTable* t);       // avx2_attention.cc
void FillAttentionQ8(KernelTable* t);     // avx2_attention_q8.cc (FillAttention calls)
void FillPeak(KernelTable* t);            // avx2_peak.cc

}  // namespace avx2

namespace avx512 {

// avx512_kernels.cc; `bf16`: the CPU has AVX512_BF16.
void Fill(KernelTable* t, bool bf16);
// avx512_mxfp4.cc: the MXFP4 entry (called by Fill, after the AVX2 one is set).
void FillMXFP4(KernelTable* t);
// avx512_attention.cc: the score and weighted-sum kernels (called by Fill).
void FillAttention(KernelTable* t);
// avx512_attention_q8.cc: their Q8_0 KV entries (called by FillAttention).
void FillAttentionQ8(KernelTable* t);
// avx512_panels.cc: the panel path of the x8 Q4_0/Q5_0/Q8_0 entries (called
// by Fill, after it set them).
void FillPanels(KernelTable* t);
// avx512_pair_tiles.cc: the pair tiles of the x8 Q4_0/Q5_0/Q8_0 entries (called
// by Fill, after it set them).
void FillPairTiles(KernelTable* t);
// avx512_pair_kquants.cc: the pair tiles of the x8 Q4_K, Q5_K, Q6_K, Q3_K
// and IQ4_XS entries (called by Fill, after it set them).
void FillKQuantPairTiles(KernelTable* t);

}  // namespace avx512

namespace amx {

// amx_panels.cc: the AMX panel path of the x8 Q4_0, Q5_0, Q8_0, Q4_1, Q5_1,
// IQ4_NL entries (over an AVX-512 table's); calls FillKQuantPanels.
void FillPanels(KernelTable* t);
// amx_kquants.cc: the same for IQ4_XS; calls FillQ45KPanels and
// FillQ6KPanels.
void FillKQuantPanels(KernelTable* t);
// amx_q45k.cc: the same for Q4_K and Q5_K.
void FillQ45KPanels(KernelTable* t);
// amx_q6k.cc: the same for Q6_K and Q3_K.
void FillQ6KPanels(KernelTable* t);

}  // namespace amx
}  // namespace weft::kernels
