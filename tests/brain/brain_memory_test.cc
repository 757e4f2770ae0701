// The brain's pattern memory (gpu/model/memory_math.h, DESIGN.md section 5) on the CPU engine:
// contexts stored under reward are recalled when they come back, the memory keeps the recent and
// strong, recall feeds the field, and the memory travels with Snapshot/Restore.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "gpu/model/memory_math.h"
#include "gpu/robot_params.h"
#include "gtest/gtest.h"
#include "tests/brain/brain_rig.h"

namespace fieldbrain::testing {
namespace {

constexpr int kSensors = 12;

std::vector<std::vector<float>> Contexts(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
  std::vector<std::vector<float>> out(static_cast<size_t>(n), std::vector<float>(kSensors));
  for (auto& c : out)
    for (float& v : c) v = uni(rng);
  return out;
}

// The unit context key of `sensors` (memory_math.h), as the engines compute it.
std::vector<hrr::Cf> Key(const RobotParams& p, const std::vector<float>& sensors) {
  std::vector<hrr::Cf> q(kKeyBins);
  float dot = 0.0f;
  for (int k = 0; k < kKeyBins; ++k) {
    q[size_t(k)] = model::key_bin(p, sensors.data(), k);
    dot += model::key_dot_term(q[size_t(k)], q[size_t(k)], k);
  }
  for (auto& c : q) c = hrr::cscale(c, model::key_inverse_norm(dot));
  return q;
}

float KeyCos(const std::vector<hrr::Cf>& a, const std::vector<hrr::Cf>& b) {
  float dot = 0.0f;
  for (int k = 0; k < kKeyBins; ++k) dot += model::key_dot_term(a[size_t(k)], b[size_t(k)], k);
  return model::key_cosine(dot);
}

// The key kernel that recall relies on: a context with a little sensor noise keeps a high cosine
// with itself, unrelated contexts fall well below the recall threshold (0.3).
TEST(BrainMemory, KeysOfNearbyContextsAreAlikeAndOfUnrelatedOnesNot) {
  const absl::StatusOr<RobotParams> p = MakeRobotParams(BrainSpec{5, kSensors, 4, true}, FieldShape::Small());
  ASSERT_TRUE(p.ok());
  const auto contexts = Contexts(200, 5);
  std::mt19937 rng(6);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  double self = 0, unrelated = 0, worst_unrelated = -1;
  for (size_t c = 0; c + 1 < contexts.size(); ++c) {
    std::vector<float> near = contexts[c];
    for (float& v : near) v = std::clamp(v + noise(rng), -1.0f, 1.0f);
    const auto key = Key(*p, contexts[c]);
    self += KeyCos(key, Key(*p, near));
    const float u = KeyCos(key, Key(*p, contexts[c + 1]));
    unrelated += u;
    worst_unrelated = std::max(worst_unrelated, double(u));
  }
  const double n = double(contexts.size() - 1);
  std::printf("key cosine: context vs itself with noise 0.05 %.3f; vs an unrelated context mean %.3f, max %.3f\n",
              self / n, unrelated / n, worst_unrelated);
  EXPECT_GT(self / n, 0.85);
  EXPECT_LT(unrelated / n, 0.2);
  EXPECT_NEAR(KeyCos(Key(*p, contexts[0]), Key(*p, contexts[0])), 1.0f, 1e-5f);
}

RobotState StateOf(BrainRig& rig, int b) { return rig.engine().Snapshot(rig.slot(b))->state; }

// Stores each context once: shown with no reward (its key becomes q_(t-1)), then rewarded (the
// reward judges the action taken in that context, so it is written under that context's key).
// Returns the entry each context went to.
std::vector<int> Store(BrainRig& rig, int b, const std::vector<std::vector<float>>& contexts) {
  std::vector<int> entry;
  for (const auto& c : contexts) {
    rig.Step1(b, c, 0.0f);
    rig.Step1(b, c, 1.0f);
    entry.push_back(StateOf(rig, b).memory_written);
  }
  return entry;
}

// With 24 stored contexts, showing one again recalls its own entry first. Three seeds the
// constants were not tuned on; chance is 1 in 24.
TEST(BrainMemory, AStoredContextShownAgainRecallsItsOwnEntry) {
  constexpr int kContexts = 24;
  for (unsigned seed : {101u, 202u, 303u}) {
    BrainRig rig(FieldShape::Small(), 1);
    const int b = rig.Add(BrainSpec{seed, kSensors, 4, true});
    const auto contexts = Contexts(kContexts, seed);
    const std::vector<int> entry = Store(rig, b, contexts);
    for (int e : entry) ASSERT_GE(e, 0);
    std::mt19937 rng(seed + 1);
    std::normal_distribution<float> noise(0.0f, 0.05f);
    int exact = 0, noisy = 0;
    for (int c = 0; c < kContexts; ++c) {
      rig.Step1(b, contexts[size_t(c)], 0.0f);
      exact += StateOf(rig, b).memory_recalled == entry[size_t(c)];
      std::vector<float> near = contexts[size_t(c)];
      for (float& v : near) v = std::clamp(v + noise(rng), -1.0f, 1.0f);
      rig.Step1(b, near, 0.0f);
      noisy += StateOf(rig, b).memory_recalled == entry[size_t(c)];
    }
    std::printf("seed %u: %d contexts stored; own entry recalled first for %d exactly, %d with noise 0.05 "
                "(chance: 1 in %d)\n", seed, kContexts, exact, noisy, kContexts);
    EXPECT_GE(exact, int(0.9 * kContexts)) << "seed " << seed;
    EXPECT_GE(noisy, int(0.8 * kContexts)) << "seed " << seed;
  }
}

// The same context rewarded again updates its entry instead of filling the memory; beyond
// kMemoryEntries contexts the weakest (oldest) entries are replaced.
TEST(BrainMemory, RepeatsMergeAndTheOldestAreReplacedWhenFull) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(BrainSpec{7, kSensors, 4, true});
  const auto contexts = Contexts(kMemoryEntries + 8, 7);
  const std::vector<int> first = Store(rig, b, {contexts[0]});
  const std::vector<int> again = Store(rig, b, {contexts[0]});
  EXPECT_EQ(first[0], again[0]);
  const std::vector<int> entry = Store(rig, b, std::vector<std::vector<float>>(contexts.begin() + 1, contexts.end()));
  const BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(b));
  int used = 0;
  for (int j = 0; j < kMemoryEntries; ++j) used += snap.memory.used[j];
  EXPECT_EQ(used, kMemoryEntries);
  // The last kMemoryEntries contexts each hold an entry of their own.
  std::vector<int> last(entry.end() - kMemoryEntries, entry.end());
  std::sort(last.begin(), last.end());
  EXPECT_EQ(std::unique(last.begin(), last.end()) - last.begin(), kMemoryEntries);
  // The most recent write is the strongest; strengths decay by 0.95 per later write.
  EXPECT_FLOAT_EQ(snap.memory.strength[entry.back()], 1.0f);
  EXPECT_NEAR(snap.memory.strength[entry[entry.size() - 2]], 0.95f, 1e-6f);
}

// A rewarded context's pattern comes back into the field: the recalled P is the stored pattern
// of the memory channels, signed by the valence.
TEST(BrainMemory, RecallFeedsTheStoredPatternBack) {
  BrainRig rig(FieldShape::Small(), 1);
  const int b = rig.Add(BrainSpec{9, kSensors, 4, true});
  const auto contexts = Contexts(2, 9);
  rig.Step1(b, contexts[0], 0.0f);
  rig.Step1(b, contexts[0], -1.0f);  // stored with valence -1
  rig.Step1(b, contexts[1], 0.0f);   // an unrelated context: nothing recalled
  EXPECT_EQ(StateOf(rig, b).pattern_active, 0);
  rig.Step1(b, contexts[0], 0.0f);
  const BrainSnapshot snap = *rig.engine().Snapshot(rig.slot(b));
  ASSERT_EQ(snap.state.pattern_active, 1);
  const int e = snap.state.memory_recalled;
  ASSERT_GE(e, 0);
  EXPECT_FLOAT_EQ(snap.memory.valence[e], -1.0f);
  const size_t n = snap.pattern.size();
  double dot = 0, nn = 0;
  for (size_t i = 0; i < n; ++i) {
    dot += double(snap.pattern[i]) * snap.memory_patterns[size_t(e) * n + i];
    nn += double(snap.memory_patterns[size_t(e) * n + i]) * snap.memory_patterns[size_t(e) * n + i];
  }
  ASSERT_GT(nn, 0.0);
  EXPECT_LT(dot / nn, -0.5);  // P points against the stored pattern: valence -1
}

// Snapshot/Restore carry the memory: a restored brain recalls and answers bit for bit like the
// original.
TEST(BrainMemory, SnapshotAndRestoreCarryTheMemory) {
  const auto contexts = Contexts(6, 11);
  BrainRig a(FieldShape::Small(), 1, 1), b(FieldShape::Small(), 1, 1);
  const int ra = a.Add(BrainSpec{11, kSensors, 4, true});
  const int rb = b.Add(BrainSpec{11, kSensors, 4, true});
  Store(a, ra, contexts);
  ASSERT_TRUE(b.engine().Restore(b.slot(rb), *a.engine().Snapshot(a.slot(ra))).ok());
  for (int t = 0; t < 12; ++t) {
    const auto& c = contexts[size_t(t % 6)];
    const CycleOut x = a.Step1(ra, c, t % 3 == 0 ? 0.5f : 0.0f);
    const CycleOut y = b.Step1(rb, c, t % 3 == 0 ? 0.5f : 0.0f);
    ASSERT_EQ(std::memcmp(x.motors.data(), y.motors.data(), x.motors.size() * sizeof(float)), 0) << t;
    EXPECT_EQ(StateOf(a, ra).memory_recalled, StateOf(b, rb).memory_recalled);
  }
}

// A brain restored over itself after it ran on writes where it wrote the first time. Context C is
// stored before the snapshot, which is taken after an unrelated context R; the brain then dwells
// on C, so its last recall finds C's entry at cos ~1. Back at the snapshot the next write is for
// R, which matches nothing stored: it must take a free entry, not C's (what the cosines of the
// abandoned future would say).
TEST(BrainMemory, ARestoredBrainWritesAsItDidFromTheSnapshot) {
  const auto contexts = Contexts(8, 12);
  const std::vector<float>& c = contexts[0];
  BrainRig rig(FieldShape::Tiny(), 1, 1);
  const int r = rig.Add(BrainSpec{12, kSensors, 4, true});
  for (int t = 0; t < 4; ++t) rig.Step1(r, contexts[size_t(1 + t)], 0.5f);
  for (int t = 0; t < 3; ++t) rig.Step1(r, c, 0.5f);
  rig.Step1(r, contexts[5], 0.5f);  // R
  const BrainSnapshot at_r = *rig.engine().Snapshot(rig.slot(r));

  auto run_on = [&] {
    std::vector<int> written;
    for (int t = 0; t < 4; ++t) {
      rig.Step1(r, c, 0.5f);
      written.push_back(StateOf(rig, r).memory_written);
    }
    return written;
  };
  const std::vector<int> first = run_on();
  const BrainSnapshot after_first = *rig.engine().Snapshot(rig.slot(r));
  ASSERT_TRUE(rig.engine().Restore(rig.slot(r), at_r).ok());
  const std::vector<int> again = run_on();
  EXPECT_EQ(first, again);
  EXPECT_NE(first[0], first[1]) << "R's write went to C's entry: the test lost its point";
  EXPECT_TRUE(rig.engine().Snapshot(rig.slot(r))->memory_patterns == after_first.memory_patterns);
}

}  // namespace
}  // namespace fieldbrain::testing
