// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11): a
// counter-based generator, so the CPU and CUDA engines draw the same exploration noise for
// (robot seed, cycle, motor) without sharing any generator state.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/model/hd.h"
#include "gpu/model/portable_math.h"

namespace fieldbrain::model {

struct Philox4 {
  uint32_t v[4];
};

FB_HD Philox4 philox4x32_10(Philox4 ctr, uint32_t k0, uint32_t k1) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kM0) * ctr.v[0];
    const uint64_t p1 = uint64_t(kM1) * ctr.v[2];
    const uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    const uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    ctr = Philox4{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += kW0;
    k1 += kW1;
  }
  return ctr;
}

// Uniform in (0, 1]: never 0, so log() below is finite.
FB_HD float uniform_open0(uint32_t bits) { return (float(bits >> 8) + 1.0f) * (1.0f / 16777216.0f); }

// Separate streams of one seed, so no two uses of a robot's randomness ever overlap.
enum class Domain : uint32_t {
  kField = 0x6669656Cu,
  kMixing = 0x6D697869u,
  kHrrVector = 0x68727276u,  // HRR vectors made from a seed (gpu/hrr/hrr_math.h)
  kMemoryKeys = 0x6B657973u,  // a brain's context-key roles and base (gpu/model/memory_math.h)
  kDriverNoise = 0x64726976u,  // the driver's exploration step (gpu/model/driver.h)
  kDriverUndo = 0x756E646Fu,   // when the driver's undo starts (gpu/model/driver.h)
};

// 32 uniform bits number (index, k) of `domain` for `seed`.
FB_HD uint32_t uniform_bits(uint64_t seed, Domain domain, uint64_t index, uint32_t k) {
  const Philox4 r = philox4x32_10(
      Philox4{{uint32_t(index), uint32_t(index >> 32), k, uint32_t(domain)}},
      uint32_t(seed), uint32_t(seed >> 32));
  return r.v[0];
}

// Standard normal draw number (index, k) of `domain` for the robot seeded with `seed`
// (Box-Muller on the first two words of one Philox block). Motor noise uses (cycle, motor).
FB_HD float normal_draw(uint64_t seed, Domain domain, uint64_t index, uint32_t k) {
  const Philox4 r = philox4x32_10(
      Philox4{{uint32_t(index), uint32_t(index >> 32), k, uint32_t(domain)}},
      uint32_t(seed), uint32_t(seed >> 32));
  const float u1 = uniform_open0(r.v[0]);
  const float u2 = uniform_open0(r.v[1]);
  return sqrtf(-2.0f * fast_log(u1)) * sin_cos(6.28318531f * u2).cos;
}

}  // namespace fieldbrain::model
