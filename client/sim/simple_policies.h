// The two simplest baselines: random commands held for a while, and full drive ahead.
#pragma once

#include <cstdint>
#include <random>

#include "client/sim/local_policy.h"

namespace fieldbrain::sim {

// A uniformly random command on every motor, held for `hold_ticks` ticks.
class RandomHeldPolicy final : public LocalPolicy {
 public:
  RandomHeldPolicy(int hold_ticks, uint64_t seed);
  Motors Act(std::span<const float> sensors, std::optional<float> reward) override;

 private:
  const int hold_ticks_;
  std::mt19937_64 rng_;
  int64_t ticks_ = 0;
  Motors held_{};
};

// Full drive ahead, wheels straight.
class ForwardPolicy final : public LocalPolicy {
 public:
  Motors Act(std::span<const float> sensors, std::optional<float> reward) override;
};

}  // namespace fieldbrain::sim
