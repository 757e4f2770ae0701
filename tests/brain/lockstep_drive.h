// Cars driving brain-sim's random rooms in lockstep, in-process (no daemon, no wire): each tick
// every car reads its world, the brains among them run as one engine batch, and every world steps
// 20 ms on the command it got, through the PiCar-X adapter without its obstacle reflex (brain-sim
// --reflex=off: a blocked tick is a collision that keeps costing -1). The driving behaviour tests
// and tests/bench/driving_survey.cc share it, so a figure in one reproduces in the other.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/tools/sim_robot.h"
#include "gpu/model/field_shape.h"

namespace fieldbrain::testing {

enum class Driver {
  kBrain,           // the engine's brain, fed the world's reward
  kBrainRewardOff,  // the same brain fed a reward of 0
  kRandomHeld,      // uniform commands held kRandomHoldTicks, one generator for all cars
  kActorCritic,     // the tuned linear actor-critic (client/sim/linear_actor_critic.h)
  kReactive,        // the hand-written reactive driver (client/sim/reactive_driver.h)
};
const char* DriverName(Driver driver);

// One car: the room it drives (brain-sim's random arena and start for that seed) and its brain's
// seed (unused by the baselines).
struct Car {
  uint64_t room = 0;
  uint64_t brain_seed = 0;
};
// Car i drives room first_room + i with brain seed first_brain_seed + i (0: the room's seed, as
// brain-sim without --brain_seed).
std::vector<Car> ConsecutiveCars(uint64_t first_room, int count, uint64_t first_brain_seed = 0);

struct LockstepOptions {
  int ticks = 10000;
  std::string engine = "cpu";  // MakeEngine's kind: "cpu", or "cuda" where built
  int threads = 2;             // the CPU engine's workers
  FieldShape shape = FieldShape::Small();
  // Which draw of a baseline's randomness: random-held's generator starts at 99 + draw, car i's
  // actor-critic noise at ActorCriticSeed(draw, its room).
  uint64_t draw = 0;
};

// The seed of the actor-critic's noise in `room` for `draw`: draw * 1000 + room.
uint64_t ActorCriticSeed(uint64_t draw, uint64_t room);

// Each car's blocked flag and reward, tick by tick. An error only when the engine cannot be made
// or refuses a batch.
absl::StatusOr<std::vector<std::vector<sim::TickOutcome>>> DriveInLockstep(Driver driver, std::span<const Car> cars,
                                                                          const LockstepOptions& options);

}  // namespace fieldbrain::testing
