// The PiCar-X brainstem's hardware layer with fake devices: the Robot HAT's register writes for a
// given command, ADC scaling, the ultrasonic ranger's timing, the calibration file, and the
// brainstem's safety (safe stops, reflexes before the brain's answer, hardware errors stop the car).
#include <cmath>
#include <vector>

#include "client/brain_client.h"
#include "client/picarx/brainstem/brainstem.h"
#include "client/picarx/hardware/calibration.h"
#ifndef FIELDBRAIN_NO_GPIOD
#include "client/picarx/hardware/linux_devices.h"
#endif
#include "client/picarx/hardware/picarx_hardware.h"
#include "client/picarx/hardware/robot_hat.h"
#include "client/picarx/hardware/ultrasonic.h"
#include "fake_brain_server.h"
#include "gtest/gtest.h"
#include "picarx_fakes.h"

namespace fieldbrain::testing {
namespace {

using picarx::Calibration;
using picarx::HardwareCommand;
using picarx::PicarxHardware;
using picarx::RawReading;
using picarx::Reflex;
using picarx::RobotHat;
using Bytes = std::vector<uint8_t>;

TEST(RobotHat, RegisterWritesAreThreeBytesHighFirst) {
  FakeI2cBus bus;
  RobotHat hat(bus);
  ASSERT_TRUE(hat.SetPulse(2, 307).ok());
  ASSERT_TRUE(hat.SetPrescaler(0, 352).ok());  // the register holds prescaler - 1 = 351
  ASSERT_TRUE(hat.SetPeriod(3, 4095).ok());
  EXPECT_EQ(bus.writes, (std::vector<Bytes>{{0x22, 0x01, 0x33}, {0x40, 0x01, 0x5F}, {0x47, 0x0F, 0xFF}}));
}

TEST(RobotHat, AdcReadsAddressTheChannelAndScaleToVolts) {
  FakeI2cBus bus;
  RobotHat hat(bus);
  bus.QueueAdc(2048);
  bus.QueueAdc(3061);
  absl::StatusOr<uint16_t> a0 = hat.ReadAdc(0);
  absl::StatusOr<uint16_t> a4 = hat.ReadAdc(4);
  ASSERT_TRUE(a0.ok() && a4.ok());
  EXPECT_EQ(*a0, 2048);
  EXPECT_EQ(bus.writes, (std::vector<Bytes>{{0x17, 0, 0}, {0x13, 0, 0}}));  // 0x10 | (7 - channel)
  EXPECT_NEAR(picarx::AdcVolts(*a0), 1.650, 0.001);
  EXPECT_NEAR(picarx::BatteryVolts(*a4), 7.400, 0.002);  // A4 sees a third of the pack
  EXPECT_NEAR(picarx::BatteryVolts(4095), 9.9, 1e-9);
  bus.QueueAdc(0x1234);  // more than 12 bits: the MCU is out of step
  EXPECT_EQ(hat.ReadAdc(1).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(hat.ReadAdc(8).ok());
}

TEST(RobotHat, ServoAndWheelScalesMatchSunFounders) {
  EXPECT_EQ(picarx::ServoPulseCounts(-90), 102);
  EXPECT_EQ(picarx::ServoPulseCounts(0), 307);
  EXPECT_EQ(picarx::ServoPulseCounts(90), 511);
  EXPECT_EQ(picarx::ServoPulseCounts(120), 511);
  EXPECT_EQ(picarx::ServoPulseCounts(NAN), 307);
  EXPECT_EQ(picarx::WheelDriveForSpeed(0, 1).pulse_counts, 0);
  EXPECT_EQ(picarx::WheelDriveForSpeed(1, 1).pulse_counts, 2047);   // a moving wheel gets >= 50 %
  EXPECT_EQ(picarx::WheelDriveForSpeed(50, 1).pulse_counts, 3071);  // 75 %
  EXPECT_EQ(picarx::WheelDriveForSpeed(100, 1).pulse_counts, 4095);
  EXPECT_FALSE(picarx::WheelDriveForSpeed(50, 1).reverse);
  EXPECT_TRUE(picarx::WheelDriveForSpeed(-50, 1).reverse);
  EXPECT_TRUE(picarx::WheelDriveForSpeed(50, -1).reverse);  // a motor wired the other way round
  EXPECT_EQ(picarx::WheelDriveForSpeed(NAN, 1).pulse_counts, 0);
}

class PicarxHardwareTest : public ::testing::Test {
 protected:
  PicarxHardwareTest() : hat_(bus_), ranger_(trigger_, echo_, clock_) {
    echo_.level = [] { return false; };  // no echo: the ranger reads kNoEcho
  }
  PicarxHardware Car(Calibration c) { return PicarxHardware(hat_, left_dir_, right_dir_, ranger_, c); }

  FakeI2cBus bus_;
  FakeGpioLine left_dir_, right_dir_, trigger_, echo_;
  FakeClock clock_;
  RobotHat hat_;
  picarx::Ultrasonic ranger_;
};

TEST_F(PicarxHardwareTest, InitSetsTheTimersThenStopsAndCentres) {
  Calibration c;
  c.steering_offset_deg = 3;
  c.pan_offset_deg = -2;
  PicarxHardware car = Car(c);
  ASSERT_TRUE(car.Init().ok());
  EXPECT_EQ(bus_.writes, (std::vector<Bytes>{
                             {0x44, 0x0F, 0xFF}, {0x40, 0x01, 0x5F},  // servo timer 0: 4095 x 352 = 50 Hz
                             {0x47, 0x0F, 0xFF}, {0x43, 0x00, 0x09},  // wheel timer 3: 4095 x 10
                             {0x2D, 0, 0}, {0x2C, 0, 0},              // wheels P13, P12 stopped
                             {0x22, 0x01, 0x39},                      // steering at its offset, 3 deg: 313
                             {0x20, 0x01, 0x2E},                      // pan at -2 deg: 302
                             {0x21, 0x01, 0x33}}));                   // tilt centred: 307
  EXPECT_EQ(left_dir_.levels, std::vector<bool>{false});
  EXPECT_EQ(right_dir_.levels, std::vector<bool>{false});
}

TEST_F(PicarxHardwareTest, AMotorFrameBecomesExactlyTheseRegisterWrites) {
  Calibration c;
  c.steering_offset_deg = 3;
  c.pan_offset_deg = -2;
  PicarxHardware car = Car(c);
  // Full drive, full right steer: the adapter makes 50 % and 25 deg.
  const HardwareCommand cmd = picarx::ToHardware(std::vector<float>{1.0f, 1.0f, 0.0f, 0.0f}, RawReading{}, false);
  ASSERT_FLOAT_EQ(cmd.drive_duty_pct, 50.0f);
  ASSERT_FLOAT_EQ(cmd.steering_deg, 25.0f);
  ASSERT_TRUE(car.Apply(cmd).ok());
  EXPECT_EQ(bus_.writes, (std::vector<Bytes>{
                             {0x22, 0x01, 0x72},  // steering 25 + 3 = 28 deg: 370
                             {0x20, 0x01, 0x2E},  // pan: offset - 0 = -2 deg: 302
                             {0x21, 0x01, 0x33},  // tilt 0: 307
                             {0x2D, 0x0A, 0xE0},  // left wheel slowed, 50 x 0.75 = 37.5: 68 % = 2784
                             {0x2C, 0x0B, 0xFF}}));  // right wheel 50: 75 % = 3071
  EXPECT_EQ(left_dir_.levels, std::vector<bool>{false});  // left forward: D4 low
  EXPECT_EQ(right_dir_.levels, std::vector<bool>{true});  // right forward is motor 2 at -speed: D5 high

  // A right motor wired the other way round (calibration [1, -1]) flips its line, not its speed.
  bus_.writes.clear();
  c.motor_direction = {1, -1};
  PicarxHardware flipped = Car(c);
  ASSERT_TRUE(flipped.Apply(cmd).ok());
  EXPECT_EQ(right_dir_.levels.back(), false);
  EXPECT_EQ(bus_.writes.back(), (Bytes{0x2C, 0x0B, 0xFF}));
}

TEST(WheelSpeeds, OneWheelIsSlowedInATurnAsPicarxForwardAndBackwardDo) {
  auto w = picarx::WheelSpeedsFor(50, 25);
  EXPECT_FLOAT_EQ(w.left, 37.5f);
  EXPECT_FLOAT_EQ(w.right, 50.0f);
  w = picarx::WheelSpeedsFor(50, -25);
  EXPECT_FLOAT_EQ(w.left, 50.0f);
  EXPECT_FLOAT_EQ(w.right, 37.5f);
  w = picarx::WheelSpeedsFor(-50, 25);  // backward(): the other wheel
  EXPECT_FLOAT_EQ(w.left, -50.0f);
  EXPECT_FLOAT_EQ(w.right, -37.5f);
  w = picarx::WheelSpeedsFor(40, 45);  // clamped to 30 deg
  EXPECT_FLOAT_EQ(w.left, 28.0f);
  w = picarx::WheelSpeedsFor(40, 0);
  EXPECT_FLOAT_EQ(w.left, 40.0f);
  EXPECT_FLOAT_EQ(w.right, 40.0f);
}

TEST_F(PicarxHardwareTest, ReadingsScaleAndDetectLineAndCliffByTheReferences) {
  PicarxHardware car = Car(Calibration{});
  bus_.QueueAdc(1200);  // A0 left: floor
  bus_.QueueAdc(900);   // A1 middle: at or below the line reference 1000
  bus_.QueueAdc(400);   // A2 right: at or below the cliff reference 500
  bus_.QueueAdc(3061);  // A4 battery
  absl::StatusOr<RawReading> r = car.Read();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->grayscale, (std::array<float, 3>{1200, 900, 400}));
  EXPECT_TRUE(r->line_detected);
  EXPECT_TRUE(r->cliff_detected);
  EXPECT_NEAR(r->battery_v, 7.40f, 0.01f);
  EXPECT_EQ(r->ultrasonic_m, picarx::kNoEcho);  // no echo: negative, and the reflex fails safe
  EXPECT_EQ(picarx::ToHardware(std::vector<float>{0.5f, 0, 0, 0}, *r, false).reflex, Reflex::kObstacle);
}

TEST_F(PicarxHardwareTest, AnI2cErrorIsReportedAndStopStillTriesEveryOutput) {
  PicarxHardware car = Car(Calibration{});
  bus_.set_fail(true);
  const HardwareCommand cmd = picarx::ToHardware(std::vector<float>{1.0f, 0, 0, 0}, RawReading{}, false);
  const absl::Status s = car.Apply(cmd);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("Remote I/O error"), std::string::npos);
  EXPECT_FALSE(car.Read().ok());
  left_dir_.levels.clear();
  right_dir_.levels.clear();
  EXPECT_FALSE(car.Stop().ok());
  // Both direction lines were still driven (to forward) although the HAT did not answer.
  EXPECT_EQ(left_dir_.levels.size(), 1u);
  EXPECT_EQ(right_dir_.levels.size(), 1u);
}

TEST_F(PicarxHardwareTest, AFailedDirectionLineStopsItsWheel) {
  PicarxHardware car = Car(Calibration{});
  left_dir_.fail = true;
  const HardwareCommand cmd = picarx::ToHardware(std::vector<float>{1.0f, 0, 0, 0}, RawReading{}, false);
  EXPECT_FALSE(car.Apply(cmd).ok());
  bool left_zeroed = false;
  for (const Bytes& w : bus_.writes) left_zeroed = left_zeroed || w == Bytes{0x2D, 0, 0};
  EXPECT_TRUE(left_zeroed);
  for (const Bytes& w : bus_.writes) EXPECT_NE(w, (Bytes{0x2D, 0x0B, 0xFF})) << "left wheel driven blind";
}

TEST_F(PicarxHardwareTest, TheRewardJudgesACommandByTheNextReading) {
  PicarxHardware car = Car(Calibration{});
  EXPECT_FALSE(car.Reward().has_value());
  auto read_at = [&](float metres) {
    echo_.level = nullptr;
    bus_.reads.clear();
    for (int i = 0; i < 4; ++i) bus_.QueueAdc(2000);
    absl::StatusOr<RawReading> r = car.Read();
    EXPECT_TRUE(r.ok());
    RawReading out = *r;
    out.ultrasonic_m = metres;  // the range the reward is judged by
    return out;
  };
  HardwareCommand ahead = picarx::ToHardware(std::vector<float>{1.0f, 0, 0, 0}, RawReading{}, false);
  EXPECT_FLOAT_EQ(picarx::ProxyReward(ahead, read_at(1.0f)), 0.1f);
  EXPECT_FLOAT_EQ(picarx::ProxyReward(ahead, read_at(0.05f)), 0.1f - 0.5f * 0.10f / 0.15f);
  RawReading wall;
  wall.ultrasonic_m = 0.01f;
  const HardwareCommand blocked = picarx::ToHardware(std::vector<float>{1.0f, 0, 0, 0}, wall, false);
  EXPECT_EQ(picarx::ProxyReward(blocked, wall), -1.0f);
  // Through the car: Apply, then the next Read gives the reward (no echo reads -1 m: not "near").
  ASSERT_TRUE(car.Apply(ahead).ok());
  EXPECT_FALSE(car.Reward().has_value());
  bus_.reads.clear();
  for (int i = 0; i < 4; ++i) bus_.QueueAdc(2000);
  ASSERT_TRUE(car.Read().ok());
  ASSERT_TRUE(car.Reward().has_value());
  EXPECT_FLOAT_EQ(*car.Reward(), 0.1f);
}

#ifndef FIELDBRAIN_NO_GPIOD
TEST(LinuxDevices, AMissingBusOrChipIsAClearError) {
  auto bus = picarx::LinuxI2cBus::Open("/nonexistent/i2c-1", 0x14);
  ASSERT_FALSE(bus.ok());
  EXPECT_NE(bus.status().message().find("cannot open /nonexistent/i2c-1"), std::string::npos) << bus.status();
  auto chip = picarx::GpioChip::Open("gpiochip-that-does-not-exist");
  ASSERT_FALSE(chip.ok());
  EXPECT_NE(chip.status().message().find("cannot open GPIO chip"), std::string::npos) << chip.status();
}
#endif

// --- ultrasonic -----------------------------------------------------------------------------------

class UltrasonicTest : public ::testing::Test {
 protected:
  // An echo that rises `delay` after the trigger's falling edge and lasts `width`.
  void Echo(absl::Duration delay, absl::Duration width) {
    fired_ = absl::InfinitePast();
    trigger_.on_set = [this](bool high) {
      if (!high) fired_ = clock_.peek();
    };
    echo_.level = [this, delay, width] {
      const absl::Time t = clock_.peek();
      return fired_ != absl::InfinitePast() && t >= fired_ + delay && t < fired_ + delay + width;
    };
  }
  FakeGpioLine trigger_, echo_;
  FakeClock clock_;
  absl::Time fired_ = absl::InfinitePast();
  picarx::Ultrasonic ranger_{trigger_, echo_, clock_};
};

TEST_F(UltrasonicTest, TheEchoWidthGivesTheDistance) {
  Echo(absl::Microseconds(400), absl::Seconds(2 * 1.0 / 343.3));  // 1 m away
  absl::StatusOr<float> m = ranger_.ReadMetres();
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(*m, 1.0f, 0.002f);  // the fake clock moves in 5 us steps: 0.9 mm
  EXPECT_EQ(trigger_.levels, (std::vector<bool>{false, true, false}));
  Echo(absl::Microseconds(400), absl::Seconds(2 * 0.05 / 343.3));  // 5 cm
  EXPECT_NEAR(*ranger_.ReadMetres(), 0.05f, 0.002f);
}

TEST_F(UltrasonicTest, NoEchoTimesOutNegativeAndOpenSpaceReadsFullRange) {
  Echo(absl::Hours(1), absl::Milliseconds(1));  // never rises
  const absl::Time start = clock_.peek();
  EXPECT_EQ(*ranger_.ReadMetres(), picarx::kNoEcho);
  EXPECT_LT(clock_.peek() - start, absl::Milliseconds(22));  // 1 ms + 10 us + the 20 ms wait
  // An HC-SR04 with nothing in range answers a pulse of about 38 ms: open space, full range.
  Echo(absl::Microseconds(400), absl::Milliseconds(38));
  EXPECT_EQ(*ranger_.ReadMetres(), float(picarx::kMaxRangeM));
  echo_.fail = true;
  EXPECT_FALSE(ranger_.ReadMetres().ok());
}

TEST_F(UltrasonicTest, AnEchoLineStuckHighIsAFaultNotOpenSpace) {
  echo_.level = [] { return true; };
  const absl::Time start = clock_.peek();
  EXPECT_EQ(*ranger_.ReadMetres(), picarx::kNoEcho);
  EXPECT_TRUE(trigger_.levels.empty());  // never triggered into a line that is already high
  EXPECT_LT(clock_.peek() - start, absl::Milliseconds(41));
  // An echo that is still high from the last ping but falls in time is waited out.
  Echo(absl::Microseconds(400), absl::Seconds(2 * 1.0 / 343.3));
  bool settled = false;
  const absl::Time until = clock_.peek() + absl::Milliseconds(10);
  auto measured = echo_.level;
  echo_.level = [&, measured] {
    if (!settled && clock_.peek() < until) return true;
    settled = true;
    return measured();
  };
  EXPECT_NEAR(*ranger_.ReadMetres(), 1.0f, 0.002f);
}

// --- calibration ---------------------------------------------------------------------------------

TEST(Calibration, ReadsSunFoundersFileFormat) {
  absl::StatusOr<Calibration> c = picarx::ParseCalibration(
      "# robot-hat config and calibration value of robots\n\n"
      "picarx_dir_servo = 3\n\n"
      "picarx_cam_pan_servo = -2\n"
      "picarx_dir_motor = [1, -1]\n"
      "line_reference = [1100, 1050.5, 990]\n"
      "other_robot_key = anything\n"
      "picarx_dir_servo = 4.5");  // a later line wins, and the last line counts (fileDB skips it)
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FLOAT_EQ(c->steering_offset_deg, 4.5f);
  EXPECT_FLOAT_EQ(c->pan_offset_deg, -2.0f);
  EXPECT_FLOAT_EQ(c->tilt_offset_deg, 0.0f);
  EXPECT_EQ(c->motor_direction, (std::array<int, 2>{1, -1}));
  EXPECT_EQ(c->line_reference, (std::array<float, 3>{1100, 1050.5f, 990}));
  EXPECT_EQ(c->cliff_reference, (std::array<float, 3>{500, 500, 500}));
}

TEST(Calibration, MalformedValuesAreRefusedNamingTheLine) {
  auto motors = picarx::ParseCalibration("picarx_dir_servo = 1\npicarx_dir_motor = [1, 0]\n");
  ASSERT_FALSE(motors.ok());
  EXPECT_NE(motors.status().message().find("line 2: picarx_dir_motor = [1,0]: motor directions must be 1 or -1"),
            std::string::npos)
      << motors.status();
  EXPECT_FALSE(picarx::ParseCalibration("picarx_dir_servo = abc").ok());
  EXPECT_FALSE(picarx::ParseCalibration("picarx_dir_servo = 90").ok());
  EXPECT_FALSE(picarx::ParseCalibration("line_reference = [1, 2]").ok());
  EXPECT_FALSE(picarx::ParseCalibration("cliff_reference = [1, 2, 9000]").ok());
  EXPECT_EQ(picarx::ReadCalibration("/nonexistent/picar-x.conf").status().code(), absl::StatusCode::kNotFound);
}

// --- the brainstem -------------------------------------------------------------------------------

std::unique_ptr<client::BrainClient> Client(const std::string& target) {
  client::ClientOptions options;
  options.target = target;
  options.profile = picarx::MakeProfile("brainstem-test", 20, true);
  auto made = client::BrainClient::Create(std::move(options));
  EXPECT_TRUE(made.ok()) << made.status();
  return *std::move(made);
}

RawReading Open() {
  RawReading r;
  r.ultrasonic_m = 3.0f;  // normalised 0.5: the fake server answers drive 0.25 (12.5 % forward)
  r.grayscale = {2047.5f, 2047.5f, 2047.5f};
  r.battery_v = 7.4f;
  return r;
}

TEST(Brainstem, NoServerMeansASafeStopWithWheelsStoppedAndServosCentred) {
  FakeBody body;
  body.reading = Open();
  auto client = Client("127.0.0.1:1");  // nothing listens there
  FakeClock clock;
  picarx::Brainstem stem(body, *client, clock, {});
  ASSERT_TRUE(stem.Tick().ok());
  ASSERT_EQ(body.applied.size(), 1u);
  EXPECT_EQ(body.applied[0].drive_duty_pct, 0.0f);
  EXPECT_EQ(body.applied[0].steering_deg, 0.0f);
  EXPECT_EQ(body.applied[0].pan_deg, 0.0f);
  EXPECT_EQ(body.applied[0].reflex, Reflex::kSafeStop);
  EXPECT_EQ(stem.stats().safe_stops.at("link_down"), 1);
}

TEST(Brainstem, ReflexesActOnTheBrainsAnswerBeforeItReachesTheWheels) {
  auto server = FakeBrainServer::Start();
  auto client = Client(server->target());
  ASSERT_TRUE(client->WaitConnected(absl::Seconds(5)).ok());
  FakeBody body;
  body.reading = Open();
  FakeClock clock;
  picarx::BrainstemOptions options;
  options.deadline = absl::Seconds(5);
  picarx::Brainstem stem(body, *client, clock, options);
  ASSERT_TRUE(stem.Tick().ok());
  EXPECT_NEAR(body.applied.back().drive_duty_pct, 12.5f, 0.01f);  // the brain's answer, applied
  body.reading.cliff_detected = true;
  ASSERT_TRUE(stem.Tick().ok());
  EXPECT_EQ(body.applied.back().drive_duty_pct, 0.0f);
  EXPECT_EQ(body.applied.back().reflex, Reflex::kCliff);
  body.reading.cliff_detected = false;
  body.reading.battery_v = 6.2f;
  ASSERT_TRUE(stem.Tick().ok());
  EXPECT_EQ(body.applied.back().reflex, Reflex::kLowBattery);
  EXPECT_EQ(stem.stats().answered, 3);
  EXPECT_EQ(stem.stats().reflexes.at("cliff"), 1);
}

TEST(Brainstem, AHardwareErrorStopsTheCarAndEndsTheRun) {
  auto client = Client("127.0.0.1:1");
  FakeClock clock;
  FakeBody body;
  body.reading = Open();
  picarx::Brainstem stem(body, *client, clock, {});
  body.fail_read = true;
  EXPECT_EQ(stem.Tick().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(body.stops, 1);
  body.fail_read = false;
  body.fail_apply = true;
  std::atomic<bool> stop{false};
  const absl::Status s = stem.Run(stop, 100);
  EXPECT_FALSE(s.ok());
  EXPECT_GE(body.stops, 2);
  EXPECT_EQ(stem.stats().ticks, 0);  // nothing was applied
}

TEST(Brainstem, RunKeepsTheRateAndEndsWithTheCarStopped) {
  auto client = Client("127.0.0.1:1");
  FakeClock clock(absl::Microseconds(1));
  FakeBody body;
  body.reading = Open();
  picarx::BrainstemOptions options;
  options.hz = 20;
  picarx::Brainstem stem(body, *client, clock, options);
  std::atomic<bool> stop{false};
  const absl::Time start = clock.peek();
  ASSERT_TRUE(stem.Run(stop, 10).ok());
  EXPECT_EQ(stem.stats().ticks, 10);
  EXPECT_EQ(body.stops, 1);
  EXPECT_NEAR(absl::ToDoubleSeconds(clock.peek() - start), 0.5, 0.01);  // 10 ticks at 20 Hz
  EXPECT_EQ(stem.stats().overruns, 0);
}

}  // namespace
}  // namespace fieldbrain::testing
