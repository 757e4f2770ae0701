// The CUDA engine's cycle on the GPU, against the targets of DESIGN.md section 8.
//
//   cuda_one_robot/default_field          one robot, default field (64 x 32^3): the full cycle
//   cuda_cycle/<field>_field/robots:<B>   B = 1, 8, 64, 256, 1024 robots per batch, default and
//                                         small (32 x 16^3) field; config max_robots = max_batch = B
//
// Every benchmark reports the same counters (times are medians over the timed batches):
//   batch_wall_us       steady-clock time of one RunBatch (what a caller waits: the H2D copy, the
//                       kernels, the D2H copy, the one synchronisation); also the Time column
//                       (mean, Google Benchmark's manual time)
//   batch_event_us      CUDA events on a side stream around RunBatch: the same span on the device
//                       clock
//   predict_us, evolve_us, motor_us
//                       per-stage GPU time from the engine's own CUDA events (StageTimingSink),
//                       sampled in a separate run of the same number of batches, since a sink
//                       switches the engine to its timed graphs
//   kernels_us          the stages' sum per batch: the cycle's GPU time without the two copies
//   robot_cycles_per_s, us_per_robot_cycle   from batch_wall_us
//   evolve_GBps         bytes model / evolve_us; bytes model: the field read once and written once,
//                       2 x 8 MiB per robot per cycle on the default field (2 x 0.5 MiB small)
//   copy_GBps           a device-to-device cudaMemcpy of 1 GiB (bytes read + written, median),
//                       measured once at start in the same run
//   evolve_frac_of_copy evolve_GBps / copy_GBps (target: >= 0.5 at 64+ robots)
//   h2d_per_batch, d2h_per_batch, allocs_in_loop   the engine's own counters over the timed loop
//                       (targets: 1, 1, 0)
//
// Inputs are random in [-1, 1] (sensors and reward), a fresh frame each cycle from a table made
// up front, written into the staging rows outside the timed span. Without a usable CUDA device
// the program prints "no CUDA device: <reason>" and exits 0.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/cuda/cuda_engine.h"
#include "gpu/engine.h"
#include "gpu/field_pool.h"
#include "gpu/stage_timing.h"

namespace fieldbrain {
namespace {

constexpr int kDevice = 0;  // the engine runs on device 0
constexpr int kSensors = 12;  // a PiCar-X sized robot, as in cpu_cycle_bench and torch_reference.py
constexpr int kMotors = 4;
constexpr uint64_t kSeedBase = 1;        // robot r has seed kSeedBase + r
constexpr uint32_t kInputSeed = 20240601;  // the random input table
constexpr int kInputFrames = 16;         // distinct frames per robot, cycled, so inputs change every cycle
constexpr std::array<int, 5> kBatchSizes = {1, 8, 64, 256, 1024};

// Warm-up: graph first launches, clocks up, L2 and TLB warm. The timed graphs (with a sink) are
// separate graphs and get their own warm-up.
constexpr int kWarmupBatches = 10;
constexpr int kStageWarmupBatches = 3;
// Timed batches: about kTargetRobotCycles robot-cycles, but at least kMinIterations (a stable
// median at large batches) and at most kMaxIterations (one robot: ~2000 x tens of us).
constexpr int kTargetRobotCycles = 8192;
constexpr int kMinIterations = 30;
constexpr int kMaxIterations = 2000;

// The bandwidth reference: one device-to-device copy of >= 1 GiB, median of several.
constexpr int64_t kCopyBytes = int64_t(1) << 30;
constexpr int kCopyWarmups = 2;
constexpr int kCopyRepeats = 11;
// Device memory beside the brain pool: the workspace (partials ~16 KiB per robot), the graphs and
// the context's own slack. Generous on purpose: a skip is better than an out-of-memory failure.
constexpr int64_t kWorkspaceHeadroom = int64_t(512) << 20;

constexpr double kGiB = double(int64_t(1) << 30);

double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double upper = v[mid];
  return 0.5 * (upper + *std::max_element(v.begin(), v.begin() + mid));
}

int IterationsFor(int robots) {
  return std::clamp(kTargetRobotCycles / robots, kMinIterations, kMaxIterations);
}

// RAII for the few raw CUDA objects the benchmark itself makes (the engine owns its own).
struct DeviceMemory {
  void* ptr = nullptr;
  ~DeviceMemory() {
    if (ptr != nullptr) cudaFree(ptr);
  }
};
struct CudaStream {
  cudaStream_t stream = nullptr;
  ~CudaStream() {
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};
struct CudaEvent {
  cudaEvent_t event = nullptr;
  ~CudaEvent() {
    if (event != nullptr) cudaEventDestroy(event);
  }
};

// Device-to-device cudaMemcpy bandwidth in bytes per second, counting bytes read and written.
absl::StatusOr<double> MeasureCopyBandwidth() {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  size_t free_bytes = 0, total_bytes = 0;
  FB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  if (int64_t(free_bytes) < 2 * kCopyBytes + kWorkspaceHeadroom)
    return absl::ResourceExhaustedError(absl::StrCat("the copy reference needs 2 x ", kCopyBytes / kGiB,
                                                     " GiB; only ", double(free_bytes) / kGiB, " GiB free"));
  DeviceMemory src, dst;
  FB_CUDA_CHECK(cudaMalloc(&src.ptr, size_t(kCopyBytes)));
  FB_CUDA_CHECK(cudaMalloc(&dst.ptr, size_t(kCopyBytes)));
  FB_CUDA_CHECK(cudaMemset(src.ptr, 0x5A, size_t(kCopyBytes)));  // touched, not left unmapped
  FB_CUDA_CHECK(cudaMemset(dst.ptr, 0, size_t(kCopyBytes)));
  CudaStream stream;
  CudaEvent start, stop;
  FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream.stream, cudaStreamNonBlocking));
  FB_CUDA_CHECK(cudaEventCreate(&start.event));
  FB_CUDA_CHECK(cudaEventCreate(&stop.event));
  std::vector<double> seconds;
  for (int i = 0; i < kCopyWarmups + kCopyRepeats; ++i) {
    FB_CUDA_CHECK(cudaEventRecord(start.event, stream.stream));
    FB_CUDA_CHECK(cudaMemcpyAsync(dst.ptr, src.ptr, size_t(kCopyBytes), cudaMemcpyDeviceToDevice, stream.stream));
    FB_CUDA_CHECK(cudaEventRecord(stop.event, stream.stream));
    FB_CUDA_CHECK(cudaEventSynchronize(stop.event));
    float ms = 0.0f;
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.event, stop.event));
    if (i >= kCopyWarmups) seconds.push_back(double(ms) * 1e-3);
  }
  const double median = Median(seconds);
  if (!(median > 0.0)) return absl::InternalError("the reference copy took no measurable time");
  return 2.0 * double(kCopyBytes) / median;
}

double g_copy_bytes_per_s = 0.0;  // set once in main, before any benchmark runs

// Collects the engine's per-stage GPU times, one sample per stage per batch, and their sum.
class StageSampler final : public StageTimingSink {
 public:
  static constexpr int kStages = int(Stage::kCount);

  void RecordStage(Stage s, double seconds, int batch_size) override {
    batch_[size_t(s)] += seconds;
    seen_[size_t(s)] = true;
  }
  // Closes one batch: its stage times become samples.
  void EndBatch() {
    double total = 0.0;
    bool any = false;
    for (int s = 0; s < kStages; ++s) {
      if (!seen_[size_t(s)]) continue;
      samples_[size_t(s)].push_back(batch_[size_t(s)]);
      total += batch_[size_t(s)];
      any = true;
    }
    if (any) totals_.push_back(total);
    batch_.fill(0.0);
    seen_.fill(false);
  }
  void Clear() {
    for (auto& v : samples_) v.clear();
    totals_.clear();
    batch_.fill(0.0);
    seen_.fill(false);
  }
  const std::vector<double>& samples(Stage s) const { return samples_[size_t(s)]; }
  const std::vector<double>& totals() const { return totals_; }

 private:
  std::array<double, kStages> batch_{};
  std::array<bool, kStages> seen_{};
  std::array<std::vector<double>, kStages> samples_;
  std::vector<double> totals_;
};

// One batch's random inputs per frame, made once so that the timed loop only copies them.
class InputTable {
 public:
  explicit InputTable(int robots) : robots_(robots), sensors_(size_t(kInputFrames) * robots * kSensors),
                                    rewards_(size_t(kInputFrames) * robots) {
    std::mt19937 rng(kInputSeed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    for (float& v : sensors_) v = uniform(rng);
    for (float& v : rewards_) v = uniform(rng);
  }
  void Fill(std::span<BatchInputRow> rows, int64_t cycle) const {
    const size_t frame = size_t(cycle % kInputFrames);
    for (int r = 0; r < robots_; ++r) {
      const float* s = &sensors_[(frame * robots_ + size_t(r)) * kSensors];
      std::copy(s, s + kSensors, rows[size_t(r)].sensors);
      rows[size_t(r)].reward = rewards_[frame * robots_ + size_t(r)];
    }
  }

 private:
  int robots_;
  std::vector<float> sensors_;
  std::vector<float> rewards_;
};

std::string Gib(int64_t bytes) { return absl::StrCat(double(bytes) / kGiB); }

void RunCycleBench(benchmark::State& state, const FieldShape& shape, const char* field_name, int robots) {
  // Skip, rather than fail, where the pool cannot fit the device's free memory.
  const FieldPool layout(shape, robots, robots);
  size_t free_bytes = 0, total_bytes = 0;
  if (const cudaError_t e = cudaMemGetInfo(&free_bytes, &total_bytes); e != cudaSuccess) {
    state.SkipWithError(absl::StrCat("cudaMemGetInfo: ", cudaGetErrorString(e)).c_str());
    return;
  }
  if (layout.bytes() + kWorkspaceHeadroom > int64_t(free_bytes)) {
    state.SkipWithError(absl::StrCat("skipped: the pool for ", robots, " robots (", Gib(layout.bytes()),
                                     " GiB + ", Gib(kWorkspaceHeadroom), " GiB headroom) does not fit the ",
                                     Gib(int64_t(free_bytes)), " GiB free")
                            .c_str());
    return;
  }

  EngineConfig config;
  config.shape = shape;
  config.max_robots = robots;
  config.max_batch = robots;
  absl::StatusOr<std::unique_ptr<Engine>> made = MakeEngine("cuda", config);
  if (!made.ok()) {
    state.SkipWithError(absl::StrCat("MakeEngine(cuda): ", made.status().ToString()).c_str());
    return;
  }
  Engine& engine = **made;
  for (int r = 0; r < robots; ++r) {
    absl::StatusOr<int> slot = engine.CreateBrain(BrainSpec{kSeedBase + uint64_t(r), kSensors, kMotors, true});
    if (!slot.ok()) {
      state.SkipWithError(absl::StrCat("CreateBrain: ", slot.status().ToString()).c_str());
      return;
    }
    engine.inputs()[size_t(r)].slot = *slot;
  }
  const InputTable table(robots);
  int64_t cycle = 0;
  auto run_one = [&]() -> absl::Status {
    table.Fill(engine.inputs(), cycle++);
    return engine.RunBatch(robots);
  };

  for (int i = 0; i < kWarmupBatches; ++i) {
    if (absl::Status s = run_one(); !s.ok()) {
      state.SkipWithError(absl::StrCat("RunBatch (warm-up): ", s.ToString()).c_str());
      return;
    }
  }

  // Stage times: a separate run with the sink set (the engine's timed graphs).
  const int64_t batches = int64_t(state.max_iterations);
  StageSampler sampler;
  engine.set_timing_sink(&sampler);
  for (int64_t i = 0; i < kStageWarmupBatches + batches; ++i) {
    if (i == kStageWarmupBatches) sampler.Clear();
    if (absl::Status s = run_one(); !s.ok()) {
      engine.set_timing_sink(nullptr);
      state.SkipWithError(absl::StrCat("RunBatch (stage timing): ", s.ToString()).c_str());
      return;
    }
    sampler.EndBatch();
  }
  engine.set_timing_sink(nullptr);

  // Timed loop: the untimed graphs, as the server runs them. Events go on a side stream just
  // outside the steady-clock span, so their cost is in neither figure's numerator.
  CudaStream side;
  CudaEvent start, stop;
  if (cudaStreamCreateWithFlags(&side.stream, cudaStreamNonBlocking) != cudaSuccess ||
      cudaEventCreate(&start.event) != cudaSuccess || cudaEventCreate(&stop.event) != cudaSuccess) {
    state.SkipWithError("cannot create the side stream or its events");
    return;
  }
  const std::optional<cuda::CudaCounters> before = cuda::CountersOf(engine);
  std::vector<double> wall, device_span;
  wall.reserve(size_t(batches));
  device_span.reserve(size_t(batches));
  for (auto _ : state) {
    table.Fill(engine.inputs(), cycle++);
    const cudaError_t recorded = cudaEventRecord(start.event, side.stream);
    const auto t0 = std::chrono::steady_clock::now();
    const absl::Status s = engine.RunBatch(robots);
    const auto t1 = std::chrono::steady_clock::now();
    if (recorded != cudaSuccess || cudaEventRecord(stop.event, side.stream) != cudaSuccess) {
      state.SkipWithError("cudaEventRecord on the side stream failed");
      break;
    }
    if (!s.ok()) {
      state.SkipWithError(absl::StrCat("RunBatch: ", s.ToString()).c_str());
      break;
    }
    const double seconds = std::chrono::duration<double>(t1 - t0).count();
    state.SetIterationTime(seconds);
    wall.push_back(seconds);
    float ms = 0.0f;
    if (cudaEventSynchronize(stop.event) != cudaSuccess ||
        cudaEventElapsedTime(&ms, start.event, stop.event) != cudaSuccess) {
      state.SkipWithError("side-stream events failed");
      break;
    }
    device_span.push_back(double(ms) * 1e-3);
    benchmark::DoNotOptimize(engine.outputs()[0].motors[0]);
  }
  if (state.error_occurred() || wall.empty()) return;
  const std::optional<cuda::CudaCounters> after = cuda::CountersOf(engine);

  // A broken cycle must not pass as a fast one.
  for (int r = 0; r < robots; ++r)
    for (int k = 0; k < kMotors; ++k)
      if (!std::isfinite(engine.outputs()[size_t(r)].motors[k])) {
        state.SkipWithError(absl::StrCat("robot ", r, " motor ", k, " is not finite").c_str());
        return;
      }

  const double wall_s = Median(wall);
  state.counters["robots"] = robots;
  state.counters["batch_wall_us"] = wall_s * 1e6;
  state.counters["batch_event_us"] = Median(device_span) * 1e6;
  state.counters["robot_cycles_per_s"] = double(robots) / wall_s;
  state.counters["us_per_robot_cycle"] = wall_s * 1e6 / double(robots);
  for (int s = 0; s < StageSampler::kStages; ++s) {
    const std::vector<double>& v = sampler.samples(Stage(s));
    if (!v.empty()) state.counters[absl::StrCat(StageName(Stage(s)), "_us")] = Median(v) * 1e6;
  }
  if (!sampler.totals().empty()) state.counters["kernels_us"] = Median(sampler.totals()) * 1e6;
  const std::vector<double>& evolve = sampler.samples(Stage::kEvolve);
  if (!evolve.empty()) {
    const double bytes = 2.0 * double(shape.floats()) * double(sizeof(float)) * double(robots);
    const double evolve_bytes_per_s = bytes / Median(evolve);
    state.counters["evolve_GBps"] = evolve_bytes_per_s * 1e-9;
    state.counters["evolve_frac_of_copy"] = evolve_bytes_per_s / g_copy_bytes_per_s;
  }
  state.counters["copy_GBps"] = g_copy_bytes_per_s * 1e-9;
  if (before && after) {
    const double n = double(wall.size());
    state.counters["h2d_per_batch"] = double(after->h2d_copies - before->h2d_copies) / n;
    state.counters["d2h_per_batch"] = double(after->d2h_copies - before->d2h_copies) / n;
    state.counters["allocs_in_loop"] =
        double((after->device_allocs - before->device_allocs) + (after->host_allocs - before->host_allocs));
  }
  state.SetLabel(absl::StrCat(field_name, " field ", shape.channels, "x", shape.nx, "^3, ", robots, " robots, ",
                              kSensors, " sensors, ", kMotors, " motors"));
}

void RegisterAll() {
  benchmark::RegisterBenchmark("cuda_one_robot/default_field",
                               [](benchmark::State& state) {
                                 RunCycleBench(state, FieldShape::Default(), "default", 1);
                               })
      ->Iterations(IterationsFor(1))
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  for (const bool default_field : {true, false})
    for (const int robots : kBatchSizes) {
      const FieldShape shape = default_field ? FieldShape::Default() : FieldShape::Small();
      const char* field_name = default_field ? "default" : "small";
      benchmark::RegisterBenchmark(absl::StrCat("cuda_cycle/", field_name, "_field/robots:", robots).c_str(),
                                   [shape, field_name, robots](benchmark::State& state) {
                                     RunCycleBench(state, shape, field_name, robots);
                                   })
          ->Iterations(IterationsFor(robots))
          ->UseManualTime()
          ->Unit(benchmark::kMicrosecond);
    }
}

}  // namespace
}  // namespace fieldbrain

int main(int argc, char** argv) {
  using namespace fieldbrain;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;

  // Harmless where there is no GPU: say why and succeed.
  if (const absl::Status probe = cuda::ProbeCudaDevice(); !probe.ok()) {
    std::printf("no CUDA device: %s\n", std::string(probe.message()).c_str());
    return 0;
  }
  cudaDeviceProp prop{};
  if (const cudaError_t e = cudaGetDeviceProperties(&prop, kDevice); e != cudaSuccess) {
    std::fprintf(stderr, "cudaGetDeviceProperties: %s\n", cudaGetErrorString(e));
    return 1;
  }
  std::printf("device: %s (compute capability %d.%d, %d SMs, %.1f GiB)\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount, double(prop.totalGlobalMem) / kGiB);

  const absl::StatusOr<double> copy = MeasureCopyBandwidth();
  if (!copy.ok()) {
    std::fprintf(stderr, "cannot measure the reference copy bandwidth: %s\n", copy.status().ToString().c_str());
    return 1;
  }
  g_copy_bytes_per_s = *copy;
  std::printf("reference: device-to-device cudaMemcpy of %.0f GiB, %.1f GB/s (bytes read + written, median of %d)\n",
              double(kCopyBytes) / kGiB, *copy * 1e-9, kCopyRepeats);
  std::fflush(stdout);
  benchmark::AddCustomContext("cuda_device", prop.name);
  benchmark::AddCustomContext("copy_GBps", absl::StrCat(*copy * 1e-9));
  benchmark::AddCustomContext("sensors", absl::StrCat(kSensors));
  benchmark::AddCustomContext("motors", absl::StrCat(kMotors));

  RegisterAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
