// Per-robot state besides the field, as plain structs: the same bytes live in host memory
// (CPU engine, checkpoints) and device memory (CUDA engine).
#pragma once

#include <cstdint>

#include "gpu/model/field_shape.h"

namespace fieldbrain {

// Fixed for a robot's life, derived from its seed (MakeRobotParams).
struct RobotParams {
  uint64_t seed = 0;
  int32_t sensor_count = 0;
  int32_t motor_count = 0;
  int32_t learn_motors = 1;  // 0 freezes Wm (a control for the bandit test)
  int32_t site[kMaxSensors][3] = {};  // sensor i imprints around voxel site[i]
  // Unit-norm mixing vector of sensor i over the content channels (first content() entries).
  float mix[kMaxSensors][kMaxContentChannels] = {};
};

// Learned and scalar state, updated every cycle.
struct RobotState {
  uint64_t cycle = 0;
  float confidence = 0.5f;
  float reward_baseline = 0.0f;  // rbar
  float phi_prev_norm2 = 0.0f;   // |phi_(t-1)|^2, 0 before the first cycle
  float last_error = 0.0f;       // err of the latest cycle
  int32_t pattern_active = 0;    // 1 once memory recall has written a non-zero pattern
  float motor_mean[kMaxMotors] = {};        // mbar
  float prediction[kMaxSensors] = {};       // p, the prediction of the next sensor frame
  float phi_prev[kFeatures] = {};           // phi_(t-1)
  float elig[kMaxMotors][kFeatures] = {};   // motor eligibility of the last cycle
  float wp[kMaxSensors][kFeatures] = {};    // prediction readout Wp
  float wm[kMaxMotors][kFeatures] = {};     // motor readout Wm
};

// Everything one cycle needs from the outside, and what it gives back: one row each of the
// batch's input and output staging (one host-to-device and one device-to-host copy per batch).
struct BatchInputRow {
  int32_t slot = -1;
  float reward = 0.0f;
  float sensors[kMaxSensors] = {};
};

struct BatchOutputRow {
  float motors[kMaxMotors] = {};
  float prediction[kMaxSensors] = {};
  float confidence = 0.0f;
  float error = 0.0f;  // mean |s - p| of this cycle's frame
  uint64_t cycle = 0;  // the brain's cycle count after this cycle
};

}  // namespace fieldbrain
