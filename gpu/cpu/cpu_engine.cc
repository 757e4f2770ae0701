#include "gpu/cpu/cpu_engine.h"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/cpu/cache_aligned.h"
#include "gpu/cpu/field_pass.h"
#include "gpu/cpu/robot_steps.h"
#include "gpu/engine_backend.h"
#include "gpu/field_pool.h"
#include "gpu/memory_budget.h"
#include "gpu/model/field_init.h"
#include "gpu/robot_params.h"

namespace fieldbrain::cpu {
namespace {

// A batch's field pass takes one more thread per this many field floats (two tiny-field robots,
// whose passes take about 30 us of one core): below that, waking a core costs more than it saves.
constexpr int64_t kFieldFloatsPerThread = int64_t(1) << 14;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "cpu";
}

// body(i) for every i in [0, n), on `threads` threads in a static schedule; on one, here. libgomp
// mallocs and frees a team for every one-thread parallel region (it keeps larger teams for the
// next region), and a batch's cycle allocates nothing.
template <typename Body>
void ForEach(int n, int threads, Body body) {
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int i = 0; i < n; ++i) body(i);
}

// body(t, team) on every thread t of a team of up to `threads` (OpenMP may give fewer), in one
// parallel region; on one, here (as ForEach, for libgomp's team allocation).
template <typename Body>
void OnThreads(int threads, Body body) {
  if (threads <= 1) {
    body(0, 1);
    return;
  }
#pragma omp parallel num_threads(threads)
  body(omp_get_thread_num(), omp_get_num_threads());
}

// Bytes of the largest cache of cpu0 (sysfs: the guest's own view, one CCD's L3 on AMD, where
// glibc's sysconf adds up the socket's); 0 where nothing says, and then nothing is streamed.
int64_t LastLevelCacheBytes() {
  int64_t largest = 0;
  for (int index = 0;; ++index) {
    std::ifstream in("/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/size");
    if (!in) break;
    int64_t value = 0;
    std::string unit;
    if (!(in >> value)) continue;
    in >> unit;
    const int64_t scale = unit == "K" ? 1024 : unit == "M" ? 1024 * 1024 : unit == "G" ? 1024 * 1024 * 1024 : 1;
    largest = std::max(largest, value * scale);
  }
  if (largest > 0) return largest;
  const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return std::max<int64_t>({0, l3, l2});
}

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

class CpuBackend final : public EngineBackend {
 public:
  CpuBackend(const EngineConfig& config, const FieldPool& pool, std::unique_ptr<std::byte[], FreeDeleter> block)
      : config_(config),
        pool_(pool),
        block_(std::move(block)),
        threads_(config.threads > 0 ? config.threads : omp_get_max_threads()),
        inputs_(config.max_batch),
        outputs_(config.max_batch),
        errors_(size_t(config.max_batch) * kMaxSensors),
        plane_pools_(size_t(config.max_batch) * config.shape.nx),
        pattern_z_(size_t(config.max_batch) * size_t(PatternZFloats(config.shape))),
        memory_planes_(size_t(config.max_batch) * size_t(config.shape.nx) * size_t(MemoryPlaneFloats(config.shape))),
        pooled_(size_t(config.max_robots) * size_t(config.shape.memory()) * size_t(config.shape.coarse_voxels())),
        last_recall_(size_t(config.max_robots)),
        slab_planes_(SlabPlanes(config.shape)),
        cache_bytes_(LastLevelCacheBytes()),
        device_(CpuModelName()) {
    scratch_.reserve(threads_);
    for (int t = 0; t < threads_; ++t) scratch_.push_back(std::make_unique<SlabScratch>(config.shape));
  }

  std::string_view kind() const override { return "cpu"; }
  std::string device_name() const override { return device_; }
  std::string device_description() const override {
    const std::optional<int64_t> total = HostMemoryTotal();
    const std::optional<int64_t> available = HostMemoryAvailable();
    return absl::StrCat(device_, ", ", threads_, " threads, ",
                        cache_bytes_ > 0 ? FormatBytes(cache_bytes_) : "unknown", " last-level cache, ",
                        total ? FormatBytes(*total) : "unknown", " memory (",
                        available ? FormatBytes(*available) : "unknown", " available)");
  }
  std::optional<DeviceMemory> device_memory() const override { return std::nullopt; }
  std::span<BatchInputRow> inputs() override { return inputs_; }
  std::span<const BatchOutputRow> outputs() const override { return outputs_; }
  void set_timing_sink(StageTimingSink* sink) override { sink_ = sink; }

  absl::Status InitBrain(int slot, const RobotParams& params, uint64_t seed) override {
    *Params(slot) = params;
    InitRobotState(params, *State(slot));
    float* field = Field(pool_.current_buffer(slot));
    const int64_t n = config_.shape.floats();
    const FieldShape shape = config_.shape;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int64_t i = 0; i < n; ++i) field[i] = model::initial_field_value(seed, shape, i);
    std::memset(Pattern(slot), 0, pool_.pattern_bytes());
    *Memory(slot) = MemoryBank{};
    std::memset(MemoryPatterns(slot), 0, size_t(pool_.memory_patterns_bytes()));
    PoolMemoryChannels(field, config_.shape, Pooled(slot));
    last_recall_[size_t(slot)].valid = false;
    return absl::OkStatus();
  }

  absl::Status RunBatch(std::span<const BatchInputRow> rows) override {
    const int n = int(rows.size());
    // Only threads with work worth sharing: a small batch runs on fewer (one tiny-field robot on
    // one).
    const int robot_threads = std::clamp(n, 1, threads_);
    const int field_threads =
        int(std::clamp<int64_t>(int64_t(n) * config_.shape.floats() / kFieldFloatsPerThread, 1, threads_));
    // A batch whose fields, old and new, outgrow the cache writes the new ones past it: each is
    // read again only when the batch comes round, from memory either way (streaming_store.h).
    // Three quarters of it, since it holds the scratch, the robots' state and other programs'
    // data too: one default-field robot (16 MiB) keeps its fields in a 32 MiB L3, and its next
    // cycle reads them from there; two measured faster streamed.
    const bool stream_out = cache_bytes_ > 0 && int64_t(n) * 2 * pool_.field_bytes() > cache_bytes_ / 4 * 3;
    StepSeconds seconds;
    if (robot_threads == field_threads && n % robot_threads == 0)
      RunRobotsWhole(rows, robot_threads, stream_out, seconds);
    else
      RunInSteps(rows, robot_threads, field_threads, stream_out, seconds);
    if (sink_) {
      sink_->RecordStage(Stage::kPredict, seconds.open, n);
      sink_->RecordStage(Stage::kMemory, seconds.memory, n);
      sink_->RecordStage(Stage::kEvolve, seconds.field, n);
      sink_->RecordStage(Stage::kMotor, seconds.close, n);
    }
    return absl::OkStatus();
  }

  absl::Status CopyOut(int slot, BrainSnapshot& s) override {
    s.params = *Params(slot);
    s.state = *State(slot);
    const float* field = Field(pool_.current_buffer(slot));
    std::copy(field, field + s.field.size(), s.field.begin());
    const float* pattern = Pattern(slot);
    std::copy(pattern, pattern + s.pattern.size(), s.pattern.begin());
    s.memory = *Memory(slot);
    const float* stored = MemoryPatterns(slot);
    std::copy(stored, stored + s.memory_patterns.size(), s.memory_patterns.begin());
    return absl::OkStatus();
  }

  absl::Status CopyIn(int slot, const BrainSnapshot& s) override {
    *Params(slot) = s.params;
    *State(slot) = s.state;
    std::memcpy(Field(pool_.current_buffer(slot)), s.field.data(), s.field.size() * sizeof(float));
    std::memcpy(Pattern(slot), s.pattern.data(), s.pattern.size() * sizeof(float));
    *Memory(slot) = s.memory;
    std::memcpy(MemoryPatterns(slot), s.memory_patterns.data(), s.memory_patterns.size() * sizeof(float));
    PoolMemoryChannels(Field(pool_.current_buffer(slot)), config_.shape, Pooled(slot));
    last_recall_[size_t(slot)].valid = false;
    return absl::OkStatus();
  }

 private:
  // Where a batch's time went, step by step (the stages it reports).
  struct StepSeconds {
    double open = 0, memory = 0, field = 0, close = 0;
  };

  // The robots divide evenly among the threads: each thread runs its share from the first step
  // to the last in one parallel region, and nothing waits for anything until the batch ends. An
  // OpenMP runtime whose workers sleep between regions (the daemon's, server/main.cc) then wakes
  // them once a batch instead of once a step, which on a virtual machine costs tens of
  // microseconds a time (docs/benchmarks.md, issue 24's fifteenth session). The steps' times are
  // thread 0's, its share of each step.
  void RunRobotsWhole(std::span<const BatchInputRow> rows, int threads, bool stream_out, StepSeconds& seconds) {
    const int n = int(rows.size()), slabs = config_.shape.nx / slab_planes_;
    OnThreads(threads, [&](int t, int team) {
      const int begin = t * n / team, end = (t + 1) * n / team;
      auto clock = std::chrono::steady_clock::now();
      auto lap = [&](double& step) {
        if (t != 0) return;
        const auto now = std::chrono::steady_clock::now();
        step = std::chrono::duration<double>(now - clock).count();
        clock = now;
      };
      for (int r = begin; r < end; ++r) OpenRow(rows[r], r);
      lap(seconds.open);
      for (int r = begin; r < end; ++r) MemoryRow(rows[r], r);
      lap(seconds.memory);
      for (int r = begin; r < end; ++r)
        for (int slab = 0; slab < slabs; ++slab) EvolveRowSlab(rows[r], r, slab, stream_out, *scratch_[t]);
      lap(seconds.field);
      for (int r = begin; r < end; ++r) CloseRow(rows[r], r);
      lap(seconds.close);
    });
  }

  // Otherwise each step is a parallel loop of its own: the field pass spreads (robot, slab) jobs
  // over its threads, so a batch of fewer robots than threads, or of robots that do not divide
  // evenly, still keeps every thread busy. Each robot's steps stay on one thread through the
  // loops wherever the two thread counts agree (static schedules), so its state stays in that
  // core's cache.
  void RunInSteps(std::span<const BatchInputRow> rows, int robot_threads, int field_threads, bool stream_out,
                  StepSeconds& seconds) {
    const int n = int(rows.size()), slabs = config_.shape.nx / slab_planes_;
    const auto t0 = std::chrono::steady_clock::now();
    ForEach(n, robot_threads, [&](int r) { OpenRow(rows[r], r); });
    const auto t1 = std::chrono::steady_clock::now();
    ForEach(n, robot_threads, [&](int r) { MemoryRow(rows[r], r); });
    const auto t2 = std::chrono::steady_clock::now();
    ForEach(n * slabs, field_threads, [&](int job) {
      EvolveRowSlab(rows[job / slabs], job / slabs, job % slabs, stream_out, *scratch_[omp_get_thread_num()]);
    });
    const auto t3 = std::chrono::steady_clock::now();
    ForEach(n, robot_threads, [&](int r) { CloseRow(rows[r], r); });
    seconds = {std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
               std::chrono::duration<double>(t3 - t2).count(), SecondsSince(t3)};
  }

  // The steps of batch row r, in the order a cycle takes them.
  void OpenRow(const BatchInputRow& row, int r) {
    OpenCycle(*Params(row.slot), *State(row.slot), row.sensors, row.reward, &errors_[size_t(r) * kMaxSensors]);
  }
  void MemoryRow(const BatchInputRow& row, int r) {
    const int slot = row.slot;
    MemoryStep(*Params(slot), *State(slot), *Memory(slot), MemoryPatterns(slot), Pooled(slot), config_.shape,
               row.sensors, row.reward, Pattern(slot), last_recall_[size_t(slot)]);
    if (State(slot)->pattern_active) UpsamplePatternZ(Pattern(slot), config_.shape, PatternZ(r));
  }
  void EvolveRowSlab(const BatchInputRow& row, int r, int slab, bool stream_out, SlabScratch& scratch) {
    const int slot = row.slot, x = slab * slab_planes_;
    const SlabJob job{&config_.shape,
                      x,
                      slab_planes_,
                      Params(slot),
                      row.sensors,
                      &errors_[size_t(r) * kMaxSensors],
                      Field(pool_.current_buffer(slot)),
                      PatternZ(r),
                      State(slot)->pattern_active != 0,
                      Field(pool_.spare_buffer(r)),
                      MemoryPlane(r, x),
                      &plane_pools_[size_t(r) * config_.shape.nx + x],
                      stream_out};
    EvolveSlab(job, scratch);
  }
  void CloseRow(const BatchInputRow& row, int r) {
    model::FieldSummary summary;
    AddPlanePools(&plane_pools_[size_t(r) * config_.shape.nx], config_.shape, summary);
    PoolFromMemoryPlanes(MemoryPlane(r, 0), config_.shape, Pooled(row.slot));
    CloseCycle(*Params(row.slot), *State(row.slot), config_.shape, summary, row.sensors,
               &errors_[size_t(r) * kMaxSensors], row.reward, outputs_[r]);
  }

  float* Field(int buffer) { return reinterpret_cast<float*>(block_.get() + pool_.field_offset(buffer)); }
  float* Pattern(int slot) { return reinterpret_cast<float*>(block_.get() + pool_.pattern_offset(slot)); }
  RobotParams* Params(int slot) { return reinterpret_cast<RobotParams*>(block_.get() + pool_.params_offset(slot)); }
  RobotState* State(int slot) { return reinterpret_cast<RobotState*>(block_.get() + pool_.state_offset(slot)); }
  float* MemoryPlane(int row, int x) {
    const size_t plane = size_t(row) * config_.shape.nx + size_t(x);
    return memory_planes_.data() + plane * size_t(MemoryPlaneFloats(config_.shape));
  }
  float* Pooled(int slot) { return pooled_.data() + size_t(slot) * size_t(pool_.pattern_floats()); }
  float* PatternZ(int row) { return pattern_z_.data() + size_t(row) * size_t(PatternZFloats(config_.shape)); }
  MemoryBank* Memory(int slot) { return reinterpret_cast<MemoryBank*>(block_.get() + pool_.memory_offset(slot)); }
  float* MemoryPatterns(int slot) {
    return reinterpret_cast<float*>(block_.get() + pool_.memory_patterns_offset(slot));
  }

  EngineConfig config_;
  const FieldPool& pool_;
  std::unique_ptr<std::byte[], FreeDeleter> block_;
  int threads_;
  std::vector<BatchInputRow> inputs_;
  std::vector<BatchOutputRow> outputs_;
  CacheAlignedVector<float> errors_;
  CacheAlignedVector<PlanePool> plane_pools_;  // per batch row and x plane
  CacheAlignedVector<float> pattern_z_;  // per batch row: the recalled pattern upsampled along z
  CacheAlignedVector<float> memory_planes_;  // per batch row and x plane: the pass's memory plane sums
  CacheAlignedVector<float> pooled_;  // per slot: the coarse memory channels of its current field
  std::vector<RecallCosines> last_recall_;  // per slot
  std::vector<std::unique_ptr<SlabScratch>> scratch_;
  int slab_planes_;  // SlabPlanes of the shape: x planes per field-pass job
  int64_t cache_bytes_;  // LastLevelCacheBytes
  std::string device_;
  StageTimingSink* sink_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> MakeCpuEngine(const EngineConfig& config) {
  auto pool = std::make_unique<FieldPool>(config.shape, config.max_robots, config.max_batch);
  const FieldPool& layout = *pool;
  if (const std::optional<int64_t> available = HostMemoryAvailable(); available.has_value()) {
    if (absl::Status s = CheckMemoryFits(DescribePool(config), layout.bytes(), "this machine", *available);
        !s.ok())
      return s;
  }
  // In 2 MiB pages where the kernel has them (transparent huge pages, "madvise" or "always"): the
  // pass walks every 4 KiB plane of a field each cycle, and with small pages every plane is a TLB
  // entry of its own.
  constexpr size_t kHugePage = size_t(2) << 20;
  const size_t block_bytes = (size_t(layout.bytes()) + kHugePage - 1) / kHugePage * kHugePage;
  std::unique_ptr<std::byte[], FreeDeleter> block(static_cast<std::byte*>(std::aligned_alloc(kHugePage, block_bytes)));
  if (!block)
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate the brain pool of ", FormatBytes(layout.bytes())));
  madvise(block.get(), block_bytes, MADV_HUGEPAGE);  // advice only: without it the pool works as well
  // Touch every page now, from the threads that will work on it: memory the kernel promised but
  // cannot deliver fails here, at start, instead of getting the daemon killed while it serves.
  const int threads = config.threads > 0 ? config.threads : omp_get_max_threads();
  const int64_t bytes = layout.bytes();
  constexpr int64_t kChunk = int64_t(1) << 20;
  const int64_t chunks = (bytes + kChunk - 1) / kChunk;
  std::byte* base = block.get();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t begin = c * kChunk;
    std::memset(base + begin, 0, size_t(std::min(kChunk, bytes - begin)));
  }
  auto backend = std::make_unique<CpuBackend>(config, *pool, std::move(block));
  return std::make_unique<Engine>(config, std::move(pool), std::move(backend));
}

}  // namespace fieldbrain::cpu
