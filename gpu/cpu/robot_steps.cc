#include "gpu/cpu/robot_steps.h"

#include <algorithm>
#include <cmath>

#include "gpu/model/driver.h"
#include "gpu/model/exploration.h"
#include "gpu/model/memory_math.h"
#include "gpu/model/philox.h"
#include "gpu/model/robot_cycle.h"

namespace fieldbrain::cpu {

void OpenCycle(const RobotParams& params, RobotState& state, const float* sensors, float reward, float* errors) {
  model::open_cycle(params, state, sensors, reward, errors);
}

namespace {

// cos(key, bank.key[j]) for every entry (0 for unused ones): keys are unit vectors.
void KeyCosines(const float (*key)[2], const MemoryBank& bank, float* cos) {
  for (int j = 0; j < kMemoryEntries; ++j) cos[j] = model::key_cosine(bank.used[j] ? model::key_dot(key, bank.key[j]) : 0.0f);
}

// model::key_bin for every bin, sensor by sensor so that the bins' loop vectorises (each bin
// still adds its terms in sensor order, from zero).
void KeyBins(const RobotParams& params, const float* sensors, float (*key)[2]) {
  float re[kKeyBins] = {}, im[kKeyBins] = {};
  for (int i = 0; i < params.sensor_count; ++i)
    for (int k = 1; k < kKeyBins - 1; ++k) {
      const model::SinCos e = model::key_term(params, sensors, i, k);
      re[k] += e.cos;
      im[k] += e.sin;
    }
  for (int k = 0; k < kKeyBins; ++k) {
    key[k][0] = re[k];
    key[k][1] = im[k];
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
                float* slot_pattern, RecallCosines& last_recall) {
  const int64_t pattern_floats = int64_t(shape.memory()) * shape.coarse_voxels();
  float key[kKeyBins][2];

  state.memory_written = -1;
  if (const float valence = model::memory_write_valence(state, reward); valence != 0.0f) {
    if (!last_recall.valid) KeyCosines(state.key_prev, bank, last_recall.cos);
    const int entry = model::memory_pick_entry(bank, last_recall.cos);
    model::memory_note_write(bank, state, entry, valence);
    for (int k = 0; k < kKeyBins; ++k) {
      bank.key[entry][k][0] = state.key_prev[k][0];
      bank.key[entry][k][1] = state.key_prev[k][1];
    }
    std::copy_n(pooled_memory, pattern_floats, memory_patterns + entry * pattern_floats);
  }

  KeyBins(params, sensors, key);
  const float inv = model::key_inverse_norm(model::key_dot(key, key));
  for (int k = 0; k < kKeyBins; ++k) {
    key[k][0] *= inv;
    key[k][1] *= inv;
  }
  KeyCosines(key, bank, last_recall.cos);
  model::memory_recall(bank, last_recall.cos, state);
  last_recall.valid = true;
  if (state.pattern_active)
    for (int64_t at = 0; at < pattern_floats; ++at)
      slot_pattern[at] = model::recalled_pattern_value(bank, state, memory_patterns, pattern_floats, at);
  std::copy_n(&key[0][0], 2 * kKeyBins, &state.key_prev[0][0]);
}

namespace {

// Calls fn(j) for every readout feature in use (model::readout_feature_used), in index order:
// the P field features and the sensor_count entries of each frame part.
template <typename Fn>
void ForEachReadoutFeature(int sensor_count, Fn fn) {
  for (int j = 0; j < kFrameFeaturesAt + sensor_count; ++j) fn(j);
  for (int j = kContextFeaturesAt; j < kContextFeaturesAt + sensor_count; ++j) fn(j);
}

// Calls fn(j) for every driver feature in use (model::driver_feature_used), in index order.
template <typename Fn>
void ForEachDriverFeature(int sensor_count, Fn fn) {
  for (int j = 0; j < sensor_count; ++j) fn(j);
  for (int j = model::kDriverSquaresAt; j < model::kDriverSquaresAt + sensor_count; ++j) fn(j);
  fn(model::kDriverBiasAt);
}

// Step 5, the driver (gpu/model/driver.h): its critic learns from this reward through the traces
// of the cycles before, and so does its actor unless the command judged was a held undo (and a
// frustrated bad surprise withdraws last cycle's motors); then an undo under way sends its held
// command again, one may start, or the actor acts on this frame, the traces take the action and
// the actor's weights step back towards the pre-activation's bound.
void DriverStep(const RobotParams& params, RobotState& state, const float* sensors, float reward, float* motors) {
  const int n = params.sensor_count;
  const float frustration = model::frustration(state.reward_fast, state.reward_slow, state.reward_spread);
  const float bored = model::boredom(state.novelty, state.novelty_slow);
  float frame_prev[kMaxSensors], d[model::kDriverFeatures], d_prev[model::kDriverFeatures];
  for (int i = 0; i < n; ++i) frame_prev[i] = model::frame_value(state.psi_prev[kFrameFeaturesAt + i]);
  ForEachDriverFeature(n, [&](int j) {
    d[j] = model::driver_feature(j, sensors);
    d_prev[j] = model::driver_feature(j, frame_prev);
  });
  if (state.cycle > 0) {
    float v_now = 0.0f, v_prev = 0.0f;
    ForEachDriverFeature(n, [&](int j) {
      v_now += state.driver_critic[j] * d[j];
      v_prev += state.driver_critic[j] * d_prev[j];
    });
    const float delta = model::driver_td_error(reward, v_now, v_prev);
    const float critic_step = model::driver_step(model::kDriverCriticRate, delta, n);
    ForEachDriverFeature(n, [&](int j) {
      state.driver_critic[j] = model::driver_weight_next(state.driver_critic[j], critic_step, state.driver_critic_trace[j]);
    });
    if (params.learn_motors && !state.undo_held) {
      const bool first = state.cycle == 1;
      const float advantage = model::driver_advantage(reward, v_now, v_prev);
      state.driver_advantage_square =
          model::driver_advantage_square_next(state.driver_advantage_square, advantage, state.driver_advantage_mean, first);
      state.driver_advantage_mean = model::driver_advantage_mean_next(state.driver_advantage_mean, advantage, first);
      const float scale = model::driver_advantage_scale(state.driver_advantage_square);
      const float actor_step = model::driver_actor_step(advantage, state.driver_advantage_mean, scale, n);
      const float withdraw = model::driver_withdraw_step(delta, scale, frustration, n);
      for (int k = 0; k < params.motor_count; ++k)
        ForEachDriverFeature(n, [&](int j) {
          const float w = model::driver_weight_next(state.driver_actor[k][j], actor_step, state.driver_actor_trace[k][j]);
          const float along = state.motor_prev[k] * model::driver_withdraw_feature(j, frame_prev, state.sensor_mean, bored);
          state.driver_actor[k][j] = model::driver_weight_next(w, withdraw, along);
        });
    }
  }
  ForEachDriverFeature(n, [&](int j) { state.driver_critic_trace[j] = model::driver_trace_next(state.driver_critic_trace[j], d[j]); });
  const model::UndoStep undo = model::driver_undo_step(state.undo_left, state.undo_held, state.undo_since,
                                                       state.reward_fast, params.seed, state.cycle);
  state.undo_left = undo.left;
  state.undo_held = undo.held;
  state.undo_since = undo.since;
  switch (undo.mode) {
    case model::UndoMode::kGoesOn:  // the held command again, the actor idle
      for (int k = 0; k < params.motor_count; ++k) motors[k] = state.motor_prev[k];
      return;
    case model::UndoMode::kStarts:
      for (int k = 0; k < params.motor_count; ++k) {
        float dot = 0.0f;
        ForEachDriverFeature(n, [&](int j) { dot += state.driver_actor[k][j] * d[j]; });
        motors[k] = model::driver_undo_command(model::driver_policy(dot).mean);
        ForEachDriverFeature(n, [&](int j) { state.driver_actor_trace[k][j] = 0.0f; });
      }
      return;
    case model::UndoMode::kDrives:
      break;
  }
  const float spread = model::driver_spread(frustration);
  for (int k = 0; k < params.motor_count; ++k) {
    float dot = 0.0f;
    ForEachDriverFeature(n, [&](int j) { dot += state.driver_actor[k][j] * d[j]; });
    const model::DriverPolicy policy = model::driver_policy(dot);
    const float eps = model::normal_draw(params.seed, model::Domain::kDriverNoise, state.cycle, uint32_t(k));
    const float score = model::driver_score(policy, eps, spread);
    const float bound_step = params.learn_motors ? model::driver_bound_step(dot, n) : 0.0f;
    ForEachDriverFeature(n, [&](int j) {
      state.driver_actor_trace[k][j] = model::driver_trace_next(state.driver_actor_trace[k][j], score * d[j]);
      state.driver_actor[k][j] = model::driver_weight_next(state.driver_actor[k][j], bound_step, d[j]);
    });
    motors[k] = model::driver_motor(policy.mean, eps, spread);
  }
}

}  // namespace

void CloseCycle(const RobotParams& params, RobotState& state, const FieldShape& shape,
                const model::FieldSummary& summary, const float* sensors, const float* errors, float reward,
                BatchOutputRow& out) {
  const int n = params.sensor_count;
  float psi[kReadoutFeatures];
  model::compute_features(summary, shape, state.feature_scale, psi);
  for (int i = 0; i < n; ++i) {
    psi[kFrameFeaturesAt + i] = model::frame_feature(sensors[i]);
    psi[kContextFeaturesAt + i] = state.psi_prev[kFrameFeaturesAt + i];
  }
  float norm2 = 0.0f;
  ForEachReadoutFeature(n, [&](int j) { norm2 += psi[j] * psi[j]; });

  // Step 5: the driver learns from this reward and sends the motors.
  float motors[kMaxMotors];
  DriverStep(params, state, sensors, reward, motors);

  // Step 6: this frame's error judges the prediction made from psi_(t-1); then predict anew.
  const float inv_norm2 = model::inverse_norm2(state.psi_prev_norm2);
  for (int i = 0; i < n; ++i)
    ForEachReadoutFeature(n, [&](int j) {
      state.wp[i][j] = model::wp_next(state.wp[i][j], errors[i], state.psi_prev[j], inv_norm2);
    });
  // Each sensor's dot product adds its features in index order, as before; kDotRows sensors' sums
  // go side by side, so each addition waits on its own chain only (rows past n are computed from
  // unused rows of wp and dropped).
  constexpr int kDotRows = 4;
  static_assert(kMaxSensors % kDotRows == 0);
  for (int i0 = 0; i0 < n; i0 += kDotRows) {
    float dot[kDotRows] = {};
    ForEachReadoutFeature(n, [&](int j) {
      for (int g = 0; g < kDotRows; ++g) dot[g] += state.wp[i0 + g][j] * psi[j];
    });
    for (int g = 0; g < kDotRows && i0 + g < n; ++g) state.prediction[i0 + g] = model::prediction_value(dot[g]);
  }
  ForEachReadoutFeature(n, [&](int j) { state.psi_prev[j] = psi[j]; });
  state.psi_prev_norm2 = norm2;
  for (int k = 0; k < params.motor_count; ++k) state.motor_prev[k] = motors[k];
  ++state.cycle;

  for (int k = 0; k < kMaxMotors; ++k) out.motors[k] = k < params.motor_count ? motors[k] : 0.0f;
  for (int i = 0; i < kMaxSensors; ++i) out.prediction[i] = i < n ? state.prediction[i] : 0.0f;
  out.confidence = state.confidence;
  out.error = state.last_error;
  out.cycle = state.cycle;
}

}  // namespace fieldbrain::cpu
