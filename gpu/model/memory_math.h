// The brain's pattern memory (DESIGN.md section 5; docs/brain.md): every per-robot rule, once,
// for the CPU engine's loops and the CUDA engine's memory kernels.
//
// Each cycle the sensors become a context key q_t = normalise(sum_i ROLE_i (*) BASE^{b s_i}),
// built in the frequency domain (gpu/hrr/hrr_math.h: bin k of ROLE_i (*) BASE^(b s) is
// exp(i (phi_ik + b s theta_k)) for unitary roles and base; b = kKeyBandwidth), so no FFT. Similar sensor values give
// similar keys (the fractional-power kernel), different roles keep sensors apart.
//
// Write: when the reward judges the last action (|r| > 0.1, valence r) or the prediction error
// spikes (err > 2 x its running mean + 0.02 after 20 cycles, valence +0.5), the context that led
// here, q_(t-1), is stored with the current coarse pattern of the memory channels (the field
// pooled by 4). The entry: the one already holding that context (cos > 0.95), else a free one,
// else the weakest. Every other entry's strength decays by 0.95 per write: 0.95^age, with age in
// writes, so a robot that learns nothing new forgets nothing.
//
// Recall: cosine of q_t against every stored key; the best three above 0.3, weighted by
// strength x softmax(cos / 0.1), give P = sum_j w_j valence_j pattern_j, the pattern the evolve
// pass samples into the memory channels (0.1 P).
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/hrr/hrr_math.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/hd.h"
#include "gpu/model/philox.h"
#include "gpu/model/portable_math.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::model {

inline constexpr float kWriteRewardThreshold = 0.1f;
inline constexpr float kSurpriseRatio = 2.0f;
inline constexpr float kSurpriseMargin = 0.02f;
inline constexpr float kSurpriseValence = 0.5f;
inline constexpr uint64_t kSurpriseWarmup = 20;
inline constexpr float kErrorMeanRate = 0.05f;
inline constexpr float kStrengthDecay = 0.95f;
inline constexpr float kSameContextCos = 0.95f;
inline constexpr float kRecallMinCos = 0.3f;
inline constexpr float kRecallTemperature = 0.1f;
// How fast keys decorrelate as a sensor moves: cos(key(s), key(s + d)) ~ mean over sensors of
// sinc(kKeyBandwidth d). At 4, sensor noise of 0.05 keeps a key's cosine with itself near 0.93,
// while two unrelated contexts (uniform sensors) land near 0.1, below the recall threshold.
inline constexpr float kKeyBandwidth = 4.0f;

// Phases of the unitary role of sensor i and of the base, per key bin, from the robot's seed.
FB_HD float key_role_phase(uint64_t seed, int i, int k) {
  return hrr::phase_of_bits(uniform_bits(seed, Domain::kMemoryKeys, uint64_t(i), uint32_t(k)));
}
FB_HD float key_base_phase(uint64_t seed, int k) {
  return hrr::phase_of_bits(uniform_bits(seed, Domain::kMemoryKeys, uint64_t(kMaxSensors), uint32_t(k)));
}

// Sensor i's term of bin k of a key (engines add the terms in sensor order, from zero).
FB_HD SinCos key_term(const RobotParams& p, const float* sensors, int i, int k) {
  return sin_cos(p.key_role_phase[i][k] + kKeyBandwidth * sensors[i] * p.key_base_phase[k]);
}
// Bin k of the unnormalised key of `sensors`. The real bins (0 and Nyquist) are left out: they
// would be the same constant for every context and make all keys alike.
FB_HD hrr::Cf key_bin(const RobotParams& p, const float* sensors, int k) {
  if (k == 0 || k == kKeyBins - 1) return hrr::Cf{};
  hrr::Cf q{};
  for (int i = 0; i < p.sensor_count; ++i) {
    const SinCos e = key_term(p, sensors, i, k);
    q.re += e.cos;
    q.im += e.sin;
  }
  return q;
}

// Bin k's share of D <a, b> for keys (Parseval, gpu/hrr/hrr_math.h).
FB_HD float key_dot_term(hrr::Cf a, hrr::Cf b, int k) { return hrr::dot_term(a, b, k, kKeyBins); }
FB_HD hrr::Cf key_at(const float (*key)[2], int k) { return hrr::Cf{key[k][0], key[k][1]}; }

// D <a, b> for two keys is summed in one order on both engines, because the hard decisions (same
// context, recall above the threshold, the recall's order) read it: 32 lanes, lane l adding the
// terms of bins l, l + 32, l + 64, ... in turn (key_dot_lane), then the lanes folded as a warp's
// shuffle-down tree folds them: lane l += lane l + 16, then + 8, + 4, + 2, + 1 (key_dot_fold; the
// CUDA engine's WarpSum in gpu/cuda/device_reduce.cuh is that tree).
inline constexpr int kKeyLanes = 32;
FB_HD float key_dot_lane(const float (*a)[2], const float (*b)[2], int lane) {
  float part = 0.0f;
  for (int k = lane; k < kKeyBins; k += kKeyLanes) part += key_dot_term(key_at(a, k), key_at(b, k), k);
  return part;
}
FB_HD float key_dot_fold(const float* lanes) {
  static_assert(kKeyLanes == 32, "the fold below is written for 32 lanes");
  // Each level in a new array rather than in place: a compiler then keeps the tree in vector
  // registers (in place, it stored the lanes and read their halves back, which stalls).
  float h16[16], h8[8], h4[4], h2[2];
  for (int l = 0; l < 16; ++l) h16[l] = lanes[l] + lanes[l + 16];
  for (int l = 0; l < 8; ++l) h8[l] = h16[l] + h16[l + 8];
  for (int l = 0; l < 4; ++l) h4[l] = h8[l] + h8[l + 4];
  for (int l = 0; l < 2; ++l) h2[l] = h4[l] + h4[l + 2];
  return h2[0] + h2[1];
}
// The whole sum, for an engine that runs it on one thread: every bin's term, then every lane's
// sum as key_dot_lane takes it (bin l, then l + 32, ...), the lanes side by side so that the
// loops vectorise (about twice as fast as adding each term to its lane as it is computed).
FB_HD float key_dot(const float (*a)[2], const float (*b)[2]) {
  float term[kKeyBins];
  for (int k = 0; k < kKeyBins; ++k) term[k] = key_dot_term(key_at(a, k), key_at(b, k), k);
  float lanes[kKeyLanes];
  for (int l = 0; l < kKeyLanes; ++l) lanes[l] = 0.0f;
  constexpr int kWhole = kKeyBins / kKeyLanes * kKeyLanes;  // bins in whole rounds of the lanes
  for (int k0 = 0; k0 < kWhole; k0 += kKeyLanes)
    for (int l = 0; l < kKeyLanes; ++l) lanes[l] += term[k0 + l];
  for (int l = 0; l < kKeyBins - kWhole; ++l) lanes[l] += term[kWhole + l];
  return key_dot_fold(lanes);
}

// 1 / |q| from sum_k key_dot_term(q, q, k); 0 for a zero key.
FB_HD float key_inverse_norm(float dot_sum) {
  const float n2 = dot_sum / float(kKeyDim);
  return n2 > 0.0f ? 1.0f / sqrtf(n2) : 0.0f;
}
// cos of two unit keys from sum_k key_dot_term.
FB_HD float key_cosine(float dot_sum) { return dot_sum / float(kKeyDim); }

// The valence to store this cycle (0: no write); keeps the error's running mean.
FB_HD float memory_write_valence(RobotState& state, float reward) {
  const float err = state.last_error;
  float valence = 0.0f;
  if (state.cycle > 0) {
    if (fabsf(reward) > kWriteRewardThreshold) {
      valence = reward;
    } else if (state.cycle >= kSurpriseWarmup && err > kSurpriseRatio * state.error_mean + kSurpriseMargin) {
      valence = kSurpriseValence;
    }
  }
  state.error_mean += kErrorMeanRate * (err - state.error_mean);
  return valence;
}

// Which entry a write goes to, given cos(q_(t-1), key_j) for every entry (unused ones ignored).
FB_HD int memory_pick_entry(const MemoryBank& bank, const float* cos_prev) {
  int same = -1;
  for (int j = 0; j < kMemoryEntries; ++j)
    if (bank.used[j] && cos_prev[j] > kSameContextCos && (same < 0 || cos_prev[j] > cos_prev[same])) same = j;
  if (same >= 0) return same;
  for (int j = 0; j < kMemoryEntries; ++j)
    if (!bank.used[j]) return j;
  int weakest = 0;
  for (int j = 1; j < kMemoryEntries; ++j)
    if (bank.strength[j] < bank.strength[weakest]) weakest = j;
  return weakest;
}

// The bookkeeping of a write into `entry` (its key and pattern are copied by the caller).
FB_HD void memory_note_write(MemoryBank& bank, RobotState& state, int entry, float valence) {
  for (int j = 0; j < kMemoryEntries; ++j)
    if (bank.used[j] && j != entry) bank.strength[j] *= kStrengthDecay;
  bank.used[entry] = 1;
  bank.valence[entry] = valence;
  bank.strength[entry] = 1.0f;
  state.memory_written = entry;
  ++state.memory_writes;
}

// The recall from cos(q_t, key_j) for every entry: the best kRecallTop used entries above
// kRecallMinCos (ties: lower entry first) and their blend weights; sets pattern_active.
FB_HD void memory_recall(const MemoryBank& bank, const float* cos_now, RobotState& state) {
  int top[kRecallTop] = {-1, -1, -1};
  for (int j = 0; j < kMemoryEntries; ++j) {
    if (!bank.used[j] || !(cos_now[j] > kRecallMinCos)) continue;
    int at = kRecallTop;
    while (at > 0 && (top[at - 1] < 0 || cos_now[j] > cos_now[top[at - 1]])) --at;
    if (at >= kRecallTop) continue;
    for (int m = kRecallTop - 1; m > at; --m) top[m] = top[m - 1];
    top[at] = j;
  }
  float raw[kRecallTop] = {0.0f, 0.0f, 0.0f};
  float total = 0.0f;
  for (int m = 0; m < kRecallTop; ++m) {
    if (top[m] < 0) continue;
    raw[m] = bank.strength[top[m]] * fast_exp((cos_now[top[m]] - cos_now[top[0]]) / kRecallTemperature);
    total += raw[m];
  }
  bool active = false;
  for (int m = 0; m < kRecallTop; ++m) {
    state.recall_entry[m] = top[m];
    state.recall_weight[m] = top[m] >= 0 && total > 0.0f ? raw[m] / total : 0.0f;
    active = active || (top[m] >= 0 && bank.valence[top[m]] != 0.0f && state.recall_weight[m] > 0.0f);
  }
  state.memory_recalled = top[0];
  state.pattern_active = active ? 1 : 0;
}

// The coarse pattern value of memory channel j at coarse cell `cell` of field F: the mean of its
// 4x4x4 block, in an order an engine's pass over the field can follow: per x plane, each of the
// four z columns summed over the four y rows, then the columns added, then the planes.
FB_HD float coarse_memory_value(const float* field, const FieldShape& s, int j, int cell) {
  const int cy = s.ny / 4, cz = s.nz / 4;
  const int bx = cell / (cy * cz), by = (cell / cz) % cy, bz = cell % cz;
  const float* ch = field + int64_t(s.memory_begin() + j) * s.voxels();
  float sum = 0.0f;
  for (int dx = 0; dx < 4; ++dx) {
    float column[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int dy = 0; dy < 4; ++dy) {
      const float* row = ch + (int64_t(4 * bx + dx) * s.ny + (4 * by + dy)) * s.nz + 4 * bz;
      for (int q = 0; q < 4; ++q) column[q] += row[q];
    }
    sum += column[0] + column[1] + column[2] + column[3];
  }
  return sum * (1.0f / 64.0f);
}

// P at (channel j, cell) from the recalled entries' patterns (entry e's pattern starts at
// patterns + e * pattern_floats, channel-major like the slot's pattern).
FB_HD float recalled_pattern_value(const MemoryBank& bank, const RobotState& state, const float* patterns,
                                   int64_t pattern_floats, int64_t at) {
  float p = 0.0f;
  for (int m = 0; m < kRecallTop; ++m) {
    const int e = state.recall_entry[m];
    if (e < 0) continue;
    p += state.recall_weight[m] * bank.valence[e] * patterns[e * pattern_floats + at];
  }
  return p;
}

}  // namespace fieldbrain::model
