// The floating-point policy on the host (docs/decisions.md, "Parity by construction" and "Fused
// multiply-adds"): the compiler never fuses a multiply-add on its own, and model::mul_add always
// fuses. Built with the CPU engine's own flags (tests/brain/CMakeLists.txt), so a build whose
// -march or contraction setting changed either would fail here.
#include <cmath>

#include "gpu/model/fastmath.h"
#include "gtest/gtest.h"

namespace fieldbrain::model {
namespace {

// a * a = 1 + 2^-11 + 2^-24 exactly. Rounded to float (a tie at half an ulp, to even) it is
// 1 + 2^-11, which c cancels; fused, the 2^-24 survives. volatile keeps the compiler from
// folding the arithmetic at build time, where neither flag applies.
volatile float g_a = 1.0f + 0x1p-12f;
volatile float g_c = -(1.0f + 0x1p-11f);

TEST(FusedMultiplyAdd, PlainArithmeticIsNeverContracted) {
  const float a = g_a, c = g_c;
  EXPECT_EQ(a * a + c, 0.0f);
  // The same in a loop the vectoriser takes (vector FMAs, if contraction were on).
  float x[64], y[64], products[64];
  for (int i = 0; i < 64; ++i) x[i] = g_a, y[i] = g_c;
  for (int i = 0; i < 64; ++i) products[i] = x[i] * x[i] + y[i];
  for (float p : products) EXPECT_EQ(p, 0.0f);
}

TEST(FusedMultiplyAdd, MulAddRoundsOnce) {
  const float a = g_a, c = g_c;
  EXPECT_EQ(mul_add(a, a, c), 0x1p-24f);
  EXPECT_EQ(mul_add(a, a, c), std::fma(a, a, c));
}

}  // namespace
}  // namespace fieldbrain::model
