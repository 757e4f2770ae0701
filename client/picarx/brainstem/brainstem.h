// Brainstem: the PiCar-X's control loop. Each tick reads the body's sensors, sends them (with the
// body's reward for the last tick) through the BrainClient, lets the adapter's reflexes act on the
// answer, and drives the body with the result:
//
//   body.Read() -> NormalizeSensors -> client.Step(deadline) -> ToHardware (reflexes) -> body.Apply()
//
// Safety: a safe stop (no usable answer within the deadline) drives nothing (the client's zero
// motors: wheels stopped, servos centred); the reflexes act on every answer before it reaches the
// body; a hardware error stops the body and ends the loop with that error; the loop always ends
// with the body stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "client/brain_client.h"
#include "client/picarx/hardware/devices.h"
#include "client/picarx/hardware/robot_body.h"

namespace fieldbrain::picarx {

struct BrainstemOptions {
  double hz = 20;  // the PiCar-X's usual loop
  absl::Duration deadline = absl::Milliseconds(20);
  bool send_reward = true;
  ReflexSet reflexes;
};

struct BrainstemStats {
  int64_t ticks = 0;
  int64_t answered = 0;                          // ticks driven by the brain's answer
  std::map<std::string, int64_t> safe_stops;     // by client::StopCauseName
  std::map<std::string, int64_t> reflexes;       // by ReflexName
  int64_t overruns = 0;                          // ticks that took longer than 1/hz
  double reward = 0;
};

class Brainstem {
 public:
  Brainstem(RobotBody& body, client::BrainClient& client, Clock& clock, BrainstemOptions options)
      : body_(body), client_(client), clock_(clock), options_(options) {}

  // One tick. A hardware error stops the body and is returned.
  absl::Status Tick();
  // Ticks at `hz` until `stop` is set or `max_ticks` (> 0) have run; then stops the body. Returns
  // the hardware error that ended it, if one did.
  absl::Status Run(const std::atomic<bool>& stop, int64_t max_ticks = 0);

  const BrainstemStats& stats() const { return stats_; }

 private:
  absl::Status Fail(absl::Status error);

  RobotBody& body_;
  client::BrainClient& client_;
  Clock& clock_;
  const BrainstemOptions options_;
  BrainstemStats stats_;
};

}  // namespace fieldbrain::picarx
