// The simulated arena as a RobotBody, for picarx-brainstem --dry-run: the same program, the same
// brain client and the same reflexes, with sim::World in place of the Robot HAT. The reward is
// the world's own (20 x metres forward, -1 a blocked tick), which a real car cannot measure.
#pragma once

#include <optional>

#include "client/picarx/hardware/robot_body.h"
#include "client/sim/world.h"

namespace fieldbrain::picarx {

class SimulatedBody final : public RobotBody {
 public:
  SimulatedBody(sim::WorldConfig config, uint64_t seed, double tick_s) : world_(config, seed), tick_s_(tick_s) {}

  absl::StatusOr<RawReading> Read() override { return world_.Read(); }
  absl::Status Apply(const HardwareCommand& command) override {
    reward_ = float(world_.Step(command, tick_s_).reward);
    return absl::OkStatus();
  }
  std::optional<float> Reward() const override { return reward_; }
  absl::Status Stop() override { return absl::OkStatus(); }  // the world moves only when stepped

  const sim::World& world() const { return world_; }

 private:
  sim::World world_;
  const double tick_s_;
  std::optional<float> reward_;
};

}  // namespace fieldbrain::picarx
