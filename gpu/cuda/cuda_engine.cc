// The CUDA engine: host side (compiled by the C++ compiler; the kernels are behind launch.h).
//
// Resources, all made once in Init() and owned by RAII members: one stream, four timing events,
// the brain pool (one cudaMalloc laid out by FieldPool), one device workspace, one pinned block
// (input staging + output rows), and the cycle graphs. RunBatch allocates nothing, makes one
// host-to-device and one device-to-host copy, and synchronises once.
#include "gpu/cuda/cuda_engine.h"

#include <cuda_runtime_api.h>

#include <array>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/cuda/cycle_graph.h"
#include "gpu/cuda/device_buffer.h"
#include "gpu/cuda/evolve_plan.h"
#include "gpu/cuda/launch.h"
#include "gpu/cuda/staging.h"
#include "gpu/engine_backend.h"
#include "gpu/field_pool.h"
#include "gpu/memory_budget.h"
#include "gpu/robot_params.h"
#if defined(FIELDBRAIN_CUDA_EMU)
#include "cuda_emu/control.h"
#endif

namespace fieldbrain::cuda {
namespace {

constexpr int kDevice = 0;
constexpr int kMaxGridZ = 65535;  // batch rows are the evolve grid's z dimension
// The emulation build leaves red zones between the brains in the pool and poisons them, so a
// kernel that overruns one brain faults under AddressSanitizer instead of writing into the next.
#if defined(FIELDBRAIN_CUDA_EMU)
constexpr int64_t kPoolGuardBytes = 256;
#else
constexpr int64_t kPoolGuardBytes = 0;
#endif

#ifndef FIELDBRAIN_CUDA_ARCHITECTURES
#define FIELDBRAIN_CUDA_ARCHITECTURES "unknown"
#endif

// Event i is recorded before stage i; stage i runs between events i and i + 1.
constexpr int kEvents = 5;
constexpr std::array<Stage, kEvents - 1> kEventStages = {Stage::kPredict, Stage::kMemory, Stage::kEvolve,
                                                         Stage::kMotor};

absl::Status CheckConfig(const EngineConfig& c) {
  if (!c.shape.valid())
    return absl::InvalidArgumentError(absl::StrCat("invalid field shape ", c.shape.channels, "x", c.shape.nx, "x",
                                                   c.shape.ny, "x", c.shape.nz));
  if (c.max_robots < 1) return absl::InvalidArgumentError("max_robots must be at least 1");
  if (c.max_batch < 1 || c.max_batch > c.max_robots || c.max_batch > kMaxGridZ)
    return absl::InvalidArgumentError(
        absl::StrCat("max_batch must be in 1..max_robots (", c.max_robots, ") and at most ", kMaxGridZ));
  return absl::OkStatus();
}

class CudaBackend final : public EngineBackend {
 public:
  CudaBackend(const EngineConfig& config, const CudaEngineOptions& options, const FieldPool& pool,
              const EvolveTile& tile, std::string name, std::string description)
      : config_(config),
        options_(options),
        pool_(pool),
        tile_(tile),
        layout_(config.max_batch, tile.blocks_per_robot, kPartialFloats),
        device_name_(std::move(name)),
        device_description_(std::move(description)) {}

  absl::Status Init();

  std::string_view kind() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }
  std::string device_description() const override { return device_description_; }
  std::optional<DeviceMemory> device_memory() const override;
  std::span<BatchInputRow> inputs() override { return inputs_; }
  std::span<const BatchOutputRow> outputs() const override { return outputs_; }
  void set_timing_sink(StageTimingSink* sink) override { sink_ = sink; }

  absl::Status InitBrain(int slot, const RobotParams& params, uint64_t seed) override;
  absl::Status RunBatch(std::span<const BatchInputRow> rows) override;
  absl::Status CopyOut(int slot, BrainSnapshot& snap) override;
  absl::Status CopyIn(int slot, const BrainSnapshot& snap) override;

  const CudaCounters& counters() const { return counters_; }

 private:
  // Puts one cycle on the stream: the input copy, the kernels for `grid_rows` rows, the output
  // copy; copies cover `copy_rows` rows. Timing events only when `timed`.
  absl::Status EnqueueCycle(int grid_rows, int copy_rows, bool timed, bool capturing, CudaCounters& counters);
  absl::Status RecordEvent(int i, bool capturing);
  absl::Status ReportStages(int n);
  // Launches the cycle of the rows staged for `n` and waits for its output copy.
  absl::Status LaunchAndWait(int n, bool timed);

  float* Field(int buffer) const { return pool_mem_.at<float>(pool_.field_offset(buffer)); }
  float* Pattern(int slot) const { return pool_mem_.at<float>(pool_.pattern_offset(slot)); }
  RobotParams* Params(int slot) const { return pool_mem_.at<RobotParams>(pool_.params_offset(slot)); }
  RobotState* State(int slot) const { return pool_mem_.at<RobotState>(pool_.state_offset(slot)); }
  MemoryBank* Memory(int slot) const { return pool_mem_.at<MemoryBank>(pool_.memory_offset(slot)); }
  float* MemoryPatterns(int slot) const { return pool_mem_.at<float>(pool_.memory_patterns_offset(slot)); }
  int64_t PatternFloats() const { return int64_t(config_.shape.memory()) * config_.shape.coarse_voxels(); }
  // The snapshot staging area, after the batch staging in the same pinned block (one host
  // allocation at start): a brain's parts, each aligned, in the order SnapshotInto copies them.
  struct SnapshotStaging {
    int64_t field_at, pattern_at, params_at, state_at, memory_at, patterns_at, end;
  };
  SnapshotStaging SnapshotLayout() const {
    SnapshotStaging l{};
    l.field_at = AlignStaging(layout_.pinned_bytes);
    l.pattern_at = AlignStaging(l.field_at + config_.shape.floats() * int64_t(sizeof(float)));
    l.params_at = AlignStaging(l.pattern_at + PatternFloats() * int64_t(sizeof(float)));
    l.state_at = AlignStaging(l.params_at + int64_t(sizeof(RobotParams)));
    l.memory_at = AlignStaging(l.state_at + int64_t(sizeof(RobotState)));
    l.patterns_at = AlignStaging(l.memory_at + int64_t(sizeof(MemoryBank)));
    l.end = AlignStaging(l.patterns_at + kMemoryEntries * PatternFloats() * int64_t(sizeof(float)));
    return l;
  }

  EngineConfig config_;
  CudaEngineOptions options_;
  const FieldPool& pool_;
  EvolveTile tile_;
  StagingLayout layout_;
  std::string device_name_;
  std::string device_description_;
  CudaCounters counters_;
  StageTimingSink* sink_ = nullptr;

  // Declared before what uses them, so they are destroyed after.
  Stream stream_;
  std::array<Event, kEvents> events_;
  DeviceBuffer pool_mem_;
  DeviceBuffer workspace_;
  PinnedBuffer pinned_;
  std::span<BatchInputRow> inputs_;
  std::span<BatchOutputRow> outputs_;
  CycleArgs args_;
  std::vector<int> buckets_;
  std::array<std::vector<CycleGraph>, 2> graphs_;  // [timed][bucket]
};

absl::Status CudaBackend::Init() {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  cudaStream_t stream = nullptr;
  FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = Stream(stream);
  for (Event& event : events_) {
    cudaEvent_t e = nullptr;
    FB_CUDA_CHECK(cudaEventCreate(&e));
    event = Event(e);
  }

  if (cudaError_t e = AllocateDevice(counters_, size_t(pool_.bytes()), pool_mem_); e != cudaSuccess)
    return absl::ResourceExhaustedError(absl::StrCat("cannot allocate the brain pool of ", pool_.bytes(),
                                                     " bytes on ", device_name_, ": ", cudaGetErrorString(e)));
#if defined(FIELDBRAIN_CUDA_EMU)
  for (const auto& [offset, bytes] : pool_.Gaps()) emu::MarkNoAccess(pool_mem_.data() + offset, size_t(bytes));
#endif
  FB_CUDA_CHECK(AllocateDevice(counters_, size_t(layout_.workspace_bytes), workspace_));
  // One pinned block: the batch staging, then the snapshot staging of checkpoints.
  FB_CUDA_CHECK(AllocatePinned(counters_, size_t(SnapshotLayout().end), pinned_));
  FB_CUDA_CHECK(cudaMemsetAsync(workspace_.data(), 0, workspace_.bytes(), stream_.get()));
  std::memset(pinned_.data(), 0, pinned_.bytes());

  const int n = config_.max_batch;
  inputs_ = std::span<BatchInputRow>(pinned_.at<BatchInputRow>(layout_.rows_at), size_t(n));
  outputs_ = std::span<BatchOutputRow>(pinned_.at<BatchOutputRow>(layout_.pinned_outputs_at), size_t(n));
  std::uninitialized_default_construct(inputs_.begin(), inputs_.end());
  std::uninitialized_default_construct(outputs_.begin(), outputs_.end());

  args_.shape = config_.shape;
  args_.tile = tile_;
  args_.count = workspace_.at<int32_t>(layout_.count_at);
  args_.field_in = workspace_.at<int64_t>(layout_.field_in_at);
  args_.field_out = workspace_.at<int64_t>(layout_.field_out_at);
  args_.rows = workspace_.at<BatchInputRow>(layout_.rows_at);
  args_.pool = pool_mem_.data();
  args_.params = Params(0);
  args_.states = State(0);
  args_.patterns = Pattern(0);
  args_.pattern_stride = pool_.pattern_stride() / int64_t(sizeof(float));
  args_.banks = Memory(0);
  args_.memory_patterns = MemoryPatterns(0);
  args_.memory_patterns_stride = pool_.memory_patterns_stride() / int64_t(sizeof(float));
  args_.errors = workspace_.at<float>(layout_.ws_errors_at);
  args_.partials = workspace_.at<float>(layout_.ws_partials_at);
  args_.outputs = workspace_.at<BatchOutputRow>(layout_.ws_outputs_at);

  FB_CUDA_CHECK(PrepareEvolve(tile_));
  FB_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));  // the stream idle before any capture
  buckets_ = BatchBuckets(n);
  if (options_.use_graphs) {
    CudaCounters capture_only;  // capture enqueues nothing that runs; launches count the nodes
    for (int timed = 0; timed < 2; ++timed)
      for (int rows : buckets_) {
        absl::StatusOr<CycleGraph> graph = CycleGraph::Capture(
            stream_.get(), [&] { return EnqueueCycle(rows, rows, timed != 0, true, capture_only); });
        if (!graph.ok()) return graph.status();
        graphs_[timed].push_back(*std::move(graph));
      }
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::RecordEvent(int i, bool capturing) {
  FB_CUDA_CHECK(cudaEventRecordWithFlags(events_[i].get(), stream_.get(),
                                         capturing ? cudaEventRecordExternal : cudaEventRecordDefault));
  return absl::OkStatus();
}

absl::Status CudaBackend::EnqueueCycle(int grid_rows, int copy_rows, bool timed, bool capturing,
                                      CudaCounters& counters) {
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(CopyAsync(counters, workspace_.data(), pinned_.data(), size_t(layout_.input_copy_bytes(copy_rows)),
                          cudaMemcpyHostToDevice, s));
  if (timed) FB_RETURN_IF_ERROR(RecordEvent(0, capturing));
  FB_CUDA_CHECK(LaunchOpenCycle(args_, grid_rows, s));
  if (timed) FB_RETURN_IF_ERROR(RecordEvent(1, capturing));
  FB_CUDA_CHECK(LaunchMemory(args_, grid_rows, s));
  if (timed) FB_RETURN_IF_ERROR(RecordEvent(2, capturing));
  FB_CUDA_CHECK(LaunchEvolve(args_, grid_rows, s));
  if (timed) FB_RETURN_IF_ERROR(RecordEvent(3, capturing));
  FB_CUDA_CHECK(LaunchCloseCycle(args_, grid_rows, s));
  if (timed) FB_RETURN_IF_ERROR(RecordEvent(4, capturing));
  FB_CUDA_CHECK(CopyAsync(counters, pinned_.at<std::byte>(layout_.pinned_outputs_at),
                          workspace_.at<std::byte>(layout_.ws_outputs_at),
                          size_t(layout_.output_copy_bytes(copy_rows)), cudaMemcpyDeviceToHost, s));
  return absl::OkStatus();
}

absl::Status CudaBackend::RunBatch(std::span<const BatchInputRow> rows) {
  const int n = int(rows.size());
  FB_CUDA_CHECK(cudaSetDevice(kDevice));

  *pinned_.at<int32_t>(layout_.count_at) = n;
  int64_t* field_in = pinned_.at<int64_t>(layout_.field_in_at);
  int64_t* field_out = pinned_.at<int64_t>(layout_.field_out_at);
  for (int r = 0; r < n; ++r) {
    field_in[r] = pool_.field_offset(pool_.current_buffer(rows[r].slot));
    field_out[r] = pool_.field_offset(pool_.spare_buffer(r));
  }

  const bool timed = sink_ != nullptr;
  if (absl::Status s = LaunchAndWait(n, timed); !s.ok()) {
    cudaStreamSynchronize(stream_.get());  // let whatever was queued finish before anything else
    return s;
  }
  ++counters_.batches;
  if (timed) return ReportStages(n);
  return absl::OkStatus();
}

absl::Status CudaBackend::LaunchAndWait(int n, bool timed) {
  if (options_.use_graphs) {
    FB_RETURN_IF_ERROR(graphs_[timed ? 1 : 0][size_t(BucketIndex(buckets_, n))].Launch(stream_.get(), counters_));
  } else {
    FB_RETURN_IF_ERROR(EnqueueCycle(n, n, timed, false, counters_));
  }
  FB_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  return absl::OkStatus();
}

absl::Status CudaBackend::ReportStages(int n) {
  for (int i = 0; i + 1 < kEvents; ++i) {
    float ms = 0.0f;
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, events_[i].get(), events_[i + 1].get()));
    sink_->RecordStage(kEventStages[size_t(i)], double(ms) * 1e-3, n);
  }
  return absl::OkStatus();
}

absl::Status CudaBackend::InitBrain(int slot, const RobotParams& params, uint64_t seed) {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  const auto state = std::make_unique<RobotState>();
  InitRobotState(params, *state);
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(CopyAsync(counters_, Params(slot), &params, sizeof(RobotParams), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, State(slot), state.get(), sizeof(RobotState), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(LaunchInitField(Field(pool_.current_buffer(slot)), config_.shape, seed, s));
  FB_CUDA_CHECK(cudaMemsetAsync(Pattern(slot), 0, size_t(pool_.pattern_bytes()), s));
  FB_CUDA_CHECK(cudaMemsetAsync(Memory(slot), 0, sizeof(MemoryBank), s));  // MemoryBank{} is all zeros
  FB_CUDA_CHECK(cudaMemsetAsync(MemoryPatterns(slot), 0, size_t(pool_.memory_patterns_bytes()), s));
  FB_CUDA_CHECK(cudaStreamSynchronize(s));  // before `params` and `state` go away
  return absl::OkStatus();
}

std::optional<DeviceMemory> CudaBackend::device_memory() const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(kDevice) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return std::nullopt;
  }
  return DeviceMemory{int64_t(total_bytes - free_bytes), int64_t(total_bytes)};
}

absl::Status CudaBackend::CopyOut(int slot, BrainSnapshot& snap) {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  // Device to the pinned staging (DMA at full speed), then a host copy into the snapshot.
  const SnapshotStaging l = SnapshotLayout();
  cudaStream_t s = stream_.get();
  const size_t field_bytes = snap.field.size() * sizeof(float);
  const size_t pattern_bytes = snap.pattern.size() * sizeof(float);
  const size_t patterns_bytes = snap.memory_patterns.size() * sizeof(float);
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.field_at), Field(pool_.current_buffer(slot)), field_bytes,
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.pattern_at), Pattern(slot), pattern_bytes,
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.params_at), Params(slot), sizeof(RobotParams),
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.state_at), State(slot), sizeof(RobotState),
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.memory_at), Memory(slot), sizeof(MemoryBank),
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(CopyAsync(counters_, pinned_.at<std::byte>(l.patterns_at), MemoryPatterns(slot), patterns_bytes,
                          cudaMemcpyDeviceToHost, s));
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  std::memcpy(snap.field.data(), pinned_.at<std::byte>(l.field_at), field_bytes);
  std::memcpy(snap.pattern.data(), pinned_.at<std::byte>(l.pattern_at), pattern_bytes);
  std::memcpy(&snap.params, pinned_.at<std::byte>(l.params_at), sizeof(RobotParams));
  std::memcpy(&snap.state, pinned_.at<std::byte>(l.state_at), sizeof(RobotState));
  std::memcpy(&snap.memory, pinned_.at<std::byte>(l.memory_at), sizeof(MemoryBank));
  std::memcpy(snap.memory_patterns.data(), pinned_.at<std::byte>(l.patterns_at), patterns_bytes);
  return absl::OkStatus();
}

absl::Status CudaBackend::CopyIn(int slot, const BrainSnapshot& snap) {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  cudaStream_t s = stream_.get();
  FB_CUDA_CHECK(CopyAsync(counters_, Params(slot), &snap.params, sizeof(RobotParams), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, State(slot), &snap.state, sizeof(RobotState), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, Field(pool_.current_buffer(slot)), snap.field.data(),
                          snap.field.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, Pattern(slot), snap.pattern.data(), snap.pattern.size() * sizeof(float),
                          cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, Memory(slot), &snap.memory, sizeof(MemoryBank), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(CopyAsync(counters_, MemoryPatterns(slot), snap.memory_patterns.data(),
                          snap.memory_patterns.size() * sizeof(float), cudaMemcpyHostToDevice, s));
  FB_CUDA_CHECK(cudaStreamSynchronize(s));
  return absl::OkStatus();
}

}  // namespace

absl::Status ProbeCudaDevice() {
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    static_cast<void>(cudaGetLastError());  // not sticky; clear it for later calls
    return absl::UnavailableError(
        absl::StrCat("cudaGetDeviceCount: ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
  }
  if (count == 0) return absl::UnavailableError("cudaGetDeviceCount found no CUDA device");
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  if (const cudaError_t e = CheckKernelImage(); e != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    int major = 0, minor = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, kDevice);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, kDevice);
    return absl::UnavailableError(absl::StrCat(
        "CUDA device ", kDevice, " (compute capability ", major, ".", minor, ") cannot run this build's kernels: ",
        cudaGetErrorName(e), " (", cudaGetErrorString(e), "); this build carries code for ",
        FIELDBRAIN_CUDA_ARCHITECTURES, " (rebuild with -DCMAKE_CUDA_ARCHITECTURES=", major, minor, ")"));
  }
  return absl::OkStatus();
}

bool CudaDevicePresent() { return ProbeCudaDevice().ok(); }

absl::StatusOr<std::unique_ptr<Engine>> MakeCudaEngine(const EngineConfig& config) {
  return MakeCudaEngine(config, CudaEngineOptions{});
}

absl::StatusOr<std::unique_ptr<Engine>> MakeCudaEngine(const EngineConfig& config, const CudaEngineOptions& options) {
  FB_RETURN_IF_ERROR(CheckConfig(config));
  FB_RETURN_IF_ERROR(ProbeCudaDevice());
  cudaDeviceProp prop{};
  FB_CUDA_CHECK(cudaGetDeviceProperties(&prop, kDevice));
  int max_smem = 0;
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&max_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, kDevice));
  const std::optional<EvolveTile> tile = PlanEvolveTile(config.shape, max_smem);
  if (!tile)
    return absl::InvalidArgumentError(absl::StrCat("field shape ", config.shape.channels, "x", config.shape.nx, "x",
                                                   config.shape.ny, "x", config.shape.nz,
                                                   " does not fit the evolve kernel's tile on ", prop.name, " (",
                                                   max_smem, " bytes of shared memory per block)"));
  size_t free_bytes = 0, total_bytes = 0;
  FB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  FB_RETURN_IF_ERROR(CheckMemoryFits(
      absl::StrCat(DescribePool(config), " and the workspace"),
      DeviceBytesNeeded(config, *tile), prop.name, int64_t(free_bytes)));
  std::string description = absl::StrCat(prop.name, ", compute capability ", prop.major, ".", prop.minor, ", ",
                                         prop.multiProcessorCount, " SMs, ", FormatBytes(int64_t(total_bytes)),
                                         " (", FormatBytes(int64_t(free_bytes)), " free)");
  auto pool = std::make_unique<FieldPool>(config.shape, config.max_robots, config.max_batch, kPoolGuardBytes);
  auto backend =
      std::make_unique<CudaBackend>(config, options, *pool, *tile, std::string(prop.name), std::move(description));
  FB_RETURN_IF_ERROR(backend->Init());
  return std::make_unique<Engine>(config, std::move(pool), std::move(backend));
}

std::optional<CudaCounters> CountersOf(const Engine& engine) {
  if (const auto* cuda = dynamic_cast<const CudaBackend*>(&engine.backend())) return cuda->counters();
  return std::nullopt;
}

}  // namespace fieldbrain::cuda
