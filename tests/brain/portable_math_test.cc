// gpu/model/portable_math.h against double-precision libm: the accuracy its header promises.
// (That both engines get the same bits from it is the CUDA parity tests' job.)
#include "gpu/model/portable_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>

#include "gtest/gtest.h"

namespace fieldbrain::model {
namespace {

TEST(PortableMath, SinCosWithin2e7OverTheBrainsAnglesAndBeyond) {
  double worst = 0.0, worst_far = 0.0;
  for (int i = -2'000'000; i <= 2'000'000; ++i) {  // [-20, 20] in steps of 1e-5
    const float x = float(i) * 1e-5f;
    const SinCos sc = sin_cos(x);
    worst = std::max({worst, std::fabs(sc.sin - std::sin(double(x))), std::fabs(sc.cos - std::cos(double(x)))});
  }
  for (int i = -100'000; i <= 100'000; ++i) {  // [-1e4, 1e4] in steps of 0.1
    const float x = float(i) * 0.1f;
    const SinCos sc = sin_cos(x);
    worst_far = std::max({worst_far, std::fabs(sc.sin - std::sin(double(x))), std::fabs(sc.cos - std::cos(double(x)))});
  }
  std::printf("sin_cos: worst |error| %.3g on [-20, 20], %.3g on [-1e4, 1e4]\n", worst, worst_far);
  EXPECT_LT(worst, 2e-7);
  EXPECT_LT(worst_far, 2e-7);
  EXPECT_EQ(sin_cos(0.0f).sin, 0.0f);
  EXPECT_EQ(sin_cos(0.0f).cos, 1.0f);
}

TEST(PortableMath, LogWithin2e7RelativeOnNormalFloats) {
  double worst = 0.0;
  // Every 97th float from the smallest normal to the largest.
  for (int32_t bits = 0x00800000; bits < 0x7F800000; bits += 97 * 4099) {
    const float x = std::bit_cast<float>(bits);
    const double want = std::log(double(x));
    const double err = std::fabs(fast_log(x) - want) / std::max(1.0, std::fabs(want));
    worst = std::max(worst, err);
  }
  // Densely around 1, where log is small and a relative error would hide an absolute one.
  double worst_near_one = 0.0;
  for (int i = -100'000; i <= 100'000; ++i) {
    const float x = 1.0f + float(i) * 1e-6f;
    const double want = std::log(double(x));
    worst_near_one = std::max(worst_near_one, std::fabs(fast_log(x) - want) / std::max(std::fabs(want), 1e-30));
  }
  std::printf("fast_log: worst error %.3g (relative, or absolute below 1), %.3g relative near 1\n", worst,
              worst_near_one);
  EXPECT_LT(worst, 2e-7);
  EXPECT_LT(worst_near_one, 4e-7);
  EXPECT_EQ(fast_log(1.0f), 0.0f);
  EXPECT_EQ(fast_log(0.0f), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(fast_log(-1.0f)));
  EXPECT_EQ(fast_log(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
}

TEST(PortableMath, Atan2Within3e7EverywhereAndExactOnTheAxes) {
  double worst = 0.0;
  for (int i = -400; i <= 400; ++i)
    for (int j = -400; j <= 400; ++j) {
      const float y = float(i) * 0.013f, x = float(j) * 0.017f;
      worst = std::max(worst, std::fabs(fast_atan2(y, x) - std::atan2(double(y), double(x))));
    }
  for (float scale : {1e-20f, 1e20f})
    for (int i = 0; i < 64; ++i) {
      const double a = -3.1 + 0.1 * i;
      const float y = float(std::sin(a)) * scale, x = float(std::cos(a)) * scale;
      worst = std::max(worst, std::fabs(fast_atan2(y, x) - std::atan2(double(y), double(x))));
    }
  std::printf("fast_atan2: worst |error| %.3g\n", worst);
  EXPECT_LT(worst, 3e-7);
  EXPECT_EQ(fast_atan2(0.0f, 1.0f), 0.0f);
  EXPECT_EQ(fast_atan2(0.0f, 0.0f), 0.0f);
  EXPECT_FLOAT_EQ(fast_atan2(0.0f, -1.0f), 3.14159265f);
  EXPECT_FLOAT_EQ(fast_atan2(-0.0f, -1.0f), -3.14159265f);
  EXPECT_FLOAT_EQ(fast_atan2(1.0f, 0.0f), 1.57079633f);
  EXPECT_FLOAT_EQ(fast_atan2(-1.0f, 0.0f), -1.57079633f);
}

}  // namespace
}  // namespace fieldbrain::model
