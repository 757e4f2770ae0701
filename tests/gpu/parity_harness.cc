#include "tests/gpu/parity_harness.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace fieldbrain::testing {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

float Uniform(uint64_t seed, uint64_t cycle, uint64_t i) {
  const uint64_t h = SplitMix(SplitMix(SplitMix(seed) ^ cycle) ^ i);
  return float(double(h >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

void AddArray(std::vector<float>& v, const float* p, size_t n) { v.insert(v.end(), p, p + n); }

// The state's floats, each of order 1 so one absolute tolerance fits all: |psi|^2 (a few hundred,
// where 1 ulp is 3e-5) enters divided by its length, the driver's actor traces (sums of scores
// eps / sigma x a feature, up to ~30 at sigma 0.1) by 30.
std::vector<float> StateFloats(const RobotState& s) {
  std::vector<float> v{s.confidence,  s.psi_prev_norm2 / float(kReadoutFeatures), s.last_error, s.reward_fast,
                       s.reward_slow, s.reward_spread, s.novelty, s.novelty_slow, s.feature_scale};
  AddArray(v, s.sensor_mean, kMaxSensors);
  AddArray(v, s.motor_prev, kMaxMotors);
  AddArray(v, s.prediction, kMaxSensors);
  AddArray(v, s.psi_prev, kReadoutFeatures);
  AddArray(v, &s.wp[0][0], size_t(kMaxSensors) * kReadoutFeatures);
  v.insert(v.end(), {s.driver_advantage_square, s.driver_advantage_mean});
  AddArray(v, s.driver_critic, model::kDriverFeatures);
  AddArray(v, s.driver_critic_trace, model::kDriverFeatures);
  AddArray(v, &s.driver_actor[0][0], size_t(kMaxMotors) * model::kDriverFeatures);
  for (const auto& row : s.driver_actor_trace)
    for (float t : row) v.push_back(t / 30.0f);
  // The undo's counts, exact in float: any difference is over every tolerance.
  v.insert(v.end(), {float(s.undo_left), float(s.undo_held), float(s.undo_since)});
  return v;
}

}  // namespace

void FillInputRow(const BrainSpec& spec, uint64_t cycle, int slot, BatchInputRow& row) {
  row = BatchInputRow{};
  row.slot = slot;
  for (int i = 0; i < spec.sensor_count; ++i) row.sensors[i] = Uniform(spec.seed, cycle, uint64_t(i));
  // Cycles 40-79 of every 120 are trouble (reward -1), long enough for the driver's undo to start
  // (reward_fast falls below -0.3 after 18 of them); the rest pay +-0.5 every third cycle.
  const bool trouble = cycle % 120 >= 40 && cycle % 120 < 80;
  row.reward = trouble ? -1.0f : cycle % 3 == 0 ? (Uniform(spec.seed, cycle, 1000) > 0.0f ? 0.5f : -0.5f) : 0.0f;
}

absl::Status ParityRun::Add(const BrainSpec& spec) {
  absl::StatusOr<int> slot = engine_->CreateBrain(spec);
  if (!slot.ok()) return slot.status();
  specs_.push_back(spec);
  slots_.push_back(*slot);
  cycles_.push_back(0);
  outputs_.emplace_back();
  return absl::OkStatus();
}

absl::Status ParityRun::Step(std::span<const int> order) {
  std::span<BatchInputRow> in = engine_->inputs();
  for (size_t r = 0; r < order.size(); ++r) {
    const size_t robot = size_t(order[r]);
    FillInputRow(specs_[robot], cycles_[robot], slots_[robot], in[r]);
  }
  if (absl::Status s = engine_->RunBatch(int(order.size())); !s.ok()) return s;
  std::span<const BatchOutputRow> out = engine_->outputs();
  for (size_t r = 0; r < order.size(); ++r) {
    const size_t robot = size_t(order[r]);
    const BrainSpec& spec = specs_[robot];
    RobotOutput o;
    o.motors.assign(out[r].motors, out[r].motors + spec.motor_count);
    o.prediction.assign(out[r].prediction, out[r].prediction + spec.sensor_count);
    o.confidence = out[r].confidence;
    o.error = out[r].error;
    o.cycle = out[r].cycle;
    outputs_[robot].push_back(std::move(o));
    ++cycles_[robot];
  }
  return absl::OkStatus();
}

absl::Status ParityRun::Run(int cycles) {
  std::vector<int> all(specs_.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  for (int c = 0; c < cycles; ++c)
    if (absl::Status s = Step(all); !s.ok()) return s;
  return absl::OkStatus();
}

Diff MaxAbsDiff(std::span<const float> a, std::span<const float> b, double tol) {
  Diff d;
  if (a.size() != b.size()) {
    d.max_abs = std::numeric_limits<double>::infinity();
    d.over = 1;
    return d;
  }
  d.compared = int64_t(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(a[i]) != std::isnan(b[i])) diff = std::numeric_limits<double>::infinity();
    if (std::isnan(a[i]) && std::isnan(b[i])) diff = 0.0;
    if (diff > tol) ++d.over;
    if (d.where < 0 || diff > d.max_abs) {
      d.max_abs = diff;
      d.where = int64_t(i);
      d.a = a[i];
      d.b = b[i];
    }
  }
  return d;
}

void Merge(Diff& into, const Diff& d, int64_t offset) {
  if (d.max_abs > into.max_abs || (into.where < 0 && d.where >= 0)) {
    into.max_abs = d.max_abs;
    into.where = d.where < 0 ? -1 : d.where + offset;
    into.a = d.a;
    into.b = d.b;
  }
  into.over += d.over;
  into.compared += d.compared;
}

// The memory of a snapshot as one list of floats: keys, valences, strengths, used flags (as
// 0/1), then the stored patterns.
std::vector<float> MemoryFloats(const BrainSnapshot& s) {
  std::vector<float> v;
  for (int j = 0; j < kMemoryEntries; ++j) {
    for (int k = 0; k < kKeyBins; ++k) v.insert(v.end(), {s.memory.key[j][k][0], s.memory.key[j][k][1]});
    v.insert(v.end(), {s.memory.valence[j], s.memory.strength[j], float(s.memory.used[j])});
  }
  v.insert(v.end(), s.memory_patterns.begin(), s.memory_patterns.end());
  return v;
}

SnapshotDiff CompareSnapshots(const BrainSnapshot& a, const BrainSnapshot& b, double tol) {
  SnapshotDiff d;
  d.field = MaxAbsDiff(a.field, b.field, tol);
  d.pattern = MaxAbsDiff(a.pattern, b.pattern, tol);
  d.state = MaxAbsDiff(StateFloats(a.state), StateFloats(b.state), tol);
  d.memory = MaxAbsDiff(MemoryFloats(a), MemoryFloats(b), tol);
  return d;
}

OutputDiff CompareOutputs(const std::vector<RobotOutput>& a, const std::vector<RobotOutput>& b, double tol) {
  OutputDiff d;
  if (a.size() != b.size()) {
    d.motors.max_abs = std::numeric_limits<double>::infinity();
    d.motors.over = 1;
    d.first_cycle_over = 0;
    d.cycles_match = false;
    return d;
  }
  int64_t motor_offset = 0, prediction_offset = 0;
  for (size_t c = 0; c < a.size(); ++c) {
    const Diff m = MaxAbsDiff(a[c].motors, b[c].motors, tol);
    const Diff p = MaxAbsDiff(a[c].prediction, b[c].prediction, tol);
    const float ca[] = {a[c].confidence}, cb[] = {b[c].confidence};
    Merge(d.motors, m, motor_offset);
    Merge(d.prediction, p, prediction_offset);
    Merge(d.confidence, MaxAbsDiff(ca, cb, tol), int64_t(c));
    motor_offset += int64_t(a[c].motors.size());
    prediction_offset += int64_t(a[c].prediction.size());
    if (d.first_cycle_over < 0 && (m.over > 0 || p.over > 0)) d.first_cycle_over = int64_t(c);
    if (a[c].cycle != b[c].cycle) d.cycles_match = false;
  }
  return d;
}

bool BitwiseEqual(const std::vector<RobotOutput>& a, const std::vector<RobotOutput>& b) {
  if (a.size() != b.size()) return false;
  auto same = [](const std::vector<float>& x, const std::vector<float>& y) {
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
  };
  for (size_t c = 0; c < a.size(); ++c) {
    if (!same(a[c].motors, b[c].motors) || !same(a[c].prediction, b[c].prediction) || a[c].cycle != b[c].cycle ||
        std::memcmp(&a[c].confidence, &b[c].confidence, sizeof(float)) != 0 ||
        std::memcmp(&a[c].error, &b[c].error, sizeof(float)) != 0)
      return false;
  }
  return true;
}

bool BitwiseEqual(const BrainSnapshot& a, const BrainSnapshot& b) {
  const std::vector<float> sa = StateFloats(a.state), sb = StateFloats(b.state);
  const std::vector<float> ma = MemoryFloats(a), mb = MemoryFloats(b);
  return a.shape == b.shape && a.field.size() == b.field.size() && a.pattern.size() == b.pattern.size() &&
         ma.size() == mb.size() && std::memcmp(ma.data(), mb.data(), ma.size() * sizeof(float)) == 0 &&
         std::memcmp(a.field.data(), b.field.data(), a.field.size() * sizeof(float)) == 0 &&
         std::memcmp(a.pattern.data(), b.pattern.data(), a.pattern.size() * sizeof(float)) == 0 &&
         std::memcmp(sa.data(), sb.data(), sa.size() * sizeof(float)) == 0 && a.state.cycle == b.state.cycle;
}

std::string Describe(const Diff& d) {
  return absl::StrFormat("max |d| %.3g at [%d] (%.9g vs %.9g), %d of %d over tolerance", d.max_abs, d.where, d.a,
                         d.b, d.over, d.compared);
}

std::string DescribeField(const Diff& d, const FieldShape& shape) {
  if (d.where < 0) return Describe(d);
  const int64_t v = shape.voxels();
  const int64_t c = d.where / v, rest = d.where % v;
  const int64_t x = rest / (int64_t(shape.ny) * shape.nz), y = (rest / shape.nz) % shape.ny, z = rest % shape.nz;
  return absl::StrFormat("max |d| %.3g at F[c=%d][x=%d][y=%d][z=%d] (%.9g vs %.9g), %d of %d over tolerance",
                         d.max_abs, c, x, y, z, d.a, d.b, d.over, d.compared);
}

}  // namespace fieldbrain::testing
