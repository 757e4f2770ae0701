// The start-up self-check on the emulated device (label cuda-emu): a correct device passes and
// serves; a device whose kernel output is wrong, or that faults, never serves a robot:
// --engine=auto falls back to the CPU engine with the reason, --engine=cuda refuses to start with
// the figures.
#include <cstring>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "cuda_emu/control.h"
#include "gpu/engine_canary.h"
#include "gpu/cuda/launch.h"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gtest/gtest.h"
#include "server/engine_choice.h"

namespace fieldbrain::server {
namespace {

EngineConfig TinyConfig() {
  EngineConfig c;
  c.shape = FieldShape::Tiny();
  c.max_robots = 4;
  c.max_batch = 4;
  return c;
}

class EngineChoiceTest : public ::testing::Test {
 protected:
  void TearDown() override { emu::ResetDevice(); }
};

bool Contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The effects run after the kernel, on the stream's worker; device memory is host memory here.
void NudgeFirstMotor(void*, const void* params) {
  const cuda::CycleArgs& args = std::get<0>(*static_cast<const std::tuple<cuda::CycleArgs>*>(params));
  args.outputs[0].motors[0] += 0.01f;
}

void NudgeCommittedBin(void*, const void* params) {
  using CommitParams = std::tuple<hrr::cuda::SlotStore, const hrr::Cf*, const int32_t*, bool>;
  const auto& [store, rows, dest, normalize] = *static_cast<const CommitParams*>(params);
  store.spectra[int64_t(dest[0]) * store.bins + 5].re += 0.5f;
}

TEST_F(EngineChoiceTest, ACorrectDevicePassesAndServes) {
  for (std::string_view kind : {"cuda", "auto"}) {
    absl::StatusOr<EngineChoice> choice = ChooseEngine(kind, TinyConfig());
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->engine->kind(), "cuda");
    EXPECT_EQ(choice->reason, EngineReason::kSelfCheckPassed);
    EXPECT_TRUE(Contains(choice->self_check, "against the CPU engine")) << choice->self_check;
    EXPECT_TRUE(Contains(choice->self_check, "HRR round trip")) << choice->self_check;
    EXPECT_EQ(choice->engine->brains_active(), 0) << "the canary's brains are released";
    std::printf("%s: %s\n", std::string(kind).c_str(), choice->self_check.c_str());
  }
  absl::StatusOr<EngineChoice> cpu = ChooseEngine("cpu", TinyConfig());
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->reason, EngineReason::kCpuRequested);
  EXPECT_TRUE(cpu->self_check.empty());
}

// What the check costs on the default field (the emulated device is a few hundred times slower
// than a card; docs/benchmarks.md has the card's figure when one was measured).
TEST_F(EngineChoiceTest, PassesOnTheDefaultField) {
  EngineConfig c = TinyConfig();
  c.shape = FieldShape::Default();
  absl::StatusOr<EngineChoice> choice = ChooseEngine("cuda", c);
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->reason, EngineReason::kSelfCheckPassed);
  std::printf("default field: %s\n", choice->self_check.c_str());
}

TEST_F(EngineChoiceTest, AWrongKernelOutputFallsBackToTheCpuEngineOnAuto) {
  emu::InjectKernelEffect("CloseCycleKernel", &NudgeFirstMotor, nullptr, 2);
  absl::StatusOr<EngineChoice> choice = ChooseEngine("auto", TinyConfig());
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->engine->kind(), "cpu");
  EXPECT_EQ(choice->reason, EngineReason::kSelfCheckFailed);
  EXPECT_EQ(EngineReasonName(choice->reason), "self_check_failed");
  EXPECT_TRUE(Contains(choice->self_check, "outputs differ by at most 0.01")) << choice->self_check;
}

TEST_F(EngineChoiceTest, AWrongKernelOutputStopsAnEngineThatMustBeCuda) {
  emu::InjectKernelEffect("CloseCycleKernel", &NudgeFirstMotor, nullptr, 3);
  absl::StatusOr<EngineChoice> choice = ChooseEngine("cuda", TinyConfig());
  ASSERT_FALSE(choice.ok());
  EXPECT_EQ(choice.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(std::string(choice.status().message()), "self-check")) << choice.status();
  // The figures: the nudged motor's difference against the canary's bound.
  EXPECT_TRUE(Contains(std::string(choice.status().message()), absl::StrFormat("tolerance %.0e", fieldbrain::kCanaryOutputTol)))
      << choice.status();
}

TEST_F(EngineChoiceTest, AWrongHrrResultFailsTheSelfCheck) {
  emu::InjectKernelEffect("CommitKernel", &NudgeCommittedBin, nullptr, 3);  // Random, Bind, then Unbind's
  absl::StatusOr<EngineChoice> choice = ChooseEngine("auto", TinyConfig());
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->reason, EngineReason::kSelfCheckFailed);
  EXPECT_TRUE(Contains(choice->self_check, "HRR round trip")) << choice->self_check;
}

TEST_F(EngineChoiceTest, ADeviceFaultDuringTheCanaryFallsBackOnAuto) {
  emu::InjectKernelFault("EvolveKernel", cudaErrorIllegalAddress);
  absl::StatusOr<EngineChoice> choice = ChooseEngine("auto", TinyConfig());
  ASSERT_TRUE(choice.ok()) << choice.status();
  EXPECT_EQ(choice->engine->kind(), "cpu");
  EXPECT_EQ(choice->reason, EngineReason::kSelfCheckFailed);
  EXPECT_TRUE(Contains(choice->self_check, "cudaErrorIllegalAddress")) << choice->self_check;
}

// --serve=memory: no engine, so the Memory service's CUDA backend proves itself alone.
TEST_F(EngineChoiceTest, TheMemoryServiceAloneServesOnACorrectCard) {
  for (std::string_view kind : {"cuda", "auto"}) {
    absl::StatusOr<HrrBackendChoice> choice = ChooseHrrBackend(kind);
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->backend, "cuda");
    EXPECT_EQ(choice->reason, EngineReason::kSelfCheckPassed);
    EXPECT_TRUE(Contains(choice->self_check, "HRR round trip")) << choice->self_check;
  }
  absl::StatusOr<HrrBackendChoice> cpu = ChooseHrrBackend("cpu");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->backend, "cpu");
  EXPECT_EQ(cpu->reason, EngineReason::kCpuRequested);
}

TEST_F(EngineChoiceTest, AWrongHrrResultKeepsTheMemoryServiceAloneOffTheCard) {
  emu::InjectKernelEffect("CommitKernel", &NudgeCommittedBin, nullptr, 3);
  absl::StatusOr<HrrBackendChoice> fallback = ChooseHrrBackend("auto");
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  EXPECT_EQ(fallback->backend, "cpu");
  EXPECT_EQ(fallback->reason, EngineReason::kSelfCheckFailed);
  EXPECT_TRUE(Contains(fallback->self_check, "HRR round trip")) << fallback->self_check;

  emu::InjectKernelEffect("CommitKernel", &NudgeCommittedBin, nullptr, 3);
  absl::StatusOr<HrrBackendChoice> refused = ChooseHrrBackend("cuda");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Contains(std::string(refused.status().message()), "self-check")) << refused.status();
}

}  // namespace
}  // namespace fieldbrain::server
