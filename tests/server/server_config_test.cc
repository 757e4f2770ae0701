#include "server/server_config.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>

#include "gmock/gmock.h"
#include "gpu/engine.h"
#include "gpu/field_pool.h"
#if FIELDBRAIN_HAVE_CUDA
#include "gpu/cuda/evolve_plan.h"
#include "gpu/cuda/staging.h"
#endif
#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using ::testing::HasSubstr;

TEST(ServerConfigTest, DefaultsAreValid) {
  const ServerConfig c;
  EXPECT_TRUE(ValidateConfig(c).ok()) << ValidateConfig(c);
  EXPECT_EQ(EffectiveMaxBatch(c), 64);
  const EngineConfig e = MakeEngineConfig(c);
  EXPECT_EQ(e.shape, CudaEngineAvailable() ? FieldShape::Default() : FieldShape::Small());
  EXPECT_EQ(e.max_robots, 64);
  EXPECT_EQ(e.max_batch, 64);
  const brain::v1::ServerLimits l = MakeLimits(c);
  EXPECT_EQ(l.max_sensors(), static_cast<uint32_t>(kMaxSensors));
  EXPECT_EQ(l.max_motors(), static_cast<uint32_t>(kMaxMotors));
  EXPECT_EQ(l.max_message_bytes(), 16u * 1024u);
  EXPECT_EQ(l.max_robots(), 64u);
}

// 256 robots on the default field with the other flags at their defaults fit a 4 GiB budget of
// device memory (fields, patterns, states and the CUDA workspace); with one batch row per robot,
// as max_batch used to default to, they did not.
TEST(ServerConfigTest, TwoHundredFiftySixDefaultFieldRobotsFitInFourGiB) {
  ServerConfig c;
  c.field = "default";
  c.max_robots = 256;
  ASSERT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(EffectiveMaxBatch(c), kDefaultMaxBatch);
  constexpr int64_t kFourGiB = int64_t(4) << 30;
  auto needed = [](const EngineConfig& e) {
#if FIELDBRAIN_HAVE_CUDA
    // The largest tile any supported GPU gets (sm_75's 64 KiB of opt-in shared memory or more).
    const std::optional<cuda::EvolveTile> tile = cuda::PlanEvolveTile(e.shape, 64 * 1024);
    EXPECT_TRUE(tile.has_value());
    return tile ? cuda::DeviceBytesNeeded(e, *tile) : int64_t(0);
#else
    return FieldPool(e.shape, e.max_robots, e.max_batch).bytes();
#endif
  };
  const int64_t with_defaults = needed(MakeEngineConfig(c));
  std::printf("256 default-field robots, default max_batch: %.3f GiB of device memory\n", double(with_defaults) / (1 << 30));
  EXPECT_LT(with_defaults, kFourGiB) << with_defaults;
  EXPECT_GT(with_defaults, int64_t(2) << 30);  // the 320 fields alone are 2.5 GiB
  c.max_batch = 256;
  std::printf("... with one batch row per robot: %.3f GiB\n", double(needed(MakeEngineConfig(c))) / (1 << 30));
  EXPECT_GT(needed(MakeEngineConfig(c)), kFourGiB);
}

TEST(ServerConfigTest, DefaultBatchIsCappedButNeverAboveTheSlots) {
  ServerConfig c;
  c.max_robots = 8;
  EXPECT_EQ(EffectiveMaxBatch(c), 8);
  c.max_robots = 1000;
  EXPECT_EQ(EffectiveMaxBatch(c), kDefaultMaxBatch);
  c.max_batch = 500;
  EXPECT_EQ(EffectiveMaxBatch(c), 500);
}

TEST(ServerConfigTest, TheEngineFailureHookNeedsTheCpuEngine) {
  ServerConfig c;
  c.engine = "cpu";
  c.test_fail_engine_after_batches = 10;
  ASSERT_TRUE(ValidateConfig(c).ok());
  c.engine = "auto";
  EXPECT_THAT(ValidateConfig(c).message(), HasSubstr("--engine=cpu only"));
  c.engine = "cpu";
  c.test_fail_engine_after_batches = -1;
  EXPECT_FALSE(ValidateConfig(c).ok());
}

TEST(ServerConfigTest, SmallFieldAndExplicitBatch) {
  ServerConfig c;
  c.field = "small";
  c.max_robots = 8;
  c.max_batch = 4;
  ASSERT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(MakeEngineConfig(c).shape, FieldShape::Small());
  EXPECT_EQ(MakeEngineConfig(c).max_batch, 4);
}

TEST(ServerConfigTest, TinyFieldIsTheSmallestValidShape) {
  ServerConfig c;
  c.field = "tiny";
  ASSERT_TRUE(ValidateConfig(c).ok());
  const FieldShape tiny = MakeEngineConfig(c).shape;
  EXPECT_EQ(tiny, (FieldShape{16, 8, 8, 8}));
  EXPECT_TRUE(tiny.valid());
  FieldShape fewer_channels = tiny, shorter_side = tiny;
  fewer_channels.channels -= 16;
  shorter_side.nx -= 4;
  EXPECT_FALSE(fewer_channels.valid());
  EXPECT_FALSE(shorter_side.valid());
}

TEST(ServerConfigTest, AutoFieldFollowsTheEngine) {
  ServerConfig c;
  c.field = "auto";
  c.engine = "cpu";
  EXPECT_EQ(MakeEngineConfig(c).shape, FieldShape::Small());
  c.engine = "cuda";
  EXPECT_EQ(MakeEngineConfig(c).shape, FieldShape::Default());
  c.engine = "auto";
  EXPECT_EQ(MakeEngineConfig(c).shape, CudaEngineAvailable() ? FieldShape::Default() : FieldShape::Small());
  c.field = "default";
  c.engine = "cpu";
  EXPECT_EQ(MakeEngineConfig(c).shape, FieldShape::Default());
}

TEST(ServerConfigTest, TheMemoryServiceIsOnByDefaultAndZeroTurnsItOff) {
  ServerConfig c;
  EXPECT_EQ(c.memory_arena_bytes, int64_t(256) << 20);
  EXPECT_EQ(c.memory_max_request_vectors, 256);
  c.memory_arena_bytes = 0;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.memory_arena_bytes = kMinMemoryArenaBytes;
  c.memory_max_request_vectors = kMaxMemoryRequestVectors;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

struct BadCase {
  const char* name;
  void (*mutate)(ServerConfig&);
  const char* message_has;
};

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, IsInvalidArgumentNamingTheFlag) {
  ServerConfig c;
  GetParam().mutate(c);
  const absl::Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr(GetParam().message_has));
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadConfigTest,
    ::testing::Values(
        BadCase{"listen_no_port", [](ServerConfig& c) { c.listen = "localhost"; }, "--listen"},
        BadCase{"listen_bad_port", [](ServerConfig& c) { c.listen = "127.0.0.1:99999"; },
                "bad port"},
        BadCase{"listen_letters", [](ServerConfig& c) { c.listen = "127.0.0.1:http"; },
                "bad port"},
        BadCase{"engine", [](ServerConfig& c) { c.engine = "tpu"; }, "--engine"},
        BadCase{"field", [](ServerConfig& c) { c.field = "huge"; }, "--field"},
        BadCase{"max_robots_zero", [](ServerConfig& c) { c.max_robots = 0; }, "--max_robots"},
        BadCase{"max_batch_over", [](ServerConfig& c) { c.max_batch = 65; }, "--max_batch"},
        BadCase{"max_batch_negative", [](ServerConfig& c) { c.max_batch = -1; }, "--max_batch"},
        BadCase{"window_negative", [](ServerConfig& c) { c.batch_window_us = -5; },
                "--batch_window_us"},
        BadCase{"message_tiny", [](ServerConfig& c) { c.max_message_bytes = 10; },
                "--max_message_bytes"},
        BadCase{"idle_negative", [](ServerConfig& c) { c.idle_keep_s = -1; }, "--idle_keep_s"},
        BadCase{"hello_timeout_zero", [](ServerConfig& c) { c.hello_timeout_s = 0; }, "--hello_timeout_s"},
        BadCase{"stream_idle_too_short", [](ServerConfig& c) { c.stream_idle_timeout_s = 0.01; },
                "--stream_idle_timeout_s"},
        BadCase{"stream_idle_nan", [](ServerConfig& c) { c.stream_idle_timeout_s = std::nan(""); },
                "--stream_idle_timeout_s"},
        BadCase{"frame_hz_negative", [](ServerConfig& c) { c.max_frame_hz = -1; }, "--max_frame_hz"},
        BadCase{"frame_hz_over", [](ServerConfig& c) { c.max_frame_hz = 100001; }, "--max_frame_hz"},
        BadCase{"frame_burst_zero", [](ServerConfig& c) { c.frame_burst = 0; }, "--frame_burst"},
        BadCase{"shutdown_negative", [](ServerConfig& c) { c.shutdown_deadline_s = -1; },
                "--shutdown_deadline_s"},
        BadCase{"metrics_listen", [](ServerConfig& c) { c.metrics_listen = "9464"; },
                "--metrics_listen"},
        BadCase{"threads", [](ServerConfig& c) { c.threads = -2; }, "--threads"},
        BadCase{"memory_arena_tiny", [](ServerConfig& c) { c.memory_arena_bytes = 4096; },
                "--memory_arena_bytes=4096 must be 0 (no Memory service) or in"},
        BadCase{"memory_arena_negative", [](ServerConfig& c) { c.memory_arena_bytes = -1; },
                "--memory_arena_bytes"},
        BadCase{"memory_arena_huge", [](ServerConfig& c) { c.memory_arena_bytes = int64_t(1) << 41; },
                "--memory_arena_bytes"},
        BadCase{"memory_request_zero", [](ServerConfig& c) { c.memory_max_request_vectors = 0; },
                "--memory_max_request_vectors"},
        BadCase{"memory_request_over", [](ServerConfig& c) { c.memory_max_request_vectors = 65537; },
                "--memory_max_request_vectors"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return info.param.name; });

}  // namespace
}  // namespace fieldbrain::server
