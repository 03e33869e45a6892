#include "util/cpu_features.h"

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define WEFT_X86 1
#endif

namespace weft {
namespace {

#ifdef WEFT_X86
struct Regs {
  uint32_t eax = 0, ebx = 0, ecx = 0, edx = 0;
};

Regs Cpuid(uint32_t leaf, uint32_t subleaf) {
  Regs r;
  __cpuid_count(leaf, subleaf, r.eax, r.ebx, r.ecx, r.edx);
  return r;
}

// XCR0: which register states the OS saves on context switch.
uint64_t Xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool Bit(uint32_t reg, int bit) { return ((reg >> bit) & 1u) != 0; }

void DetectX86(CpuFeatures* f) {
  f->arch = "x86_64";
  uint32_t max_leaf = Cpuid(0, 0).eax;
  if (max_leaf < 1) return;
  Regs l1 = Cpuid(1, 0);
  f->sse42 = Bit(l1.ecx, 20);
  bool osxsave = Bit(l1.ecx, 27);
  uint64_t xcr0 = osxsave ? Xgetbv0() : 0;
  f->os_avx = osxsave && (xcr0 & 0x6) == 0x6;               // SSE + AVX state
  f->os_avx512 = f->os_avx && (xcr0 & 0xe0) == 0xe0;        // opmask, ZMM
  f->os_amx = f->os_avx512 && (xcr0 & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  if (f->os_avx) {
    f->avx = Bit(l1.ecx, 28);
    f->fma = Bit(l1.ecx, 12);
    f->f16c = Bit(l1.ecx, 29);
  }
  if (max_leaf >= 7) {
    Regs l7 = Cpuid(7, 0);
    Regs l7s1 = Cpuid(7, 1);
    if (f->os_avx) {
      f->avx2 = Bit(l7.ebx, 5);
      f->avx_vnni = Bit(l7s1.eax, 4);
    }
    if (f->os_avx512) {
      f->avx512f = Bit(l7.ebx, 16);
      f->avx512dq = Bit(l7.ebx, 17);
      f->avx512bw = Bit(l7.ebx, 30);
      f->avx512vl = Bit(l7.ebx, 31);
      f->avx512_vnni = Bit(l7.ecx, 11);
      f->avx512_bf16 = Bit(l7s1.eax, 5);
    }
    if (f->os_amx) {
      f->amx_tile = Bit(l7.edx, 24);
      f->amx_int8 = Bit(l7.edx, 25);
    }
  }
  uint32_t max_ext = Cpuid(0x80000000u, 0).eax;
  if (max_ext >= 0x80000004u) {
    char brand[49] = {};
    for (uint32_t i = 0; i < 3; ++i) {
      Regs r = Cpuid(0x80000002u + i, 0);
      std::memcpy(brand + 16 * i, &r, 16);
    }
    std::string s(brand);
    size_t b = s.find_first_not_of(' ');
    size_t e = s.find_last_not_of(' ');
    f->model_name = b == std::string::npos ? "" : s.substr(b, e - b + 1);
  }
}
#endif

}  // namespace

std::vector<std::pair<std::string, bool>> CpuFeatures::All() const {
  return {{"sse4.2", sse42},           {"avx", avx},
          {"avx2", avx2},              {"fma", fma},
          {"f16c", f16c},              {"avx512f", avx512f},
          {"avx512bw", avx512bw},      {"avx512vl", avx512vl},
          {"avx512dq", avx512dq},      {"avx512_vnni", avx512_vnni},
          {"avx512_bf16", avx512_bf16}, {"avx_vnni", avx_vnni},
          {"amx_tile", amx_tile},      {"amx_int8", amx_int8}};
}

std::vector<std::string> CpuFeatures::Names() const {
  std::vector<std::string> out;
  for (auto& [name, on] : All()) {
    if (on) out.push_back(name);
  }
  return out;
}

CpuFeatures DetectCpuFeatures() {
  CpuFeatures f;
#ifdef WEFT_X86
  DetectX86(&f);
#elif defined(__aarch64__)
  f.arch = "aarch64";
#endif
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  f.logical_cores = n > 0 ? static_cast<int>(n) : 1;
  return f;
}

const CpuFeatures& GetCpuFeatures() {
  static const CpuFeatures features = DetectCpuFeatures();
  return features;
}

}  // namespace weft
