#include "telemetry/metrics.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "telemetry/metrics_exposer.h"

namespace fieldbrain::telemetry {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, ExportsEveryFamilyWithFixedLabelsOnly) {
  Metrics m;
  m.SetBuildInfo("1.2.3", "cpu");
  m.SetEngineInfo("cpu", "self_check_failed");
  m.SetPoolBytes(4096);
  m.RecordCycle(0.0002);
  m.RecordBatch(3);
  m.RecordQueueWait(0.0001);
  m.RecordRejected(RejectReason::kNonFinite);
  m.RecordRejected(RejectReason::kNonFinite);
  m.RecordSuperseded();
  m.SetSessionsActive(2);
  m.RecordStage(Stage::kEvolve, 0.001, 3);
  m.RecordHrrOperations(HrrOp::kBind, 5);
  m.SetHrrVectorsStored(7);
  m.SetHrrArena(1 << 20, 4096);
  const std::string text = m.Scrape();
  for (const char* name :
       {"brain_cycle_duration_seconds_bucket", "brain_stage_duration_seconds_bucket",
        "brain_batch_size_bucket", "brain_queue_wait_seconds_bucket", "brain_cycles_total",
        "brain_frames_rejected_total", "brain_frames_superseded_total", "brain_sessions_active",
        "brain_pool_bytes", "brain_build_info", "brain_hrr_operations_total", "brain_hrr_vectors_stored",
        "brain_hrr_arena_bytes", "brain_hrr_arena_used_bytes"}) {
    EXPECT_THAT(text, HasSubstr(name));
  }
  EXPECT_THAT(text, HasSubstr("brain_cycles_total 3"));
  EXPECT_THAT(text, HasSubstr("brain_frames_rejected_total{reason=\"non_finite\"} 2"));
  EXPECT_THAT(text, HasSubstr("brain_frames_rejected_total{reason=\"deadline_exceeded\"} 0"));
  EXPECT_THAT(text, HasSubstr("brain_frames_superseded_total 1"));
  EXPECT_THAT(text, HasSubstr("brain_sessions_active 2"));
  EXPECT_THAT(text, HasSubstr("brain_pool_bytes 4096"));
  EXPECT_THAT(text, HasSubstr("brain_build_info{engine=\"cpu\",version=\"1.2.3\"} 1"));
  EXPECT_THAT(text, HasSubstr("brain_engine_info{engine=\"cpu\",reason=\"self_check_failed\"} 1"));
  EXPECT_THAT(text, HasSubstr("brain_stage_duration_seconds_count{stage=\"evolve\"} 1"));
  EXPECT_THAT(text, HasSubstr("brain_stage_duration_seconds_count{stage=\"imprint\"} 0"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"bind\"} 5"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_operations_total{op=\"cleanup\"} 0"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_vectors_stored 7"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_arena_bytes 1048576"));
  EXPECT_THAT(text, HasSubstr("brain_hrr_arena_used_bytes 4096"));
  // Label keys are fixed and few (no robot id: cardinality).
  const std::set<std::string> allowed = {"stage", "reason", "version", "engine", "le", "op"};
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t open = line.find('{');
    if (open == absl::string_view::npos) continue;
    const absl::string_view labels = line.substr(open + 1, line.find('}') - open - 1);
    for (absl::string_view pair : absl::StrSplit(labels, ',')) {
      const std::string key(pair.substr(0, pair.find('=')));
      EXPECT_TRUE(allowed.count(key)) << "unexpected label " << key << " in " << line;
    }
  }
}

std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      for (ssize_t n; (n = read(fd, buf, sizeof(buf))) > 0;) out.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return out;
}

TEST(MetricsTest, EngineHealthAndDeviceMemory) {
  Metrics m;
  std::string text = m.Scrape();
  EXPECT_THAT(text, HasSubstr("brain_engine_healthy 1"));
  // No device memory series until an engine with a device reports it (the CPU engine never does).
  EXPECT_THAT(text, ::testing::Not(HasSubstr("brain_device_memory_used_bytes ")));
  m.SetEngineHealthy(false);
  m.SetDeviceMemory(3 * 1024 * 1024, 80LL << 30);
  m.SetDeviceMemory(5 * 1024 * 1024, 80LL << 30);  // the latest value wins, no second series
  text = m.Scrape();
  EXPECT_THAT(text, HasSubstr("brain_engine_healthy 0"));
  EXPECT_THAT(text, HasSubstr("brain_device_memory_used_bytes 5242880"));
  EXPECT_THAT(text, HasSubstr("brain_device_memory_total_bytes 85899345920"));
  size_t series = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n'))
    if (absl::StartsWith(line, "brain_device_memory_used_bytes")) ++series;
  EXPECT_EQ(series, 1u);
}

TEST(MetricsExposerTest, ServesTheRegistryOverHttp) {
  Metrics m;
  m.RecordSuperseded();
  auto exposer = MetricsExposer::Start("127.0.0.1:0", m.registry());
  ASSERT_TRUE(exposer.ok()) << exposer.status();
  ASSERT_GT((*exposer)->port(), 0);
  const std::string body = HttpGet((*exposer)->port(), "/metrics");
  EXPECT_THAT(body, HasSubstr("200 OK"));
  EXPECT_THAT(body, HasSubstr("brain_frames_superseded_total 1"));
}

TEST(MetricsExposerTest, BusyAddressIsUnavailable) {
  Metrics m;
  auto first = MetricsExposer::Start("127.0.0.1:0", m.registry());
  ASSERT_TRUE(first.ok()) << first.status();
  auto second =
      MetricsExposer::Start("127.0.0.1:" + std::to_string((*first)->port()), m.registry());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace fieldbrain::telemetry
