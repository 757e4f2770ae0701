#include "gpu/robot_params.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "gpu/model/driver.h"
#include "gpu/model/field_math.h"
#include "gpu/model/memory_math.h"
#include "gpu/model/philox.h"

namespace fieldbrain {

absl::StatusOr<RobotParams> MakeRobotParams(const BrainSpec& spec, const FieldShape& shape) {
  if (spec.sensor_count < 1 || spec.sensor_count > kMaxSensors)
    return absl::InvalidArgumentError(
        absl::StrCat("sensor_count ", spec.sensor_count, " outside 1..", kMaxSensors));
  if (spec.motor_count < 1 || spec.motor_count > kMaxMotors)
    return absl::InvalidArgumentError(
        absl::StrCat("motor_count ", spec.motor_count, " outside 1..", kMaxMotors));
  RobotParams p;
  p.seed = spec.seed;
  p.sensor_count = spec.sensor_count;
  p.motor_count = spec.motor_count;
  p.learn_motors = spec.learn_motors ? 1 : 0;
  const int content = shape.content();
  for (int i = 0; i < spec.sensor_count; ++i) {
    model::sensor_site(i, spec.sensor_count, shape, p.site[i]);
    double norm2 = 0.0;
    for (int c = 0; c < content; ++c) {
      p.mix[i][c] = model::normal_draw(spec.seed, model::Domain::kMixing, uint64_t(i), uint32_t(c));
      norm2 += double(p.mix[i][c]) * p.mix[i][c];
    }
    const float inv = float(1.0 / std::sqrt(norm2));
    for (int c = 0; c < content; ++c) p.mix[i][c] *= inv;
    for (int k = 0; k < kKeyBins; ++k) p.key_role_phase[i][k] = model::key_role_phase(spec.seed, i, k);
  }
  for (int k = 0; k < kKeyBins; ++k) p.key_base_phase[k] = model::key_base_phase(spec.seed, k);
  return p;
}

void InitRobotState(const RobotParams& params, RobotState& state) {
  state = RobotState{};
  for (int k = 0; k < params.motor_count; ++k)
    for (int j = 0; j < model::kDriverFeatures; ++j)
      if (model::driver_feature_used(j, params.sensor_count))
        state.driver_actor[k][j] = model::driver_initial_weight(params.seed, k, j);
}

absl::Status CheckSnapshot(const BrainSnapshot& s, const FieldShape& shape) {
  if (!(s.shape == shape))
    return absl::InvalidArgumentError(absl::StrCat(
        "snapshot field is ", s.shape.channels, "x", s.shape.nx, "x", s.shape.ny, "x", s.shape.nz,
        ", this engine's is ", shape.channels, "x", shape.nx, "x", shape.ny, "x", shape.nz));
  const int64_t pattern_floats = int64_t(shape.memory()) * shape.coarse_voxels();
  if (int64_t(s.field.size()) != shape.floats() || int64_t(s.pattern.size()) != pattern_floats ||
      int64_t(s.memory_patterns.size()) != kMemoryEntries * pattern_floats)
    return absl::InvalidArgumentError("snapshot field, pattern or memory patterns have the wrong number of values");
  if (s.params.sensor_count < 1 || s.params.sensor_count > kMaxSensors || s.params.motor_count < 1 ||
      s.params.motor_count > kMaxMotors)
    return absl::InvalidArgumentError("snapshot sensor or motor count out of range");
  for (int i = 0; i < s.params.sensor_count; ++i)
    for (int a = 0; a < 3; ++a) {
      const int n = a == 0 ? shape.nx : a == 1 ? shape.ny : shape.nz;
      if (s.params.site[i][a] < 0 || s.params.site[i][a] >= n)
        return absl::InvalidArgumentError("snapshot sensor site outside the field");
    }
  // Every pass keeps the field within these bounds, and the evolve core relies on them
  // (model::kMaxEvolveArgument): a field from elsewhere is held to them too.
  const int64_t dynamics_first = int64_t(shape.dynamics_begin()) * shape.voxels();
  for (int64_t i = 0; i < int64_t(s.field.size()); ++i) {
    const float bound = i < dynamics_first ? model::kFieldBound : model::kDynamicsBound;
    if (!(std::fabs(s.field[size_t(i)]) <= bound))
      return absl::InvalidArgumentError(absl::StrCat(
          "snapshot field value ", s.field[size_t(i)], " at channel ", i / shape.voxels(), ", voxel ",
          i % shape.voxels(), " is outside +-", bound, " (content and memory stay within +-", model::kFieldBound,
          ", dynamics within +-", model::kDynamicsBound, ")"));
  }
  return absl::OkStatus();
}

}  // namespace fieldbrain
