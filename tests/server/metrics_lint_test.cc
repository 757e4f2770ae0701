// The daemon's /metrics as Prometheus's own linter sees it: a live scrape of a daemon that has
// served robots (frames answered and refused), written checkpoints and answered Memory calls goes
// through `promtool check metrics`, which must find nothing (names, types, help, units). A metric
// named against Prometheus's conventions (a gauge ending in _total, say) fails here.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "memory_calls.h"
#include "raw_stream.h"
#include "server/brain_server.h"
#include "test_server_config.h"

namespace fieldbrain::server {
namespace {

using testing::FrameRequest;
using testing::MakeHello;
using testing::MemoryCalls;
using testing::RawStream;

TEST(MetricsLintTest, ALiveScrapePassesPromtoolCheckMetrics) {
  const std::string dir = ::testing::TempDir() + "/metrics_lint." + std::to_string(::getpid());
  ::mkdir(dir.c_str(), 0700);
  ServerConfig c = testing::TestServerConfig();
  c.checkpoint_dir = dir;
  c.checkpoint_every_cycles = 4;
  absl::StatusOr<std::unique_ptr<BrainServer>> server = BrainServer::Start(c, "test");
  ASSERT_TRUE(server.ok()) << server.status();
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", (*server)->port()), grpc::InsecureChannelCredentials());
  auto stub = brain::v1::Brain::NewStub(channel);
  {
    RawStream s(stub.get());
    ASSERT_TRUE(s.Open(MakeHello("linted")).has_value());
    for (int t = 1; t <= 10; ++t) {
      std::vector<float> v(4);
      for (int i = 0; i < 4; ++i) v[size_t(i)] = std::sin(0.3f * float(t + i));
      ASSERT_TRUE(s.Step(FrameRequest(uint64_t(t), v, 0.1f)).has_value());
    }
    std::optional<brain::v1::MotorFrame> refused = s.Step(FrameRequest(11, {0.1f, 0.2f}, 0.0f));
    ASSERT_TRUE(refused.has_value());
    EXPECT_NE(refused->status(), brain::v1::OK);
    EXPECT_TRUE(s.Close().ok());
  }
  MemoryCalls memory(channel);
  ASSERT_TRUE(memory.CreateSpace("lint", 256, 64).ok());
  const std::vector<uint64_t> a = memory.PutRandom("lint", brain::v1::VECTOR_KIND_UNITARY, 1, 4);
  ASSERT_EQ(a.size(), 4u);
  EXPECT_EQ(memory.Bind("lint", a, a).size(), 4u);
  ASSERT_TRUE((*server)->checkpointer()->Flush(absl::Seconds(10)));
  ASSERT_GE((*server)->checkpointer()->written(), 2);

  const std::string scrape = (*server)->metrics().Scrape();
  const std::string path = dir + "/scrape.txt";
  std::ofstream(path) << scrape;
  const std::string command = absl::StrCat(FIELDBRAIN_PROMTOOL_PATH, " check metrics < ", path, " 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string findings;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) findings += buffer;
  const int status = ::pclose(pipe);
  EXPECT_EQ(status, 0) << command << " (promtool comes with Debian's prometheus package, deploy/install-deps.sh)";
  EXPECT_EQ(findings, "") << "promtool check metrics found:\n" << findings;
  EXPECT_NE(scrape.find("brain_checkpoint_bytes_total"), std::string::npos);
  EXPECT_NE(scrape.find("brain_hrr_operations_total{op=\"bind\"} 4"), std::string::npos);
}

}  // namespace
}  // namespace fieldbrain::server
