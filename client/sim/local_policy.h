// LocalPolicy: a driver that runs on the robot's side instead of the brain server, to compare the
// brain with in the same world (brain-sim --policy, the behaviour tests). It sees what the brain
// sees: the PiCar-X's 12 normalised sensors (picarx_adapter.h) and the reward that judges its
// previous command, and answers the 4 normalised motors [drive, steer, pan, tilt].
#pragma once

#include <array>
#include <optional>
#include <span>

#include "client/picarx/picarx_adapter.h"

namespace fieldbrain::sim {

using Motors = std::array<float, picarx::kMotorCount>;

class LocalPolicy {
 public:
  virtual ~LocalPolicy() = default;
  // This tick's command. `reward` judges the previous tick's command (none before the first).
  virtual Motors Act(std::span<const float> sensors, std::optional<float> reward) = 0;
};

}  // namespace fieldbrain::sim
