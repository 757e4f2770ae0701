// Step 1 of a cycle (docs/brain.md) for one robot, as one function both engines call: the CPU
// engine per robot (cpu::OpenCycle), the CUDA engine with one thread per batch row. The sums run
// in sensor order in both; they can still differ in the last bit where one compiler fuses a
// multiply-add and the other does not.
#pragma once

#include <cmath>

#include "gpu/model/exploration.h"
#include "gpu/model/hd.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::model {

// e = s - p into `errors` (sensor_count values), err = mean |e|, the confidence, the reward
// means and the novelty.
FB_HD void open_cycle(const RobotParams& params, RobotState& state, const float* sensors, float reward,
                       float* errors) {
  const int n = params.sensor_count;
  const bool first = state.cycle == 0;
  float sum_abs = 0.0f, sum_change = 0.0f;
  for (int i = 0; i < n; ++i) {
    errors[i] = sensors[i] - state.prediction[i];
    sum_abs += fabsf(errors[i]);
    const float mean = first ? sensors[i] : state.sensor_mean[i];
    sum_change += fabsf(sensors[i] - mean);
    state.sensor_mean[i] = sensor_mean_next(mean, sensors[i]);
  }
  state.last_error = sum_abs / float(n);
  state.confidence = confidence_next(state.confidence, state.last_error);
  state.reward_fast = reward_fast_next(state.reward_fast, reward);
  state.reward_spread = reward_spread_next(state.reward_spread, reward, state.reward_slow);
  state.reward_slow = reward_slow_next(state.reward_slow, reward);
  state.novelty = novelty_next(state.novelty, sum_change / float(n));
  state.novelty_slow = novelty_slow_next(state.novelty_slow, state.novelty);
}

}  // namespace fieldbrain::model
