#include "tests/brain/lockstep_drive.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>

#include "client/picarx/picarx_adapter.h"
#include "client/sim/world.h"
#include "gpu/engine.h"

namespace fieldbrain::testing {
namespace {

constexpr double kTickS = 0.02;

bool IsBrain(Driver driver) {
  switch (driver) {
    case Driver::kBrain:
    case Driver::kBrainRewardOff: return true;
    case Driver::kRandomHeld:
    case Driver::kActorCritic:
    case Driver::kReactive: return false;
  }
  return false;
}

// The adapter as the robot runs it, without the 2 cm obstacle reflex.
picarx::HardwareCommand WithoutObstacleReflex(std::span<const float> motors, const picarx::RawReading& reading) {
  return picarx::ToHardware(motors, reading, /*safe_stop=*/false, picarx::ReflexSet{.obstacle = false});
}

}  // namespace

const char* DriverName(Driver driver) {
  switch (driver) {
    case Driver::kBrain: return "brain";
    case Driver::kBrainRewardOff: return "brain, reward off";
    case Driver::kRandomHeld: return "random-held";
    case Driver::kActorCritic: return "actor-critic";
    case Driver::kReactive: return "reactive";
  }
  return "unknown";
}

uint64_t ActorCriticSeed(uint64_t draw, uint64_t room) { return draw * 1000 + room; }

std::vector<Car> ConsecutiveCars(uint64_t first_room, int count, uint64_t first_brain_seed) {
  std::vector<Car> cars;
  for (int i = 0; i < count; ++i) {
    const uint64_t room = first_room + uint64_t(i);
    cars.push_back({room, first_brain_seed == 0 ? room : first_brain_seed + uint64_t(i)});
  }
  return cars;
}

absl::StatusOr<std::vector<std::vector<sim::TickOutcome>>> DriveInLockstep(Driver driver, std::span<const Car> cars,
                                                                          const LockstepOptions& options) {
  const int n = int(cars.size());
  const bool brain = IsBrain(driver);
  std::unique_ptr<Engine> engine;
  std::vector<int> slots;
  if (brain) {
    EngineConfig config;
    config.shape = options.shape;
    config.max_robots = n;
    config.max_batch = n;
    config.threads = options.threads;
    absl::StatusOr<std::unique_ptr<Engine>> made = MakeEngine(options.engine, config);
    if (!made.ok()) return made.status();
    engine = std::move(*made);
    for (const Car& car : cars) {
      BrainSpec spec;
      spec.seed = car.brain_seed;
      spec.sensor_count = picarx::kSensorCount;
      spec.motor_count = picarx::kMotorCount;
      absl::StatusOr<int> slot = engine->CreateBrain(spec);
      if (!slot.ok()) return slot.status();
      slots.push_back(*slot);
    }
  }
  std::vector<sim::World> worlds;
  std::vector<std::unique_ptr<sim::LocalPolicy>> policies(n);
  for (int i = 0; i < n; ++i) {
    sim::WorldConfig world;
    world.arena = sim::ArenaConfig::Random(cars[i].room);
    worlds.emplace_back(world, cars[i].room);
    switch (driver) {
      case Driver::kBrain:
      case Driver::kBrainRewardOff:
      case Driver::kRandomHeld: break;
      case Driver::kActorCritic:
        policies[i] = sim::MakeLocalPolicy(sim::Policy::kActorCritic, ActorCriticSeed(options.draw, cars[i].room),
                                           sim::ActorCriticConfig{});
        break;
      case Driver::kReactive: policies[i] = sim::MakeLocalPolicy(sim::Policy::kReactive, 0, {}); break;
    }
  }

  // Random-held draws every car's commands from one generator, car by car (the figures of issue
  // 9's behaviour test were set on these draws).
  std::mt19937_64 prng(99 + options.draw);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::vector<float>> motors(n, std::vector<float>(picarx::kMotorCount, 0.0f));
  std::vector<float> reward(n, 0.0f);
  std::vector<std::vector<sim::TickOutcome>> traces(n);
  for (auto& trace : traces) trace.reserve(size_t(options.ticks));
  std::vector<picarx::RawReading> readings(n);
  std::vector<picarx::Sensors> sensors(n);
  for (int t = 0; t < options.ticks; ++t) {
    for (int i = 0; i < n; ++i) {
      readings[i] = worlds[i].Read();
      sensors[i] = picarx::NormalizeSensors(readings[i]);
    }
    if (brain) {
      std::span<BatchInputRow> in = engine->inputs();
      for (int i = 0; i < n; ++i) {
        in[i].slot = slots[i];
        in[i].reward = driver == Driver::kBrainRewardOff ? 0.0f : reward[i];
        std::copy(sensors[i].values.begin(), sensors[i].values.end(), in[i].sensors);
      }
      if (absl::Status ran = engine->RunBatch(n); !ran.ok()) return ran;
    }
    for (int i = 0; i < n; ++i) {
      switch (driver) {
        case Driver::kBrain:
        case Driver::kBrainRewardOff:
          std::copy_n(engine->outputs()[i].motors, picarx::kMotorCount, motors[i].begin());
          break;
        case Driver::kRandomHeld:
          if (t % sim::kRandomHoldTicks == 0)
            for (float& m : motors[i]) m = uniform(prng);
          break;
        case Driver::kActorCritic:
        case Driver::kReactive: {
          const sim::Motors m = policies[i]->Act(sensors[i].values, t > 0 ? std::optional<float>(reward[i]) : std::nullopt);
          motors[i].assign(m.begin(), m.end());
          break;
        }
      }
      const sim::StepOutcome out = worlds[i].Step(WithoutObstacleReflex(motors[i], readings[i]), kTickS);
      reward[i] = float(out.reward);
      traces[i].push_back(sim::TickOutcome{out.collided, reward[i]});
    }
  }
  return traces;
}

}  // namespace fieldbrain::testing
