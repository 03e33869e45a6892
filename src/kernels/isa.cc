#include "kernels/isa.h"

#include <atomic>

#include "kernels/avx2_internal.h"
#include "kernels/neon_internal.h"
#include "kernels/x8_internal.h"
#include "util/check.h"
#include "util/cpu_features.h"
#include "util/enum_name.h"

#if defined(WEFT_KERNELS_X86) && defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#ifdef WEFT_KERNELS_NEON
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace weft::kernels {

void SetMatMul(KernelTable* t, WeightFormat f, ActFormat act, QuantizeActFn quantize, DotFn dot) {
  t->matmul[static_cast<int>(f)] = MatMulKernel{act, quantize, dot};
}
namespace {

std::atomic<const KernelTable*> g_active{nullptr};
std::atomic<int> g_active_isa{-1};

#ifdef WEFT_KERNELS_X86
bool CpuHasAvx2() {
  const CpuFeatures& f = GetCpuFeatures();
  return f.os_avx && f.avx && f.avx2 && f.fma && f.f16c;
}

bool CpuHasAvx512() {
  const CpuFeatures& f = GetCpuFeatures();
  return CpuHasAvx2() && f.os_avx512 && f.avx512f && f.avx512bw &&
         f.avx512vl && f.avx512dq && f.avx512_vnni;
}

// Asks Linux for the AMX tile data state (arch_prctl
// ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA = 18), once per process: without
// it the first tile instruction faults. Granted for the whole process.
bool RequestAmx() {
#ifdef __linux__
  static const bool granted = [] {
    constexpr int kArchReqXcompPerm = 0x1023;
    constexpr int kXfeatureXtiledata = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return granted;
#else
  return false;
#endif
}

bool CpuHasAmx() {
  const CpuFeatures& f = GetCpuFeatures();
  return CpuHasAvx512() && f.os_amx && f.amx_tile && f.amx_int8 && RequestAmx();
}
#endif

#ifdef WEFT_KERNELS_NEON
bool CpuHasDotprod() {
  static const bool has = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
  return has;
}
#endif

}  // namespace

#ifdef WEFT_KERNELS_NEON
const KernelTable* NeonKernelTable(bool dotprod) {
  static const KernelTable with_sdot = [] {
    KernelTable t = *ScalarKernelTable();
    t.name = "neon";
    neon::FillX8Dotprod(&t);
    return t;
  }();
  static const KernelTable without_sdot = [] {
    KernelTable t = *ScalarKernelTable();
    t.name = "neon";
    neon::FillX8(&t);
    return t;
  }();
  return dotprod ? &with_sdot : &without_sdot;
}
#endif

#ifdef WEFT_KERNELS_X86
// Built here, in a file compiled without ISA flags: the x86 files only
// overwrite entries of a table passed to them.
const KernelTable* Avx2KernelTable() {
  static const KernelTable table = [] {
    KernelTable t = *ScalarKernelTable();
    t.name = "avx2";
    avx2::FillFloatAndLegacy(&t);
    avx2::FillLegacyTiles(&t);
    avx2::FillKQuants(&t);
    avx2::FillX8(&t);  // reads the Q8_0 and Q4_K activation conversions
    avx2::FillOps(&t);
    avx2::FillAttention(&t);
    avx2::FillPeak(&t);
    return t;
  }();
  return &table;
}

const KernelTable* Avx512KernelTable(bool has_bf16) {
  static const KernelTable with_bf16 = [] {
    KernelTable t = *Avx2KernelTable();
    t.name = "avx512";
    avx512::Fill(&t, true);
    return t;
  }();
  static const KernelTable without_bf16 = [] {
    KernelTable t = *Avx2KernelTable();
    t.name = "avx512";
    avx512::Fill(&t, false);
    return t;
  }();
  return has_bf16 ? &with_bf16 : &without_bf16;
}

const KernelTable* AmxKernelTable(bool has_bf16) {
  static const KernelTable with_bf16 = [] {
    KernelTable t = *Avx512KernelTable(true);
    t.name = "amx";
    amx::FillPanels(&t);
    return t;
  }();
  static const KernelTable without_bf16 = [] {
    KernelTable t = *Avx512KernelTable(false);
    t.name = "amx";
    amx::FillPanels(&t);
    return t;
  }();
  return has_bf16 ? &with_bf16 : &without_bf16;
}
#endif

std::string_view IsaName(Isa isa) {
  static constexpr std::string_view kNames[] = {"scalar", "avx2", "avx512",
                                                "neon", "amx"};
  return EnumName<Isa::kAmx>(isa, kNames, "unknown");
}

bool ParseIsa(std::string_view name, Isa* isa) {
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx, Isa::kNeon}) {
    if (name == IsaName(i)) {
      *isa = i;
      return true;
    }
  }
  return false;
}

bool IsaSupported(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return true;
#ifdef WEFT_KERNELS_X86
    case Isa::kAvx2: return CpuHasAvx2();
    case Isa::kAvx512: return CpuHasAvx512();
    case Isa::kAmx: return CpuHasAmx();
#else
    case Isa::kAvx2:
    case Isa::kAvx512:
    case Isa::kAmx: return false;
#endif
#ifdef WEFT_KERNELS_NEON
    case Isa::kNeon: return true;  // Advanced SIMD is part of AArch64
#else
    case Isa::kNeon: return false;
#endif
  }
  return false;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> out;
  for (Isa i : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kAmx, Isa::kNeon}) {
    if (IsaSupported(i)) out.push_back(i);
  }
  return out;
}

Isa BestIsa() {
  static const Isa best = SupportedIsas().back();
  return best;
}

const KernelTable& GetKernels(Isa isa) {
  CHECK(IsaSupported(isa)) << "ISA " << IsaName(isa) << " is not supported";
  switch (isa) {
    case Isa::kScalar: return *ScalarKernelTable();
#ifdef WEFT_KERNELS_X86
    case Isa::kAvx2: return *Avx2KernelTable();
    case Isa::kAvx512: return *Avx512KernelTable(GetCpuFeatures().avx512_bf16);
    case Isa::kAmx: return *AmxKernelTable(GetCpuFeatures().avx512_bf16);
#endif
#ifdef WEFT_KERNELS_NEON
    case Isa::kNeon: return *NeonKernelTable(CpuHasDotprod());
#endif
    default: break;
  }
  return *ScalarKernelTable();
}

Isa ActiveIsa() {
  int i = g_active_isa.load(std::memory_order_acquire);
  return i < 0 ? BestIsa() : static_cast<Isa>(i);
}

void SetIsa(Isa isa) {
  const KernelTable* t = &GetKernels(isa);
  g_active.store(t, std::memory_order_release);
  g_active_isa.store(static_cast<int>(isa), std::memory_order_release);
}

const KernelTable& Kernels() {
  const KernelTable* t = g_active.load(std::memory_order_acquire);
  if (t != nullptr) return *t;
  const KernelTable* best = &GetKernels(BestIsa());
  const KernelTable* expected = nullptr;
  g_active.compare_exchange_strong(expected, best, std::memory_order_acq_rel);
  return *g_active.load(std::memory_order_acquire);
}

}  // namespace weft::kernels
