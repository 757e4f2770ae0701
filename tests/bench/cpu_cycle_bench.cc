// The CPU engine's cycle: default (32^3 x 64) and small (16^3 x 32) field, batches of 1 and 16
// robots, on one thread and on all cores. Reports time per batch and per robot-cycle, and the
// field bytes moved per second (read F_t + write F_t+1, the same bytes model as the GPU target),
// beside the reference measured in the same run: one core's memcpy of the same fields
// (`memcpy_us`, `of_memcpy` = the engine's field bytes/s as a fraction of the memcpy's). Rows on
// several threads also print `of_split`: their time per robot-cycle over the same field's one
// robot on one thread (measured earlier in the run) divided by the threads; 1 or less means the
// work splits across cores with nothing lost to cache or coordination.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "gpu/engine.h"

namespace fieldbrain {
namespace {

// Engine time per stage, summed over the timed batches.
class StageTotals final : public StageTimingSink {
 public:
  void RecordStage(Stage s, double seconds, int) override { seconds_[int(s)] += seconds; }
  double seconds(Stage s) const { return seconds_[int(s)]; }
  void Reset() { seconds_.fill(0.0); }

 private:
  std::array<double, int(Stage::kCount)> seconds_{};
};

// Seconds one core takes to memcpy `bytes` (reading them once and writing them once, as a cycle
// reads F_t and writes F_t+1): the best of repeated copies over about 0.2 s, from a source
// written first so every page is real. Cached per size: every row of a run reads the same figure.
double MemcpySeconds(int64_t bytes) {
  static std::map<int64_t, double> measured;
  if (auto it = measured.find(bytes); it != measured.end()) return it->second;
  std::vector<unsigned char> from(size_t(bytes), 1), to(size_t(bytes), 0);
  double best = 1e30;
  const auto start = std::chrono::steady_clock::now();
  for (int rep = 0; rep < 3 || std::chrono::steady_clock::now() - start < std::chrono::milliseconds(200); ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(to.data(), from.data(), size_t(bytes));
    benchmark::ClobberMemory();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    from[size_t(rep) % from.size()] = static_cast<unsigned char>(rep);
  }
  benchmark::DoNotOptimize(to.data());
  measured[bytes] = best;
  return best;
}

// Seconds per robot-cycle of one robot on one thread, per field, as this run measured them.
std::map<int, double>& OneRobotOneThread() {
  static std::map<int, double> seconds;
  return seconds;
}

void BM_CpuCycle(benchmark::State& state) {
  // 0 small, 1 default, 2 tiny (brain-load's field: what the engine costs at the smallest shape).
  const FieldShape shape = state.range(0) == 1   ? FieldShape::Default()
                           : state.range(0) == 2 ? FieldShape::Tiny()
                                                 : FieldShape::Small();
  const int robots = int(state.range(1));
  EngineConfig config;
  config.shape = shape;
  config.max_robots = robots;
  config.max_batch = robots;
  config.threads = int(state.range(2));
  auto engine = MakeEngine("cpu", config);
  if (!engine.ok()) {
    state.SkipWithError(std::string(engine.status().message()).c_str());
    return;
  }
  Engine& e = **engine;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uni(-1, 1);
  for (int r = 0; r < robots; ++r) {
    const int slot = *e.CreateBrain(BrainSpec{uint64_t(r + 1), 12, 4, true});
    e.inputs()[r].slot = slot;
  }
  StageTotals stages;
  e.set_timing_sink(&stages);
  const int64_t field_bytes = shape.floats() * int64_t(sizeof(float)) * robots;
  const double memcpy_s = MemcpySeconds(field_bytes);
  const auto loop_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int r = 0; r < robots; ++r) {
      for (int i = 0; i < 12; ++i) e.inputs()[r].sensors[i] = uni(rng);
      e.inputs()[r].reward = uni(rng);
    }
    if (!e.RunBatch(robots).ok()) state.SkipWithError("RunBatch failed");
    benchmark::DoNotOptimize(e.outputs()[0].motors[0]);
  }
  const double batch_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count() / double(state.iterations());
  const double per_robot_s = batch_s / double(robots);
  if (robots == 1 && config.threads == 1) OneRobotOneThread()[int(state.range(0))] = per_robot_s;
  if (auto it = OneRobotOneThread().find(int(state.range(0))); config.threads > 1 && it != OneRobotOneThread().end())
    state.counters["of_split"] = benchmark::Counter(per_robot_s / (it->second / double(config.threads)));
  state.counters["memcpy_us"] = benchmark::Counter(memcpy_s * 1e6);
  state.counters["of_memcpy"] = benchmark::Counter(memcpy_s / batch_s);
  // Per batch, by stage: where the cycle's time goes (memory = the HRR pattern memory).
  for (Stage st : {Stage::kPredict, Stage::kMemory, Stage::kEvolve, Stage::kMotor})
    state.counters[std::string(StageName(st)) + "_us"] =
        benchmark::Counter(stages.seconds(st) * 1e6 / double(state.iterations()));
  state.counters["robot_cycles_per_s"] = benchmark::Counter(double(robots), benchmark::Counter::kIsIterationInvariantRate);
  // Inverted rate: seconds per robot-cycle (printed with an SI prefix, e.g. 555u = 555 us).
  state.counters["s_per_robot_cycle"] =
      benchmark::Counter(double(robots), benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["field_bytes_per_s"] = benchmark::Counter(
      2.0 * double(shape.floats()) * sizeof(float) * robots, benchmark::Counter::kIsIterationInvariantRate);
  state.SetLabel(std::string(shape.nx == 32 ? "default" : shape.nx == 16 ? "small" : "tiny") + " field, " + std::to_string(robots) +
                 " robots, " + (config.threads == 1 ? "1 thread" : "all cores"));
}

void Args(benchmark::internal::Benchmark* b) {
  const int cores = int(std::thread::hardware_concurrency());
  for (int field : {0, 1, 2})
    for (int robots : {1, 16})
      for (int threads : {1, cores}) b->Args({field, robots, threads});
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_CpuCycle)->Apply(Args);

}  // namespace
}  // namespace fieldbrain

BENCHMARK_MAIN();
