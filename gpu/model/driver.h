// The driver (docs/brain.md, issue 23): a linear actor-critic on the raw sensor frame that learns
// what to do with the motors from reward, and an undo it holds when things go badly. Per-element
// rules shared by both engines; cpu::CloseCycle runs them in order and the CUDA close-cycle kernel
// follows it.
//
// Why it exists: the field readout's actor learnt, on a car, to back off after a bump, not to
// drive, and a roboticist's textbook learner on the same twelve sensors drove flat out within 2000
// ticks. The driver is that learner inside the brain (Sutton and Barto, "Actor-Critic with
// Eligibility Traces (continuing)"): features d = [s_i | s_i^2 | 1], a critic V = w . d, and a
// Gaussian policy per motor whose score is the whole exploration step it took:
//   m_k = clamp(mu_k + sigma eps_k, -1, 1),  mu_k = clamp(tanh(u_k) / tanh(B), -1, 1),
//   u_k = theta_k . d,
// with eps_k drawn fresh every cycle from its own philox stream. The field readout's own actor,
// critic and exploration noise are retired: added to the motors at any share they drowned the
// driver. The field's pull along each motor's axis, added to u_k until issue 23's fifteenth
// session, is retired too: it made the failures of a field's size its own (56 cars of 1024 bad on
// the tiny field, 32 on the small one, 29 with no pull on either) and flipped the pan of the cars
// that failed (docs/brain.md has the tables).
//
// Eight things the textbook learner lacks, each for a failure measured without it:
// - the actor steps on the advantage a = r + 0.2 (gamma V(d_t) - V(d_(t-1))), not on the whole TD
//   error: the frame a reward comes with also holds the echo of the command it judges (a car's
//   speed sensors), and a linear critic that learnt "fast forward comes before a bump" credits
//   every extra bit of reverse, five times over what the reward pays; 16 cars of 128 settled into
//   circling backwards for good. At a fifth of its weight the critic still values backing off
//   from a wall (docs/brain.md, issue 23, "The critic's echo of the motors");
// - the spread sigma widens with frustration (a car pinned against a wall tries further away);
// - the actor steps on the advantage over its running mean, scaled by the advantage's running
//   spread (scale-free steps: a bandit paying +-1 and a car earning 0.1 a tick learn alike;
//   without the mean the weights random-walk into saturation while the critic catches up);
// - a bad surprise, while frustrated, withdraws what the situation made the robot do: theta_k
//   moves against the motor sent last cycle along the centred frame s - sbar (not the bias or the
//   squares, so a bump does not take away driving as such; a committed habit is unlearnt fast);
// - the pre-activation theta_k . d is held near +-2 (driver_bound_step): beyond it the
//   command gains nothing and the score's (1 - tanh^2 u) leaves the actor deaf to what it hits;
// - small seeded initial weights, so a newborn's stimuli already differ;
// - a policy that can reach the motor's end: the mean is tanh(u) / tanh(B), so at the bound B it
//   commands +-1. With tanh(u) a car flat out sent about 0.94 of full drive (the bound held tanh
//   at 0.96 and the clamp at 1 cut the noise's upper tail), the tuned baseline, unbounded, about
//   0.96: on rooms nothing had seen, its cars that met nothing out-drove the brain's by 2 %
//   (docs/brain.md, issue 23, seventh session);
// - an undo on trouble (driver_undo_step): while the reward over the last second is well below
//   zero, the driver may hold the negation of its mean command for a second, the actor idle
//   and learning nothing meanwhile. A memoryless linear policy cannot back out of a slot it drove
//   into (what it sees there says "forward" as it did on the way in); the hand-written reactive
//   driver gets out with a remembered sequence, and so does this. With it, 7 cars of 1024 failed
//   where 29 failed without, and held for a second rather than half a second, 2048 cars bumped
//   40 % less in their first 40 seconds and failed as often at the end (docs/brain.md, issue 23,
//   fourteenth to sixteenth sessions).
//
// Step sizes are per feature (each rate over the number of features in use), so settings carry
// over between sensor counts.
#pragma once

#include <cmath>
#include <cstdint>

#include "gpu/model/exploration.h"
#include "gpu/model/fastmath.h"
#include "gpu/model/field_shape.h"
#include "gpu/model/philox.h"

namespace fieldbrain::model {

// Layout of d: the frame at [0, kMaxSensors), its squares at [kMaxSensors, 2 kMaxSensors), the
// bias last. Entries past sensor_count stay 0 and are never read.
inline constexpr int kDriverSquaresAt = kMaxSensors;
inline constexpr int kDriverBiasAt = 2 * kMaxSensors;
inline constexpr int kDriverFeatures = 2 * kMaxSensors + 1;

// The tuned linear baseline's settings (client/sim/linear_actor_critic.h, tuned on rooms 201-232)
// and the rest chosen on tuning rooms 201-232 (docs/brain.md, issue 23).
inline constexpr float kDriverCriticRate = 0.03f;
inline constexpr float kDriverActorRate = 0.3f;
inline constexpr float kDriverDiscount = 0.98f;
inline constexpr float kDriverValueShare = 0.2f;         // the critic's share in the actor's advantage
inline constexpr float kDriverLambda = 0.5f;
inline constexpr float kDriverSpread = 0.1f;             // sigma when content
inline constexpr float kDriverFrustrationSpread = 0.5f;  // sigma = 0.1 + 0.5 frustration
inline constexpr float kDriverSquareKeep = 0.99f;        // the advantage's running spread: ~100 cycles
inline constexpr float kDriverRmsFloor = 0.1f;           // steps are scaled by floor / max(RMS, floor)
inline constexpr float kDriverAdvantageKeep = 0.995f;    // the advantage's running mean: ~200 cycles
inline constexpr float kDriverWithdrawGain = 2.0f;       // x frustration
inline constexpr float kDriverInitialWeight = 0.05f;     // spread of a newborn's actor weights
inline constexpr float kDriverPreactivationBound = 2.0f;  // |theta_k . d|: tanh(2) = 0.96
// Bounds that keep a robot fed absurd rewards finite; a sane robot's weights stay far inside.
inline constexpr float kDriverDeltaBound = 10.0f;
inline constexpr float kDriverWeightBound = 50.0f;

FB_HD bool driver_feature_used(int j, int n) {
  return j < n || (j >= kDriverSquaresAt && j < kDriverSquaresAt + n) || j == kDriverBiasAt;
}
FB_HD int driver_feature_count(int n) { return 2 * n + 1; }

// d_j for sensor frame s (n sensors), j in use.
FB_HD float driver_feature(int j, const float* s) {
  if (j == kDriverBiasAt) return 1.0f;
  return j < kDriverSquaresAt ? s[j] : s[j - kDriverSquaresAt] * s[j - kDriverSquaresAt];
}

// What withdrawal moves theta_kj along: the frame's deviation from its recent mean, nothing for
// the squares, and the robot's boredom for the bias.
// A pinned robot's frame stops changing, so its centred frame is 0: while bored, withdrawal also
// runs through the bias (what the robot does everywhere), so a car pushing into a wall it cannot
// see backs off (docs/brain.md, issue 23: a car pushed backwards into a wall for 3000 ticks).
FB_HD float driver_withdraw_feature(int j, const float* s_prev, const float* s_mean, float boredom) {
  if (j == kDriverBiasAt) return boredom;
  return j < kDriverSquaresAt ? s_prev[j] - s_mean[j] : 0.0f;
}

// A newborn's actor weight theta_kj (drawn once, when the brain is made: InitRobotState).
FB_HD float driver_initial_weight(uint64_t seed, int k, int j) {
  return kDriverInitialWeight * normal_draw(seed, Domain::kDriverNoise, (uint64_t(1) << 40) + uint64_t(k), uint32_t(j));
}

// delta = r + gamma V(d_t) - V(d_(t-1)), both values from the critic as it is now.
FB_HD float driver_td_error(float reward, float value_now, float value_prev) {
  return clampf(reward + kDriverDiscount * value_now - value_prev, -kDriverDeltaBound, kDriverDeltaBound);
}

// What the actor learns from: the reward, and a fifth of the critic's judgement of the move.
FB_HD float driver_advantage(float reward, float value_now, float value_prev) {
  return clampf(reward + kDriverValueShare * (kDriverDiscount * value_now - value_prev), -kDriverDeltaBound,
                kDriverDeltaBound);
}

// The advantage's running square deviation from its mean as it was, and its running mean; the
// first cycle that learns starts both (from a mean of 0).
FB_HD float driver_advantage_square_next(float square, float advantage, float mean_before, bool first) {
  const float deviation = advantage - mean_before;
  return first ? deviation * deviation : kDriverSquareKeep * square + (1.0f - kDriverSquareKeep) * deviation * deviation;
}
FB_HD float driver_advantage_mean_next(float mean, float advantage, bool first) {
  return first ? advantage : kDriverAdvantageKeep * mean + (1.0f - kDriverAdvantageKeep) * advantage;
}
// The actor's step scale: 1 while the advantage's spread is small, 1 / RMS once it is large.
FB_HD float driver_advantage_scale(float square) {
  return kDriverRmsFloor / fmaxf(sqrtf(square), kDriverRmsFloor);
}

// The rate that moves one weight: `rate` over the number of features in use.
FB_HD float driver_step(float rate, float delta, int n) { return rate * delta / float(driver_feature_count(n)); }
// The actor's step along its traces (on the advantage over its running mean), and withdrawal's
// along m_k,(t-1) x the centred frame (on the whole TD error: a bad surprise).
FB_HD float driver_actor_step(float advantage, float mean_after, float scale, int n) {
  return scale * driver_step(kDriverActorRate, advantage - mean_after, n);
}
FB_HD float driver_withdraw_step(float delta, float scale, float frustration, int n) {
  return delta < 0.0f ? scale * kDriverWithdrawGain * frustration * driver_step(kDriverActorRate, delta, n) : 0.0f;
}
FB_HD float driver_weight_next(float w, float step, float along) {
  return clampf(w + step * along, -kDriverWeightBound, kDriverWeightBound);
}
FB_HD float driver_trace_next(float trace, float grad) { return kDriverDiscount * kDriverLambda * trace + grad; }

// The step that brings a motor's pre-activation u = theta_k . d back towards
// +-kDriverPreactivationBound, taken along d after the motor is sent (0 inside the bound).
// Beyond the bound u buys almost no command (tanh is flat) but deafens the actor: its score
// carries (1 - tanh^2 u), so a car whose drive had run to u = 3 pushed into a wall for 1500 ticks
// with a gradient of 0.006 (docs/brain.md, issue 23, "A deaf actor").
FB_HD float driver_bound_step(float preactivation, int n) {
  const float excess = preactivation - clampf(preactivation, -kDriverPreactivationBound, kDriverPreactivationBound);
  return -driver_step(kDriverActorRate, excess, n);
}

// The policy's spread, from frustration alone (gpu/model/exploration.h): spreading it by doubt and
// boredom too measured worse, since a newborn and a bandit doubt most.
FB_HD float driver_spread(float frustration) { return kDriverSpread + kDriverFrustrationSpread * frustration; }

// The policy at pre-activation u = theta . d: its mean, and the slope its score carries,
// d/dtheta log N(mu + sigma eps; mu(u), sigma^2) = eps / sigma mu'(u) d with mu'(u) = (1 -
// tanh^2 u) / tanh(B). One tanh serves both. Past the bound the score keeps tanh's slope rather
// than the clamp's 0: the bound step brings u back within a few cycles, and a score of 0 there is
// the deafness the bound exists to prevent.
inline constexpr float kDriverMeanGain = 1.0f / 0.96402758f;  // 1 / tanh(kDriverPreactivationBound)
struct DriverPolicy {
  float mean;      // clamp(tanh(u) / tanh(B), -1, 1)
  float flatness;  // 1 - tanh^2 u: the score's factor before the gain
};
FB_HD DriverPolicy driver_policy(float preactivation) {
  const float t = fast_tanh(preactivation);
  return {clampf(t * kDriverMeanGain, -1.0f, 1.0f), 1.0f - t * t};
}
FB_HD float driver_score(const DriverPolicy& policy, float eps, float spread) {
  return eps / spread * kDriverMeanGain * policy.flatness;
}
FB_HD float driver_motor(float mean, float eps, float spread) { return clampf(mean + spread * eps, -1.0f, 1.0f); }

// The undo on trouble. Trouble is the reward over the last second (reward_fast) below
// kUndoTrouble: the reward is in [-1, 1] by the wire contract, so the threshold means the same for
// every robot. In trouble, at least kUndoGap cycles after the last undo ended, an undo starts with
// chance kUndoChance a cycle (within about 8 cycles of the trouble, at a time the robot's seed
// sets). It sends -mu_k, the negation of the policy's mean at its start, for kUndoCycles cycles
// (on an Ackermann car a reverse on the opposite lock, on a differential robot a retreat); the
// actor neither acts nor learns from the reward of a held command, and its traces are cleared at
// the start, so nothing it did before the undo is credited with what the undo brought. The critic
// learns throughout. A fixed rule, not a learnt gate: a gate learning from each undo's outcome
// did worse on 128 cars (6 bad against 3), and one drawn anywhere by an untrained gate put
// driving cars into walls (docs/brain.md, issue 23, twelfth and fourteenth sessions).
inline constexpr float kUndoTrouble = -0.3f;
inline constexpr int kUndoGap = 100;       // cycles the actor drives between two undos, at least
inline constexpr int kUndoCycles = 50;     // a second at 50 Hz (half a second bumped more early on)
inline constexpr float kUndoChance = 0.11920292f;  // sigmoid(-2)
inline constexpr int32_t kUndoSinceCap = 1 << 20;  // undo_since saturates here

// Whether an undo starts this cycle, for a robot whose actor has driven `since` cycles since the
// last undo ended (or since birth).
FB_HD bool driver_undo_starts(float reward_fast, int32_t since, uint64_t seed, uint64_t cycle) {
  return reward_fast < kUndoTrouble && since >= kUndoGap &&
         uniform_open0(uniform_bits(seed, Domain::kDriverUndo, cycle, 0)) <= kUndoChance;
}
FB_HD float driver_undo_command(float mean) { return -mean; }
// undo_since after a cycle the actor drove, given whether the cycle before sent a held command.
FB_HD int32_t driver_undo_since_next(int32_t since, bool held_before) {
  return held_before ? 0 : (since < kUndoSinceCap ? since + 1 : kUndoSinceCap);
}

// What the driver does with the motors this cycle, and the undo's counts after it (RobotState's
// undo_left, undo_held, undo_since). Both engines take their branch from here.
enum class UndoMode : int32_t {
  kDrives,  // the actor acts (and its traces take the score)
  kStarts,  // an undo starts: the negated mean is sent, the traces are cleared
  kGoesOn,  // an undo under way: last cycle's command again
};
struct UndoStep {
  UndoMode mode;
  int32_t left;
  int32_t held;
  int32_t since;
};
FB_HD UndoStep driver_undo_step(int32_t left, int32_t held, int32_t since, float reward_fast, uint64_t seed,
                                uint64_t cycle) {
  if (left > 0) return {UndoMode::kGoesOn, left - 1, held, since};
  const int32_t since_next = driver_undo_since_next(since, held != 0);
  if (driver_undo_starts(reward_fast, since_next, seed, cycle)) return {UndoMode::kStarts, kUndoCycles - 1, 1, since_next};
  return {UndoMode::kDrives, 0, 0, since_next};
}

}  // namespace fieldbrain::model
