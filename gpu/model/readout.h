// The per-robot math after the field pass (docs/brain.md, steps 4-6): features, motors, the
// actor and critic that learn from reward, and prediction. Per-element functions shared by both
// engines; the order they run in is written once, in cpu::CloseCycle (gpu/cpu/robot_steps.cc),
// and the CUDA kernel follows it.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::model {

inline constexpr float kInvSqrtFeatures = 0.0625f;  // 1 / sqrt(P), P = 256
inline constexpr float kWmBound = 10.0f;

// What one reduction pass over the new field gives: per content group g, the sum of A_g over
// each of the 4x4x4 pool blocks, the sum of |A_g|, and the sums of ramp_a * A_g per axis a.
// A_g(v) is the mean of group g's channels at voxel v.
struct FieldSummary {
  float pool[kContentGroups][kPoolBlocks];
  float abs_sum[kContentGroups];
  float ramp_sum[kContentGroups][3];
};

// linspace(-1, 1, n) at i.
FB_HD float ramp(int i, int n) { return -1.0f + 2.0f * float(i) / float(n - 1); }

// Which of the 4x4x4 pool blocks voxel (x, y, z) falls into.
FB_HD int pool_block(int x, int y, int z, const FieldShape& s) {
  return ((x * kPoolCells / s.nx) * kPoolCells + (y * kPoolCells / s.ny)) * kPoolCells +
         (z * kPoolCells / s.nz);
}

// Step 4: t_k = 2 sum ramp_a A_g / (sum |A_g| + 1e-3 V), scale-free pull of group g along axis a.
FB_HD float field_pull(float ramp_sum, float abs_sum, int voxels) {
  return 2.0f * ramp_sum / (abs_sum + 1e-3f * float(voxels));
}
FB_HD int motor_axis(int k) { return k % 3; }
FB_HD int motor_group(int k) { return k % kContentGroups; }

// u_k = bias_k + Wm_k . a(psi) / sqrt(P), the field readout's learned part. Since issue 23 the
// motors are the driver's (gpu/model/driver.h), which takes the pull t_k; u_k and the field's own
// exploration no longer reach them (docs/brain.md, issue 23).
FB_HD float motor_learned(float bias, float wm_dot_a) { return bias + wm_dot_a * kInvSqrtFeatures; }

// The actor's features a(psi): psi with the sensor frames at kActorFrameGain. The actor's steps
// move u in proportion to a_j^2, and at gain 1 a frame entry moved u about 1/16 as fast as the
// bias, so a car learnt "always turn" long before "back off when the range is short"
// (docs/brain.md, issue 9's fourth session).
inline constexpr float kActorFrameGain = 2.0f;
FB_HD float actor_feature(int j, float psi_j) { return j >= kFrameFeaturesAt ? kActorFrameGain * psi_j : psi_j; }

// Step 5, the actor: the reward judges the previous action. Its temporal-difference error
//   delta = r + kDiscount V(phi_t) - V(phi_(t-1))
// (the critic's surprise: better or worse than expected in the previous context, counting what
// the new context promises) moves Wm along the eligibility trace of the cycles before this one,
// and a penalty pulls the learned drive u back towards 0 so the motors keep their range:
//   Wm_kj += kActorRate (delta T_kj - kDrivePenalty u_k a_j / sqrt(P)), clipped to +-kWmBound,
//   T_kj  <- kTraceKeep T_kj + xi_k a_j / sqrt(P)
// (xi_k, this cycle's fresh draw in the exploration noise, is the part of the action nothing
// before it decided: REINFORCE for a Gaussian policy whose noise state is part of the context).
// The bias is the same rule with a feature that is always 1.
inline constexpr float kDiscount = 0.99f;  // a horizon of ~100 cycles, 2 s at 50 Hz
// Rewards lie in [-1, 1], so |V| <= 1 / (1 - kDiscount) = 100 for a true value; delta is kept
// within +-kDeltaBound so that a critic still far from the truth cannot blow the actor up.
inline constexpr float kDeltaBound = 2.0f;
FB_HD float td_error(float reward, float reward_mean, float value_now, float value_prev) {
  return clampf(reward - reward_mean + kDiscount * value_now - value_prev, -kDeltaBound, kDeltaBound);
}
inline constexpr float kActorRate = 0.01f;
inline constexpr float kDrivePenalty = 0.05f;
inline constexpr float kTraceKeep = 0.8f;  // ~10 cycles, 0.2 s at 50 Hz
FB_HD float wm_next(float w, float delta, float trace, float learned, float phi) {
  return clampf(w + kActorRate * (delta * trace - kDrivePenalty * learned * phi * kInvSqrtFeatures), -kWmBound,
                kWmBound);
}
FB_HD float motor_bias_next(float b, float delta, float trace, float learned) {
  return clampf(b + kActorRate * (delta * trace - kDrivePenalty * learned), -kWmBound, kWmBound);
}
FB_HD float trace_next(float trace, float xi, float phi) { return kTraceKeep * trace + xi * phi * kInvSqrtFeatures; }
FB_HD float bias_trace_next(float trace, float xi) { return kTraceKeep * trace + xi; }

// Step 5, withdrawal: a reward worse than the critic expected also moves Wm against the motors
// the robot actually sent last cycle, m_(t-1), in the context they were sent in:
//   Wm_kj += kActorRate kWithdrawGain delta m_k,(t-1) a_j(psi_(t-1)) / sqrt(P)   when delta < 0.
// The noise-driven rule above learns only from what exploration varied; a robot pushing into a
// wall with its motors saturated varies nothing and learned nothing, however much it hurt. Only
// bad surprises count: the same rule on good ones reinforces whatever the robot did and drives
// the motors into saturation (the bandit's |motor| > 0.99 on 0.75 of cycles).
inline constexpr float kWithdrawGain = 2.0f;
FB_HD float withdraw_step(float delta, float motor_prev) {
  return delta < 0.0f ? kActorRate * kWithdrawGain * delta * motor_prev : 0.0f;
}
FB_HD float wm_withdrawn(float w, float step, float a_prev) {
  return clampf(w + step * a_prev * kInvSqrtFeatures, -kWmBound, kWmBound);
}
FB_HD float motor_bias_withdrawn(float b, float step) { return clampf(b + step, -kWmBound, kWmBound); }

// Step 5, the critic: V(psi) = critic_bias + critic . psi, the discounted reward to come, learned
// by normalised LMS on delta: both move by kCriticRate delta (1, psi_(t-1)) / (1 + |psi_(t-1)|^2).
// Weights and bias stay within +-kCriticBound.
inline constexpr float kCriticRate = 0.1f;
inline constexpr float kCriticBound = 100.0f;
FB_HD float critic_step(float delta, float psi_prev_norm2) {
  return kCriticRate * delta / (1.0f + psi_prev_norm2);
}
FB_HD float critic_next(float w, float step, float psi_prev) {
  return clampf(w + step * psi_prev, -kCriticBound, kCriticBound);
}

// Step 6: normalised LMS, Wp += 0.5 e psi_(t-1) / |psi_(t-1)|^2 (skipped while |psi_(t-1)| = 0);
// then p = tanh(Wp psi_t).
FB_HD float wp_next(float w, float e, float psi_prev, float inv_norm2) {
  return w + 0.5f * e * psi_prev * inv_norm2;
}
FB_HD float inverse_norm2(float norm2) { return norm2 > 1e-6f ? 1.0f / norm2 : 0.0f; }
FB_HD float prediction_value(float wp_dot_phi) { return fast_tanh(wp_dot_phi); }

// Features. phi_j = (raw_j - mean_t) / scale, where raw_j are the pooled block means, mean_t
// their mean this cycle and scale a slowly falling peak of their standard deviation: a
// per-cycle standard deviation would erase the amplitude of inputs that move all sensors
// together. The pieces, for engines that compute the P entries in parallel (one thread per entry,
// the sums as reductions):
FB_HD float feature_raw(float pool_sum, const FieldShape& s) {
  return pool_sum * (float(kPoolBlocks) / float(s.voxels()));
}
FB_HD float feature_mean(float raw_sum) { return raw_sum * (1.0f / float(kFeatures)); }
FB_HD float feature_deviation2(float raw, float mean) { return (raw - mean) * (raw - mean); }
inline constexpr float kFeatureScaleFloor = 1e-3f;
// The scale after this cycle, from the sum of squared deviations: the first cycle's standard
// deviation, then a mean over ~100 cycles, so a change in amplitude shows in the features.
FB_HD float feature_scale_next(float scale, float deviation2_sum) {
  const float std_now = sqrtf(deviation2_sum * (1.0f / float(kFeatures)));
  return scale > 0.0f ? 0.99f * scale + 0.01f * std_now : std_now;
}
FB_HD float feature_inv_scale(float scale) { return 1.0f / fmaxf(scale, kFeatureScaleFloor); }
FB_HD float feature_value(float raw, float mean, float inv_scale) { return (raw - mean) * inv_scale; }

// phi from one FieldSummary; updates `scale`. Sums run in index order here; the CUDA engine sums
// by a fixed tree.
FB_HD void compute_features(const FieldSummary& sum, const FieldShape& s, float& scale, float* phi) {
  float raw_sum = 0.0f;
  for (int g = 0; g < kContentGroups; ++g)
    for (int b = 0; b < kPoolBlocks; ++b) {
      phi[g * kPoolBlocks + b] = feature_raw(sum.pool[g][b], s);
      raw_sum += phi[g * kPoolBlocks + b];
    }
  const float mean = feature_mean(raw_sum);
  float dev2_sum = 0.0f;
  for (int i = 0; i < kFeatures; ++i) dev2_sum += feature_deviation2(phi[i], mean);
  scale = feature_scale_next(scale, dev2_sum);
  const float inv = feature_inv_scale(scale);
  for (int i = 0; i < kFeatures; ++i) phi[i] = feature_value(phi[i], mean, inv);
}

// The readouts' features psi = [phi_t | g s_t | g s_(t-1)] (layout in gpu/model/robot_state.h).
// The field's features carry what the field has made of the recent past; the frame and the one
// before it carry the sensors as they are, with their amplitude and their direction of change,
// so a readout can respond to "the wall is 0.3 m ahead and getting closer" or continue a
// sine (s_(t+1) = 2 cos(w) s_t - s_(t-1)) without waiting for the field to encode it. g makes
// a dozen sensors at half range weigh about as much in |psi|^2 as the P standardised field
// features. Entries past sensor_count are 0, and every rule moves a weight in proportion to its
// feature, so their weights stay 0 and engines may skip them.
inline constexpr float kFrameGain = 4.0f;
FB_HD float frame_feature(float s) { return kFrameGain * s; }
// The sensor value back from its frame feature (exact: kFrameGain is a power of two).
FB_HD float frame_value(float feature) { return feature * (1.0f / kFrameGain); }

// Whether readout feature j is in use for a robot with n sensors: the P field features and the
// first n entries of each frame part. Both engines read and move only these weights, so a weight
// past sensor_count (0 unless a snapshot says otherwise) never enters a sum on either.
FB_HD bool readout_feature_used(int j, int n) {
  return j < kFrameFeaturesAt + n || (j >= kContextFeaturesAt && j < kContextFeaturesAt + n);
}

}  // namespace fieldbrain::model
