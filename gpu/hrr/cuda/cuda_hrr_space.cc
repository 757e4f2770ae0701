// The CUDA backend of HrrSpace: host side (compiled by the C++ compiler; kernels behind
// hrr_launch.h). It refuses exactly what the CPU backend refuses (the checks of hrr_checks.h, in
// the same order) and computes what it computes (the formulas of hrr_math.h), so the two differ
// only by rounding.
//
// Every call: arguments checked on the host; its lists and values packed into the pinned block;
// one host-to-device copy of that block; the kernels (results into staging, then the commit that
// writes the slots, so every input is read before any slot changes); one device-to-host copy when
// the call returns data; one stream synchronisation. Everything is allocated in Init(), on the
// stream from the context's memory pool (stream-ordered: nothing that synchronises the device),
// and freed the same way. The stream, the cuBLAS handle and the pinned staging block are the
// process's shared LibraryContext's, whose lock a call holds from packing its arguments to
// reading its results.
#include "gpu/hrr/cuda/cuda_hrr_space.h"

#include "gpu/hrr/cuda/cuda_libraries.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/cuda/device_buffer.h"
#include "gpu/hrr/cuda/arg_block.h"
#include "gpu/hrr/cuda/fft_plans.h"
#include "gpu/hrr/cuda/hrr_launch.h"
#include "gpu/hrr/cuda/hrr_workspace.h"
#include "gpu/hrr/cuda/score_gemm.h"
#include "absl/synchronization/mutex.h"
#include "gpu/hrr/hrr_checks.h"
#include "gpu/hrr/top_k.h"
#include "gpu/memory_budget.h"

namespace fieldbrain::hrr::cuda {
namespace {

namespace fbc = ::fieldbrain::cuda;

static_assert(kListEntries == kMaxTopK, "the kernels' top-k lists must hold kMaxTopK entries");

constexpr int kDevice = 0;

class CudaHrrSpace final : public HrrSpace {
 public:
  explicit CudaHrrSpace(const HrrConfig& config)
      : config_(config), bins_(Bins(config.dim)), last_writer_(size_t(config.capacity), -1) {}

  absl::Status Init(HrrStorage storage);

  std::string_view backend() const override { return "cuda"; }
  const HrrConfig& config() const override { return config_; }
  int64_t bytes() const override {
    // The shared context's bytes are not the space's: its holder counts them once.
    // Nor is the pinned staging block, which is the context's.
    return int64_t(owned_storage_.bytes()) + int64_t(workspace_.bytes());
  }

  HrrCudaCounters counters() const {
    HrrCudaCounters c;
    c.device_allocs = counters_.device_allocs;
    c.host_allocs = counters_.host_allocs;
    c.pool_allocs = counters_.pool_allocs;
    c.h2d_copies = counters_.h2d_copies;
    c.d2h_copies = counters_.d2h_copies;
    c.h2d_bytes = counters_.h2d_bytes;
    c.d2h_bytes = counters_.d2h_bytes;
    c.calls = calls_;
    return c;
  }

  absl::Status Put(std::span<const int32_t> slots, std::span<const float> values) override {
    if (absl::Status s = CheckPut(slots, values, config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, slots);
    // cuFFT takes a non-const input; the mirror is ours to overwrite.
    float* in = const_cast<float*>(args.Add(values));
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_RETURN_IF_ERROR(fft_.Forward(n, in, Stage()));
      return Commit(Stage(), dest, n, false, s);
    });
  }

  absl::Status Get(std::span<const int32_t> slots, std::span<float> values) override {
    if (absl::Status s = CheckGet(slots, values.size(), config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* d_slots = args.Add(slots);
    FB_RETURN_IF_ERROR(Execute(args, int64_t(values.size_bytes()), [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchGather(store_, Stage(), d_slots, n, s));
      return fft_.Inverse(n, Stage(), Out<float>());
    }));
    // The 1/D after the transform, as the CPU backend applies it (hrr_math.h's GetScale).
    const float scale = GetScale(config_.dim);
    const float* out = Pinned().at<const float>(0);
    for (size_t i = 0; i < values.size(); ++i) values[i] = out[i] * scale;
    return absl::OkStatus();
  }

  absl::Status PutSpectra(std::span<const int32_t> slots, std::span<const Cf> spectra) override {
    if (absl::Status s = CheckPutSpectra(slots, spectra, config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, slots);
    const Cf* rows = args.Add(spectra);
    return Execute(args, 0, [&](cudaStream_t s) { return Commit(rows, dest, n, false, s); });
  }

  absl::Status GetSpectra(std::span<const int32_t> slots, std::span<Cf> spectra) override {
    if (absl::Status s = CheckGetSpectra(slots, spectra.size(), config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* d_slots = args.Add(slots);
    FB_RETURN_IF_ERROR(Execute(args, int64_t(spectra.size_bytes()), [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchGather(store_, Out<Cf>(), d_slots, n, s));
      return absl::OkStatus();
    }));
    std::memcpy(spectra.data(), Pinned().data(), spectra.size_bytes());
    return absl::OkStatus();
  }

  absl::Status Random(std::span<const int32_t> slots, VectorKind kind, uint64_t seed,
                      std::span<const uint64_t> ids) override {
    if (absl::Status s = CheckRandom(slots, ids.size(), config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, slots);
    const uint64_t* d_ids = args.Add(ids);
    const bool unitary = kind == VectorKind::kUnitary;
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchRandom(store_, Stage(), unitary, seed, d_ids, n, s));
      return Commit(Stage(), dest, n, false, s);
    });
  }

  absl::Status Zero(std::span<const int32_t> slots) override {
    if (absl::Status s = CheckSlots("slots", slots, config_); !s.ok()) return s;
    const int n = int(slots.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, slots);
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchZero(store_, dest, n, s));
      return absl::OkStatus();
    });
  }

  absl::Status Bind(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const int32_t> b) override {
    if (absl::Status s = CheckBinary(out, a, b, config_); !s.ok()) return s;
    return Binary(out, a, b, LaunchBind);
  }

  absl::Status Unbind(std::span<const int32_t> out, std::span<const int32_t> c, std::span<const int32_t> key) override {
    if (absl::Status s = CheckBinary(out, c, key, config_); !s.ok()) return s;
    return Binary(out, c, key, LaunchUnbind);
  }

  absl::Status Inverse(std::span<const int32_t> out, std::span<const int32_t> a) override {
    if (absl::Status s = CheckUnary(out, a, config_); !s.ok()) return s;
    return Unary(out, a, LaunchInverse);
  }

  absl::Status Project(std::span<const int32_t> out, std::span<const int32_t> a) override {
    if (absl::Status s = CheckUnary(out, a, config_); !s.ok()) return s;
    return Unary(out, a, LaunchProject);
  }

  absl::Status Permute(std::span<const int32_t> out, std::span<const int32_t> a,
                       std::span<const int32_t> shifts) override {
    if (absl::Status s = CheckPermute(out, a, shifts, config_); !s.ok()) return s;
    return Binary(out, a, shifts, LaunchPermute);
  }

  absl::Status Power(std::span<const int32_t> out, std::span<const int32_t> base,
                     std::span<const float> exponents) override {
    if (absl::Status s = CheckPower(out, base, exponents, config_); !s.ok()) return s;
    return Binary(out, base, exponents, LaunchPower);
  }

  absl::Status Superpose(std::span<const int32_t> out, std::span<const int32_t> offsets, std::span<const int32_t> terms,
                         std::span<const float> weights, bool normalize) override {
    if (absl::Status s = CheckSuperpose(out, offsets, terms, weights, config_); !s.ok()) return s;
    const int n = int(out.size());
    if (n == 0) return absl::OkStatus();
    int max_terms = 0;
    for (int g = 0; g < n; ++g) max_terms = std::max(max_terms, offsets[size_t(g) + 1] - offsets[size_t(g)]);
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, out);
    const int32_t* d_offsets = args.Add(offsets);
    const int32_t* d_terms = args.Add(terms);
    const float* d_weights = weights.empty() ? nullptr : args.Add(weights);
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchSuperpose(store_, Stage(), d_offsets, d_terms, d_weights, n, max_terms, s));
      return Commit(Stage(), dest, n, normalize, s);
    });
  }

  absl::Status Similarity(std::span<const int32_t> a, std::span<const int32_t> b, std::span<float> cosines) override {
    if (absl::Status s = CheckSimilarity(a, b, cosines.size(), config_); !s.ok()) return s;
    const int n = int(a.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* d_a = args.Add(a);
    const int32_t* d_b = args.Add(b);
    FB_RETURN_IF_ERROR(Execute(args, int64_t(cosines.size_bytes()), [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(LaunchSimilarity(store_, d_a, d_b, Out<float>(), n, s));
      return absl::OkStatus();
    }));
    std::memcpy(cosines.data(), Pinned().data(), cosines.size_bytes());
    return absl::OkStatus();
  }

  absl::Status Cleanup(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                       std::span<int32_t> top_slots, std::span<float> top_cosines) override;

 private:
  // With the context's lock held, from the call's packing to its results' reading.
  const fbc::PinnedBuffer& Pinned() const { return context_->pinned(); }
  ArgBlock Args() { return ArgBlock(Pinned().data(), workspace_.data(), layout_->args_bytes); }
  Cf* Stage() const { return workspace_.at<Cf>(layout_->stage_at); }
  template <typename T>
  T* Out() const {
    return workspace_.at<T>(layout_->out_at);
  }

  // The output slot list as the commit reads it: slots[i] where entry i is the last to name its
  // slot, -1 where a later entry names it too (that entry's result wins, as on the CPU, and no
  // slot gets two concurrent writers).
  const int32_t* AddDest(ArgBlock& args, std::span<const int32_t> slots) {
    auto [host, device] = args.Reserve<int32_t>(slots.size());
    if (host == nullptr) return nullptr;
    for (size_t i = 0; i < slots.size(); ++i) last_writer_[size_t(slots[i])] = int32_t(i);
    for (size_t i = 0; i < slots.size(); ++i)
      host[i] = last_writer_[size_t(slots[i])] == int32_t(i) ? slots[i] : -1;
    for (int32_t slot : slots) last_writer_[size_t(slot)] = -1;
    return device;
  }

  absl::Status Commit(const Cf* rows, const int32_t* dest, int n, bool normalize, cudaStream_t s) {
    FB_CUDA_CHECK(LaunchCommit(store_, rows, dest, n, normalize, s));
    return absl::OkStatus();
  }

  // out[i] <- op(a[i], per-entry b[i]) then commit: the binary ops, Permute and Power.
  template <typename B>
  absl::Status Binary(std::span<const int32_t> out, std::span<const int32_t> a, std::span<const B> b,
                      cudaError_t (*launch)(const SlotStore&, Cf*, const int32_t*, const B*, int, cudaStream_t)) {
    const int n = int(out.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, out);
    const int32_t* d_a = args.Add(a);
    const B* d_b = args.Add(b);
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(launch(store_, Stage(), d_a, d_b, n, s));
      return Commit(Stage(), dest, n, false, s);
    });
  }

  absl::Status Unary(std::span<const int32_t> out, std::span<const int32_t> a,
                     cudaError_t (*launch)(const SlotStore&, Cf*, const int32_t*, int, cudaStream_t)) {
    const int n = int(out.size());
    if (n == 0) return absl::OkStatus();
    absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
    ArgBlock args = Args();
    const int32_t* dest = AddDest(args, out);
    const int32_t* d_a = args.Add(a);
    return Execute(args, 0, [&](cudaStream_t s) -> absl::Status {
      FB_CUDA_CHECK(launch(store_, Stage(), d_a, n, s));
      return Commit(Stage(), dest, n, false, s);
    });
  }

  // The call's copy in, `enqueue`'s kernels, the copy back of out_bytes from `out` into the
  // pinned block (none when 0), one synchronisation, all on the shared context's stream under its
  // lock, which the caller holds. A failed call fails alone: every kernel that writes slots is the last one a call
  // enqueues (the commit), and after it only the copy back and the synchronisation can fail, which
  // only a sticky error makes them do. After a sticky error (the device context is lost for the
  // whole process) the space refuses every later call.
  template <typename Enqueue>
  absl::Status Execute(const ArgBlock& args, int64_t out_bytes, Enqueue&& enqueue) {
    if (!failed_.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("the CUDA HRR space stopped after an earlier device error: ", failed_.message()));
    if (args.overflow())
      return absl::InternalError(absl::StrCat("a call's arguments do not fit the argument block of ",
                                              layout_->args_bytes, " bytes"));
    context_->mu().AssertHeld();
    const cudaStream_t s = context_->stream();
    absl::Status status = [&]() -> absl::Status {
      FB_CUDA_CHECK(cudaSetDevice(kDevice));
      FB_CUDA_CHECK(fbc::CopyAsync(counters_, workspace_.data(), Pinned().data(), size_t(args.bytes()),
                                   cudaMemcpyHostToDevice, s));
      FB_RETURN_IF_ERROR(enqueue(s));
      if (out_bytes > 0)
        FB_CUDA_CHECK(fbc::CopyAsync(counters_, Pinned().data(), Out<std::byte>(), size_t(out_bytes),
                                     cudaMemcpyDeviceToHost, s));
      FB_CUDA_CHECK(cudaStreamSynchronize(s));
      return absl::OkStatus();
    }();
    if (!status.ok()) {
      static_cast<void>(cudaStreamSynchronize(s));  // nothing queued outlives the call
      if (absl::Status lost = context_->CheckSticky(status); !lost.ok()) {
        failed_ = lost;
        return lost;
      }
      return status;
    }
    ++calls_;
    return absl::OkStatus();
  }

  HrrConfig config_;
  int bins_;
  fbc::CudaCounters counters_;
  int64_t calls_ = 0;
  absl::Status failed_;
  std::vector<int32_t> last_writer_;  // per slot, -1 between calls: AddDest's marks
  std::optional<HrrWorkspace> layout_;
  SlotStore store_;

  // Declared before what is bound to it or lives in it, so destroyed after: the plans are bound
  // to the context's stream, and the buffers are freed on it (cudaFreeAsync) into its pool, after
  // this space's last call (which synchronised) and before the context can go.
  std::shared_ptr<LibraryContext> context_;
  fbc::StreamBuffer owned_storage_;  // the slots, unless the caller gave an HrrStorage
  fbc::StreamBuffer workspace_;
  FftPlans fft_;
};

absl::Status CudaHrrSpace::Init(HrrStorage storage) {
  absl::StatusOr<std::shared_ptr<LibraryContext>> context = LibraryContext::Acquire();
  if (!context.ok()) return context.status();
  context_ = *std::move(context);
  absl::MutexLock lock(&context_->mu());
  const cudaStream_t stream = context_->stream();
  FB_CUDA_CHECK(cudaSetDevice(kDevice));

  FB_RETURN_IF_ERROR(fft_.Init(config_.dim, config_.max_batch, stream));
  layout_.emplace(config_, int64_t(fft_.work_bytes()));

  const int64_t storage_bytes = StorageBytes(config_);
  const int64_t needed = layout_->device_bytes + (storage.data == nullptr ? storage_bytes : 0);
  size_t free_bytes = 0, total_bytes = 0;
  FB_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  // What the pool keeps from deleted spaces is free for this one too.
  uint64_t reserved = 0, used = 0;
  FB_CUDA_CHECK(cudaMemPoolGetAttribute(context_->pool(), cudaMemPoolAttrReservedMemCurrent, &reserved));
  FB_CUDA_CHECK(cudaMemPoolGetAttribute(context_->pool(), cudaMemPoolAttrUsedMemCurrent, &used));
  free_bytes += size_t(reserved - std::min(reserved, used));
  cudaDeviceProp prop{};
  FB_CUDA_CHECK(cudaGetDeviceProperties(&prop, kDevice));
  FB_RETURN_IF_ERROR(CheckMemoryFits(
      absl::StrCat("an HRR space of ", config_.capacity, " vectors of dimension ", config_.dim,
                   storage.data == nullptr ? "" : " (on the caller's storage)", " and its workspace for batches of ",
                   config_.max_batch),
      needed, prop.name, int64_t(free_bytes)));

  // Stream-ordered, from the context's pool: no cudaMalloc, no cudaHostAlloc, nothing that waits
  // for the robots' kernels on other streams. The pinned block grows only for a space larger than
  // any before (never after the Memory store's Reserve).
  FB_RETURN_IF_ERROR(context_->EnsurePinned(layout_->pinned_bytes));
  if (storage.data == nullptr) {
    FB_CUDA_CHECK(fbc::AllocateFromPool(counters_, size_t(storage_bytes), context_->pool(), stream, owned_storage_));
    storage = HrrStorage{owned_storage_.data(), storage_bytes};
  }
  FB_CUDA_CHECK(fbc::AllocateFromPool(counters_, size_t(layout_->device_bytes), context_->pool(), stream, workspace_));

  const int64_t spectra_bytes = AlignRegion(int64_t(config_.capacity) * bins_ * int64_t(sizeof(Cf)));
  store_.spectra = static_cast<Cf*>(storage.data);
  store_.norm2 = reinterpret_cast<float*>(static_cast<std::byte*>(storage.data) + spectra_bytes);
  store_.dim = config_.dim;
  store_.bins = bins_;

  // Zero vectors in every slot; a zeroed workspace keeps FFT padding rows finite from the start.
  FB_CUDA_CHECK(cudaMemsetAsync(storage.data, 0, size_t(storage_bytes), stream));
  FB_CUDA_CHECK(cudaMemsetAsync(workspace_.data(), 0, workspace_.bytes(), stream));
  FB_RETURN_IF_ERROR(fft_.SetWorkArea(workspace_.at<void>(layout_->fft_at)));
  FB_CUDA_CHECK(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

absl::Status CudaHrrSpace::Cleanup(std::span<const int32_t> queries, int item_begin, int item_count, int k,
                                   std::span<int32_t> top_slots, std::span<float> top_cosines) {
  if (absl::Status s = CheckCleanupCall(queries, item_begin, item_count, k, top_slots.size(), top_cosines.size(), config_);
        !s.ok())
      return s;
  const int n = int(queries.size());
  if (n == 0) return absl::OkStatus();
  if (item_count == 0) {  // no items: every row empty, nothing for the device to do
    for (int q = 0; q < n; ++q) top_k_clear(top_cosines.data() + size_t(q) * k, top_slots.data() + size_t(q) * k, k);
    return absl::OkStatus();
  }

  absl::MutexLock lock(&context_->mu());  // the pinned block is the context's
  ArgBlock args = Args();
  const int32_t* d_queries = args.Add(queries);
  const int chunk = CleanupChunkItems(*layout_, n, item_count);
  const TopKLists parts{workspace_.at<float>(layout_->parts_cos_at), workspace_.at<int32_t>(layout_->parts_slot_at),
                        (chunk + kPartItems - 1) / kPartItems};
  const TopKLists running{workspace_.at<float>(layout_->running_cos_at),
                          workspace_.at<int32_t>(layout_->running_slot_at), 1};
  // The results as the caller lays them out: n x k slots, then n x k cosines.
  const int64_t cells = int64_t(n) * k;
  int32_t* final_slots = Out<int32_t>();
  float* final_cos = reinterpret_cast<float*>(Out<std::byte>() + cells * int64_t(sizeof(int32_t)));
  float* scores = workspace_.at<float>(layout_->scores_at);
  const int len = 2 * bins_;  // a spectrum as real floats
  const float* items = reinterpret_cast<const float*>(store_.spectra);
  const float* weighted = reinterpret_cast<const float*>(Stage());

  FB_RETURN_IF_ERROR(Execute(args, cells * int64_t(sizeof(int32_t) + sizeof(float)),
                             [&](cudaStream_t s) -> absl::Status {
    FB_CUDA_CHECK(LaunchWeightQueries(store_, Stage(), d_queries, n, s));
    for (int done = 0, c = 0; done < item_count; done += chunk, ++c) {
      const int m = std::min(chunk, item_count - done);
      const int first = item_begin + done;
      FB_RETURN_IF_ERROR(context_->gemm().Scores(items + int64_t(first) * len, m, weighted, n, len, scores));
      FB_CUDA_CHECK(LaunchChunkTopK(store_, scores, d_queries, n, first, m, k, parts, s));
      const bool last = done + m >= item_count;
      FB_CUDA_CHECK(LaunchMergeTopK(parts, (m + kPartItems - 1) / kPartItems, running, c > 0, n, k,
                                    last ? final_slots : nullptr, final_cos, s));
    }
    return absl::OkStatus();
  }));
  std::memcpy(top_slots.data(), Pinned().data(), size_t(cells) * sizeof(int32_t));
  std::memcpy(top_cosines.data(), Pinned().data() + cells * int64_t(sizeof(int32_t)), size_t(cells) * sizeof(float));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeCudaHrrSpace(const HrrConfig& config, HrrStorage storage) {
  if (absl::Status s = CheckConfig(config); !s.ok()) return s;
  if (absl::Status s = CheckStorage(storage, config); !s.ok()) return s;
  int count = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess || count == 0) {
    static_cast<void>(cudaGetLastError());
    return absl::UnavailableError(absl::StrCat("no CUDA device: ", e == cudaSuccess ? "none found" : cudaGetErrorString(e)));
  }
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  if (absl::Status s = LoadCudaLibraries(); !s.ok()) return s;
  if (const cudaError_t e = CheckHrrKernelImage(); e != cudaSuccess) {
    static_cast<void>(cudaGetLastError());
    return absl::UnavailableError(absl::StrCat("CUDA device ", kDevice, " cannot run this build's HRR kernels: ",
                                               cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
  }
  auto space = std::make_unique<CudaHrrSpace>(config);
  if (absl::Status s = space->Init(storage); !s.ok()) return s;
  return std::unique_ptr<HrrSpace>(std::move(space));
}

std::optional<HrrCudaCounters> CountersOf(const HrrSpace& space) {
  if (const auto* cuda = dynamic_cast<const CudaHrrSpace*>(&space)) return cuda->counters();
  return std::nullopt;
}

}  // namespace fieldbrain::hrr::cuda
