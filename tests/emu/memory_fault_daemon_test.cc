// brain-server on the emulated device with a device fault injected into the Memory service's HRR
// kernels (--test_inject_device_fault, server/device_fault_hook.h):
// - a non-sticky error fails that one request; the next succeeds, the robots' engine never
//   notices and every service stays SERVING;
// - a sticky error (the process's device context is lost) fails the request UNAVAILABLE, ends
//   every robot stream UNAVAILABLE saying why, and the daemon exits by itself with status 3, in
//   `both` mode and in `memory` mode (which serves no robots: Cycle is UNIMPLEMENTED there);
// - a sticky error in the robots' engine ends a `both` process the same way.
#include <signal.h>
#include <sys/wait.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "brain/v1/brain.grpc.pb.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "daemon_client.h"
#include "memory_calls.h"
#include "raw_stream.h"
#include "server_process.h"

namespace fieldbrain::server {
namespace {

using grpc::health::v1::HealthCheckResponse;
using ::testing::HasSubstr;
using testing::ChildProcess;
using testing::FrameRequest;
using testing::MakeHello;
using testing::MemoryCalls;
using testing::RawStream;

constexpr int kExitDeviceLost = 3;            // server/server_config.h
constexpr char kNonSticky[] = "CommitKernel:9";  // cudaErrorInvalidConfiguration: the launch alone fails
constexpr char kSticky[] = "CommitKernel:700";   // cudaErrorIllegalAddress: the context is lost

class MemoryFaultDaemonTest : public ::testing::Test {
 protected:
  void Start(const std::string& serve, const std::string& fault, std::vector<std::string> extra = {}) {
    // One log per test: ctest runs them at once.
    log_path_ = absl::StrCat(::testing::TempDir(), "memory_fault_",
                             ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_stderr.log");
    std::vector<std::string> argv = {BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=cuda", "--field=tiny", "--max_robots=2", "--threads=1",
         "--batch_window_us=0", "--stream_idle_timeout_s=0", "--memory_arena_bytes=67108864",
         absl::StrCat("--serve=", serve), absl::StrCat("--test_inject_device_fault=", fault)};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::optional<ChildProcess> child = ChildProcess::Spawn(argv, log_path_);
    ASSERT_TRUE(child.has_value());
    daemon_.emplace(std::move(*child));
    const std::optional<testing::DaemonPorts> ports =
        testing::WaitForDaemonPorts(*daemon_, log_path_, absl::Seconds(240));
    ASSERT_TRUE(ports.has_value()) << "brain-server did not start:\n" << Log();
    client_ = testing::DaemonClient::Connect(ports->grpc, absl::Seconds(60));
    ASSERT_TRUE(client_.has_value());
  }

  int Health(const std::string& service) { return client_->Health(service); }

  // The robot's stream ends UNAVAILABLE saying why (bounded: a daemon that never ends it fails
  // here, not by the test's timeout).
  static void ExpectStreamEndsOnTheLostDevice(RawStream& robot, uint64_t& seq) {
    for (int i = 0; i < 200 && robot.Step(FrameRequest(++seq, {0.1f, 0.2f, -0.3f, 0.4f})).has_value(); ++i) {
    }
    const grpc::Status end = robot.Finish();
    EXPECT_EQ(end.error_code(), grpc::StatusCode::UNAVAILABLE) << end.error_message();
    EXPECT_THAT(end.error_message(), HasSubstr("device context was lost"));
  }

  // The daemon exits by itself with status 3, having said NOT_SERVING.
  void ExpectExitOnTheLostDevice() {
    const std::optional<int> status = daemon_->WaitExit(absl::Seconds(120));
    ASSERT_TRUE(status.has_value()) << "the daemon kept running on a lost device:\n" << Log();
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), kExitDeviceLost) << Log();
    EXPECT_THAT(Log(), HasSubstr("health NOT_SERVING"));
  }

  std::string Log() const { return testing::ReadFile(log_path_); }

  std::string log_path_;
  std::optional<ChildProcess> daemon_;
  std::optional<testing::DaemonClient> client_;
};

int Steps(RawStream& robot, uint64_t& seq, int n) {
  int ok = 0;
  for (int i = 0; i < n; ++i) {
    std::optional<brain::v1::MotorFrame> m = robot.Step(FrameRequest(++seq, {0.1f, 0.2f, -0.3f, 0.4f}));
    if (m.has_value() && m->status() == brain::v1::OK) ++ok;
  }
  return ok;
}

TEST_F(MemoryFaultDaemonTest, ANonStickyErrorFailsOneRequestAndNothingElse) {
  ASSERT_NO_FATAL_FAILURE(Start("both", kNonSticky));
  RawStream robot(client_->brain(), absl::Seconds(600));
  ASSERT_TRUE(robot.Open(MakeHello("robot-0")).has_value());
  uint64_t seq = 0;
  EXPECT_EQ(Steps(robot, seq, 3), 3);

  ASSERT_TRUE(client_->memory().CreateSpace("facts", 256, 16).ok());
  grpc::Status failed;
  EXPECT_TRUE(client_->memory().PutRandom("facts", brain::v1::VECTOR_KIND_GAUSSIAN, 1, 4, 0, &failed).empty());
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::INTERNAL);
  EXPECT_THAT(failed.error_message(), HasSubstr("cudaErrorInvalidConfiguration"));
  grpc::Status retried;
  EXPECT_EQ(client_->memory().PutRandom("facts", brain::v1::VECTOR_KIND_GAUSSIAN, 1, 4, 0, &retried).size(), 4u)
      << retried.error_message();

  EXPECT_EQ(Steps(robot, seq, 3), 3) << "the robot's engine noticed the Memory service's error";
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Memory"), HealthCheckResponse::SERVING);
  robot.Cancel();
  robot.Finish();

  daemon_->Signal(SIGTERM);
  const std::optional<int> status = daemon_->WaitExit(absl::Seconds(120));
  ASSERT_TRUE(status.has_value()) << "still running after SIGTERM";
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0) << Log();
  EXPECT_THAT(Log(), ::testing::Not(HasSubstr("device context is lost")));
}

TEST_F(MemoryFaultDaemonTest, AStickyErrorEndsEveryStreamAndTheProcess) {
  // Checkpoints only on disconnect and shutdown: both come after the fault, so none may be written
  // from the lost device.
  const std::string checkpoints = ::testing::TempDir() + "memory_fault_checkpoints";
  std::filesystem::remove_all(checkpoints);
  std::filesystem::create_directories(checkpoints);
  ASSERT_NO_FATAL_FAILURE(
      Start("both", kSticky, {"--checkpoint_dir=" + checkpoints, "--checkpoint_every_cycles=0"}));
  RawStream robot(client_->brain(), absl::Seconds(600));
  ASSERT_TRUE(robot.Open(MakeHello("robot-0")).has_value());
  uint64_t seq = 0;
  EXPECT_EQ(Steps(robot, seq, 3), 3);

  ASSERT_TRUE(client_->memory().CreateSpace("facts", 256, 16).ok());
  grpc::Status failed;
  EXPECT_TRUE(client_->memory().PutRandom("facts", brain::v1::VECTOR_KIND_GAUSSIAN, 1, 4, 0, &failed).empty());
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::UNAVAILABLE) << failed.error_message();
  EXPECT_THAT(failed.error_message(), HasSubstr("device context is lost"));

  ExpectStreamEndsOnTheLostDevice(robot, seq);
  ASSERT_NO_FATAL_FAILURE(ExpectExitOnTheLostDevice());
  EXPECT_THAT(Log(), HasSubstr("cudaErrorIllegalAddress"));
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints)) {
    EXPECT_NE(entry.path().extension(), ".ckpt") << "a checkpoint was written from the lost device: " << entry.path();
  }
}

TEST_F(MemoryFaultDaemonTest, AStickyErrorInTheEngineEndsTheProcessToo) {
  // The same context from the other side: the robots' engine faults, and the Memory service of the
  // same process goes down with it.
  ASSERT_NO_FATAL_FAILURE(Start("both", "EvolveKernel:700"));
  ASSERT_TRUE(client_->memory().CreateSpace("facts", 256, 16).ok());
  RawStream robot(client_->brain(), absl::Seconds(600));
  ASSERT_TRUE(robot.Open(MakeHello("robot-0")).has_value());
  uint64_t seq = 0;
  ExpectStreamEndsOnTheLostDevice(robot, seq);
  ExpectExitOnTheLostDevice();
}

TEST_F(MemoryFaultDaemonTest, TheMemoryServiceAloneServesNoRobotsAndStopsOnAStickyError) {
  ASSERT_NO_FATAL_FAILURE(Start("memory", kSticky));
  // No engine, so the CUDA backend proved itself alone before serving.
  EXPECT_THAT(Log(), HasSubstr("CUDA HRR backend self-check passed: an HRR round trip")) << Log();
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Memory"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), -int(grpc::StatusCode::NOT_FOUND));
  RawStream robot(client_->brain(), absl::Seconds(60));
  EXPECT_FALSE(robot.Open(MakeHello("robot-0")).has_value());
  EXPECT_EQ(robot.Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);

  ASSERT_TRUE(client_->memory().CreateSpace("facts", 256, 16).ok());
  grpc::Status failed;
  EXPECT_TRUE(client_->memory().PutRandom("facts", brain::v1::VECTOR_KIND_GAUSSIAN, 1, 4, 0, &failed).empty());
  EXPECT_EQ(failed.error_code(), grpc::StatusCode::UNAVAILABLE) << failed.error_message();
  ExpectExitOnTheLostDevice();
}

}  // namespace
}  // namespace fieldbrain::server
