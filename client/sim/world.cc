#include "client/sim/world.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <utility>

namespace fieldbrain::sim {
namespace {

double Radians(double deg) { return deg * std::numbers::pi / 180.0; }

}  // namespace

World::World(WorldConfig config, uint64_t seed)
    : robot_(config.robot), arena_(std::move(config.arena)), rng_(seed),
      battery_v_(robot_.battery_start_v) {
  Vec2 p;
  double heading = 0;
  arena_.TrackPose(std::uniform_real_distribution<double>(0.0, 1.0)(rng_), p, heading);
  // A box on the track (random arenas): start at a free point instead, 5 cm clear of everything.
  const ArenaConfig& a = arena_.config();
  const double clearance = robot_.radius_m + 0.05;
  for (int tries = 0; tries < 1000 && arena_.Overlaps(p, clearance); ++tries) {
    p = {std::uniform_real_distribution<double>(clearance, a.width - clearance)(rng_),
         std::uniform_real_distribution<double>(clearance, a.height - clearance)(rng_)};
    heading = std::uniform_real_distribution<double>(-std::numbers::pi, std::numbers::pi)(rng_);
  }
  pose_ = {p.x, p.y, heading};
}

picarx::RawReading World::Read() {
  picarx::RawReading r;
  const Vec2 centre{pose_.x, pose_.y};
  const Vec2 forward = Direction(pose_.theta);
  const Vec2 left = Direction(pose_.theta + std::numbers::pi / 2);

  const Vec2 sonar = centre + robot_.ultrasonic_ahead_m * forward;
  const double range = arena_.CastRay(sonar, pose_.theta + Radians(pan_deg_),
                                      picarx::kUltrasonicMaxM);
  r.ultrasonic_m = static_cast<float>(std::clamp(
      range + robot_.ultrasonic_noise_m * unit_noise_(rng_), 0.0, double{picarx::kUltrasonicMaxM}));

  r.line_detected = false;
  for (int i = 0; i < 3; ++i) {  // left, middle, right
    const Vec2 spot = centre + robot_.grayscale_ahead_m * forward +
                      (robot_.grayscale_spacing_m * (1 - i)) * left;
    const double level = arena_.OnLine(spot) ? robot_.adc_line : robot_.adc_floor;
    const double adc = std::clamp(level + robot_.grayscale_noise * unit_noise_(rng_), 0.0,
                                  double{picarx::kGrayscaleMax});
    r.grayscale[i] = static_cast<float>(adc);
    r.line_detected = r.line_detected || adc < robot_.line_threshold;
  }
  r.cliff_detected = false;  // the arena floor has no edges
  r.battery_v = static_cast<float>(battery_v_);
  r.steering_deg = static_cast<float>(steering_deg_);
  r.pan_deg = static_cast<float>(pan_deg_);
  r.tilt_deg = static_cast<float>(tilt_deg_);
  r.left_speed = r.right_speed = static_cast<float>(duty_pct_);
  return r;
}

StepOutcome World::Step(const picarx::HardwareCommand& cmd, double dt_s) {
  // Servo and motor limits of the hardware (the adapter's ranges are inside these).
  steering_deg_ = std::clamp<double>(cmd.steering_deg, -picarx::kSteeringRangeDeg,
                                     picarx::kSteeringRangeDeg);
  pan_deg_ = std::clamp<double>(cmd.pan_deg, -picarx::kPanRangeDeg, picarx::kPanRangeDeg);
  tilt_deg_ = std::clamp<double>(cmd.tilt_deg, picarx::kTiltMinDeg, picarx::kTiltMaxDeg);
  duty_pct_ = std::clamp<double>(cmd.drive_duty_pct, -picarx::kMotorSpeedMax,
                                 picarx::kMotorSpeedMax);

  const double v = duty_pct_ / 100.0 * robot_.max_speed_mps;
  const double dtheta = v / robot_.wheelbase_m * std::tan(Radians(steering_deg_)) * dt_s;
  const Vec2 heading_mid = Direction(pose_.theta + 0.5 * dtheta);
  const Vec2 start{pose_.x, pose_.y};
  Vec2 end = start + (v * dt_s) * heading_mid;

  StepOutcome out;
  out.collided = arena_.ResolveCollision(end, robot_.radius_m);
  out.progress_m = Dot(end - start, heading_mid);
  pose_ = {end.x, end.y, std::remainder(pose_.theta + dtheta, 2 * std::numbers::pi)};
  distance_m_ += Length(end - start);

  if (out.collided && !in_contact_) ++collisions_;
  in_contact_ = out.collided;
  out.reward = out.collided ? -1.0 : std::clamp(robot_.reward_per_m * out.progress_m, -1.0, 1.0);

  const double drain = robot_.battery_idle_drain_vps +
                       robot_.battery_drive_drain_vps * std::abs(duty_pct_) / 100.0;
  battery_v_ = std::max(robot_.battery_floor_v, battery_v_ - drain * dt_s);
  return out;
}

}  // namespace fieldbrain::sim
