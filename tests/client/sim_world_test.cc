// The simulated PiCar-X world: geometry of the ultrasonic ray, collisions, reward, line sensing,
// battery, kinematics and determinism, with noise switched off where numbers are exact.
#include "client/sim/world.h"

#include <cmath>
#include <set>
#include <utility>
#include <numbers>

#include "gtest/gtest.h"

namespace fieldbrain::sim {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kDt = 0.02;  // 50 Hz

WorldConfig Noiseless() {
  WorldConfig c;
  c.robot.ultrasonic_noise_m = 0;
  c.robot.grayscale_noise = 0;
  return c;
}

picarx::HardwareCommand Drive(float duty_pct, float steering_deg = 0, float pan_deg = 0) {
  picarx::HardwareCommand c;
  c.drive_duty_pct = duty_pct;
  c.steering_deg = steering_deg;
  c.pan_deg = pan_deg;
  return c;
}

TEST(SimWorldTest, UltrasonicRayMatchesGeometry) {
  World w(Noiseless(), 1);
  // Sensor 0.10 m ahead of the centre. East from (1.1, 0.3): the corner box starts at x = 3.5.
  w.SetPose({1.0, 0.3, 0.0});
  EXPECT_NEAR(w.Read().ultrasonic_m, 2.4, 1e-5);
  // West from (0.9, 0.3): the wall at x = 0.
  w.SetPose({1.0, 0.3, kPi});
  EXPECT_NEAR(w.Read().ultrasonic_m, 0.9, 1e-5);
  // Pan 90 deg left while facing east: north from (1.1, 0.3) to the wall at y = 3.
  w.SetPose({1.0, 0.3, 0.0});
  w.Step(Drive(0, 0, 90), kDt);
  EXPECT_NEAR(w.Read().ultrasonic_m, 2.7, 1e-5);
  // Pan 45 deg: north-east from (1.1, 0.3) into the bottom face of the centre box (y = 1.3) at
  // x = 2.1, after sqrt(2) m.
  w.Step(Drive(0, 0, 45), kDt);
  EXPECT_NEAR(w.Read().ultrasonic_m, std::sqrt(2.0), 1e-5);
  // Pan back to centre; east from (0.3, 1.0) passes south of the centre box to the wall x = 4.
  w.Step(Drive(0, 0, 0), kDt);
  w.SetPose({0.2, 1.0, 0.0});
  EXPECT_NEAR(w.Read().ultrasonic_m, 3.7, 1e-5);
}

TEST(SimWorldTest, DrivingIntoAWallCountsOneCollisionAndCostsMinusOne) {
  World w(Noiseless(), 1);
  w.SetPose({0.5, 1.5, kPi});  // facing the west wall, 0.4 m of free travel (radius 0.1 m)
  int negative = 0;
  double last_reward = 0;
  for (int i = 0; i < 200; ++i) {  // 4 s at 0.25 m/s: 1 m of intended travel
    const StepOutcome o = w.Step(Drive(50), kDt);
    if (o.collided) {
      EXPECT_DOUBLE_EQ(o.reward, -1.0);
      ++negative;
    } else {
      EXPECT_GT(o.reward, 0.0);
    }
    last_reward = o.reward;
  }
  EXPECT_EQ(w.collisions(), 1) << "pushing against the wall is one collision";
  EXPECT_DOUBLE_EQ(last_reward, -1.0);
  EXPECT_GE(negative, 115);  // about 120 of the 200 steps press against the wall
  EXPECT_NEAR(w.pose().x, 0.1, 1e-9);  // pushed back to touching
  EXPECT_NEAR(w.distance_m(), 0.4, 1e-6);
}

TEST(SimWorldTest, DrivingIntoABoxCollides) {
  World w(Noiseless(), 1);
  w.SetPose({1.5, 1.5, 0.0});  // the centre box's west face is at x = 1.8
  for (int i = 0; i < 100; ++i) w.Step(Drive(50), kDt);
  EXPECT_EQ(w.collisions(), 1);
  EXPECT_NEAR(w.pose().x, 1.7, 1e-6);
  // Backing off and hitting again is a second collision.
  for (int i = 0; i < 20; ++i) w.Step(Drive(-50), kDt);
  for (int i = 0; i < 40; ++i) w.Step(Drive(50), kDt);
  EXPECT_EQ(w.collisions(), 2);
}

TEST(SimWorldTest, DrivingStraightEarnsProgressReward) {
  World w(Noiseless(), 1);
  w.SetPose({1.0, 1.0, 0.0});
  for (int i = 0; i < 10; ++i) {
    const StepOutcome o = w.Step(Drive(50), kDt);  // 0.25 m/s * 0.02 s = 5 mm
    EXPECT_FALSE(o.collided);
    EXPECT_NEAR(o.progress_m, 0.005, 1e-9);
    EXPECT_NEAR(o.reward, 0.1, 1e-9);  // 20 per metre
  }
  EXPECT_NEAR(w.pose().x, 1.05, 1e-9);
  EXPECT_NEAR(w.pose().y, 1.0, 1e-9);
  const StepOutcome back = w.Step(Drive(-50), kDt);
  EXPECT_NEAR(back.reward, -0.1, 1e-9);
}

TEST(SimWorldTest, SteeringTurnsLikeABicycle) {
  World w(Noiseless(), 1);
  w.SetPose({1.0, 1.0, 0.0});
  for (int i = 0; i < 50; ++i) w.Step(Drive(50, 25), kDt);  // 1 s
  // theta' = v / L * tan(25 deg) = 0.25 / 0.15 * 0.46631 = 0.77718 rad/s
  EXPECT_NEAR(w.pose().theta, 0.77718, 1e-4);
  EXPECT_GT(w.pose().y, 1.0);  // turned left
}

TEST(SimWorldTest, GrayscaleSeesTheLineWhenOverIt) {
  World w(Noiseless(), 1);
  // The south straight of the track is y = 0.6. Sensors 8 cm ahead, 2 cm apart: the middle one
  // sits on the 3 cm tape, the outer ones just off it.
  w.SetPose({2.0, 0.6, 0.0});
  picarx::RawReading r = w.Read();
  EXPECT_FLOAT_EQ(r.grayscale[0], 3000.0f);
  EXPECT_FLOAT_EQ(r.grayscale[1], 600.0f);
  EXPECT_FLOAT_EQ(r.grayscale[2], 3000.0f);
  EXPECT_TRUE(r.line_detected);
  EXPECT_FALSE(r.cliff_detected);

  w.SetPose({2.0, 1.0, 0.0});
  r = w.Read();
  EXPECT_FLOAT_EQ(r.grayscale[1], 3000.0f);
  EXPECT_FALSE(r.line_detected);
}

TEST(SimWorldTest, BatteryDrainsFasterWhenDriving) {
  World idle(Noiseless(), 1), driving(Noiseless(), 1);
  idle.SetPose({1.0, 1.0, 0.0});
  driving.SetPose({1.0, 1.0, 0.0});
  EXPECT_DOUBLE_EQ(idle.battery_v(), 8.4);
  for (int i = 0; i < 100; ++i) {  // 2 s
    idle.Step(Drive(0), kDt);
    driving.Step(Drive(50), kDt);
  }
  EXPECT_NEAR(idle.battery_v(), 8.4 - 2 * 0.0005, 1e-9);
  EXPECT_NEAR(driving.battery_v(), 8.4 - 2 * (0.0005 + 0.5 * 0.01), 1e-9);
  EXPECT_NEAR(driving.Read().battery_v, 8.389f, 1e-5);
}

TEST(SimWorldTest, StartsOnTheTrackAndIsDeterministicForASeed) {
  World a(WorldConfig{}, 42), b(WorldConfig{}, 42), c(WorldConfig{}, 43);
  EXPECT_TRUE(a.arena().OnLine({a.pose().x, a.pose().y}));
  EXPECT_FALSE(a.arena().Overlaps({a.pose().x, a.pose().y}, 0.1));
  EXPECT_NE(a.pose().x, c.pose().x);
  for (int i = 0; i < 50; ++i) {
    const picarx::RawReading ra = a.Read(), rb = b.Read();
    EXPECT_EQ(ra.ultrasonic_m, rb.ultrasonic_m);
    EXPECT_EQ(ra.grayscale, rb.grayscale);
    const float steer = static_cast<float>(i % 7) * 4.0f - 12.0f;
    EXPECT_EQ(a.Step(Drive(40, steer), kDt).reward, b.Step(Drive(40, steer), kDt).reward);
  }
  EXPECT_EQ(a.pose().x, b.pose().x);
  EXPECT_EQ(a.pose().theta, b.pose().theta);
}

// Random rooms: each seed its own room, boxes inside the walls, a start pose clear of everything,
// the same room for the same seed.
TEST(SimWorldTest, RandomArenasDifferPerSeedAndStartClear) {
  std::set<std::pair<double, double>> sizes;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    WorldConfig config;
    config.arena = ArenaConfig::Random(seed);
    const ArenaConfig& a = config.arena;
    EXPECT_GE(a.width, 3.0);
    EXPECT_LE(a.width, 5.0);
    EXPECT_GE(a.height, 3.0);
    EXPECT_LE(a.height, 5.0);
    EXPECT_GE(a.boxes.size(), 2u);
    EXPECT_LE(a.boxes.size(), 5u);
    for (const Box& b : a.boxes) {
      EXPECT_GE(b.x0, 0.1 - 1e-9);
      EXPECT_GE(b.y0, 0.1 - 1e-9);
      EXPECT_LE(b.x1, a.width - 0.1 + 1e-9);
      EXPECT_LE(b.y1, a.height - 0.1 + 1e-9);
    }
    sizes.insert({a.width, a.height});
    World w(config, seed);
    EXPECT_FALSE(w.arena().Overlaps({w.pose().x, w.pose().y}, 0.1)) << "seed " << seed;
    World again(WorldConfig{ArenaConfig::Random(seed), RobotConfig{}}, seed);
    EXPECT_EQ(w.pose().x, again.pose().x);
    EXPECT_EQ(w.pose().theta, again.pose().theta);
  }
  EXPECT_EQ(sizes.size(), 50u);
}

}  // namespace
}  // namespace fieldbrain::sim
