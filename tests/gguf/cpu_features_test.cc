// CPU feature detection: consistent with itself and with what the compiler
// was told (a binary built with -mavx2 only runs where AVX2 works).
#include "util/cpu_features.h"

#include <gtest/gtest.h>

namespace weft {
namespace {

TEST(CpuFeatures, Consistent) {
  const CpuFeatures& f = GetCpuFeatures();
  EXPECT_GE(f.logical_cores, 1);
  EXPECT_EQ(&f, &GetCpuFeatures());  // cached
  // AVX-family flags need OS support for the YMM/ZMM state.
  if (f.avx || f.avx2 || f.fma || f.f16c || f.avx_vnni) {
    EXPECT_TRUE(f.os_avx);
  }
  if (f.avx512f || f.avx512bw || f.avx512vl || f.avx512dq || f.avx512_vnni ||
      f.avx512_bf16) {
    EXPECT_TRUE(f.os_avx512);
  }
  if (f.os_avx512) {
    EXPECT_TRUE(f.os_avx);
  }
  if (f.amx_tile || f.amx_int8) {
    EXPECT_TRUE(f.os_amx);
  }
  if (f.os_amx) {
    EXPECT_TRUE(f.os_avx512);
  }
  EXPECT_EQ(f.All().size(), 14u);
  EXPECT_LE(f.Names().size(), f.All().size());
  CpuFeatures again = DetectCpuFeatures();
  EXPECT_EQ(again.Names(), f.Names());
  EXPECT_EQ(again.model_name, f.model_name);
#if defined(__x86_64__)
  EXPECT_EQ(f.arch, "x86_64");
  EXPECT_TRUE(f.sse42);  // every x86-64 machine this project targets
#else
  EXPECT_TRUE(f.Names().empty());
#endif
#ifdef __AVX2__
  EXPECT_TRUE(f.avx2);
#endif
#ifdef __AVX512F__
  EXPECT_TRUE(f.avx512f);
#endif
}

}  // namespace
}  // namespace weft
