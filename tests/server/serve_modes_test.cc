// brain-server --serve=brain|memory|both (CPU engine): each process answers only the services it
// runs (gRPC answers UNIMPLEMENTED for the other), its health service knows only those, and
// unknown modes or a memory-only process without an arena are refused at start (exit 2).
#include <signal.h>
#include <sys/wait.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

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

class ServeModesTest : public ::testing::Test {
 protected:
  void Start(const std::string& serve) {
    log_path_ = absl::StrCat(::testing::TempDir(), "serve_modes_", serve, "_stderr.log");
    std::optional<ChildProcess> child =
        ChildProcess::Spawn({BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=cpu", "--field=tiny",
                             "--max_robots=2", "--threads=1", "--stream_idle_timeout_s=0",
                             absl::StrCat("--serve=", serve)},
                            log_path_);
    ASSERT_TRUE(child.has_value());
    daemon_.emplace(std::move(*child));
    const std::optional<testing::DaemonPorts> ports = testing::WaitForDaemonPorts(*daemon_, log_path_, absl::Seconds(60));
    ASSERT_TRUE(ports.has_value()) << "brain-server did not start:\n" << testing::ReadFile(log_path_);
    client_ = testing::DaemonClient::Connect(ports->grpc, absl::Seconds(30));
    ASSERT_TRUE(client_.has_value());
  }

  int Health(const std::string& service) { return client_->Health(service, absl::Seconds(10)); }

  void StopCleanly() {
    daemon_->Signal(SIGTERM);
    const std::optional<int> status = daemon_->WaitExit(absl::Seconds(30));
    ASSERT_TRUE(status.has_value());
    EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
  }

  std::string log_path_;
  std::optional<ChildProcess> daemon_;
  std::optional<testing::DaemonClient> client_;
};

TEST_F(ServeModesTest, BrainAloneHasNoMemoryService) {
  ASSERT_NO_FATAL_FAILURE(Start("brain"));
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Memory"), -int(grpc::StatusCode::NOT_FOUND));
  EXPECT_EQ(client_->memory().CreateSpace("facts", 64, 8).error_code(), grpc::StatusCode::UNIMPLEMENTED);

  RawStream robot(client_->brain(), absl::Seconds(30));
  ASSERT_TRUE(robot.Open(MakeHello("robot-0")).has_value());
  std::optional<brain::v1::MotorFrame> m = robot.Step(FrameRequest(1, {0.1f, 0.2f, 0.3f, 0.4f}));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->status(), brain::v1::OK);
  EXPECT_TRUE(robot.Close().ok());
  StopCleanly();
}

TEST_F(ServeModesTest, MemoryAloneServesNoRobots) {
  ASSERT_NO_FATAL_FAILURE(Start("memory"));
  EXPECT_EQ(Health(""), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Memory"), HealthCheckResponse::SERVING);
  EXPECT_EQ(Health("brain.v1.Brain"), -int(grpc::StatusCode::NOT_FOUND));

  RawStream robot(client_->brain(), absl::Seconds(30));
  EXPECT_FALSE(robot.Open(MakeHello("robot-0")).has_value());
  EXPECT_EQ(robot.Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  grpc::ClientContext ctx;
  brain::v1::ServerInfo info;
  EXPECT_EQ(client_->brain()->GetServerInfo(&ctx, brain::v1::GetServerInfoRequest(), &info).error_code(),
            grpc::StatusCode::UNIMPLEMENTED);

  ASSERT_TRUE(client_->memory().CreateSpace("facts", 64, 8).ok());
  EXPECT_EQ(client_->memory().PutRandom("facts", brain::v1::VECTOR_KIND_UNITARY, 1, 3).size(), 3u);
  EXPECT_EQ(client_->memory().List().limits().backend(), "cpu");
  EXPECT_THAT(testing::ReadFile(log_path_), HasSubstr("serve=memory memory_backend=cpu"));
  StopCleanly();
}

TEST(ServeModesFlagTest, BadSettingsAreRefusedAtStart) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--serve=robots"}, {"--serve=memory", "--memory_arena_bytes=0"}}) {
    const std::string log_path = ::testing::TempDir() + "serve_modes_flag_stderr.log";
    std::vector<std::string> argv = {BRAIN_SERVER_PATH, "--listen=127.0.0.1:0", "--engine=cpu"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    std::optional<ChildProcess> child = ChildProcess::Spawn(argv, log_path);
    ASSERT_TRUE(child.has_value());
    const std::optional<int> status = child->WaitExit(absl::Seconds(30));
    ASSERT_TRUE(status.has_value());
    ASSERT_TRUE(WIFEXITED(*status));
    EXPECT_EQ(WEXITSTATUS(*status), 2) << flags[0];
    EXPECT_THAT(testing::ReadFile(log_path), HasSubstr("--serve")) << flags[0];
  }
}

}  // namespace
}  // namespace fieldbrain::server
