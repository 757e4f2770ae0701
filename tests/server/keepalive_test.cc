// A robot that goes silent without closing TCP (its Wi-Fi dropped) must not keep its robot id:
// the server's keepalive closes the dead connection and a new Hello with the same id succeeds.
// The robot is a raw stub whose channel has no keepalive of its own; it reaches the in-process
// server through a proxy that turns into a black hole. Takes 10-15 s (one keepalive period and
// its timeout); nothing here asserts a latency beyond the 30 s bound.
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "raw_stream.h"
#include "test_server_config.h"
#include "server/brain_server.h"
#include "tests/black_hole_proxy.h"

namespace fieldbrain::server {
namespace {

using brain::v1::Welcome;
using fieldbrain::testing::BlackHoleProxy;
using testing::FrameRequest;
using testing::MakeHello;
using testing::RawStream;
using testing::TestServerConfig;


std::unique_ptr<brain::v1::Brain::Stub> StubTo(const std::string& target) {
  // A fresh channel each time (no shared subchannel), without keepalive: only the server pings.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return brain::v1::Brain::NewStub(
      grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
}

TEST(KeepaliveTest, ASilentRobotFreesItsIdWithinTheKeepalive) {
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(TestServerConfig(), "test");
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string direct = "127.0.0.1:" + std::to_string((*server)->port());
  std::unique_ptr<BlackHoleProxy> proxy = BlackHoleProxy::Start((*server)->port());
  ASSERT_NE(proxy, nullptr);

  auto robot_stub = StubTo(proxy->target());
  RawStream robot(robot_stub.get(), absl::Seconds(120));
  const std::optional<Welcome> welcome = robot.Open(MakeHello("wanderer"));
  ASSERT_TRUE(welcome.has_value());
  const std::optional<brain::v1::MotorFrame> m =
      robot.Step(FrameRequest(1, {0.1f, 0.2f, 0.3f, 0.4f}));
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->status(), brain::v1::OK);

  // While the robot's stream is live, its id is taken.
  auto direct_stub = StubTo(direct);
  {
    RawStream again(direct_stub.get(), absl::Seconds(10));
    ASSERT_FALSE(again.Open(MakeHello("wanderer")).has_value());
    ASSERT_EQ(again.Finish().error_code(), grpc::StatusCode::ALREADY_EXISTS);
  }

  // The Wi-Fi drops: no bytes either way, no FIN, no reset.
  proxy->BlackHole();
  const absl::Time dropped = absl::Now();
  std::optional<Welcome> back;
  grpc::Status refused;
  brain::v1::Hello resume = MakeHello("wanderer");
  resume.set_resume_token(welcome->resume_token());  // the robot, back on another link
  while (absl::Now() - dropped < absl::Seconds(30)) {
    absl::SleepFor(absl::Milliseconds(500));
    RawStream again(direct_stub.get(), absl::Seconds(10));
    back = again.Open(resume);
    if (back.has_value()) {
      EXPECT_TRUE(again.Close().ok());
      break;
    }
    refused = again.Finish();
  }
  const absl::Duration freed_after = absl::Now() - dropped;
  ASSERT_TRUE(back.has_value()) << "the id is still taken " << absl::FormatDuration(freed_after)
                                << " after the robot went silent; last refusal: "
                                << refused.error_code() << " " << refused.error_message();
  EXPECT_TRUE(back->resumed()) << "the robot gets its brain back with its token";
  // One keepalive period plus its timeout, with slack for the poll above.
  EXPECT_LE(freed_after, absl::Milliseconds(kKeepaliveTimeMs + kKeepaliveTimeoutMs + 5000));
  std::cout << "[ INFO     ] id freed " << absl::FormatDuration(freed_after)
            << " after the robot went silent\n";
  robot.Cancel();
  robot.Finish();  // ends locally: nothing gets through the black hole
  (*server)->Shutdown();
}

}  // namespace
}  // namespace fieldbrain::server
