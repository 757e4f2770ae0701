// The per-robot steps of a cycle that sit around the field pass, in the order docs/brain.md
// gives them. The CPU engine calls these directly; the CUDA engine's readout kernels follow the
// same order with the same per-element functions (gpu/model/readout.h).
#pragma once

#include "gpu/model/readout.h"
#include "gpu/model/robot_state.h"

namespace fieldbrain::cpu {

// Step 1 (model::open_cycle): e = s - p into `errors` (sensor_count values), the confidence, the
// reward means and the novelty that frustration and boredom come from.
void OpenCycle(const RobotParams& params, RobotState& state, const float* sensors, float reward, float* errors);

// cos(state.key_prev, bank.key[j]) of every entry, as a robot's last recall computed them: its
// next write asks for exactly these, and nothing but MemoryStep changes the key or the bank in
// between. Whoever replaces a robot's state or bank (a new brain, a restore) clears `valid`.
struct RecallCosines {
  bool valid = false;
  float cos[kMemoryEntries] = {};
};

// The pattern memory (gpu/model/memory_math.h), between step 1 and the field pass: the write of
// last cycle's context when this frame's reward or error calls for one (its pattern:
// `pooled_memory`, the coarse memory channels of F_t), this frame's context key, the recall, and
// the recalled pattern P into `slot_pattern` for the field pass to sample. `memory_patterns`
// holds the entries' stored patterns; `last_recall` is read for the write and left as this
// recall's.
void MemoryStep(const RobotParams& params, RobotState& state, MemoryBank& bank, float* memory_patterns,
                const float* pooled_memory, const FieldShape& shape, const float* sensors, float reward,
                float* slot_pattern, RecallCosines& last_recall);

// model::coarse_memory_value at every cell of every memory channel of `field` (the pass over the
// field does this as it goes; this is for a field that no pass has written: new or restored).
void PoolMemoryChannels(const float* field, const FieldShape& shape, float* pooled);

// Steps 4-6 from the new field's summary and this frame's sensors: the predictor's features
// psi_t, the driver's learning from reward and the motors it sends or the undo it holds
// (gpu/model/driver.h), prediction learning of Wp and the next prediction. Fills `out` and
// advances the cycle count.
void CloseCycle(const RobotParams& params, RobotState& state, const FieldShape& shape,
                const model::FieldSummary& summary, const float* sensors, const float* errors, float reward,
                BatchOutputRow& out);

}  // namespace fieldbrain::cpu
