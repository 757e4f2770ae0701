// How much the brain explores, and with what noise (docs/brain.md, "Exploration"). Per-robot
// scalar rules shared by both engines.
//
// Exploration answers three things, whichever is strongest: low confidence (the sensors are not
// predicted), frustration (reward persistently below what the robot has come to expect) and
// boredom (the sensors have stopped changing). Confidence alone is not enough: a robot pinned
// against a wall predicts its sensors perfectly. The noise is held for ~0.4 s (an
// Ornstein-Uhlenbeck process), so exploring means trying a different action for long enough to
// see what it does, not jittering at 50 Hz.
//
// Time constants are in cycles and written for the nominal 50 Hz control rate.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"

namespace fieldbrain::model {

inline constexpr float kExploreFloor = 0.05f;  // x when confident, content and busy
inline constexpr float kExploreRange = 0.75f;  // x = floor + range * max(1 - c, frustration, boredom)
inline constexpr float kNoiseKeep = 0.95f;     // z <- a z + sqrt(1 - a^2) xi: ~20 cycles
inline constexpr float kNoveltyScale = 0.005f;  // novelty below this is boredom

// c <- 0.9 c + 0.1 (1 - min(1, 1.5 err)).
FB_HD float confidence_next(float c, float err) { return 0.9f * c + 0.1f * (1.0f - fminf(1.0f, 1.5f * err)); }

// Reward means: the fast one over ~10 cycles; the slow one, what the robot has come to expect,
// over ~2000.
FB_HD float reward_fast_next(float fast, float r) { return 0.98f * fast + 0.02f * r; }
FB_HD float reward_slow_next(float slow, float r) { return 0.9995f * slow + 0.0005f * r; }

// How much the reward usually strays from the slow mean, over ~2000 cycles.
FB_HD float reward_spread_next(float spread, float r, float reward_slow) {
  return 0.9995f * spread + 0.0005f * fabsf(r - reward_slow);
}
inline constexpr float kSpreadFloor = 0.01f;

// Frustration in [0, 1]: the fast reward mean below the slow one, in units of the usual spread
// (so a robot used to rewards of 0.1 is frustrated by a run of zeros, whatever the reward's scale).
FB_HD float frustration(float reward_fast, float reward_slow, float spread) {
  return clampf((reward_slow - reward_fast) / (spread + kSpreadFloor), 0.0f, 1.0f);
}

// Sensor i's recent mean (~25 cycles) and the novelty, a ~10-cycle mean of the frame's mean
// |s_i - recent mean_i|.
FB_HD float sensor_mean_next(float mean, float s) { return 0.96f * mean + 0.04f * s; }
FB_HD float novelty_next(float novelty, float mean_change) { return 0.9f * novelty + 0.1f * mean_change; }

// The novelty the robot is used to, over ~2000 cycles.
FB_HD float novelty_slow_next(float slow, float novelty) { return 0.9995f * slow + 0.0005f * novelty; }

// Boredom in [0, 1]: how far the novelty has fallen below what the robot is used to (1 when
// nothing moves), and in any case 1 - novelty / kNoveltyScale.
FB_HD float boredom(float novelty, float novelty_slow) {
  const float relative = 1.0f - novelty / (novelty_slow + 1e-6f);
  const float absolute = 1.0f - novelty * (1.0f / kNoveltyScale);
  return clampf(fmaxf(relative, absolute), 0.0f, 1.0f);
}

FB_HD float exploration(float confidence, float frustration, float boredom) {
  return kExploreFloor + kExploreRange * fmaxf(1.0f - confidence, fmaxf(frustration, boredom));
}

// One Ornstein-Uhlenbeck step of unit stationary variance driven by the normal draw xi.
FB_HD float noise_next(float z, float xi) { return kNoiseKeep * z + 0.31224990f * xi; }  // sqrt(1 - 0.95^2)

}  // namespace fieldbrain::model
