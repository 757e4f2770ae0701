// One simulated PiCar-X driven by the brain: a sim::World, the PiCar-X adapter and a BrainClient,
// stepped at a fixed control rate on the caller's thread. Statistics go into a window that a
// reporter thread takes every second.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "client/brain_client.h"
#include "client/sim/world.h"
#include "client/tools/latency_histogram.h"

namespace fieldbrain::sim {

// Counters over a span of time; Merge adds spans.
struct RobotStats {
  uint64_t cycles = 0;       // Steps taken
  uint64_t answered = 0;     // Steps that got a MotorFrame (round_trip covers these)
  uint64_t safe_stops = 0;
  std::map<std::string, uint64_t> stop_reasons;  // "deadline", "link_down", "server:SUPERSEDED"
  std::map<std::string, uint64_t> reflexes;      // robot-side reflexes that cut the drive
  uint64_t collisions = 0;
  double reward = 0;         // sum of the world's rewards
  double confidence_sum = 0; // over answered OK frames
  uint64_t confidence_n = 0;
  double distance_m = 0;
  LatencyHistogram round_trip;

  void Merge(const RobotStats& other);
};

class SimRobot {
 public:
  SimRobot(std::unique_ptr<client::BrainClient> client, uint64_t world_seed, double hz,
           absl::Duration deadline);

  // Steps at `hz` until `stop` is set or `end` passes.
  void Run(const std::atomic<bool>& stop, absl::Time end);

  // The stats since the last call.
  RobotStats TakeWindow();

  client::BrainClient& client() { return *client_; }

 private:
  const std::unique_ptr<client::BrainClient> client_;
  World world_;
  const absl::Duration period_;
  const absl::Duration deadline_;
  absl::Mutex mu_;
  RobotStats window_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fieldbrain::sim
