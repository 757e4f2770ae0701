// The CPU engine's cycle: default (32^3 x 64) and small (16^3 x 32) field, batches of 1 and 16
// robots, on one thread and on all cores. Reports time per batch and per robot-cycle, and the
// field bytes moved per second (read F_t + write F_t+1, the same bytes model as the GPU target),
// beside the reference measured in the same run: one core's memcpy of the same fields
// (`memcpy_us`, `of_memcpy` = the engine's field bytes/s as a fraction of the memcpy's), and the
// arithmetic floor: one core's model::evolve_core over every content and memory value of a field
// from L1 (`core_floor_us`, `of_core_floor` = floor / time per robot-cycle). Rows on several
// threads also print `of_split`: their time per robot-cycle over the same field's one robot on one
// thread (measured earlier in the run) divided by the threads, 1 or less meaning the work splits
// across cores with nothing lost; and `of_copies`: the same over independent one-robot,
// one-thread engines running on every core at once, which is what the machine's cores give
// together (they share caches, memory and clocks). A batch on one thread prints `of_alone`: its
// time per robot-cycle over one robot's on one thread, the part of `of_split` that comes from the
// batch itself (robots' fields and state that no longer stay in the caches from cycle to cycle)
// rather than from the second core.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "gpu/engine.h"
#include "gpu/model/field_math.h"

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

// Seconds one core takes for model::evolve_core on every content and memory value of `shape`,
// working through one L1-resident block of rows again and again: the cycle's dominant arithmetic
// with no memory traffic. Best of five.
double CoreFloorSeconds(const FieldShape& shape) {
  static std::map<int64_t, double> measured;
  const int64_t values = int64_t(shape.content() + shape.memory()) * shape.voxels();
  if (auto it = measured.find(values); it != measured.end()) return it->second;
  constexpr int kBlock = 1024;
  std::vector<float> c(kBlock + 2), neighbour(kBlock, 0.1f), lam(kBlock, 0.95f), rate(kBlock, 0.1f), out(kBlock);
  for (int i = 0; i < kBlock + 2; ++i) c[size_t(i)] = 0.002f * float(i % 700) - 0.7f;
  double best = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t done = 0; done < values; done += kBlock) {
      const float* centre = c.data() + 1;
      for (int i = 0; i < kBlock; ++i)
        out[size_t(i)] = model::evolve_core(
            centre[i],
            model::laplacian7(centre[i], neighbour[size_t(i)], neighbour[size_t(i)], neighbour[size_t(i)],
                              neighbour[size_t(i)], centre[i - 1], centre[i + 1]),
            lam[size_t(i)], rate[size_t(i)]);
      benchmark::DoNotOptimize(out.data());
      benchmark::ClobberMemory();
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  measured[values] = best;
  return best;
}

// Seconds per robot-cycle when each of `cores` threads runs its own one-robot, one-thread engine
// at the same time, for about 0.3 s: the reference for how well a batch splits over the cores.
double IndependentCopiesSeconds(const FieldShape& shape, int cores) {
  static std::map<std::pair<int64_t, int>, double> measured;
  const auto key = std::make_pair(shape.floats(), cores);
  if (auto it = measured.find(key); it != measured.end()) return it->second;
  std::vector<std::unique_ptr<Engine>> engines;
  for (int t = 0; t < cores; ++t) {
    EngineConfig config;
    config.shape = shape;
    config.max_robots = 1;
    config.max_batch = 1;
    config.threads = 1;
    auto engine = MakeEngine("cpu", config);
    if (!engine.ok()) return 0.0;
    (*engine)->inputs()[0].slot = *(*engine)->CreateBrain(BrainSpec{uint64_t(t + 1), 12, 4, true});
    engines.push_back(std::move(*engine));
  }
  std::vector<double> rate(size_t(cores), 0.0);
  std::vector<std::thread> threads;
  for (int t = 0; t < cores; ++t)
    threads.emplace_back([&, t] {
      Engine& e = *engines[size_t(t)];
      std::mt19937 rng{uint32_t(t)};
      std::uniform_real_distribution<float> uni(-1, 1);
      int64_t cycles = 0;
      const auto t0 = std::chrono::steady_clock::now();
      double elapsed = 0.0;
      while (elapsed < 0.3) {
        for (int i = 0; i < 12; ++i) e.inputs()[0].sensors[i] = uni(rng);
        e.inputs()[0].reward = uni(rng);
        if (!e.RunBatch(1).ok()) return;
        ++cycles;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      }
      rate[size_t(t)] = double(cycles) / elapsed;
    });
  for (std::thread& t : threads) t.join();
  double total = 0.0;
  for (double r : rate) total += r;
  measured[key] = total > 0.0 ? 1.0 / total : 0.0;
  return measured[key];
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
  if (auto it = OneRobotOneThread().find(int(state.range(0))); it != OneRobotOneThread().end()) {
    if (config.threads > 1)
      state.counters["of_split"] = benchmark::Counter(per_robot_s / (it->second / double(config.threads)));
    else if (robots > 1)
      state.counters["of_alone"] = benchmark::Counter(per_robot_s / it->second);
  }
  if (config.threads > 1) {
    if (const double copies_s = IndependentCopiesSeconds(shape, config.threads); copies_s > 0.0)
      state.counters["of_copies"] = benchmark::Counter(per_robot_s / copies_s);
  }
  const double floor_s = CoreFloorSeconds(shape);
  state.counters["core_floor_us"] = benchmark::Counter(floor_s * 1e6);
  state.counters["of_core_floor"] = benchmark::Counter(floor_s / per_robot_s);
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
