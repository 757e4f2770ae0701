// Step 1 of a cycle (DESIGN.md section 4) for one robot, as one function both engines call: the
// CPU engine per robot (cpu::OpenCycle), the CUDA engine with one thread per batch row. The sum
// runs in sensor order in both; they can still differ in the last bit where one compiler fuses a
// multiply-add and the other does not.
#pragma once

#include <cmath>

#include "gpu/model/hd.h"
#include "gpu/model/readout.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::model {

// e = s - p into `errors` (sensor_count values), err = mean |e|, c <- 0.9 c + 0.1 (1 - min(1,
// 1.5 err)). Returns the exploration x of this cycle.
FB_HD float open_cycle(const RobotParams& params, RobotState& state, const float* sensors, float* errors) {
  const int n = params.sensor_count;
  float sum_abs = 0.0f;
  for (int i = 0; i < n; ++i) {
    errors[i] = sensors[i] - state.prediction[i];
    sum_abs += fabsf(errors[i]);
  }
  state.last_error = sum_abs / float(n);
  state.confidence = confidence_next(state.confidence, state.last_error);
  return exploration(state.confidence);
}

}  // namespace fieldbrain::model
