#include "gpu/cpu/robot_steps.h"

#include <algorithm>
#include <cmath>

#include "gpu/model/memory_math.h"
#include "gpu/model/philox.h"
#include "gpu/model/robot_cycle.h"

namespace fieldbrain::cpu {

float OpenCycle(const RobotParams& params, RobotState& state, const float* sensors, float* errors) {
  return model::open_cycle(params, state, sensors, errors);
}

namespace {

// cos(key, bank.key[j]) for every entry (0 for unused ones): keys are unit vectors.
void KeyCosines(const hrr::Cf* key, const MemoryBank& bank, float* cos) {
  for (int j = 0; j < kMemoryEntries; ++j) {
    float dot = 0.0f;
    if (bank.used[j])
      for (int k = 0; k < kKeyBins; ++k) dot += model::key_dot_term(key[k], model::key_at(bank.key[j], k), k);
    cos[j] = model::key_cosine(dot);
  }
}

}  // namespace

void PoolMemoryChannels(const float* field, const FieldShape& shape, float* pooled) {
  const int cells = shape.coarse_voxels();
  for (int j = 0; j < shape.memory(); ++j)
    for (int cell = 0; cell < cells; ++cell) pooled[j * cells + cell] = model::coarse_memory_value(field, shape, j, cell);
}

void MemoryStep(const RobotParams& params, RobotState& state, MemoryBank& bank, float* memory_patterns,
                const float* pooled_memory, const FieldShape& shape, const float* sensors, float reward,
                float* slot_pattern) {
  const int64_t pattern_floats = int64_t(shape.memory()) * shape.coarse_voxels();
  float cos[kMemoryEntries];
  hrr::Cf key[kKeyBins];

  state.memory_written = -1;
  if (const float valence = model::memory_write_valence(state, reward); valence != 0.0f) {
    for (int k = 0; k < kKeyBins; ++k) key[k] = model::key_at(state.key_prev, k);
    KeyCosines(key, bank, cos);
    const int entry = model::memory_pick_entry(bank, cos);
    model::memory_note_write(bank, state, entry, valence);
    for (int k = 0; k < kKeyBins; ++k) {
      bank.key[entry][k][0] = state.key_prev[k][0];
      bank.key[entry][k][1] = state.key_prev[k][1];
    }
    std::copy_n(pooled_memory, pattern_floats, memory_patterns + entry * pattern_floats);
  }

  float dot = 0.0f;
  for (int k = 0; k < kKeyBins; ++k) {
    key[k] = model::key_bin(params, sensors, k);
    dot += model::key_dot_term(key[k], key[k], k);
  }
  const float inv = model::key_inverse_norm(dot);
  for (int k = 0; k < kKeyBins; ++k) key[k] = hrr::cscale(key[k], inv);
  KeyCosines(key, bank, cos);
  model::memory_recall(bank, cos, state);
  if (state.pattern_active)
    for (int64_t at = 0; at < pattern_floats; ++at)
      slot_pattern[at] = model::recalled_pattern_value(bank, state, memory_patterns, pattern_floats, at);
  for (int k = 0; k < kKeyBins; ++k) {
    state.key_prev[k][0] = key[k].re;
    state.key_prev[k][1] = key[k].im;
  }
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
