// What moves the brain to try something else (docs/brain.md, "Exploration"): per-robot scalar
// rules shared by both engines. The driver (gpu/model/driver.h) widens its policy's spread with
// frustration (reward persistently below what the robot has come to expect) and withdraws what
// it did through its bias while bored (the sensors have stopped changing); confidence (how well
// the sensors are predicted) goes out with every motor frame.
//
// Frustration, not doubt, sets the spread: a robot pinned against a wall predicts its sensors
// perfectly, and a newborn or a bandit doubts most (docs/brain.md, issue 23).
//
// Time constants are in cycles and written for the nominal 50 Hz control rate.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"

namespace fieldbrain::model {

inline constexpr float kNoveltyScale = 0.005f;  // novelty below this is boredom

// c <- 0.9 c + 0.1 (1 - min(1, 1.5 err)).
FB_HD float confidence_next(float c, float err) { return 0.9f * c + 0.1f * (1.0f - fminf(1.0f, 1.5f * err)); }

// Reward means: the fast one over ~50 cycles (a second at 50 Hz); the slow one, what the robot
// has come to expect, over ~2000.
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

}  // namespace fieldbrain::model
