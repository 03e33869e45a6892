// NEON x8 tiles for CPUs with SDOT (ARMv8.2 dotprod; neon_x8_impl.h): one
// SDOT adds 4 rows' 4-element dots, one row per int32 lane, which is the
// x8 layout's order. Compiled with +dotprod: reached only through the
// table isa.cc builds when HWCAP_ASIMDDP is set.
#include <arm_neon.h>

#include "kernels/neon_internal.h"
#include "kernels/neon_x8_impl.h"

namespace weft::kernels::neon {
namespace {

struct SdotDot {
  using Acc = int32x4_t;
  static Acc Zero() { return vdupq_n_s32(0); }
  static void Add(Acc* s, int8x16_t w, int8x16_t x) {
    *s = vdotq_s32(*s, w, x);
  }
  static int32x4_t Sum(const Acc& s) { return s; }
};

}  // namespace

void FillX8Dotprod(KernelTable* t) { FillTiles<SdotDot>(t); }

}  // namespace weft::kernels::neon
