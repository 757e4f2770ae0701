// ReactiveDriver: the hand-written driver a student writes for the PiCar-X, the ceiling a learner
// is measured against (issue 23). The ultrasonic sensor turns with the pan servo, so the driver
// sweeps it left, ahead and right and remembers the last distance seen each way; it drives ahead
// at a speed that falls with the distance ahead, steers towards the side with more room, and when
// something is close it backs off for a while, steering so that the nose swings towards the open
// side, then drives out at full lock that way. In a corner the sides look alike, so a back-off
// soon after another keeps the turn it chose then. It does not learn and ignores the reward.
#pragma once

#include <cstdint>

#include "client/sim/local_policy.h"

namespace fieldbrain::sim {

// Defaults: picked on tuning rooms 201-216 (docs/brain.md, "The baselines").
struct ReactiveDriverConfig {
  double back_off_m = 0.35;    // back off when the distance ahead is below this
  double side_close_m = 0.25;  // ... or a side is below this
  int back_off_ticks = 45;     // how long a back-off lasts (0.9 s at 50 Hz)
  int turn_out_ticks = 30;     // then full lock forward, away from what was close
  int keep_turn_ticks = 150;   // a back-off within this many ticks of the last keeps its turn
  double slow_m = 0.25;        // ahead: crawl at this distance ...
  double fast_m = 0.9;         // ... full speed from this one
  double min_speed = 0.35;     // drive command at the crawl
  double steer_gain = 1.0;     // steer command per metre of difference between the sides
  float sweep_pan = 1.0f;      // pan command of the side looks (1 = 45 degrees)
};

class ReactiveDriver final : public LocalPolicy {
 public:
  explicit ReactiveDriver(ReactiveDriverConfig config = {});
  Motors Act(std::span<const float> sensors, std::optional<float> reward) override;

 private:
  enum Look { kLeft, kAhead, kRight };
  static constexpr int kLooks = 3;

  const ReactiveDriverConfig config_;
  // The sweep: ahead, left, ahead, right, ... (ahead every other tick: it matters most).
  int64_t tick_ = 0;
  Look looking_ = kAhead;  // where the sensor pointed for this tick's reading
  double seen_m_[kLooks] = {4.0, 4.0, 4.0};
  int backing_ticks_ = 0;
  int turning_ticks_ = 0;
  float turn_ = 1.0f;             // the escape turn: +1 left, -1 right
  int64_t last_back_off_ = -1000000;
};

}  // namespace fieldbrain::sim
