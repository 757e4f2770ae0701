#include "client/sim/simple_policies.h"

#include <algorithm>

namespace fieldbrain::sim {

RandomHeldPolicy::RandomHeldPolicy(int hold_ticks, uint64_t seed)
    : hold_ticks_(std::max(hold_ticks, 1)), rng_(seed ^ 0x706f6c696379ull) {}

Motors RandomHeldPolicy::Act(std::span<const float> /*sensors*/, std::optional<float> /*reward*/) {
  if (ticks_++ % hold_ticks_ == 0) {
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& m : held_) m = uniform(rng_);
  }
  return held_;
}

Motors ForwardPolicy::Act(std::span<const float> /*sensors*/, std::optional<float> /*reward*/) {
  return Motors{1.0f, 0.0f, 0.0f, 0.0f};
}

}  // namespace fieldbrain::sim
