// Robots keep cycling while the Memory service creates and deletes 100 spaces: every frame is
// answered OK, robots' frames are answered while the churn runs, and none of the Memory work ran
// on the engine thread (it all ran on the Memory thread). Counts events, never wall time; the
// latency figures come from tests/bench/memory_churn_bench.cc.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "brain/v1/brain.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "memory_calls.h"
#include "raw_stream.h"
#include "server/brain_server.h"
#include "test_server_config.h"

namespace fieldbrain::server {
namespace {

constexpr int kSpaces = 100;

TEST(MemoryChurnTest, RobotsCycleWhileSpacesComeAndGoAndTheEngineThreadRunsNoneOfIt) {
  ServerConfig config = testing::TestServerConfig();
  config.field = "tiny";
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(config, "test");
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials());
  auto brain = brain::v1::Brain::NewStub(channel);
  testing::MemoryCalls memory(channel);
  const int64_t memory_jobs_before = (*server)->memory_service()->jobs_run();

  std::atomic<bool> churning{false}, done{false};
  std::atomic<int> frames_ok{0}, frames_bad{0}, frames_during_churn{0};
  std::thread robot([&] {
    testing::RawStream stream(brain.get(), absl::Seconds(120));
    if (!stream.Open(testing::MakeHello("robot-0")).has_value()) {
      frames_bad.fetch_add(1);
      return;
    }
    for (uint64_t seq = 1; !done.load(); ++seq) {
      std::optional<brain::v1::MotorFrame> m = stream.Step(testing::FrameRequest(seq, {0.1f, 0.2f, 0.3f, 0.4f}));
      if (!m.has_value() || m->status() != brain::v1::OK) {
        frames_bad.fetch_add(1);
        return;
      }
      frames_ok.fetch_add(1);
      if (churning.load()) frames_during_churn.fetch_add(1);
    }
    stream.Close();
  });
  // The robot is cycling before the churn starts.
  while (frames_ok.load() < 5 && frames_bad.load() == 0) std::this_thread::yield();

  churning.store(true);
  // At least kSpaces, and on until the robot has had a few answers meanwhile: on a loaded machine
  // its thread may not run at all during the first hundred (bounded, so a starved robot fails).
  int spaces = 0;
  for (; spaces < kSpaces || (frames_during_churn.load() < 3 && frames_bad.load() == 0 && spaces < 20 * kSpaces);
       ++spaces) {
    const std::string name = absl::StrCat("churn-", spaces);
    ASSERT_TRUE(memory.CreateSpace(name, 1024, 1024).ok()) << name;
    ASSERT_TRUE(memory.DeleteSpace(name).ok()) << name;
  }
  churning.store(false);
  done.store(true);
  robot.join();

  EXPECT_EQ(frames_bad.load(), 0);
  EXPECT_GT(frames_during_churn.load(), 0) << "no robot frame was answered while spaces were created and deleted";
  EXPECT_GE((*server)->memory_service()->jobs_run() - memory_jobs_before, 2 * spaces);
  EXPECT_EQ((*server)->scheduler().jobs_run(), 0) << "Memory work ran on the engine thread";
  (*server)->Shutdown();
}

}  // namespace
}  // namespace fieldbrain::server
