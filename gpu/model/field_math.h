// The per-voxel math of one field cycle (DESIGN.md section 4, steps 2 and 3). Both engines call
// exactly these functions; they differ only in how they walk memory.
//
// Cross-channel terms (memory mean, group means, local activity) are read from F_t, the field
// before this cycle, so a voxel's new value depends on F_t alone and the pass can run in any order.
#pragma once

#include <cmath>

#include "gpu/model/fastmath.h"
#include "gpu/model/field_shape.h"

namespace fieldbrain::model {

inline constexpr float kFieldBound = 1.5f;     // content and memory stay within +-1.5
inline constexpr float kDynamicsBound = 5.0f;  // dynamics channels stay within +-5
inline constexpr int kImprintRadius = 2;       // Chebyshev radius of a sensor's imprint
// Sensors whose imprint one (x, y) column takes, the first in sensor order: both engines' cap
// (sensor_site never puts more than 25 within reach of a column).
inline constexpr int kMaxNearSensors = 32;
inline constexpr float kInitialSpread = 0.05f; // start: content and memory ~ N(0, 0.05^2)

FB_HD float clamp_abs(float v, float bound) { return clampf(v, -bound, bound); }

// g = ceil(sqrt(n)), in integers.
FB_HD int site_grid(int n) {
  int g = 1;
  while (g * g < n) ++g;
  return g;
}

// Sensor i of n sits on a g x g grid in the plane z = Z/4.
FB_HD void sensor_site(int i, int n, const FieldShape& s, int site[3]) {
  const int g = site_grid(n);
  site[0] = int(((i % g) + 0.5f) * s.nx / g);
  site[1] = int(((i / g) + 0.5f) * s.ny / g);
  site[2] = s.nz / 4;
}

// 0.8^d for the L1 distance d of a voxel from a sensor site.
FB_HD float imprint_decay(int l1) {
  float w = 1.0f;
  for (int i = 0; i < l1; ++i) w *= 0.8f;
  return w;
}

// Sensor i's share of the sensory field S (value s_i) or the error field E (value e_i) in content
// channel ch at a voxel at L1 distance d from its site: w_i[ch] * value * 0.8^d. Engines sum the
// shares in sensor order.
FB_HD float imprint_share(float mix, float value, float decay) { return mix * value * decay; }

// What the imprint adds to a content channel: 0.05 S + eta E.
FB_HD float imprint_term(float s_field, float e_field, float eta) { return mul_add(eta, e_field, 0.05f * s_field); }

// 7-point Laplacian; callers pass clamped (replicated) neighbours at the borders.
FB_HD float laplacian7(float c, float xm, float xp, float ym, float yp, float zm, float zp) {
  return mul_add(-6.0f, c, (xm + xp) + (ym + yp) + (zm + zp));
}

// The per-voxel rates of channels with ch mod quarter == r, from the voxel's dynamics channels.
// They depend on the voxel and r only, so engines compute them once per voxel, not per channel.
// The sigmoid of a dynamics channel's value, which is within kDynamicsBound (the pass keeps it,
// CheckSnapshot checks a restored field), inside exp_in_range's domain: fast_sigmoid without
// fast_exp's clamp, the same value.
static_assert(kDynamicsBound < 87.0f, "the dynamics' sigmoid would need fast_exp's clamp");
FB_HD float dynamics_sigmoid(float d) { return 1.0f / (1.0f + exp_in_range(-d)); }

// k = 0.05 + 0.1 sigmoid(D_diffusion), lam = 0.90 + 0.099 sigmoid(D_retention).
inline constexpr float kDiffusionFloor = 0.05f, kDiffusionSpan = 0.1f;
inline constexpr float kRetentionFloor = 0.90f, kRetentionSpan = 0.099f;
FB_HD float diffusion_rate(float d_diffusion) {
  return mul_add(kDiffusionSpan, dynamics_sigmoid(d_diffusion), kDiffusionFloor);
}
FB_HD float retention_rate(float d_retention) {
  return mul_add(kRetentionSpan, dynamics_sigmoid(d_retention), kRetentionFloor);
}
// eta = 0.1 (0.5 + sigmoid(D_plasticity)): how strongly prediction error is written into content.
FB_HD float plasticity_gain(float d_plasticity) { return 0.1f * (0.5f + dynamics_sigmoid(d_plasticity)); }
// Memory-to-content coupling: 0.2 sigmoid(D_coupling) tanh(mean memory at v); the gain is 0.1 at
// rest (D = 0), as DESIGN.md writes it, and the coupling channels can move it within (0, 0.2).
// The tanh does not depend on the quarter, so the CPU pass takes it once per voxel.
FB_HD float memory_coupling_of(float d_coupling, float tanh_memory_mean) {
  return 0.2f * dynamics_sigmoid(d_coupling) * tanh_memory_mean;
}
// The memory mean is within kFieldBound (as F is: see kMaxEvolveArgument), the narrow fit's range.
static_assert(kFieldBound <= kFieldTanhRange, "the memory mean's tanh needs the wide fit");
FB_HD float memory_mean_tanh(float memory_mean) { return tanh_within_field_range(memory_mean); }
FB_HD float memory_coupling(float d_coupling, float memory_mean) {
  return memory_coupling_of(d_coupling, memory_mean_tanh(memory_mean));
}

// F' = 0.95 tanh(0.9 lam (F + k L)). The gain 0.9 lam is the voxel's, for all its channels: the
// CPU pass takes it once per voxel (the same product, so the same bits).
inline constexpr float kEvolveGain = 0.9f;
FB_HD float evolve_gain(float lam) { return kEvolveGain * lam; }
// The tanh's argument is within +-1.35 for every field within kFieldBound: F + k L is
// (1 - 6k) F + k (the six neighbours), an average of seven values within the bound while 6k <= 1,
// and sigmoid <= 1 bounds lam. The pass keeps the field within it and Engine::Restore checks it
// (CheckSnapshot), so the core takes the narrow fit, which needs no clamp. A field holding NaN
// gives NaN.
static_assert(6.0f * (kDiffusionFloor + kDiffusionSpan) <= 1.0f, "F + k L is no longer an average");
inline constexpr float kMaxEvolveArgument = kEvolveGain * (kRetentionFloor + kRetentionSpan) * kFieldBound;
static_assert(kMaxEvolveArgument <= kFieldTanhRange, "the evolve core's tanh needs the wide fit");
// The core in its two steps, for an engine that takes them in separate loops: the argument from
// the voxel and its neighbours, then the tanh.
FB_HD float evolve_argument(float f, float lap, float gain, float k) { return gain * mul_add(k, lap, f); }
FB_HD float evolve_core_of(float argument) { return 0.95f * tanh_within_field_range(argument); }
FB_HD float evolve_core_with_gain(float f, float lap, float gain, float k) {
  return evolve_core_of(evolve_argument(f, lap, gain, k));
}
FB_HD float evolve_core(float f, float lap, float lam, float k) {
  return evolve_core_with_gain(f, lap, evolve_gain(lam), k);
}

// Content: F' + 0.05 S + eta E + the memory coupling, kept within the field bound.
FB_HD float content_next(float core, float imprint, float coupling) {
  return clamp_abs(core + imprint + coupling, kFieldBound);
}

// Memory channel j: 0.9 F'_j + 0.05 mean(G_(j mod 4)) + 0.1 P_j.
FB_HD float memory_next(float core, float group_mean, float pattern) {
  return clamp_abs(mul_add(0.1f, pattern, mul_add(0.05f, group_mean, 0.9f * core)), kFieldBound);
}

// Local activity of the content channels that one dynamics channel governs (those with
// ch mod quarter == r), at one voxel.
struct LocalActivity {
  float mean_abs = 0.0f;
  float variance = 0.0f;
  float sparsity = 0.0f;  // fraction with |F| < 0.1
};

FB_HD LocalActivity local_activity(float sum_abs, float sum, float sum_sq, float n_quiet, int n) {
  const float inv = 1.0f / float(n);
  const float mean = sum * inv;
  const float variance = sum_sq * inv - mean * mean;
  return LocalActivity{sum_abs * inv, variance > 0.0f ? variance : 0.0f, n_quiet * inv};
}

FB_HD bool is_quiet(float f) { return fabsf(f) < 0.1f; }

// Resting value of a dynamics quarter: retention starts (and rests) at 2, the others at 0.
FB_HD float dynamics_rest(DynamicsQuarter quarter) { return quarter == DynamicsQuarter::kRetention ? 2.0f : 0.0f; }

// U for quarter q: the rest value moved by at most 0.3 by the local activity. Retention rises
// where the voxel is quiet, diffusion rises with variance, coupling with activity, plasticity
// with sparsity (quiet voxels learn faster). Mean |F| is within kFieldBound and sparsity within
// [0, 1], so their arguments stay within 4 (kFieldBound + 0.3) and take the tanh without its
// clamp; the variance's (up to 8 kFieldBound^2) keeps it.
FB_HD float dynamics_target(DynamicsQuarter quarter, const LocalActivity& a) {
  constexpr float kStrength = 0.3f;
  static_assert(4.0f * (kFieldBound + 0.3f) < kTanhSaturation, "the activity's tanh would need its clamp");
  switch (quarter) {
    case DynamicsQuarter::kRetention:
      return dynamics_rest(quarter) + kStrength * tanh_within_saturation(4.0f * (0.3f - a.mean_abs));
    case DynamicsQuarter::kDiffusion: return kStrength * fast_tanh(8.0f * (a.variance - 0.05f));
    case DynamicsQuarter::kCoupling: return kStrength * tanh_within_saturation(4.0f * (a.mean_abs - 0.2f));
    case DynamicsQuarter::kPlasticity: return kStrength * tanh_within_saturation(4.0f * (a.sparsity - 0.5f));
  }
  __builtin_unreachable();  // every quarter is a case above
}

// D <- 0.95 D + 0.05 U, within +-5.
FB_HD float dynamics_next(float d, float target) {
  return clamp_abs(mul_add(0.05f, target, 0.95f * d), kDynamicsBound);
}

// Where fine voxel v falls between coarse cells along an axis of n cells (cell centres at
// 4i + 1.5): cells i0 and i1, weight w of i1.
struct PatternAxis {
  int i0, i1;
  float w;
};
FB_HD PatternAxis pattern_axis(int v, int n) {
  float u = (float(v) + 0.5f) * 0.25f - 0.5f;
  u = fminf(fmaxf(u, 0.0f), float(n - 1));
  const int i0 = int(u);
  return PatternAxis{i0, i0 + 1 < n ? i0 + 1 : n - 1, u - float(i0)};
}

FB_HD float pattern_lerp(float a0, float a1, float w) { return mul_add(w, a1 - a0, a0); }

// The coarse pattern (one channel, pooled by 4 on each axis) interpolated along z at fine z, at
// coarse cell (i, j) of x and y.
FB_HD float pattern_z(const float* coarse, const FieldShape& s, int i, int j, PatternAxis az) {
  const int cy = s.ny / 4, cz = s.nz / 4;
  const float* cell = coarse + (i * cy + j) * cz;
  return pattern_lerp(cell[az.i0], cell[az.i1], az.w);
}

// Trilinear sample at fine voxel (x, y, z) of one channel of the coarse pattern: along z, then x,
// then y. (The CPU engine takes the same lerps once per coarse column, per slab and per row.)
FB_HD float pattern_sample(const float* coarse, const FieldShape& s, int x, int y, int z) {
  const PatternAxis ax = pattern_axis(x, s.nx / 4), ay = pattern_axis(y, s.ny / 4), az = pattern_axis(z, s.nz / 4);
  const float y0 = pattern_lerp(pattern_z(coarse, s, ax.i0, ay.i0, az), pattern_z(coarse, s, ax.i1, ay.i0, az), ax.w);
  const float y1 = pattern_lerp(pattern_z(coarse, s, ax.i0, ay.i1, az), pattern_z(coarse, s, ax.i1, ay.i1, az), ax.w);
  return pattern_lerp(y0, y1, ay.w);
}

}  // namespace fieldbrain::model
