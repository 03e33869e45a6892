// Rng: xoshiro256** seeded through splitmix64. Written out here (instead of
// std::uniform_real_distribution, whose output differs between standard
// libraries) so that a seed gives the same draws on every platform.
//
// Thread safety: none; one Rng per sequence.
// Invariant: the 256-bit state is never all zero (splitmix64 cannot produce
// four zero words in a row).
#pragma once

#include <cstdint>

namespace weft::sampling {

class Rng {
 public:
  explicit Rng(uint64_t seed);

  // The next 64 raw bits.
  uint64_t Next();
  // Uniform in [0, 1) with 53 random bits.
  double UniformDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // Uniform in [0, 1) with 24 random bits.
  float UniformFloat() { return static_cast<float>(Next() >> 40) * 0x1.0p-24f; }

 private:
  uint64_t s_[4];
};

// A seed from the operating system's entropy source, for requests without
// one.
uint64_t RandomSeed();

}  // namespace weft::sampling
