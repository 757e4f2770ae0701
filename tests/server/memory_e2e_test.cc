// End to end: the Memory service of the real brain-server binary on a loopback port, with its
// metrics on /metrics and a clean SIGTERM.
#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "memory_calls.h"
#include "server_process.h"

#ifndef BRAIN_SERVER_PATH
#error "BRAIN_SERVER_PATH must name the brain-server binary"
#endif

namespace fieldbrain::server {
namespace {

using ::testing::HasSubstr;

// As in server_e2e_test: the build tree's daemon on the CPU engine unless the environment names
// another binary (BRAIN_SERVER) or engine (FIELDBRAIN_E2E_ENGINE).
std::string FromEnv(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

TEST(MemoryE2eTest, BindUnbindCleanupThroughTheDaemon) {
  const std::string engine = FromEnv("FIELDBRAIN_E2E_ENGINE", "cpu");
  const std::string log_path = ::testing::TempDir() + "memory_e2e_test.log";
  std::optional<testing::ChildProcess> daemon = testing::ChildProcess::Spawn(
      {FromEnv("BRAIN_SERVER", BRAIN_SERVER_PATH), "--listen=127.0.0.1:0", "--engine=" + engine, "--field=small",
       "--max_robots=2", "--threads=1", "--memory_arena_bytes=67108864", "--memory_max_request_vectors=512",
       "--metrics_listen=127.0.0.1:0"},
      log_path);
  ASSERT_TRUE(daemon.has_value());
  const std::optional<testing::DaemonPorts> ports = testing::WaitForDaemonPorts(*daemon, log_path, absl::Seconds(30));
  ASSERT_TRUE(ports.has_value()) << "brain-server did not start:\n" << testing::ReadFile(log_path);
  const std::string target = absl::StrCat("127.0.0.1:", ports->grpc);
  const int metrics_port = ports->metrics;

  testing::MemoryCalls calls(grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
  // The daemon is ready once ListSpaces answers.
  brain::v1::ListSpacesResponse list;
  for (int i = 0; i < 300; ++i) {
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
    if (calls.stub().ListSpaces(&ctx, {}, &list).ok()) break;
    ASSERT_TRUE(daemon->running()) << "brain-server exited at start";
  }
  EXPECT_EQ(list.limits().arena_bytes(), 64u << 20);
  EXPECT_EQ(list.limits().max_request_vectors(), 512u);
  EXPECT_TRUE(list.limits().backend() == engine || list.limits().backend() == "cpu") << list.limits().backend();

  ASSERT_TRUE(calls.CreateSpace("e2e", 1024, 1024).ok());
  const std::vector<uint64_t> roles = calls.PutRandom("e2e", brain::v1::VECTOR_KIND_UNITARY, 1, 8);
  const std::vector<uint64_t> fillers = calls.PutRandom("e2e", brain::v1::VECTOR_KIND_GAUSSIAN, 2, 8);
  ASSERT_EQ(roles.size(), 8u);
  ASSERT_EQ(fillers.size(), 8u);
  // A record of 8 role-filler pairs; each role unbinds its filler out of it.
  const std::vector<uint64_t> pairs = calls.Bind("e2e", roles, fillers);
  brain::v1::SuperposeRequest sup;
  sup.set_space("e2e");
  sup.set_normalize(true);
  brain::v1::SuperposeGroup* group = sup.add_groups();
  for (uint64_t id : pairs) group->add_ids(id);
  brain::v1::SuperposeResponse record;
  ASSERT_TRUE(calls.Call(&brain::v1::Memory::Stub::Superpose, sup, &record).ok());
  const std::vector<uint64_t> probes = calls.Unbind("e2e", std::vector<uint64_t>(8, record.ids(0)), roles);
  grpc::Status s;
  const brain::v1::CleanupResponse found = calls.Cleanup("e2e", probes, 1, fillers, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(found.results_size(), 8);
  for (int i = 0; i < 8; ++i) {
    ASSERT_EQ(found.results(i).ids_size(), 1);
    EXPECT_EQ(found.results(i).ids(0), fillers[size_t(i)]) << i;
    EXPECT_GT(found.results(i).cosines(0), 0.2f);  // ~1/sqrt(8 + 1) for 8 superposed pairs
  }
  const std::vector<std::vector<float>> got = calls.Get("e2e", {fillers[0]}, &s);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].size(), 1024u);

  const std::string metrics = testing::HttpGet(metrics_port, "/metrics");
  EXPECT_THAT(metrics, HasSubstr("brain_hrr_operations_total{op=\"bind\"} 8"));
  EXPECT_THAT(metrics, HasSubstr("brain_hrr_operations_total{op=\"cleanup\"} 8"));
  EXPECT_THAT(metrics, HasSubstr("brain_hrr_vectors_stored 33"));  // roles, fillers, pairs, record, probes
  EXPECT_THAT(metrics, HasSubstr("brain_hrr_arena_bytes 67108864"));

  daemon->Signal(SIGTERM);
  const std::optional<int> status = daemon->WaitExit(absl::Seconds(30));
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
}

}  // namespace
}  // namespace fieldbrain::server
