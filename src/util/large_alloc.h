// Large, long-lived buffers (repacked weights, the bandwidth probe's
// buffer) backed by transparent huge pages where the kernel offers them.
//
// A matrix streamed once per decode step crosses a 4 KiB page every 4 KiB:
// with 2 MiB pages the TLB holds the whole stream's translations (measured
// on Zen 3, 2 threads, Q4_0 / Q8_0 matvec: 24-28 -> 28-31 GB/s).
//
// Thread safety: the functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace weft {

// Frees a LargeAlloc buffer.
struct LargeFree {
  void operator()(uint8_t* p) const;
};
using LargeBuffer = std::unique_ptr<uint8_t[], LargeFree>;

// `bytes` of uninitialised memory, 2 MiB aligned (64 bytes at least), with
// MADV_HUGEPAGE asked for on Linux; null when out of memory.
LargeBuffer LargeAlloc(size_t bytes);

}  // namespace weft
