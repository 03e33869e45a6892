// The CPU features this process can use, detected once with CPUID (x86-64)
// and XGETBV (whether the OS saves the AVX / AVX-512 register state). A
// feature is reported only when both the CPU and the OS support it. On
// other architectures every flag is false.
//
// Thread safety: GetCpuFeatures() detects on first use (thread-safe static)
// and returns an immutable object.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace weft {

struct CpuFeatures {
  std::string arch = "unknown";  // "x86_64", "aarch64", ...
  std::string model_name;        // CPUID brand string; empty when unknown
  int logical_cores = 1;         // online logical CPUs
  bool os_avx = false;           // OS saves YMM state (XCR0 bits 1, 2)
  bool os_avx512 = false;        // OS saves ZMM/opmask state (XCR0 5, 6, 7)
  bool os_amx = false;           // OS supports the AMX tile state (XCR0 17, 18)
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool avx_vnni = false;
  // AMX tiles and their int8 dot products. A process must still ask the
  // OS for the tile state before using them (kernels/isa.cc).
  bool amx_tile = false;
  bool amx_int8 = false;

  // Names of the features that are set, e.g. {"sse4.2", "avx", "avx2"}.
  std::vector<std::string> Names() const;
  // Every feature name with its flag, in a fixed order.
  std::vector<std::pair<std::string, bool>> All() const;
};

// Features of the machine the process runs on (detected once).
const CpuFeatures& GetCpuFeatures();

// Detection itself, uncached (tests).
CpuFeatures DetectCpuFeatures();

}  // namespace weft
