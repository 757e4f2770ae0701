// The shared host/device math, checked on the host against libm and known answers.
#include <bit>
#include <cmath>
#include <algorithm>
#include <cstring>
#include <random>
#include <cstdint>
#include <vector>

#include "gpu/model/driver.h"
#include "gpu/model/exploration.h"
#include "gpu/model/field_init.h"
#include "gpu/model/field_math.h"
#include "gpu/model/philox.h"
#include "gpu/model/readout.h"
#include "gtest/gtest.h"

namespace fieldbrain::model {
namespace {

TEST(FastMath, ExpTanhSigmoidMatchLibm) {
  double worst_exp = 0, worst_tanh = 0, worst_sig = 0;
  for (float x = -80.0f; x <= 80.0f; x += 0.0137f) {
    worst_exp = std::max(worst_exp, std::fabs(fast_exp(x) - std::exp(double(x))) / std::exp(double(x)));
    worst_tanh = std::max(worst_tanh, std::fabs(fast_tanh(x) - std::tanh(double(x))));
    worst_sig = std::max(worst_sig, std::fabs(fast_sigmoid(x) - 1.0 / (1.0 + std::exp(-double(x)))));
  }
  EXPECT_LT(worst_exp, 3e-7);
  EXPECT_LT(worst_tanh, 3.1e-7);
  EXPECT_LT(worst_sig, 2e-7);
  EXPECT_EQ(fast_tanh(0.0f), 0.0f);
  EXPECT_EQ(fast_tanh(1e6f), 1.0f);
  EXPECT_EQ(fast_tanh(-1e6f), -1.0f);
}

// Every 61st float from 1e-30 to 16 (14 million of them): tanh's error is as small relative to
// its value near 0 as absolute elsewhere, it is odd, never above 1 in magnitude, and 1 exactly
// from its clamp on.
TEST(FastMath, TanhIsOddBoundedAndRelativelyExactNearZero) {
  double worst_rel = 0, worst_abs = 0;
  float above_one = 0.0f, not_odd = 0.0f;
  for (uint32_t bits = std::bit_cast<uint32_t>(1e-30f); bits <= std::bit_cast<uint32_t>(16.0f); bits += 61) {
    const float x = std::bit_cast<float>(bits);
    const float t = fast_tanh(x);
    const double exact = std::tanh(double(x));
    worst_rel = std::max(worst_rel, std::fabs(t - exact) / exact);
    worst_abs = std::max(worst_abs, std::fabs(t - exact));
    if (t > 1.0f && above_one == 0.0f) above_one = x;
    if (fast_tanh(-x) != -t && not_odd == 0.0f) not_odd = x;
  }
  EXPECT_LT(worst_rel, 3.1e-7);
  EXPECT_LT(worst_abs, 3.1e-7);
  EXPECT_EQ(above_one, 0.0f) << "fast_tanh above 1 from " << above_one;
  EXPECT_EQ(not_odd, 0.0f) << "fast_tanh(-x) != -fast_tanh(x) at " << not_odd;
  EXPECT_EQ(fast_tanh(8.00936604f), 1.0f);
  EXPECT_EQ(fast_tanh(9.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fast_tanh(std::nanf(""))));
}

// Every 31st float from 1e-30 to the narrow fit's range (27 million): its error is 1.8e-7 absolute
// and 2.3e-7 relative at most, it is odd, and beyond the range it is no longer tanh (the reason
// its callers prove their arguments stay in range).
TEST(FastMath, TheNarrowTanhIsExactToTheFloatsWithinTheFieldsRange) {
  double worst_rel = 0, worst_abs = 0;
  float not_odd = 0.0f;
  for (uint32_t bits = std::bit_cast<uint32_t>(1e-30f); bits <= std::bit_cast<uint32_t>(kFieldTanhRange); bits += 31) {
    const float x = std::bit_cast<float>(bits);
    const float t = tanh_within_field_range(x);
    const double exact = std::tanh(double(x));
    worst_rel = std::max(worst_rel, std::fabs(t - exact) / exact);
    worst_abs = std::max(worst_abs, std::fabs(t - exact));
    if (tanh_within_field_range(-x) != -t && not_odd == 0.0f) not_odd = x;
  }
  EXPECT_LT(worst_rel, 2.4e-7);
  EXPECT_LT(worst_abs, 1.9e-7);
  EXPECT_EQ(not_odd, 0.0f) << "tanh_within_field_range(-x) != -tanh_within_field_range(x) at " << not_odd;
  EXPECT_EQ(tanh_within_field_range(0.0f), 0.0f);
  EXPECT_GT(std::fabs(tanh_within_field_range(4.0f) - std::tanh(4.0)), 1e-3);
}

// Known-answer vectors of Philox4x32-10 from the Random123 distribution.
TEST(Philox, MatchesKnownAnswers) {
  Philox4 r = philox4x32_10(Philox4{{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = philox4x32_10(Philox4{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(Philox, NormalDrawsAreStandardNormal) {
  constexpr int kN = 200000;
  double sum = 0, sum_sq = 0;
  for (int i = 0; i < kN; ++i) {
    const double v = normal_draw(77, Domain::kDriverNoise, uint64_t(i / 4), uint32_t(i % 4));
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sum_sq += v * v;
  }
  const double mean = sum / kN, var = sum_sq / kN - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.01);
  EXPECT_NE(normal_draw(1, Domain::kDriverNoise, 5, 0), normal_draw(2, Domain::kDriverNoise, 5, 0));
  EXPECT_NE(normal_draw(1, Domain::kDriverNoise, 5, 0), normal_draw(1, Domain::kField, 5, 0));
}

TEST(FieldMath, SensorSitesFollowTheGrid) {
  const FieldShape s = FieldShape::Default();
  int site[3];
  sensor_site(0, 12, s, site);  // g = 4: cells of 8 voxels, centres at 4, 12, 20, 28
  EXPECT_EQ(site[0], 4);
  EXPECT_EQ(site[1], 4);
  EXPECT_EQ(site[2], 8);
  sensor_site(5, 12, s, site);
  EXPECT_EQ(site[0], 12);
  EXPECT_EQ(site[1], 12);
  sensor_site(11, 12, s, site);
  EXPECT_EQ(site[0], 28);
  EXPECT_EQ(site[1], 20);
  EXPECT_EQ(site_grid(1), 1);
  EXPECT_EQ(site_grid(16), 4);
  EXPECT_EQ(site_grid(17), 5);
  EXPECT_FLOAT_EQ(imprint_decay(0), 1.0f);
  EXPECT_FLOAT_EQ(imprint_decay(3), 0.512f);
}

TEST(FieldMath, EvolveFollowsTheFormula) {
  EXPECT_EQ(evolve_core(0.0f, 0.0f, 0.95f, 0.1f), 0.0f);
  EXPECT_NEAR(evolve_core(1.0f, 0.0f, 1.0f, 0.1f), 0.95 * std::tanh(0.9), 1e-6);
  // k L pulls a peak toward its neighbours.
  const float lap = laplacian7(1.0f, 0, 0, 0, 0, 0, 0);
  EXPECT_EQ(lap, -6.0f);
  EXPECT_NEAR(evolve_core(1.0f, lap, 1.0f, 0.1f), 0.95 * std::tanh(0.9 * (1.0 - 0.6)), 1e-6);
  EXPECT_NEAR(retention_rate(2.0f), 0.90 + 0.099 / (1 + std::exp(-2.0)), 1e-6);
  EXPECT_NEAR(diffusion_rate(0.0f), 0.1, 1e-6);
  EXPECT_NEAR(plasticity_gain(0.0f), 0.1, 1e-6);
  EXPECT_NEAR(memory_coupling(0.0f, 0.5f), 0.1 * std::tanh(0.5), 1e-6);
  EXPECT_NEAR(imprint_term(1.0f, 1.0f, 0.1f), 0.15, 1e-6);
}

// The evolve core and the memory mean take the narrow tanh, three activity targets the wide fit
// without its clamp and the rates the sigmoid without fast_exp's, because the field's bounds keep
// their arguments in range: over random in-bound neighbourhoods and the extreme corners the core's
// argument stays within kMaxEvolveArgument (which the corners reach) and its value within the fits'
// error of tanh, and the others equal the clamped forms bit for bit.
TEST(FieldMath, UnclampedFormsStayInTheirFitsRangeWithinTheFieldsBounds) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> field(-kFieldBound, kFieldBound), dyn(-kDynamicsBound, kDynamicsBound);
  auto same_bits = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  float worst_argument = 0.0f;
  double worst_core_error = 0.0;
  for (int i = 0; i < 200000; ++i) {
    float n[7];
    for (float& v : n) v = i < 128 ? ((i >> (&v - n)) & 1 ? kFieldBound : -kFieldBound) : field(rng);
    const float d_ret = i < 128 ? kDynamicsBound : dyn(rng), d_dif = i < 128 ? kDynamicsBound : dyn(rng);
    const float gain = evolve_gain(retention_rate(d_ret)), k = diffusion_rate(d_dif);
    const float lap = laplacian7(n[0], n[1], n[2], n[3], n[4], n[5], n[6]);
    const float argument = gain * mul_add(k, lap, n[0]);
    worst_argument = std::max(worst_argument, std::fabs(argument));
    worst_core_error = std::max(
        worst_core_error, std::fabs(evolve_core_with_gain(n[0], lap, gain, k) - 0.95 * std::tanh(double(argument))));
  }
  EXPECT_LE(worst_argument, kMaxEvolveArgument * (1.0f + 1e-6f));
  EXPECT_GT(worst_argument, 0.9f * kMaxEvolveArgument);  // the corners reach the bound
  EXPECT_LT(worst_core_error, 3.1e-7);

  int mismatches = 0;
  double worst_memory_error = 0.0;
  for (int i = 0; i <= 3000; ++i) {
    const float m = -kFieldBound + 2.0f * kFieldBound * float(i) / 3000.0f;
    worst_memory_error = std::max(worst_memory_error, std::fabs(memory_mean_tanh(m) - std::tanh(double(m))));
    const float d = -kDynamicsBound + 2.0f * kDynamicsBound * float(i) / 3000.0f;
    if (!same_bits(dynamics_sigmoid(d), fast_sigmoid(d))) ++mismatches;
    const float mean_abs = kFieldBound * float(i) / 3000.0f, sparsity = float(i) / 3000.0f;
    const LocalActivity a{mean_abs, mean_abs * mean_abs, sparsity};
    if (!same_bits(dynamics_target(DynamicsQuarter::kRetention, a), dynamics_rest(DynamicsQuarter::kRetention) + 0.3f * fast_tanh(4.0f * (0.3f - mean_abs)))) ++mismatches;
    if (!same_bits(dynamics_target(DynamicsQuarter::kCoupling, a), 0.3f * fast_tanh(4.0f * (mean_abs - 0.2f)))) ++mismatches;
    if (!same_bits(dynamics_target(DynamicsQuarter::kPlasticity, a), 0.3f * fast_tanh(4.0f * (sparsity - 0.5f)))) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_LT(worst_memory_error, 2.4e-7);
}

TEST(FieldMath, UpdatesStayWithinTheirBounds) {
  for (float core : {-0.95f, 0.0f, 0.95f})
    for (float imprint : {-5.0f, 0.0f, 5.0f})
      for (float coupling : {-0.2f, 0.2f}) {
        EXPECT_LE(std::fabs(content_next(core, imprint, coupling)), kFieldBound);
        EXPECT_LE(std::fabs(memory_next(core, imprint, coupling)), kFieldBound);
      }
  for (DynamicsQuarter q : {DynamicsQuarter::kRetention, DynamicsQuarter::kDiffusion, DynamicsQuarter::kCoupling,
                            DynamicsQuarter::kPlasticity})
    for (float a : {0.0f, 0.3f, 1.5f}) {
      const LocalActivity act{a, a * a, 1.0f - a / 1.5f};
      EXPECT_LE(std::fabs(dynamics_target(q, act) - dynamics_rest(q)), 0.3f + 1e-6f);
      EXPECT_LE(std::fabs(dynamics_next(5.0f, 20.0f)), kDynamicsBound);
    }
  const LocalActivity act = local_activity(4.0f, -2.0f, 3.0f, 1.0f, 8);
  EXPECT_FLOAT_EQ(act.mean_abs, 0.5f);
  EXPECT_FLOAT_EQ(act.variance, 3.0f / 8 - 0.25f * 0.25f);
  EXPECT_FLOAT_EQ(act.sparsity, 0.125f);
}

TEST(FieldMath, PatternSampleInterpolatesTheCoarseGrid) {
  const FieldShape s = FieldShape::Small();  // coarse 4^3
  std::vector<float> coarse(s.coarse_voxels());
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) coarse[(i * 4 + j) * 4 + k] = float(i);  // rises along x
  // Cell centres sit at fine 4i + 1.5: fine x = 5.5 would be i = 1, so x = 5 and 6 straddle it.
  EXPECT_NEAR(pattern_sample(coarse.data(), s, 5, 3, 3), 0.875f, 1e-6);
  EXPECT_NEAR(pattern_sample(coarse.data(), s, 6, 3, 3), 1.125f, 1e-6);
  EXPECT_EQ(pattern_sample(coarse.data(), s, 0, 0, 0), 0.0f);
  EXPECT_EQ(pattern_sample(coarse.data(), s, 15, 15, 15), 3.0f);
}

// The first cycle takes its own standard deviation as the scale, so its features are
// standardised; the scale rises at once and falls slowly, so an input that weakens gives weaker
// features (the amplitude survives).
TEST(Readout, FeaturesKeepTheirAmplitude) {
  const FieldShape s = FieldShape::Small();
  FieldSummary sum{};
  for (int g = 0; g < kContentGroups; ++g)
    for (int b = 0; b < kPoolBlocks; ++b) sum.pool[g][b] = float(g * 100 + b);
  float scale = 0.0f, phi[kFeatures];
  compute_features(sum, s, scale, phi);
  double mean = 0, sq = 0;
  for (float v : phi) mean += v;
  for (float v : phi) sq += v * v;
  EXPECT_NEAR(mean / kFeatures, 0.0, 1e-5);
  EXPECT_NEAR(sq / kFeatures, 1.0, 1e-4);

  FieldSummary doubled = sum;
  for (auto& group : doubled.pool)
    for (float& v : group) v *= 2.0f;
  float phi2[kFeatures];
  const float scale_before = scale;
  compute_features(doubled, s, scale, phi2);
  // The scale moves slowly (0.99 s + 0.01 * 2 s), so the doubled field's features come out at
  // about twice the size: the amplitude survives.
  EXPECT_NEAR(scale, 1.01f * scale_before, 1e-4f * scale_before);
  EXPECT_NEAR(phi2[7], 2.0f * phi[7] / 1.01f, 1e-3f);

  FieldSummary flat{};
  float flat_scale = 0.0f;
  compute_features(flat, s, flat_scale, phi);
  for (float v : phi) EXPECT_EQ(v, 0.0f);
}

TEST(Exploration, ConfidenceFrustrationAndBoredomFollowTheFormulas) {
  EXPECT_FLOAT_EQ(confidence_next(0.5f, 0.0f), 0.55f);
  EXPECT_FLOAT_EQ(confidence_next(0.5f, 2.0f), 0.45f);
  // Frustration: recent reward below the expected, in units of the usual spread; not reward
  // below zero as such.
  EXPECT_FLOAT_EQ(frustration(-1.0f, -1.0f, 0.5f), 0.0f);
  EXPECT_FLOAT_EQ(frustration(0.0f, 0.05f, 0.1f - kSpreadFloor), 0.5f);
  EXPECT_FLOAT_EQ(frustration(-1.0f, 0.1f, 0.5f), 1.0f);
  EXPECT_FLOAT_EQ(frustration(0.5f, 0.0f, 0.1f), 0.0f);
  // Boredom: the novelty below what the robot is used to, or below kNoveltyScale at all.
  EXPECT_FLOAT_EQ(boredom(0.0f, 0.0f), 1.0f);
  EXPECT_FLOAT_EQ(boredom(0.5f * kNoveltyScale, 0.0f), 0.5f);
  EXPECT_NEAR(boredom(2.0f * kNoveltyScale, 2.0f * kNoveltyScale), 0.0f, 1e-3f);
  EXPECT_NEAR(boredom(0.25f, 1.0f), 0.75f, 1e-5f);
}

TEST(Readout, LearningRulesFollowTheFormulas) {
  EXPECT_FLOAT_EQ(frame_feature(0.5f), 0.5f * kFrameGain);
  EXPECT_FLOAT_EQ(wp_next(0.0f, 0.4f, 2.0f, 0.25f), 0.1f);
  EXPECT_EQ(inverse_norm2(0.0f), 0.0f);
  // The driver (driver.h): the mean reaches the motor's end exactly at the pre-activation bound
  // and stays there past it; the score keeps tanh's slope, scaled alike; the step clamps into range.
  EXPECT_FLOAT_EQ(driver_policy(0.0f).mean, 0.0f);
  EXPECT_NEAR(driver_policy(kDriverPreactivationBound).mean, 1.0f, 1e-5f);
  EXPECT_NEAR(driver_policy(-kDriverPreactivationBound).mean, -1.0f, 1e-5f);
  EXPECT_FLOAT_EQ(driver_policy(3.0f).mean, 1.0f);
  EXPECT_NEAR(driver_policy(0.5f).mean, std::tanh(0.5f) / std::tanh(kDriverPreactivationBound), 1e-5f);
  EXPECT_NEAR(driver_score(driver_policy(0.0f), 1.0f, 0.5f), 2.0f / std::tanh(kDriverPreactivationBound), 1e-5f);
  EXPECT_NEAR(driver_score(driver_policy(3.0f), 1.0f, 1.0f), (1.0f - std::tanh(3.0f) * std::tanh(3.0f)) / std::tanh(2.0f),
              1e-5f);
  EXPECT_FLOAT_EQ(driver_motor(0.9f, 2.0f, 0.1f), 1.0f);
  EXPECT_FLOAT_EQ(driver_spread(1.0f), kDriverSpread + kDriverFrustrationSpread);
  // The actor's advantage: the reward and a fifth of the critic's judgement of the move (the whole
  // TD error credited the echo of the command in the next frame; docs/brain.md, issue 23).
  EXPECT_FLOAT_EQ(driver_advantage(0.5f, 0.0f, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(driver_advantage(0.0f, 1.0f, 0.0f), kDriverValueShare * kDriverDiscount);
  EXPECT_FLOAT_EQ(driver_td_error(0.0f, 1.0f, 0.0f), kDriverDiscount);
  EXPECT_FLOAT_EQ(driver_advantage(1e6f, 0.0f, 0.0f), kDriverDeltaBound);
  // Its running square measures the spread around the mean as it was: a steady advantage has none.
  EXPECT_FLOAT_EQ(driver_advantage_square_next(0.0f, 0.3f, 0.3f, false), 0.0f);
  EXPECT_FLOAT_EQ(driver_advantage_square_next(0.0f, 0.5f, 0.0f, true), 0.25f);
  // Steps scale by 1 / RMS only once the advantage's RMS passes the floor.
  EXPECT_FLOAT_EQ(driver_advantage_scale(0.0f), 1.0f);
  EXPECT_FLOAT_EQ(driver_advantage_scale(4.0f), kDriverRmsFloor / 2.0f);
  // The actor steps on the advantage over its running mean: one equal to the mean moves nothing.
  EXPECT_EQ(driver_actor_step(0.7f, 0.7f, 1.0f, 12), 0.0f);
  // Withdrawal: only a bad surprise while frustrated, and only along the centred frame.
  EXPECT_EQ(driver_withdraw_step(0.5f, 1.0f, 1.0f, 12), 0.0f);
  EXPECT_EQ(driver_withdraw_step(-0.5f, 1.0f, 0.0f, 12), 0.0f);
  EXPECT_LT(driver_withdraw_step(-0.5f, 1.0f, 1.0f, 12), 0.0f);
  const float s_prev[kMaxSensors] = {0.8f}, s_mean[kMaxSensors] = {0.5f};
  EXPECT_FLOAT_EQ(driver_withdraw_feature(0, s_prev, s_mean, 1.0f), 0.3f);
  EXPECT_EQ(driver_withdraw_feature(kDriverSquaresAt, s_prev, s_mean, 1.0f), 0.0f);
  EXPECT_EQ(driver_withdraw_feature(kDriverBiasAt, s_prev, s_mean, 0.0f), 0.0f);
  EXPECT_EQ(driver_withdraw_feature(kDriverBiasAt, s_prev, s_mean, 0.75f), 0.75f);
  // The bound: nothing inside +-kDriverPreactivationBound; beyond it a step back along d, by the
  // excess at the actor's rate per feature (25 features for 12 sensors).
  EXPECT_EQ(driver_bound_step(kDriverPreactivationBound, 12), 0.0f);
  EXPECT_EQ(driver_bound_step(-0.5f, 12), 0.0f);
  EXPECT_FLOAT_EQ(driver_bound_step(kDriverPreactivationBound + 1.0f, 12), -kDriverActorRate / 25.0f);
  EXPECT_FLOAT_EQ(driver_bound_step(-kDriverPreactivationBound - 0.5f, 12), 0.5f * kDriverActorRate / 25.0f);
}

TEST(FieldInit, StartStateFollowsTheDesign) {
  const FieldShape s = FieldShape::Small();
  double sum = 0, sq = 0;
  const int64_t content = int64_t(s.content()) * s.voxels();
  for (int64_t i = 0; i < content; ++i) {
    const double v = initial_field_value(3, s, i);
    sum += v;
    sq += v * v;
  }
  EXPECT_NEAR(sum / content, 0.0, 0.002);
  EXPECT_NEAR(std::sqrt(sq / content), 0.05, 0.002);
  EXPECT_EQ(initial_field_value(3, s, int64_t(s.dynamics_begin()) * s.voxels()), 2.0f);  // retention
  EXPECT_EQ(initial_field_value(3, s, s.floats() - 1), 0.0f);                           // plasticity
}

}  // namespace
}  // namespace fieldbrain::model
