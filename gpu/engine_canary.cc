#include "gpu/engine_canary.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpu/cpu/cpu_engine.h"

namespace fieldbrain {
namespace {

// Two brains of different sizes, learning on, so that every kernel and every branch of the
// cycle's readout runs.
constexpr BrainSpec kCanaryBrains[] = {BrainSpec{0xCA2A21, 12, 4, true}, BrainSpec{0xCA2A22, 7, 3, true}};

// Cycle c's inputs of brain r: smooth, distinct per sensor, a reward every other cycle.
void FillInputs(const BrainSpec& spec, int r, int c, int slot, BatchInputRow& row) {
  row = BatchInputRow{};
  row.slot = slot;
  for (int i = 0; i < spec.sensor_count; ++i)
    row.sensors[i] = std::sin(0.37f * float((i + 1) * (c + 2)) + float(r));
  row.reward = c % 2 == 0 ? 0.5f : -0.25f;
}

double MaxAbs(const float* a, const float* b, int n) {
  double m = 0.0;
  for (int i = 0; i < n; ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

// The brains' slots in one engine, released when it goes.
class CanaryBrains {
 public:
  explicit CanaryBrains(Engine& e) : engine_(e) {}
  ~CanaryBrains() {
    for (int slot : slots_) engine_.ReleaseBrain(slot);
  }
  CanaryBrains(const CanaryBrains&) = delete;
  CanaryBrains& operator=(const CanaryBrains&) = delete;

  absl::Status Add(const BrainSpec& spec) {
    absl::StatusOr<int> slot = engine_.CreateBrain(spec);
    if (!slot.ok()) return slot.status();
    slots_.push_back(*slot);
    return absl::OkStatus();
  }
  absl::Status Cycle(int c) {
    for (int r = 0; r < int(slots_.size()); ++r)
      FillInputs(kCanaryBrains[r], r, c, slots_[size_t(r)], engine_.inputs()[size_t(r)]);
    return engine_.RunBatch(int(slots_.size()));
  }
  int slot(int r) const { return slots_[size_t(r)]; }
  Engine& engine() { return engine_; }

 private:
  Engine& engine_;
  std::vector<int> slots_;
};

}  // namespace

absl::StatusOr<CanaryReport> RunCanary(Engine& engine) {
  const auto start = std::chrono::steady_clock::now();
  CanaryReport report;
  report.robots = std::min<int>({int(std::size(kCanaryBrains)), engine.config().max_batch,
                                 engine.config().max_robots - engine.brains_active()});
  report.cycles = kCanaryCycles;
  if (report.robots < 1) return absl::FailedPreconditionError("the engine has no free slot for the canary");
  EngineConfig reference_config = engine.config();
  reference_config.max_robots = reference_config.max_batch = report.robots;
  absl::StatusOr<std::unique_ptr<Engine>> reference = cpu::MakeCpuEngine(reference_config);
  if (!reference.ok()) return reference.status();

  CanaryBrains tested(engine), cpu(**reference);
  for (int r = 0; r < report.robots; ++r) {
    if (absl::Status s = tested.Add(kCanaryBrains[r]); !s.ok()) return s;
    if (absl::Status s = cpu.Add(kCanaryBrains[r]); !s.ok()) return s;
  }
  for (int c = 0; c < kCanaryCycles; ++c) {
    if (absl::Status s = tested.Cycle(c); !s.ok()) return s;
    if (absl::Status s = cpu.Cycle(c); !s.ok()) return s;
    for (int r = 0; r < report.robots; ++r) {
      const BatchOutputRow& a = engine.outputs()[size_t(r)];
      const BatchOutputRow& b = (*reference)->outputs()[size_t(r)];
      report.max_output_diff = std::max({report.max_output_diff, MaxAbs(a.motors, b.motors, kMaxMotors),
                                         MaxAbs(a.prediction, b.prediction, kMaxSensors),
                                         MaxAbs(&a.confidence, &b.confidence, 1)});
    }
  }
  for (int r = 0; r < report.robots; ++r) {
    absl::StatusOr<BrainSnapshot> a = engine.Snapshot(tested.slot(r));
    if (!a.ok()) return a.status();
    absl::StatusOr<BrainSnapshot> b = (*reference)->Snapshot(cpu.slot(r));
    if (!b.ok()) return b.status();
    if (a->field.size() != b->field.size()) {  // a field of another size is as wrong as it gets
      report.max_field_diff = INFINITY;
      continue;
    }
    report.max_field_diff =
        std::max(report.max_field_diff, MaxAbs(a->field.data(), b->field.data(), int(a->field.size())));
  }
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

bool CanaryPassed(const CanaryReport& r) {
  return r.max_output_diff <= kCanaryOutputTol && r.max_field_diff <= kCanaryFieldTol;
}

std::string DescribeCanary(const CanaryReport& r) {
  return absl::StrFormat(
      "%d brains x %d cycles against the CPU engine: outputs differ by at most %.3g (tolerance %.0e), fields by "
      "%.3g (tolerance %.0e), %.3f s",
      r.robots, r.cycles, r.max_output_diff, kCanaryOutputTol, r.max_field_diff, kCanaryFieldTol, r.seconds);
}

}  // namespace fieldbrain
