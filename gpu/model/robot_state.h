// Per-robot state besides the field, as plain structs: the same bytes live in host memory
// (CPU engine, checkpoints) and device memory (CUDA engine).
#pragma once

#include <cstdint>

#include "gpu/model/driver.h"
#include "gpu/model/field_shape.h"

namespace fieldbrain {

// The pattern memory of DESIGN.md section 5 (gpu/model/memory_math.h has the rules): context keys
// are HRR vectors of kKeyDim dimensions kept as kKeyBins-bin half spectra, and each robot keeps
// kMemoryEntries (key, coarse pattern, valence, strength) entries.
inline constexpr int kKeyDim = 256;
inline constexpr int kKeyBins = kKeyDim / 2 + 1;
inline constexpr int kMemoryEntries = 32;
inline constexpr int kRecallTop = 3;

// What the predictor sees: psi = [phi_t | g s_t | g s_(t-1)], the field's P features, then the
// sensor frame and the frame before it (gpu/model/readout.h). The two frame parts have room for
// kMaxSensors each; entries past sensor_count stay 0.
inline constexpr int kFrameFeaturesAt = kFeatures;
inline constexpr int kContextFeaturesAt = kFeatures + kMaxSensors;
inline constexpr int kReadoutFeatures = kFeatures + 2 * kMaxSensors;

// Fixed for a robot's life, derived from its seed (MakeRobotParams).
struct RobotParams {
  uint64_t seed = 0;
  int32_t sensor_count = 0;
  int32_t motor_count = 0;
  int32_t learn_motors = 1;  // 0 freezes the driver's actor (a control for the bandit test)
  int32_t site[kMaxSensors][3] = {};  // sensor i imprints around voxel site[i]
  // Unit-norm mixing vector of sensor i over the content channels (first content() entries).
  float mix[kMaxSensors][kMaxContentChannels] = {};
  // Context keys: sensor i's unitary role vector and the shared unitary base, as phases per key
  // bin (bins 0 and kKeyBins - 1 are not used by keys).
  float key_role_phase[kMaxSensors][kKeyBins] = {};
  float key_base_phase[kKeyBins] = {};
};

// Learned and scalar state, updated every cycle (docs/brain.md gives the rules).
struct RobotState {
  uint64_t cycle = 0;
  float confidence = 0.5f;
  float psi_prev_norm2 = 0.0f;   // |psi_(t-1)|^2, 0 before the first cycle
  float last_error = 0.0f;       // err of the latest cycle
  int32_t pattern_active = 0;    // 1 once memory recall has written a non-zero pattern
  // What the driver's exploration and withdrawal read (gpu/model/exploration.h).
  float reward_fast = 0.0f;      // reward over the last ~1 s (50 cycles)
  float reward_slow = 0.0f;      // reward over the last ~10 s: what the robot has come to expect
  float reward_spread = 0.0f;    // mean |r - reward_slow| over the last ~10 s
  float novelty = 0.0f;          // how far the sensors are from their recent mean
  float novelty_slow = 0.0f;     // the novelty over the last ~40 s: what the robot is used to
  float sensor_mean[kMaxSensors] = {};      // the sensors over the last ~0.5 s
  // Features: the slow scale that divides them (0 before the first cycle).
  float feature_scale = 0.0f;
  float psi_prev[kReadoutFeatures] = {};    // psi_(t-1)
  float motor_prev[kMaxMotors] = {};        // the motors sent last cycle, judged by this reward
  float prediction[kMaxSensors] = {};       // p, the prediction of the next sensor frame
  float wp[kMaxSensors][kReadoutFeatures] = {};    // prediction readout Wp
  // The driver (gpu/model/driver.h): its advantage's running square (about the mean) and mean,
  // its critic w, actor theta and their eligibility traces over d = [s | s^2 | 1]. The frame it
  // learns from last cycle is psi_prev's.
  float driver_advantage_square = 0.0f;
  float driver_advantage_mean = 0.0f;
  float driver_critic[model::kDriverFeatures] = {};
  float driver_critic_trace[model::kDriverFeatures] = {};
  float driver_actor[kMaxMotors][model::kDriverFeatures] = {};
  float driver_actor_trace[kMaxMotors][model::kDriverFeatures] = {};
  // The driver's undo (model::driver_undo_starts): the held command is motor_prev while it runs.
  int32_t undo_left = 0;                        // held cycles still to send after the last one
  int32_t undo_held = 0;                        // 1 when motor_prev was a held command
  int32_t undo_since = model::kUndoSinceCap;    // cycles the actor has driven since the last undo
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
