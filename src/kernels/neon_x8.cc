// NEON x8 tiles for every AArch64 CPU (neon_x8_impl.h): 4 rows' dots by
// SMULL (8 int8 products to int16, 2 rows at a time) and SADALP (adjacent
// pairs into int32), kept in pair form over a block and folded by ADDP.
#include <arm_neon.h>

#include "kernels/neon_internal.h"
#include "kernels/neon_x8_impl.h"

namespace weft::kernels::neon {
namespace {

struct SmullDot {
  // Rows 0-1 and 2-3: lane 2r + h holds half h of row r's dot.
  struct Acc {
    int32x4_t r01, r23;
  };
  static Acc Zero() { return {vdupq_n_s32(0), vdupq_n_s32(0)}; }
  static void Add(Acc* s, int8x16_t w, int8x16_t x) {
    // |code * activation| <= 128 * 128: int16 products are exact.
    s->r01 = vpadalq_s16(s->r01, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
    s->r23 = vpadalq_s16(s->r23, vmull_high_s8(w, x));
  }
  static int32x4_t Sum(const Acc& s) { return vpaddq_s32(s.r01, s.r23); }
};

}  // namespace

void FillX8(KernelTable* t) { FillTiles<SmullDot>(t); }

}  // namespace weft::kernels::neon
