// The fixed, seed-derived part of a brain, a newborn's state, and the checks shared by both engines.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/engine.h"

namespace fieldbrain {

// Sensor sites and unit-norm Gaussian mixing vectors, from the seed alone (Philox, never a
// process-salted hash), so a robot gets the same brain structure on every server and engine.
absl::StatusOr<RobotParams> MakeRobotParams(const BrainSpec& spec, const FieldShape& shape);

// A newborn's state: everything zero but the driver's small seeded actor weights
// (model::driver_initial_weight), so two newborns' stimuli already differ.
void InitRobotState(const RobotParams& params, RobotState& state);

// Whether a snapshot can be restored into an engine of this shape: its sizes, counts, sensor sites,
// and every field value finite and within its channel's bound.
absl::Status CheckSnapshot(const BrainSnapshot& snapshot, const FieldShape& shape);

}  // namespace fieldbrain
