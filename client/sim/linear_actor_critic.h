// LinearActorCritic: the learner a roboticist would pick instead of the brain (issue 23), as a
// baseline: linear in the raw sensors, their squares and a bias; a Gaussian policy on every motor
// (mean tanh(theta_k . phi), fixed spread) and a TD(lambda) critic (V = w . phi), with
// eligibility traces on both (Sutton and Barto, "Actor-Critic with Eligibility Traces
// (continuing)"). The task never ends, so the return is discounted by gamma. Step sizes are per
// feature: each rate is divided by the number of features, so settings carry over to other
// sensor counts.
//
// Deterministic for a seed (the exploration noise's generator). Not thread-safe.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "client/sim/local_policy.h"

namespace fieldbrain::sim {

struct ActorCriticConfig {
  // Defaults: from three grids on tuning rooms 201-232, four draws each (docs/brain.md, "The
  // baselines"), a setting inside the best plateau rather than the single best.
  double critic_rate = 0.03;
  double actor_rate = 0.3;
  double lambda = 0.5;
  double gamma = 0.98;
  double noise = 0.1;  // the policy's standard deviation on each motor command
};

class LinearActorCritic final : public LocalPolicy {
 public:
  LinearActorCritic(ActorCriticConfig config, uint64_t seed);
  Motors Act(std::span<const float> sensors, std::optional<float> reward) override;

  // The critic's value of `sensors` and the actor's mean command for them (tests, diagnostics).
  double Value(std::span<const float> sensors) const;
  Motors Mean(std::span<const float> sensors) const;
  // The last TD error (0 before the second tick).
  double last_td_error() const { return last_td_error_; }

 private:
  void FeaturesOf(std::span<const float> sensors, std::vector<double>& phi) const;
  static double Dot(const std::vector<double>& a, const std::vector<double>& b);

  const ActorCriticConfig config_;
  const size_t features_;  // sensors, their squares and a bias
  std::mt19937_64 rng_;
  std::normal_distribution<double> noise_;
  std::vector<double> critic_;                 // w
  std::vector<std::vector<double>> actor_;     // theta_k, one per motor
  std::vector<double> critic_trace_;           // z_w
  std::vector<std::vector<double>> actor_trace_;
  std::vector<double> phi_, previous_phi_;
  bool has_previous_ = false;
  double last_td_error_ = 0;
};

}  // namespace fieldbrain::sim
