// picarx-brainstem: runs a SunFounder PiCar-X from a fieldbrain server. Reads the car's sensors
// through the Robot HAT (I2C) and GPIO, streams them to brain-server, and drives the wheels and
// servos with the answers at --hz, with the client's deadline, safe stop and the car's reflexes
// (client/picarx/README.md). --dry-run drives the simulated arena instead of the hardware.
// Exit status: 0 after a clean stop (SIGINT, SIGTERM, --seconds), 1 on a hardware error (the car
// is stopped first), 2 on bad flags or a malformed calibration file.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/brain_client.h"
#include "client/client_security_flags.h"
#include "client/picarx/brainstem/brainstem.h"
#include "client/picarx/brainstem/resume_token_file.h"
#include "client/picarx/brainstem/simulated_body.h"
#include "client/picarx/hardware/calibration.h"
#include "client/picarx/hardware/linux_devices.h"
#include "client/picarx/hardware/picarx_hardware.h"
#include "client/picarx/picarx_adapter.h"
#include "common/program_usage.h"

ABSL_FLAG(std::string, target, "127.0.0.1:50051", "brain server address, host:port");
ABSL_FLAG(std::string, robot_id, "", "this car's id on the server; empty = picarx-<hostname>");
ABSL_FLAG(uint64_t, seed, 0, "the brain's seed for a new brain; 0 = the server picks");
ABSL_FLAG(double, hz, 20, "control rate (ticks per second)");
ABSL_FLAG(double, deadline_ms, 20, "per-tick deadline for the brain's answer; later is a safe stop");
ABSL_FLAG(double, seconds, 0, "run time; 0 = until SIGINT or SIGTERM");
ABSL_FLAG(std::string, reward, "on",
          "on: send the car's reward (on the robot a proxy: progress while the way is clear, a "
          "penalty near obstacles; in --dry-run the arena's own); off: send none");
ABSL_FLAG(std::string, resume_token_file, "",
          "keep the brain's resume token in this file (0600), so that a restarted brainstem gets its "
          "brain back; the server refuses a kept brain to a Hello without its token");
ABSL_FLAG(bool, fresh, false, "discard this robot's kept brain on the server and start a new one");
ABSL_FLAG(std::string, record, "",
          "record the session for brain-replay to this file name with the start time added "
          "(car.rec -> car-20261123T180501Z.rec), so a restart never overwrites a recording");
ABSL_FLAG(std::string, calibration, fieldbrain::picarx::kDefaultCalibrationPath,
          "SunFounder's calibration file (picarx library format); a missing file means uncalibrated");
ABSL_FLAG(std::string, i2c_device, "/dev/i2c-1", "the I2C bus of the Robot HAT");
ABSL_FLAG(int, i2c_address, fieldbrain::picarx::kRobotHatAddress, "the Robot HAT MCU's 7-bit I2C address");
ABSL_FLAG(std::string, gpio_chip, "gpiochip0",
          "the GPIO chip of the 40-pin header (gpiochip0 on Raspberry Pi 4 and on Pi 5 with kernel "
          "6.6 or later; gpiochip4 on Pi 5 with older kernels)");
ABSL_FLAG(bool, dry_run, false,
          "drive the simulated arena instead of the hardware (also spelled --dry-run)");
ABSL_FLAG(std::string, arena, "default", "--dry-run's room: default or random (drawn from --seed)");

namespace {

using namespace fieldbrain::picarx;

std::atomic<bool> g_stop{false};
extern "C" void OnSignal(int) { g_stop.store(true); }

void Log(const std::string& line) {
  std::fprintf(stderr, "%s picarx-brainstem %s\n",
               absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::Now(), absl::UTCTimeZone()).c_str(), line.c_str());
}

// "dir/car.rec" -> "dir/car-20261123T180501Z.rec": each run (systemd restarts included) gets its
// own recording, each starting with a Hello and a Welcome as brain-replay needs.
std::string TimestampedPath(const std::string& path) {
  const std::string stamp = absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1) {
    return absl::StrCat(path, "-", stamp);
  }
  return absl::StrCat(path.substr(0, dot), "-", stamp, path.substr(dot));
}

std::string DefaultRobotId() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') return "picarx";
  return absl::StrCat("picarx-", host);
}

// The hardware a real run owns; members are destroyed in reverse, so the lines go before their chip.
struct Hardware {
  std::unique_ptr<GpioChip> chip;
  std::unique_ptr<GpioLine> mcu_reset, left_dir, right_dir, trigger, echo;
  std::unique_ptr<LinuxI2cBus> bus;
  std::unique_ptr<RobotHat> hat;
  std::unique_ptr<Ultrasonic> ranger;
  std::unique_ptr<PicarxHardware> car;
};

// Resets the HAT's MCU (its reset line low 10 ms, then high 10 ms, as SunFounder's tools do) and
// opens everything the car needs; then wheels stopped and servos centred.
absl::Status OpenHardware(Hardware& hw, Clock& clock, const Calibration& calibration) {
  absl::StatusOr<std::unique_ptr<GpioChip>> chip = GpioChip::Open(absl::GetFlag(FLAGS_gpio_chip));
  if (!chip.ok()) return chip.status();
  hw.chip = *std::move(chip);
  absl::StatusOr<std::unique_ptr<GpioLine>> reset = hw.chip->RequestOutput(kMcuResetGpio, true);
  if (!reset.ok()) return reset.status();
  hw.mcu_reset = *std::move(reset);
  if (absl::Status s = hw.mcu_reset->Set(false); !s.ok()) return s;
  clock.SleepFor(absl::Milliseconds(10));
  if (absl::Status s = hw.mcu_reset->Set(true); !s.ok()) return s;
  clock.SleepFor(absl::Milliseconds(10));
  auto out = [&](unsigned gpio, std::unique_ptr<GpioLine>& line) {
    absl::StatusOr<std::unique_ptr<GpioLine>> l = hw.chip->RequestOutput(gpio, false);
    if (l.ok()) line = *std::move(l);
    return l.status();
  };
  if (absl::Status s = out(kLeftDirectionGpio, hw.left_dir); !s.ok()) return s;
  if (absl::Status s = out(kRightDirectionGpio, hw.right_dir); !s.ok()) return s;
  if (absl::Status s = out(kTriggerGpio, hw.trigger); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<GpioLine>> echo = hw.chip->RequestInput(kEchoGpio);
  if (!echo.ok()) return echo.status();
  hw.echo = *std::move(echo);
  absl::StatusOr<std::unique_ptr<LinuxI2cBus>> bus =
      LinuxI2cBus::Open(absl::GetFlag(FLAGS_i2c_device), absl::GetFlag(FLAGS_i2c_address));
  if (!bus.ok()) return bus.status();
  hw.bus = *std::move(bus);
  hw.hat = std::make_unique<RobotHat>(*hw.bus);
  hw.ranger = std::make_unique<Ultrasonic>(*hw.trigger, *hw.echo, clock);
  hw.car = std::make_unique<PicarxHardware>(*hw.hat, *hw.left_dir, *hw.right_dir, *hw.ranger, calibration);
  return hw.car->Init();
}

// The last resort when the HAT no longer answers: its PWM keeps the last command after we exit,
// so hold the MCU in reset (all its outputs off). Says what state the car is left in.
std::string StopCar(Hardware& hw) {
  if (hw.car != nullptr && hw.car->Stop().ok()) return "the car is stopped";
  if (hw.mcu_reset != nullptr && hw.mcu_reset->Set(false).ok()) {
    return "the Robot HAT did not answer, so its MCU is held in reset (outputs off)";
  }
  return "the car could NOT be stopped: cut its power";
}

void PrintSummary(const BrainstemStats& s, absl::Duration ran) {
  auto counts = [](const std::map<std::string, int64_t>& m) {
    if (m.empty()) return std::string("none");
    return absl::StrJoin(m, ", ", [](std::string* out, const auto& kv) { absl::StrAppend(out, kv.first, " ", kv.second); });
  };
  std::printf("picarx-brainstem summary\n");
  std::printf("  ran              %.1f s, %lld ticks (%lld answered by the brain), %lld overruns\n",
              absl::ToDoubleSeconds(ran), static_cast<long long>(s.ticks), static_cast<long long>(s.answered),
              static_cast<long long>(s.overruns));
  std::printf("  safe stops       %s\n", counts(s.safe_stops).c_str());
  std::printf("  reflex stops     %s\n", counts(s.reflexes).c_str());
  std::printf("  reward           %.2f (%.4f per tick)\n", s.reward, s.ticks ? s.reward / double(s.ticks) : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  // The spelling the docs use, --dry-run, for absl's --dry_run.
  std::vector<char*> args(argv, argv + argc);
  static char dry_run[] = "--dry_run";
  for (char*& a : args) {
    if (std::strcmp(a, "--dry-run") == 0) a = dry_run;
  }
  fieldbrain::SetProgramUsage("picarx-brainstem",
                              "runs a SunFounder PiCar-X (Robot HAT on a Raspberry Pi) from a fieldbrain "
                              "server.\n  picarx-brainstem --target=brain.local:50051\n"
                              "  picarx-brainstem --dry-run --target=127.0.0.1:50051 --seconds=10",
                              {"picarx_brainstem_main.cc", fieldbrain::client::kClientSecurityFlagsFile});
  absl::ParseCommandLine(int(args.size()), args.data());

  const double hz = absl::GetFlag(FLAGS_hz), deadline_ms = absl::GetFlag(FLAGS_deadline_ms);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const std::string reward = absl::GetFlag(FLAGS_reward), arena = absl::GetFlag(FLAGS_arena);
  if (!(hz > 0 && hz <= 1000) || !(deadline_ms > 0) || !(seconds >= 0) || (reward != "on" && reward != "off") ||
      (arena != "default" && arena != "random")) {
    std::fprintf(stderr, "picarx-brainstem: need 0 < --hz <= 1000, --deadline_ms > 0, --seconds >= 0, "
                         "--reward on|off, --arena default|random\n");
    return 2;
  }
  const bool dry = absl::GetFlag(FLAGS_dry_run);
  SystemClock clock;

  // The car first: stopped and centred before anything talks to the network.
  Hardware hw;
  std::unique_ptr<SimulatedBody> sim;
  RobotBody* body = nullptr;
  if (dry) {
    fieldbrain::sim::WorldConfig world;
    const uint64_t seed = absl::GetFlag(FLAGS_seed) != 0 ? absl::GetFlag(FLAGS_seed) : 1;
    if (arena == "random") world.arena = fieldbrain::sim::ArenaConfig::Random(seed);
    sim = std::make_unique<SimulatedBody>(world, seed, 1.0 / hz);
    body = sim.get();
    Log("dry run: driving the simulated arena, no hardware");
  } else {
    Calibration calibration;
    absl::StatusOr<Calibration> read = ReadCalibration(absl::GetFlag(FLAGS_calibration));
    if (read.ok()) {
      calibration = *read;
    } else if (absl::IsNotFound(read.status())) {
      Log(absl::StrCat(read.status().message(), "; running uncalibrated (offsets 0)"));
    } else {
      Log(absl::StrCat("refusing the calibration: ", read.status().message()));
      return 2;
    }
    if (absl::Status s = OpenHardware(hw, clock, calibration); !s.ok()) {
      const std::string state = hw.chip == nullptr ? "nothing was driven" : StopCar(hw);
      Log(absl::StrCat("hardware error: ", s.message(), "; ", state));
      return 1;
    }
    body = hw.car.get();
  }

  fieldbrain::client::ClientOptions options;
  options.target = absl::GetFlag(FLAGS_target);
  const auto credentials = fieldbrain::client::ChannelCredentialsFromFlags();
  const auto token = fieldbrain::client::BearerTokenFromFlags();
  if (!credentials.ok() || !token.ok()) {
    body->Stop().IgnoreError();
    Log(absl::StrCat("bad TLS or token options: ", (credentials.ok() ? token.status() : credentials.status()).message()));
    return 2;
  }
  options.credentials = *credentials;
  options.bearer_token = *token;
  std::string robot_id = absl::GetFlag(FLAGS_robot_id);
  if (robot_id.empty()) robot_id = DefaultRobotId();
  options.profile = MakeProfile(robot_id, float(hz), reward == "on");
  options.seed = absl::GetFlag(FLAGS_seed);
  options.fresh = absl::GetFlag(FLAGS_fresh);
  const std::string token_file = absl::GetFlag(FLAGS_resume_token_file);
  if (!token_file.empty()) {
    absl::StatusOr<std::optional<std::string>> kept = ReadResumeToken(token_file);
    if (!kept.ok()) {
      body->Stop().IgnoreError();
      Log(absl::StrCat("refusing the resume token file: ", kept.status().message()));
      return 2;
    }
    if (kept->has_value()) options.resume_token = **kept;
  }
  if (const std::string record = absl::GetFlag(FLAGS_record); !record.empty()) {
    options.record_path = TimestampedPath(record);
    Log(absl::StrCat("recording to ", options.record_path));
  }
  auto client = fieldbrain::client::BrainClient::Create(std::move(options));
  if (!client.ok()) {
    body->Stop().IgnoreError();
    Log(absl::StrCat("bad client options: ", client.status().message()));
    return 2;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);

  // Up to 5 s for the first Welcome, in slices, so that a signal meanwhile is not kept waiting.
  absl::Status connected = absl::DeadlineExceededError("not connected");
  for (int slice = 0; slice < 50 && !g_stop.load() && !connected.ok(); ++slice) {
    connected = (*client)->WaitConnected(absl::Milliseconds(100));
  }
  if (absl::Status s = connected; s.ok()) {
    const auto w = (*client)->welcome();
    Log(absl::StrCat("connected to ", absl::GetFlag(FLAGS_target), " as ", robot_id, ": engine ", w->engine(),
                     w->resumed() ? ", brain resumed at cycle " : ", new brain, seed ",
                     w->resumed() ? w->cycle() : w->seed()));
  } else {
    Log(absl::StrCat(s.message(), "; the car stays stopped until the server answers"));
  }

  // Keeps the token file up to date with the latest Welcome (a new brain brings a new token).
  std::atomic<bool> keeper_stop{false};
  std::thread keeper;
  if (!token_file.empty()) {
    keeper = std::thread([&client, &keeper_stop, token_file] {
      std::string written;
      while (!keeper_stop.load()) {
        if (const auto w = (*client)->welcome(); w.has_value() && w->resume_token() != written) {
          if (absl::Status s = WriteResumeToken(token_file, w->resume_token()); s.ok()) {
            written = w->resume_token();
          } else {
            Log(std::string(s.message()));
          }
        }
        absl::SleepFor(absl::Milliseconds(200));
      }
    });
  }

  BrainstemOptions loop;
  loop.hz = hz;
  loop.deadline = absl::Milliseconds(deadline_ms);
  loop.send_reward = reward == "on";
  fieldbrain::picarx::Brainstem brainstem(*body, **client, clock, loop);
  const absl::Time start = absl::Now();
  const int64_t max_ticks = seconds > 0 ? int64_t(seconds * hz + 0.5) : 0;
  const absl::Status result = brainstem.Run(g_stop, max_ticks);
  PrintSummary(brainstem.stats(), absl::Now() - start);
  keeper_stop.store(true);
  if (keeper.joinable()) keeper.join();
  (*client)->Close();  // writes out the recording, so its status below is final
  if (const absl::Status rec = (*client)->recording_status(); !rec.ok()) Log(std::string(rec.message()));
  if (!result.ok()) {
    Log(absl::StrCat("hardware error: ", result.message(), "; ", dry ? "the car is stopped" : StopCar(hw)));
    return 1;
  }
  Log(absl::StrCat(g_stop.load() ? "stopped by signal; " : "done; ",
                   dry ? "the car is stopped" : StopCar(hw)));
  return 0;
}
