#include "server/frame_validator.h"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fieldbrain::server {
namespace {

using brain::v1::FrameStatus;

struct Case {
  std::string name;
  std::vector<float> values;
  std::optional<float> reward;
  FrameStatus want;
  std::string detail_has;  // a piece the detail must contain
};

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

class FrameValidatorTest : public ::testing::TestWithParam<Case> {};

TEST_P(FrameValidatorTest, GivesStatusAndDetail) {
  const Case& c = GetParam();
  brain::v1::SensorFrame frame;
  frame.set_seq(7);
  for (float v : c.values) frame.add_values(v);
  if (c.reward) frame.set_reward(*c.reward);
  const FrameVerdict verdict = ValidateFrame(frame, /*sensor_count=*/3);
  EXPECT_EQ(verdict.status, c.want) << FrameStatus_Name(verdict.status);
  if (c.want == brain::v1::OK) {
    EXPECT_TRUE(verdict.ok());
    EXPECT_TRUE(verdict.detail.empty());
  } else {
    EXPECT_FALSE(verdict.ok());
    EXPECT_NE(verdict.detail.find(c.detail_has), std::string::npos) << verdict.detail;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Table, FrameValidatorTest,
    ::testing::Values(
        Case{"ok", {0.0f, 0.5f, -0.5f}, std::nullopt, brain::v1::OK, ""},
        Case{"ok_edges", {1.0f, -1.0f, 0.0f}, 1.0f, brain::v1::OK, ""},
        Case{"ok_reward_negative_edge", {0, 0, 0}, -1.0f, brain::v1::OK, ""},
        Case{"too_few", {0.0f, 0.0f}, std::nullopt, brain::v1::WRONG_SENSOR_COUNT, "got 2"},
        Case{"too_many", {0, 0, 0, 0}, std::nullopt, brain::v1::WRONG_SENSOR_COUNT, "expected 3"},
        Case{"empty", {}, std::nullopt, brain::v1::WRONG_SENSOR_COUNT, "got 0"},
        Case{"count_before_nan", {kNaN}, std::nullopt, brain::v1::WRONG_SENSOR_COUNT, "got 1"},
        Case{"nan_value", {0.0f, kNaN, 0.0f}, std::nullopt, brain::v1::NON_FINITE, "value 1"},
        Case{"inf_value", {kInf, 0.0f, 0.0f}, std::nullopt, brain::v1::NON_FINITE, "value 0"},
        Case{"neg_inf_value", {0, 0, -kInf}, std::nullopt, brain::v1::NON_FINITE, "value 2"},
        Case{"nan_reward", {0, 0, 0}, kNaN, brain::v1::NON_FINITE, "reward"},
        Case{"inf_reward", {0, 0, 0}, kInf, brain::v1::NON_FINITE, "reward"},
        Case{"nan_beats_range", {2.0f, kNaN, 0}, std::nullopt, brain::v1::NON_FINITE, "value 1"},
        Case{"above_range", {0.0f, 1.0001f, 0.0f}, std::nullopt, brain::v1::OUT_OF_RANGE,
             "value 1"},
        Case{"below_range", {-1.5f, 0.0f, 0.0f}, std::nullopt, brain::v1::OUT_OF_RANGE,
             "outside [-1, 1]"},
        Case{"reward_range", {0, 0, 0}, 1.5f, brain::v1::OUT_OF_RANGE, "reward"},
        Case{"huge_value", {0, 0, 3e38f}, std::nullopt, brain::v1::OUT_OF_RANGE, "value 2"}),
    [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

}  // namespace
}  // namespace fieldbrain::server
