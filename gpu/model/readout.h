// The per-robot math after the field pass (docs/brain.md, steps 4 and 6): the field's features and
// prediction. The motors are the driver's (gpu/model/driver.h, step 5), from the sensor frame.
// Per-element functions shared by both engines; the order they run in is written once, in
// cpu::CloseCycle (gpu/cpu/robot_steps.cc), and the CUDA kernel follows it.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::model {

// What one reduction pass over the new field gives: per content group g, the sum of A_g over
// each of the 4x4x4 pool blocks. A_g(v) is the mean of group g's channels at voxel v.
struct FieldSummary {
  float pool[kContentGroups][kPoolBlocks];
};

// Which of the 4x4x4 pool blocks voxel (x, y, z) falls into.
FB_HD int pool_block(int x, int y, int z, const FieldShape& s) {
  return ((x * kPoolCells / s.nx) * kPoolCells + (y * kPoolCells / s.ny)) * kPoolCells +
         (z * kPoolCells / s.nz);
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

// The predictor's features psi = [phi_t | g s_t | g s_(t-1)] (layout in gpu/model/robot_state.h).
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
