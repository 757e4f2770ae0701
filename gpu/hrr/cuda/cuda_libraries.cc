#include "gpu/hrr/cuda/cuda_libraries.h"

#include <dlfcn.h>

#include <cstring>
#include <limits>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gpu/cuda/cuda_check.h"
#include "gpu/hrr/cuda/hrr_workspace.h"

#ifndef FIELDBRAIN_CUDA_LIBRARY_DIR
#define FIELDBRAIN_CUDA_LIBRARY_DIR ""
#endif

namespace fieldbrain::hrr::cuda {
namespace {

// By soname through the loader's search path (LD_LIBRARY_PATH, ld.so.conf), then in the toolkit
// directory the build used; the emulation build opens only its own emulated libraries, which
// that directory holds, never a real toolkit's the loader might find. The handle is never
// closed: the entry points live as long as the process.
absl::StatusOr<void*> Open(const std::string& soname) {
  std::string error;
#if !defined(FIELDBRAIN_CUDA_EMU)
  if (void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  error = dlerror();
#endif
  const std::string dir = FIELDBRAIN_CUDA_LIBRARY_DIR;
  if (!dir.empty()) {
    if (void* h = dlopen((dir + "/" + soname).c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    if (error.empty()) error = dlerror();
  }
  return absl::UnavailableError(absl::StrCat("cannot open ", soname, ": ", error));
}

template <typename Fn>
absl::Status Bind(void* library, const char* soname, const char* symbol, Fn& fn) {
  fn = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (fn == nullptr) return absl::UnavailableError(absl::StrCat(soname, " has no ", symbol));
  return absl::OkStatus();
}

struct Libraries {
  absl::Status status;
  CufftApi cufft;
  CublasApi cublas;
};

absl::Status Load(Libraries& l) {
  const std::string cufft_name = absl::StrCat("libcufft.so.", CUFFT_VER_MAJOR);
  const std::string cublas_name = absl::StrCat("libcublas.so.", CUBLAS_VER_MAJOR);
  absl::StatusOr<void*> fft = Open(cufft_name);
  if (!fft.ok()) return fft.status();
  absl::StatusOr<void*> blas = Open(cublas_name);
  if (!blas.ok()) return blas.status();
  const char* f = cufft_name.c_str();
  const char* b = cublas_name.c_str();
  for (absl::Status s : {Bind(*fft, f, "cufftCreate", l.cufft.create), Bind(*fft, f, "cufftDestroy", l.cufft.destroy),
                         Bind(*fft, f, "cufftSetAutoAllocation", l.cufft.set_auto_allocation),
                         Bind(*fft, f, "cufftMakePlanMany64", l.cufft.make_plan_many64),
                         Bind(*fft, f, "cufftSetStream", l.cufft.set_stream),
                         Bind(*fft, f, "cufftSetWorkArea", l.cufft.set_work_area),
                         Bind(*fft, f, "cufftExecR2C", l.cufft.exec_r2c), Bind(*fft, f, "cufftExecC2R", l.cufft.exec_c2r),
                         Bind(*blas, b, "cublasCreate_v2", l.cublas.create),
                         Bind(*blas, b, "cublasDestroy_v2", l.cublas.destroy),
                         Bind(*blas, b, "cublasSetStream_v2", l.cublas.set_stream),
                         Bind(*blas, b, "cublasSetWorkspace_v2", l.cublas.set_workspace),
                         Bind(*blas, b, "cublasSetMathMode", l.cublas.set_math_mode),
                         Bind(*blas, b, "cublasSetAtomicsMode", l.cublas.set_atomics_mode),
                         Bind(*blas, b, "cublasSetPointerMode_v2", l.cublas.set_pointer_mode),
                         Bind(*blas, b, "cublasSgemm_v2", l.cublas.sgemm),
                         Bind(*blas, b, "cublasGetStatusName", l.cublas.status_name),
                         Bind(*blas, b, "cublasGetStatusString", l.cublas.status_string)}) {
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

const Libraries& Loaded() {
  static const Libraries libraries = [] {
    Libraries l;
    l.status = Load(l);
    return l;
  }();
  return libraries;
}

}  // namespace

absl::Status LoadCudaLibraries() { return Loaded().status; }
const CufftApi& Cufft() { return Loaded().cufft; }
const CublasApi& Cublas() { return Loaded().cublas; }

namespace {

constexpr int kDevice = 0;

// The process's one context while any holder keeps it, how many were made, and the sticky error
// once one was seen (it outlives every context: the process's device context is lost for good).
struct ContextRegistry {
  absl::Mutex mu;
  std::weak_ptr<LibraryContext> live ABSL_GUARDED_BY(mu);
  int64_t made ABSL_GUARDED_BY(mu) = 0;
  absl::Status lost ABSL_GUARDED_BY(mu);
};

ContextRegistry& Registry() {
  static ContextRegistry registry;
  return registry;
}

}  // namespace

absl::StatusOr<std::shared_ptr<LibraryContext>> LibraryContext::Acquire() {
  ContextRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  // No refusal from r.lost here: on a lost context the runtime refuses Init's first call itself.
  if (std::shared_ptr<LibraryContext> context = r.live.lock()) return context;
  if (absl::Status s = LoadCudaLibraries(); !s.ok()) return s;
  std::shared_ptr<LibraryContext> context(new LibraryContext());
  if (absl::Status s = context->Init(); !s.ok()) return s;
  r.live = context;
  ++r.made;
  return context;
}

absl::Status LibraryContext::Init() {
  FB_CUDA_CHECK(cudaSetDevice(kDevice));
  cudaStream_t stream = nullptr;
  FB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  stream_ = ::fieldbrain::cuda::Stream(stream);
  // A pool of our own rather than the device's default one, which other code of the process
  // (the robots' engine, a library) may share and trim: freed memory stays in it for the next
  // space (no release at each synchronisation), never returned to the device while we live.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = kDevice;
  cudaMemPool_t pool = nullptr;
  FB_CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  pool_ = ::fieldbrain::cuda::MemPool(pool);
  uint64_t keep = std::numeric_limits<uint64_t>::max();
  FB_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  size_t blas_bytes = 0;
  FB_RETURN_IF_ERROR(ScoreGemm::WorkspaceBytes(blas_bytes));
  void* work = nullptr;
  FB_CUDA_CHECK(cudaMalloc(&work, blas_bytes));
  blas_work_ = ::fieldbrain::cuda::DeviceBuffer(work, blas_bytes);
  return gemm_.Init(stream, blas_work_.data(), blas_work_.bytes());
}

LibraryContext::~LibraryContext() {
  // Nothing queued (the spaces' last frees included) may outlive the work area, the handle, the
  // pinned block and the pool.
  if (stream_) static_cast<void>(cudaStreamSynchronize(stream_.get()));
}

absl::Status LibraryContext::Reserve(const HrrConfig& largest) {
  absl::MutexLock lock(&mu_);
  return EnsurePinned(PinnedBytesFor(largest));
}

absl::Status LibraryContext::EnsurePinned(int64_t bytes) {
  if (int64_t(pinned_.bytes()) >= bytes) return absl::OkStatus();
  // No call is in flight (they hold mu_ until synchronised): the old block is nobody's.
  pinned_ = ::fieldbrain::cuda::PinnedBuffer();
  pinned_bytes_.store(0);
  void* p = nullptr;
  pinned_allocs_.fetch_add(1);
  FB_CUDA_CHECK(cudaHostAlloc(&p, size_t(bytes), cudaHostAllocDefault));
  std::memset(p, 0, size_t(bytes));  // argument padding copied in is never uninitialised bytes
  pinned_ = ::fieldbrain::cuda::PinnedBuffer(p, size_t(bytes));
  pinned_bytes_.store(bytes);
  return absl::OkStatus();
}

int64_t PinnedBytesFor(const HrrConfig& config) {
  // The pinned regions depend on the dimension and max_batch only (not on the cuFFT work area).
  return HrrWorkspace(config, 0).pinned_bytes;
}

absl::Status LibraryContext::health() const {
  ContextRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  return r.lost;
}

absl::Status LibraryContext::CheckSticky(const absl::Status& failure) {
  // A failed call's own error (a refused launch, a bad argument) is the calling thread's last
  // error: clear it, then ask the stream. A sticky error is returned by every call from now on.
  static_cast<void>(cudaGetLastError());
  const cudaError_t e = cudaStreamQuery(stream_.get());
  if (e == cudaSuccess || e == cudaErrorNotReady) return absl::OkStatus();
  const absl::Status lost = absl::UnavailableError(
      absl::StrCat("the CUDA device context is lost (", cudaGetErrorName(e), ": ", cudaGetErrorString(e),
                   ") after: ", failure.message(), "; the process must be restarted"));
  ContextRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  if (r.lost.ok()) r.lost = lost;
  return r.lost;
}

LibraryContextStats CurrentLibraryContextStats() {
  ContextRegistry& r = Registry();
  absl::MutexLock lock(&r.mu);
  LibraryContextStats stats;
  stats.made = r.made;
  if (std::shared_ptr<LibraryContext> context = r.live.lock()) {
    stats.live = true;
    stats.bytes = context->bytes();
  }
  return stats;
}

}  // namespace fieldbrain::hrr::cuda
