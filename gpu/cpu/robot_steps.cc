#include "gpu/cpu/robot_steps.h"

#include <cmath>

#include "gpu/model/philox.h"
#include "gpu/model/robot_cycle.h"

namespace fieldbrain::cpu {

float OpenCycle(const RobotParams& params, RobotState& state, const float* sensors, float* errors) {
  return model::open_cycle(params, state, sensors, errors);
}

void CloseCycle(const RobotParams& params, RobotState& state, const FieldShape& shape,
                const model::FieldSummary& summary, const float* errors, float explore, float reward,
                BatchOutputRow& out) {
  float phi[kFeatures];
  model::standardise_features(summary, shape, phi);

  // Step 4: motors.
  float motors[kMaxMotors];
  for (int k = 0; k < params.motor_count; ++k) {
    const int g = model::motor_group(k), a = model::motor_axis(k);
    const float pull = model::field_pull(summary.ramp_sum[g][a], summary.abs_sum[g], shape.voxels());
    float dot = 0.0f;
    for (int j = 0; j < kFeatures; ++j) dot += state.wm[k][j] * phi[j];
    const float xi = model::normal_draw(params.seed, model::Domain::kMotorNoise, state.cycle, uint32_t(k));
    motors[k] = model::motor_value(pull, dot, explore, xi);
  }

  // Step 5: the reward judges the previous action, through the previous eligibility.
  const float advantage = reward - state.reward_baseline;
  for (int k = 0; k < params.motor_count; ++k) {
    if (params.learn_motors)
      for (int j = 0; j < kFeatures; ++j) state.wm[k][j] = model::wm_next(state.wm[k][j], advantage, state.elig[k][j]);
    for (int j = 0; j < kFeatures; ++j) state.elig[k][j] = model::elig_value(motors[k], state.motor_mean[k], phi[j]);
    state.motor_mean[k] = model::motor_mean_next(state.motor_mean[k], motors[k]);
  }
  state.reward_baseline = model::baseline_next(state.reward_baseline, reward);

  // Step 6: this frame's error judges the prediction made from phi_(t-1); then predict anew.
  const float inv_norm2 = model::inverse_norm2(state.phi_prev_norm2);
  float norm2 = 0.0f;
  for (int j = 0; j < kFeatures; ++j) norm2 += phi[j] * phi[j];
  for (int i = 0; i < params.sensor_count; ++i) {
    float dot = 0.0f;
    for (int j = 0; j < kFeatures; ++j) {
      state.wp[i][j] = model::wp_next(state.wp[i][j], errors[i], state.phi_prev[j], inv_norm2);
      dot += state.wp[i][j] * phi[j];
    }
    state.prediction[i] = model::prediction_value(dot);
  }
  for (int j = 0; j < kFeatures; ++j) state.phi_prev[j] = phi[j];
  state.phi_prev_norm2 = norm2;
  ++state.cycle;

  for (int k = 0; k < kMaxMotors; ++k) out.motors[k] = k < params.motor_count ? motors[k] : 0.0f;
  for (int i = 0; i < kMaxSensors; ++i) out.prediction[i] = i < params.sensor_count ? state.prediction[i] : 0.0f;
  out.confidence = state.confidence;
  out.error = state.last_error;
  out.cycle = state.cycle;
}

}  // namespace fieldbrain::cpu
