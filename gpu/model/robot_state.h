// Per-robot state besides the field, as plain structs: the same bytes live in host memory
// (CPU engine, checkpoints) and device memory (CUDA engine).
#pragma once

#include <cstdint>

#include "gpu/model/field_shape.h"

namespace fieldbrain {

// The pattern memory of DESIGN.md section 5 (gpu/model/memory_math.h has the rules): context keys
// are HRR vectors of kKeyDim dimensions kept as kKeyBins-bin half spectra, and each robot keeps
// kMemoryEntries (key, coarse pattern, valence, strength) entries.
inline constexpr int kKeyDim = 256;
inline constexpr int kKeyBins = kKeyDim / 2 + 1;
inline constexpr int kMemoryEntries = 32;
inline constexpr int kRecallTop = 3;

// Fixed for a robot's life, derived from its seed (MakeRobotParams).
struct RobotParams {
  uint64_t seed = 0;
  int32_t sensor_count = 0;
  int32_t motor_count = 0;
  int32_t learn_motors = 1;  // 0 freezes Wm (a control for the bandit test)
  int32_t site[kMaxSensors][3] = {};  // sensor i imprints around voxel site[i]
  // Unit-norm mixing vector of sensor i over the content channels (first content() entries).
  float mix[kMaxSensors][kMaxContentChannels] = {};
  // Context keys: sensor i's unitary role vector and the shared unitary base, as phases per key
  // bin (bins 0 and kKeyBins - 1 are not used by keys).
  float key_role_phase[kMaxSensors][kKeyBins] = {};
  float key_base_phase[kKeyBins] = {};
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
  // Pattern memory bookkeeping (gpu/model/memory_math.h).
  float key_prev[kKeyBins][2] = {};         // q_(t-1), unit norm; valid once cycle > 0
  float error_mean = 0.0f;                  // running mean of err, for surprise
  int32_t memory_written = -1;              // entry written this cycle, or -1
  int32_t memory_recalled = -1;             // best entry recalled this cycle, or -1
  int32_t recall_entry[kRecallTop] = {-1, -1, -1};
  float recall_weight[kRecallTop] = {};     // blend weights of the recalled entries (sum 1)
  uint32_t memory_writes = 0;
};

// One robot's pattern memory, besides its coarse patterns (FieldPool keeps those: kMemoryEntries
// x memory() x coarse_voxels() floats per slot).
struct MemoryBank {
  float key[kMemoryEntries][kKeyBins][2] = {};  // unit-norm context keys
  float valence[kMemoryEntries] = {};
  float strength[kMemoryEntries] = {};          // 1 when written, x0.95 per later write
  int32_t used[kMemoryEntries] = {};
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
