#include "client/sim/linear_actor_critic.h"

#include <algorithm>
#include <cmath>

namespace fieldbrain::sim {

LinearActorCritic::LinearActorCritic(ActorCriticConfig config, uint64_t seed)
    : config_(config),
      features_(2 * size_t(picarx::kSensorCount) + 1),
      rng_(seed ^ 0x61632d6e6f697365ull),
      noise_(0.0, 1.0),
      critic_(features_, 0.0),
      actor_(picarx::kMotorCount, std::vector<double>(features_, 0.0)),
      critic_trace_(features_, 0.0),
      actor_trace_(picarx::kMotorCount, std::vector<double>(features_, 0.0)),
      phi_(features_, 0.0),
      previous_phi_(features_, 0.0) {}

void LinearActorCritic::FeaturesOf(std::span<const float> sensors, std::vector<double>& phi) const {
  const size_t n = size_t(picarx::kSensorCount);
  for (size_t i = 0; i < n; ++i) {
    const double s = i < sensors.size() && std::isfinite(sensors[i]) ? double(sensors[i]) : 0.0;
    phi[i] = s;
    phi[n + i] = s * s;
  }
  phi[2 * n] = 1.0;
}

double LinearActorCritic::Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

double LinearActorCritic::Value(std::span<const float> sensors) const {
  std::vector<double> phi(features_);
  FeaturesOf(sensors, phi);
  return Dot(critic_, phi);
}

Motors LinearActorCritic::Mean(std::span<const float> sensors) const {
  std::vector<double> phi(features_);
  FeaturesOf(sensors, phi);
  Motors mean{};
  for (size_t k = 0; k < mean.size(); ++k) mean[k] = float(std::tanh(Dot(actor_[k], phi)));
  return mean;
}

Motors LinearActorCritic::Act(std::span<const float> sensors, std::optional<float> reward) {
  FeaturesOf(sensors, phi_);
  const double per_feature = 1.0 / double(features_);
  // Learn from the previous step (S, A, R, S'): its traces already hold S's gradients.
  if (has_previous_ && reward.has_value() && std::isfinite(*reward)) {
    const double delta = double(*reward) + config_.gamma * Dot(critic_, phi_) - Dot(critic_, previous_phi_);
    last_td_error_ = delta;
    const double critic_step = config_.critic_rate * per_feature * delta;
    for (size_t i = 0; i < features_; ++i) critic_[i] += critic_step * critic_trace_[i];
    const double actor_step = config_.actor_rate * per_feature * delta;
    for (size_t k = 0; k < actor_.size(); ++k) {
      for (size_t i = 0; i < features_; ++i) actor_[k][i] += actor_step * actor_trace_[k][i];
    }
  }
  // Act from S', and fold S''s gradients into the traces for the next step's error.
  const double decay = config_.gamma * config_.lambda;
  const double variance = config_.noise * config_.noise;
  for (size_t i = 0; i < features_; ++i) critic_trace_[i] = decay * critic_trace_[i] + phi_[i];
  Motors command{};
  for (size_t k = 0; k < command.size(); ++k) {
    const double mean = std::tanh(Dot(actor_[k], phi_));
    const double action = mean + config_.noise * noise_(rng_);
    // d/dtheta log N(action; tanh(theta . phi), noise^2) = (action - mean) / noise^2 * (1 - mean^2) * phi
    const double score = (action - mean) / variance * (1.0 - mean * mean);
    for (size_t i = 0; i < features_; ++i) actor_trace_[k][i] = decay * actor_trace_[k][i] + score * phi_[i];
    command[k] = float(std::clamp(action, -1.0, 1.0));
  }
  std::swap(phi_, previous_phi_);
  has_previous_ = true;
  return command;
}

}  // namespace fieldbrain::sim
