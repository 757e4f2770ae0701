// The behavioural properties of DESIGN.md section 4, with its numbers, on the CPU engine.
// Brains run on the small field (16^3 x 32) unless a test says otherwise.
#include <algorithm>
#include <cstdio>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "gpu/model/driver.h"
#include "gpu/model/exploration.h"
#include "gtest/gtest.h"
#include "tests/brain/brain_rig.h"

namespace fieldbrain::testing {
namespace {

constexpr int kSensors = 12;
constexpr int kMotors = 4;

BrainSpec Spec(uint64_t seed, bool learn = true) { return BrainSpec{seed, kSensors, kMotors, learn}; }

float Std(const std::vector<float>& v) {
  const float mean = std::accumulate(v.begin(), v.end(), 0.0f) / float(v.size());
  float ss = 0;
  for (float x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / float(v.size()));
}

// The motors are the driver's, from the sensor frame: the field no longer pulls them (docs/brain.md,
// issue 23, fifteenth session). A brain whose field rises steeply along every axis sends, on the
// same frame, exactly the motors of the same brain with the field it was born with.
TEST(BrainBehaviour, TheFieldDoesNotReachTheMotors) {
  for (const FieldShape shape : {FieldShape::Tiny(), FieldShape::Small(), FieldShape::Default()}) {
    for (uint64_t seed : {1u, 2u, 3u}) {
      BrainRig rig(shape, 2);
      const int born = rig.Add(Spec(seed)), tilted = rig.Add(Spec(seed));
      BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(tilted));
      for (int c = 0; c < shape.content(); ++c)
        for (int x = 0; x < shape.nx; ++x)
          for (int y = 0; y < shape.ny; ++y)
            for (int z = 0; z < shape.nz; ++z)
              snap.field[shape.index(c, x, y, z)] = float(x + y + z) / float(shape.nx + shape.ny + shape.nz);
      ASSERT_TRUE(rig.engine().Restore(rig.slot(tilted), snap).ok());
      std::mt19937 rng{uint32_t(seed)};
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      bool predictions_differ = false;
      for (int t = 0; t < 5; ++t) {
        std::vector<float> frame(kSensors);
        for (float& v : frame) v = u(rng);
        const std::vector<int> both{born, tilted};
        const std::vector<CycleOut> out = rig.Step(both, {frame, frame}, {0.1f, 0.1f});
        for (int k = 0; k < kMotors; ++k)
          ASSERT_EQ(out[0].motors[k], out[1].motors[k]) << "seed " << seed << " field " << shape.nx << " cycle " << t;
        predictions_differ = predictions_differ || out[0].prediction != out[1].prediction;
      }
      EXPECT_TRUE(predictions_differ) << "seed " << seed << " field " << shape.nx << ": the field still shapes the prediction";
    }
  }
}

// The undo on trouble (gpu/model/driver.h): while the reward stays at -1, the driver holds the
// negation of its mean command for kUndoCycles cycles, its actor idle and learning nothing
// meanwhile, then drives again for at least kUndoGap cycles before the next; a robot that is
// not in trouble never holds.
TEST(BrainBehaviour, TroubleStartsUndosThatHoldTheNegatedCommandAndLearnNothing) {
  for (uint64_t seed : {11u, 12u, 13u}) {
    BrainRig rig(FieldShape::Tiny(), 1);
    const int b = rig.Add(Spec(seed));
    std::vector<float> frame(kSensors);
    for (int i = 0; i < kSensors; ++i) frame[i] = 0.3f * std::sin(float(i));
    auto state = [&] { return rig.engine().Snapshot(rig.slot(b))->state; };

    for (int t = 0; t < 600; ++t) {  // content: +0.1 a cycle
      rig.Step1(b, frame, 0.1f);
      ASSERT_EQ(state().undo_held, 0) << "seed " << seed << " cycle " << t << ": an undo without trouble";
    }

    std::vector<int> starts, lengths;  // of each undo, in cycles of trouble
    CycleOut held;
    RobotState before = state();
    for (int t = 0; t < 1500; ++t) {  // trouble: -1 a cycle
      const CycleOut out = rig.Step1(b, frame, -1.0f);
      const RobotState now = state();
      if (now.undo_held && now.undo_left == model::kUndoCycles - 1) {  // one starts
        starts.push_back(t);
        lengths.push_back(1);
        held = out;
        for (int k = 0; k < kMotors; ++k) {
          float dot = 0.0f;  // the mean of the actor as it is, after this cycle's learning
          for (int j = 0; j < model::kDriverFeatures; ++j)
            if (model::driver_feature_used(j, kSensors)) dot += now.driver_actor[k][j] * model::driver_feature(j, frame.data());
          EXPECT_NEAR(out.motors[k], -model::driver_policy(dot).mean, 1e-5f) << "seed " << seed << " motor " << k;
          for (int j = 0; j < model::kDriverFeatures; ++j) ASSERT_EQ(now.driver_actor_trace[k][j], 0.0f);
        }
      } else if (now.undo_held) {  // one goes on: the same command, the actor untouched
        ASSERT_FALSE(starts.empty());
        ++lengths.back();
        EXPECT_EQ(out.motors, held.motors) << "seed " << seed << " cycle " << t;
        EXPECT_TRUE(std::equal(&before.driver_actor[0][0], &before.driver_actor[0][0] + kMaxMotors * model::kDriverFeatures,
                               &now.driver_actor[0][0]))
            << "seed " << seed << " cycle " << t << ": the actor learnt during an undo";
      }
      before = now;
    }
    std::printf("seed %llu: %zu undos in 1500 cycles of trouble\n", static_cast<unsigned long long>(seed), starts.size());
    ASSERT_GE(starts.size(), 5u) << "seed " << seed << ": about one every 160 cycles of trouble";
    EXPECT_LE(starts.size(), 1500u / (model::kUndoCycles + model::kUndoGap) + 1) << "seed " << seed;
    for (size_t i = 0; i < starts.size(); ++i) {
      if (i + 1 < starts.size()) {
        EXPECT_EQ(lengths[i], model::kUndoCycles) << "seed " << seed << " undo " << i;
      }
      if (i > 0) {
        EXPECT_GE(starts[i] - starts[i - 1], model::kUndoCycles + model::kUndoGap) << "seed " << seed;
      }
    }
  }
}

// Doubt and boredom are measured, frustration explores: on a periodic input the brain learns to
// predict and its confidence rises; when the input freezes, the sensors stop changing and boredom
// (what the driver withdraws through, gpu/model/driver.h) rises. Motors vary throughout. With the
// driver's weights frozen, a reward that falls below what the robot has come to expect widens
// its motors' spread (docs/brain.md, "Exploration").
TEST(BrainBehaviour, ConfidenceRisesWithPredictionBoredomWithAFrozenInputAndFrustrationWidensTheMotors) {
  BrainRig rig(FieldShape::Small(), 2);
  const int b = rig.Add(Spec(7));
  auto wave = [](int t) {
    std::vector<float> s(kSensors);
    for (int i = 0; i < kSensors; ++i) s[i] = 0.8f * std::sin(6.2831853f * (float(t % 16) / 16.0f + float(i) / kSensors));
    return s;
  };
  auto state = [&] { return rig.engine().Snapshot(rig.slot(b))->state; };
  auto bored = [&] {
    const RobotState st = state();
    return model::boredom(st.novelty, st.novelty_slow);
  };
  std::vector<float> early_motor, frozen_motor;
  float early_conf = 0, learned_conf = 0, learned_bored = 0, frozen_bored = 0;
  for (int t = 0; t < 2000; ++t) {
    const CycleOut out = rig.Step1(b, wave(t));
    if (t < 20) early_conf += state().confidence / 20.0f, early_motor.push_back(out.motors[0]);
    if (t >= 1980) learned_conf += state().confidence / 20.0f, learned_bored += bored() / 20.0f;
  }
  const std::vector<float> still = wave(1999);
  for (int t = 0; t < 300; ++t) {
    const CycleOut out = rig.Step1(b, still);
    if (t >= 280) frozen_bored += bored() / 20.0f, frozen_motor.push_back(out.motors[0]);
  }
  std::printf("confidence: start %.3f, predicted wave %.3f; boredom: wave %.3f, frozen input %.3f\n", early_conf,
              learned_conf, learned_bored, frozen_bored);
  EXPECT_GT(learned_conf, early_conf + 0.2f);
  EXPECT_LT(learned_bored, 0.5f);
  EXPECT_GT(frozen_bored, 0.9f);
  EXPECT_GT(Std(early_motor), 0.01f);
  EXPECT_GT(Std(frozen_motor), 0.01f);

  // Frustration: a frozen driver on a still input, paid 0.5 a cycle, then -0.5.
  const int f = rig.Add(Spec(8, /*learn=*/false));
  std::vector<float> content_motor, frustrated_motor;
  float frustrated = 0;
  for (int t = 0; t < 1600; ++t) {
    const CycleOut out = rig.Step1(f, still, t < 1500 ? 0.5f : -0.5f);
    if (t >= 1400 && t < 1500) content_motor.push_back(out.motors[0]);
    if (t >= 1500) {
      frustrated_motor.push_back(out.motors[0]);
      const RobotState st = rig.engine().Snapshot(rig.slot(f))->state;
      frustrated += model::frustration(st.reward_fast, st.reward_slow, st.reward_spread) / 100.0f;
    }
  }
  std::printf("motor 0's spread: content %.3f, frustrated %.3f (mean frustration %.2f)\n", Std(content_motor),
              Std(frustrated_motor), frustrated);
  EXPECT_GT(frustrated, 0.5f);
  EXPECT_GT(Std(frustrated_motor), 2.0f * Std(content_motor));
}

// Distinct stimuli give distinct outputs: mean L2 distance > 0.05 between 5-cycle mean motors.
TEST(BrainBehaviour, DistinctStimuliGiveDistinctOutputs) {
  std::vector<float> a(kSensors, 0.0f), reverse(kSensors, 0.0f), flat(kSensors, 0.1f);
  std::fill(a.begin(), a.begin() + 6, 1.0f);
  std::fill(reverse.begin() + 6, reverse.end(), 1.0f);
  std::vector<std::vector<float>> means;
  for (const auto& stimulus : {a, reverse, flat}) {
    BrainRig rig(FieldShape::Small(), 1);
    const int b = rig.Add(Spec(11));
    std::vector<float> mean(kMotors, 0.0f);
    for (int t = 0; t < 5; ++t) {
      const CycleOut out = rig.Step1(b, stimulus);
      for (int k = 0; k < kMotors; ++k) mean[k] += out.motors[k] / 5.0f;
    }
    means.push_back(mean);
  }
  float total = 0;
  int pairs = 0;
  for (size_t i = 0; i < means.size(); ++i)
    for (size_t j = i + 1; j < means.size(); ++j, ++pairs) {
      float d2 = 0;
      for (int k = 0; k < kMotors; ++k) d2 += (means[i][k] - means[j][k]) * (means[i][k] - means[j][k]);
      total += std::sqrt(d2);
    }
  EXPECT_GT(total / float(pairs), 0.05f);
  std::printf("mean L2 distance between stimuli: %.4f\n", total / float(pairs));
}

// Over 10^5 cycles of random, constant, extreme and alternating input the field stays finite and
// within its bounds, and under random input its activity keeps moving.
TEST(BrainBehaviour, FieldStaysBoundedAndAliveOver100kCycles) {
  constexpr int kCycles = 100000;
  const FieldShape shape = FieldShape::Small();
  BrainRig rig(shape, 4);
  for (uint64_t seed = 21; seed < 25; ++seed) rig.Add(Spec(seed));
  const std::vector<int> all = {0, 1, 2, 3};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<std::vector<float>> in(4, std::vector<float>(kSensors));
  std::vector<float> activity;
  float worst_content = 0, worst_dynamics = 0;
  for (int t = 0; t < kCycles; ++t) {
    for (float& v : in[0]) v = uni(rng);                          // random
    std::fill(in[1].begin(), in[1].end(), 0.4f);                 // constant
    std::fill(in[2].begin(), in[2].end(), t % 7 < 3 ? 1.0f : -1.0f);  // extreme
    std::fill(in[3].begin(), in[3].end(), t % 2 ? 0.8f : -0.8f);  // alternating
    const float reward = (t % 5 == 0) ? 1.0f : -1.0f;
    const auto outs = rig.Step(all, in, {reward, reward, reward, reward});
    for (const CycleOut& o : outs)
      for (float m : o.motors) ASSERT_TRUE(std::isfinite(m) && std::fabs(m) <= 1.0f) << "cycle " << t;
    if (t % 500 == 0 || t == kCycles - 1) {
      for (int r = 0; r < 4; ++r) {
        const BrainSnapshot s = *rig.engine().Snapshot(rig.slot(r));
        for (int64_t i = 0; i < shape.floats(); ++i) {
          ASSERT_TRUE(std::isfinite(s.field[i])) << "robot " << r << " cycle " << t;
          const bool dynamics = i >= int64_t(shape.dynamics_begin()) * shape.voxels();
          float& worst = dynamics ? worst_dynamics : worst_content;
          worst = std::max(worst, std::fabs(s.field[i]));
        }
        if (r == 0 && t < 20000) activity.push_back(MeanAbsContent(s));
      }
    }
  }
  EXPECT_LE(worst_content, 1.5f);
  EXPECT_LE(worst_dynamics, 5.0f);
  EXPECT_GT(Std(activity), 1e-4f);
}

// The brain learns to predict a periodic sequence: its error over the last period of 500 cycles is
// at most half of its error over the first period.
TEST(BrainBehaviour, PredictionErrorHalvesOnAPeriodicSequence) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(Spec(31));
  auto frame = [](int t) {
    std::vector<float> s(kSensors);
    for (int i = 0; i < kSensors; ++i) s[i] = 0.8f * std::sin(6.2831853f * (float(t % 8) / 8.0f + float(i) / kSensors));
    return s;
  };
  float start = 0, end = 0;
  for (int t = 0; t < 500; ++t) {
    const float err = rig.Step1(b, frame(t)).error;
    if (t < 8) start += err / 8.0f;
    if (t >= 492) end += err / 8.0f;
  }
  EXPECT_LE(end, 0.5f * start) << "start " << start << " end " << end;
  std::printf("prediction error: first period %.4f, last period %.4f\n", start, end);
}

// All sensors move together (the same sine): only the amplitude changes, which features
// standardised every cycle would erase. Prediction error over the last period of 500 cycles is at
// most half of the first period's.
TEST(BrainBehaviour, PredictionErrorHalvesOnAnInPhasePeriodicInput) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(Spec(33));
  auto frame = [](int t) { return std::vector<float>(kSensors, 0.8f * std::sin(6.2831853f * float(t % 20) / 20.0f)); };
  float start = 0, end = 0;
  for (int t = 0; t < 500; ++t) {
    const float err = rig.Step1(b, frame(t)).error;
    if (t < 20) start += err / 20.0f;
    if (t >= 480) end += err / 20.0f;
  }
  std::printf("in-phase prediction error: first period %.4f, last period %.4f\n", start, end);
  EXPECT_LE(end, 0.5f * start) << "start " << start << " end " << end;
}

// A contextual bandit: each cycle shows pattern A or -A; the reward (sent with the next frame)
// is +1 when sign(motor 0) is the pattern's wanted sign, else -1.
struct BanditRun {
  float late = 0;        // mean reward over cycles 1300-1500
  float after_flip = 0;  // over cycles 2000-2050 (when the wanted signs flip at 2000)
  float recovering = 0;  // over cycles 2050-2250
  float flip_window = 0;  // over cycles 2000-2250, the window this test first measured
  float relearned = 0;   // over cycles 3500-4000
  float saturated = 0;   // fraction of cycles with |motor 0| > 0.99
};

BanditRun Bandit(bool learn, int assignment, uint64_t seed, int cycles = 1500, int flip_at = -1) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(Spec(seed, learn));
  std::mt19937 rng(unsigned(seed) * 7919u);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<float> pattern(kSensors);
  for (float& v : pattern) v = uni(rng);
  std::bernoulli_distribution coin(0.5);
  float reward = 0;
  BanditRun run;
  for (int t = 0; t < cycles; ++t) {
    const bool positive = coin(rng);
    std::vector<float> s = pattern;
    if (!positive)
      for (float& v : s) v = -v;
    const CycleOut out = rig.Step1(b, s, reward);
    const bool flipped = flip_at >= 0 && t >= flip_at;
    const float wanted = (positive == ((assignment == 0) != flipped)) ? 1.0f : -1.0f;
    reward = (out.motors[0] > 0) == (wanted > 0) ? 1.0f : -1.0f;
    if (t >= 1300 && t < 1500) run.late += reward / 200.0f;
    if (t >= 2000 && t < 2050) run.after_flip += reward / 50.0f;
    if (t >= 2050 && t < 2250) run.recovering += reward / 200.0f;
    if (t >= 2000 && t < 2250) run.flip_window += reward / 250.0f;
    if (t >= 3500 && t < 4000) run.relearned += reward / 500.0f;
    run.saturated += std::fabs(out.motors[0]) > 0.99f ? 1.0f / float(cycles) : 0.0f;
  }
  return run;
}

TEST(BrainBehaviour, ContextualBanditLearnsBothSignAssignments) {
  const BanditRun a0 = Bandit(true, 0, 41), a1 = Bandit(true, 1, 41);
  EXPECT_GT(a0.late, 0.3f);
  EXPECT_GT(a1.late, 0.3f);
  // The motors keep their range while they learn (the issue measured 97 % saturated cycles).
  EXPECT_LT(std::max(a0.saturated, a1.saturated), 0.2f);
  const BanditRun f0 = Bandit(false, 0, 41), f1 = Bandit(false, 1, 41);
  EXPECT_LT(std::min(f0.late, f1.late), 0.2f) << "without learning one assignment must stay unsolved";
  std::printf("bandit mean reward, cycles 1300-1500: learning %.3f / %.3f, frozen %.3f / %.3f; |motor| > 0.99 on %.3f / %.3f of cycles\n",
              a0.late, a1.late, f0.late, f1.late, a0.saturated, a1.saturated);
}

// A reversal: the wanted signs flip at cycle 2000. Reward drops below chance in the 50 cycles
// right after the flip (what was learned is now wrong), climbs back over the next 200 (the
// withdrawal from bad surprises), and is won back by cycle 4000. Four seeds, both assignments:
// mean reward over cycles 3500-4000 of at least 0.25 (62 % right), and at least 7 of the 8 runs
// above chance. This test first measured the drop over 2000-2250; that window now mixes the drop
// with most of the recovery, so the drop and the recovery are asserted apart and the old window's
// figure is printed (docs/brain.md, "The reversal test's windows").
TEST(BrainBehaviour, BanditReversalIsRelearnedBy4000) {
  float mean_after = 0, mean_recovering = 0, mean_window = 0, mean_relearned = 0;
  int above_chance = 0;
  for (const uint64_t seed : {41u, 45u, 46u, 47u})
    for (int assignment = 0; assignment < 2; ++assignment) {
      const BanditRun r = Bandit(true, assignment, seed, 4000, 2000);
      std::printf("seed %llu assignment %d: 1300-1500 %.3f, 2000-2050 %.3f, 2050-2250 %.3f (2000-2250 %.3f), "
                  "3500-4000 %.3f\n",
                  static_cast<unsigned long long>(seed), assignment, r.late, r.after_flip, r.recovering, r.flip_window,
                  r.relearned);
      mean_after += r.after_flip / 8.0f;
      mean_recovering += r.recovering / 8.0f;
      mean_window += r.flip_window / 8.0f;
      mean_relearned += r.relearned / 8.0f;
      above_chance += r.relearned > 0.0f ? 1 : 0;
    }
  std::printf("reversal: mean reward 2000-2050 %.3f, 2050-2250 %.3f (2000-2250 %.3f), 3500-4000 %.3f, %d of 8 above "
              "chance\n",
              mean_after, mean_recovering, mean_window, mean_relearned, above_chance);
  EXPECT_LT(mean_after, 0.0f);
  EXPECT_GT(mean_recovering, mean_after + 0.25f) << "no recovery after the drop";
  EXPECT_GT(mean_relearned, 0.25f);
  EXPECT_GE(above_chance, 7);
}

}  // namespace
}  // namespace fieldbrain::testing
