// A simulated PiCar-X in an Arena: bicycle steering kinematics, an ultrasonic ray, three grayscale
// sensors over the floor line, a draining battery and collisions. It produces the adapter's
// RawReading and consumes its HardwareCommand, so the brain sees the same interface as on the car.
//
// Kinematics (robot centre, heading theta): v = duty / 100 * max_speed_mps,
//   theta' = v / wheelbase * tan(steering), position' = v * (cos, sin)(theta), integrated at the
//   step's mid heading. Servos reach their commanded angle within the step.
// Collision: the robot is a circle; a step that ends overlapping a wall or box is pushed back out
//   (the robot stops there), counts as one collision when the previous step was clear, and earns
//   reward -1 (every overlapping step does, so pushing against a wall keeps costing).
// Reward otherwise: reward_per_m * (movement along the heading), clamped to [-1, 1]: forward
//   progress pays, reversing costs.
// Deterministic: the start pose (a random point on the track, facing along it; where that point
// is blocked by a box, a random free point and heading) and the sensor noise come from a
// std::mt19937_64 seeded with the seed.
#pragma once

#include <cstdint>
#include <random>

#include "client/picarx/picarx_adapter.h"
#include "client/sim/arena.h"

namespace fieldbrain::sim {

struct RobotConfig {
  double radius_m = 0.10;           // collision circle
  double wheelbase_m = 0.15;
  double max_speed_mps = 0.5;       // at 100 % duty; the adapter's 50 % cap gives 0.25 m/s
  double ultrasonic_ahead_m = 0.10; // sensor position ahead of the centre
  double grayscale_ahead_m = 0.08;
  double grayscale_spacing_m = 0.02;
  double ultrasonic_noise_m = 0.003;  // Gaussian sigma
  double grayscale_noise = 30;        // ADC counts, Gaussian sigma
  double adc_floor = 3000;            // bright floor
  double adc_line = 600;              // dark tape
  double line_threshold = 1500;       // line_detected when any channel reads below
  double battery_start_v = 8.4;
  double battery_idle_drain_vps = 0.0005;  // electronics
  double battery_drive_drain_vps = 0.01;   // extra at 100 % duty
  double battery_floor_v = 5.5;
  double reward_per_m = 20;  // 0.25 m/s at 50 Hz: 5 mm per step -> reward 0.1
};

struct WorldConfig {
  ArenaConfig arena = ArenaConfig::Default();
  RobotConfig robot;
};

struct Pose {
  double x = 0, y = 0, theta = 0;  // m, m, rad
};

struct StepOutcome {
  double reward = 0;     // in [-1, 1]
  double progress_m = 0; // movement along the heading
  bool collided = false;
};

class World {
 public:
  World(WorldConfig config, uint64_t seed);

  // The sensors at the current pose (with noise).
  picarx::RawReading Read();

  // Applies `cmd` for `dt_s` seconds.
  StepOutcome Step(const picarx::HardwareCommand& cmd, double dt_s);

  void SetPose(const Pose& pose) { pose_ = pose; }
  const Pose& pose() const { return pose_; }
  const Arena& arena() const { return arena_; }
  double battery_v() const { return battery_v_; }
  int collisions() const { return collisions_; }
  double distance_m() const { return distance_m_; }

 private:
  const RobotConfig robot_;
  const Arena arena_;
  std::mt19937_64 rng_;
  std::normal_distribution<double> unit_noise_{0.0, 1.0};
  Pose pose_;
  double battery_v_;
  double steering_deg_ = 0, pan_deg_ = 0, tilt_deg_ = 0, duty_pct_ = 0;
  bool in_contact_ = false;
  int collisions_ = 0;
  double distance_m_ = 0;
};

}  // namespace fieldbrain::sim
