// The per-robot math around the field (DESIGN.md section 4, steps 1, 4, 5 and 6): confidence,
// features, motors, reward learning and prediction. Per-element functions shared by both engines;
// the order they run in is written once, in ReadoutStep (cpu/readout_step.h), and the CUDA
// kernels follow it.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"
#include "gpu/model/field_shape.h"

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

// Step 1: c <- 0.9 c + 0.1 (1 - min(1, 1.5 err)); exploration x = 0.05 + 0.45 (1 - c).
FB_HD float confidence_next(float c, float err) { return 0.9f * c + 0.1f * (1.0f - fminf(1.0f, 1.5f * err)); }
FB_HD float exploration(float c) { return 0.05f + 0.45f * (1.0f - c); }

// Step 4: t_k = 2 sum ramp_a A_g / (sum |A_g| + 1e-3 V), scale-free pull of group g along axis a.
FB_HD float field_pull(float ramp_sum, float abs_sum, int voxels) {
  return 2.0f * ramp_sum / (abs_sum + 1e-3f * float(voxels));
}
FB_HD int motor_axis(int k) { return k % 3; }
FB_HD int motor_group(int k) { return k % kContentGroups; }

// m_k = tanh(t_k + Wm_k . phi / sqrt(P) + x xi_k).
FB_HD float motor_value(float pull, float wm_dot_phi, float explore, float xi) {
  return fast_tanh(pull + wm_dot_phi * kInvSqrtFeatures + explore * xi);
}

// Step 5: Wm += 0.5 adv elig_(t-1) (clipped), elig_t = (m_t - mbar) phi_t / sqrt(P).
FB_HD float wm_next(float w, float advantage, float elig) {
  return clampf(w + 0.5f * advantage * elig, -kWmBound, kWmBound);
}
FB_HD float elig_value(float motor, float motor_mean, float phi) {
  return (motor - motor_mean) * phi * kInvSqrtFeatures;
}
FB_HD float baseline_next(float rbar, float r) { return 0.95f * rbar + 0.05f * r; }
FB_HD float motor_mean_next(float mbar, float m) { return 0.9f * mbar + 0.1f * m; }

// Step 6: normalised LMS, Wp += 0.5 e phi_(t-1) / |phi_(t-1)|^2 (skipped while |phi_(t-1)| = 0);
// then p = tanh(Wp phi_t).
FB_HD float wp_next(float w, float e, float phi_prev, float inv_norm2) {
  return w + 0.5f * e * phi_prev * inv_norm2;
}
FB_HD float inverse_norm2(float norm2) { return norm2 > 1e-6f ? 1.0f / norm2 : 0.0f; }
FB_HD float prediction_value(float wp_dot_phi) { return fast_tanh(wp_dot_phi); }

// The pieces of standardise_features, for engines that compute the P entries in parallel (one
// thread per entry, the two sums as reductions): the pooled block mean before standardising,
// the mean from the sum of those, 1 / std from the sum of squared deviations (0 when the field
// is uniform), and the standardised entry.
FB_HD float feature_raw(float pool_sum, const FieldShape& s) {
  return pool_sum * (float(kPoolBlocks) / float(s.voxels()));
}
FB_HD float feature_mean(float raw_sum) { return raw_sum * (1.0f / float(kFeatures)); }
FB_HD float feature_deviation2(float raw, float mean) { return (raw - mean) * (raw - mean); }
FB_HD float feature_inv_std(float deviation2_sum) {
  const float var = deviation2_sum * (1.0f / float(kFeatures));
  return var > 1e-12f ? 1.0f / sqrtf(var) : 0.0f;
}
FB_HD float feature_standardised(float raw, float mean, float inv_std) { return (raw - mean) * inv_std; }

// phi: each pooled block mean, standardised over all P entries (zero mean, unit std; all zero
// when the field is uniform). Sums run in index order here; the CUDA engine sums by a fixed tree.
FB_HD void standardise_features(const FieldSummary& sum, const FieldShape& s, float* phi) {
  float raw_sum = 0.0f;
  for (int g = 0; g < kContentGroups; ++g)
    for (int b = 0; b < kPoolBlocks; ++b) {
      phi[g * kPoolBlocks + b] = feature_raw(sum.pool[g][b], s);
      raw_sum += phi[g * kPoolBlocks + b];
    }
  const float mean = feature_mean(raw_sum);
  float dev2_sum = 0.0f;
  for (int i = 0; i < kFeatures; ++i) dev2_sum += feature_deviation2(phi[i], mean);
  const float inv_std = feature_inv_std(dev2_sum);
  for (int i = 0; i < kFeatures; ++i) phi[i] = feature_standardised(phi[i], mean, inv_std);
}

}  // namespace fieldbrain::model
