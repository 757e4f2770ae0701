// The emulated cuBLAS (libcublas.so.<CUBLAS_VER_MAJOR> in the emulation build): handles, their
// settings, and SGEMM computed in stream order on the CPU by a plain loop, so results are
// deterministic and exact to FP32 accumulation in k order.
//
// The rules a card enforces, or only punishes, are checked so that code which breaks them fails
// here too:
//   - a handle must come from cublasCreate and not be destroyed (else
//     CUBLAS_STATUS_NOT_INITIALIZED, cuBLAS's code for a handle it does not know);
//   - cublasSetStream puts the handle back on the library's own workspace, as documented, so a
//     workspace set before the stream is forgotten;
//   - a caller's workspace is device memory of the given size, aligned to 256 bytes (else
//     CUBLAS_STATUS_INVALID_VALUE), and every GEMM poisons all of it: cuBLAS may use any of it
//     as scratch, so nothing else may live there;
//   - SGEMM's sizes, leading dimensions, operations and scalars are checked as the reference
//     lists (CUBLAS_STATUS_INVALID_VALUE), and every matrix it reads or writes must be device
//     memory covering all its columns (CUBLAS_STATUS_INVALID_VALUE here; a card would fault).
// Scalars are read from host memory only: CUBLAS_POINTER_MODE_DEVICE is refused with
// CUBLAS_STATUS_NOT_SUPPORTED, as are the tensor-core math modes, whose rounding the plain loop
// does not reproduce.

#include <cublas_v2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <utility>

#include "cuda_emu/device_work.h"

// A handle's settings. cuBLAS documents a handle as not for concurrent use from several threads;
// the registry's lock still keeps its settings consistent if it is.
struct cublasContext {
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;  // the caller's; null: the library's own
  size_t workspace_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasAtomicsMode_t atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
};

namespace {

namespace emu = fieldbrain::emu;

constexpr uintptr_t kWorkspaceAlign = 256;

// The live handles. Looking a handle up here, instead of trusting the pointer, turns a destroyed
// or made-up handle into an error rather than a use after free.
class Registry {
 public:
  cublasStatus_t Add(cublasHandle_t& handle) {
    auto context = std::make_unique<cublasContext>();
    cublasContext* key = context.get();
    std::lock_guard lock(mu_);
    contexts_.emplace(key, std::move(context));
    handle = key;
    return CUBLAS_STATUS_SUCCESS;
  }

  cublasStatus_t Remove(cublasHandle_t handle) {
    std::lock_guard lock(mu_);
    return contexts_.erase(handle) == 1 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
  }

  // Runs fn(cublasContext&) under the registry's lock; NOT_INITIALIZED for an unknown handle.
  template <typename Fn>
  cublasStatus_t With(cublasHandle_t handle, Fn&& fn) {
    std::lock_guard lock(mu_);
    auto it = contexts_.find(handle);
    if (it == contexts_.end()) return CUBLAS_STATUS_NOT_INITIALIZED;
    return std::forward<Fn>(fn)(*it->second);
  }

 private:
  std::mutex mu_;
  std::map<cublasContext*, std::unique_ptr<cublasContext>> contexts_;
};

// Constructed on first use and never destroyed: handles may be destroyed from other objects'
// static destructors at exit, in whatever order those run.
Registry& Handles() {
  alignas(Registry) static std::byte storage[sizeof(Registry)];
  static Registry* const registry = std::construct_at(reinterpret_cast<Registry*>(storage));
  return *registry;
}

// The entry points are C functions: nothing may escape them as an exception.
template <typename Fn>
cublasStatus_t Guarded(Fn&& fn) noexcept {
  try {
    return std::forward<Fn>(fn)();
  } catch (const std::bad_alloc&) {
    return CUBLAS_STATUS_ALLOC_FAILED;
  } catch (...) {
    return CUBLAS_STATUS_INTERNAL_ERROR;
  }
}

bool KnownOperation(cublasOperation_t op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }
// For real data CUBLAS_OP_C is CUBLAS_OP_T.
bool Transposed(cublasOperation_t op) { return op != CUBLAS_OP_N; }

// A column-major matrix as stored: rows x cols with leading dimension ld.
struct Stored {
  const float* data;
  int64_t rows, cols, ld;

  size_t Bytes() const { return size_t((cols - 1) * ld + rows) * sizeof(float); }
  bool OnDevice() const { return emu::IsDeviceRange(data, Bytes()); }
};

// The checks the cuBLAS reference lists for cublas<t>gemm, in its terms.
cublasStatus_t CheckGemmArgs(cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k, int lda,
                             int ldb, int ldc, const float* alpha, const float* beta) {
  if (!KnownOperation(transa) || !KnownOperation(transb)) return CUBLAS_STATUS_INVALID_VALUE;
  if (m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (lda < std::max(1, Transposed(transa) ? k : m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldb < std::max(1, Transposed(transb) ? n : k)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ldc < std::max(1, m)) return CUBLAS_STATUS_INVALID_VALUE;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// One SGEMM as captured at the call: the scalars are read then (host pointer mode), as cuBLAS
// does, so the caller's may go out of scope before the stream runs it.
struct Gemm {
  bool ta, tb;
  int64_t m, n, k;
  float alpha, beta;
  const float* a;
  int64_t lda;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  void* workspace;
  size_t workspace_bytes;

  // BLAS: with alpha == 0 (or k == 0) A and B are not referenced.
  bool ReadsAB() const { return k > 0 && alpha != 0.0f; }
  Stored A() const { return ta ? Stored{a, k, m, lda} : Stored{a, m, k, lda}; }
  Stored B() const { return tb ? Stored{b, n, k, ldb} : Stored{b, k, n, ldb}; }
  Stored C() const { return Stored{c, m, n, ldc}; }

  // Eight running sums, added in a fixed order at the end (cuBLAS documents no summation order;
  // this one is deterministic and lets the compiler vectorise). Bounds were checked for the whole
  // matrices before the work was enqueued, so the sanitizers stay out of this loop.
  __attribute__((no_sanitize("address", "undefined"))) float Dot(int64_t i, int64_t j) const {
    const int64_t a_step = ta ? 1 : lda, b_step = tb ? ldb : 1;
    const float* x = ta ? a + i * lda : a + i;
    const float* y = tb ? b + j : b + j * ldb;
    float part[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t l = 0;
    for (; l + 8 <= k; l += 8)
      for (int u = 0; u < 8; ++u) part[u] += x[(l + u) * a_step] * y[(l + u) * b_step];
    float sum = 0.0f;
    for (float p : part) sum += p;
    for (; l < k; ++l) sum += x[l * a_step] * y[l * b_step];
    return sum;
  }

  // C = alpha * op(A) op(B) + beta * C; with beta == 0, C is only written (BLAS: not read, so
  // a NaN there does not survive).
  void Run() const {
    if (workspace != nullptr) emu::Poison(workspace, workspace_bytes);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < m; ++i) {
        float& out = c[i + j * ldc];
        const float product = ReadsAB() ? alpha * Dot(i, j) : 0.0f;
        out = beta == 0.0f ? product : product + beta * out;
      }
    }
  }
};

cublasStatus_t CheckGemmData(const Gemm& g) {
  if (g.ReadsAB() && (!g.A().OnDevice() || !g.B().OnDevice())) return CUBLAS_STATUS_INVALID_VALUE;
  if (!g.C().OnDevice()) return CUBLAS_STATUS_INVALID_VALUE;
  // Checked again here: the allocation may have been freed since cublasSetWorkspace.
  if (g.workspace != nullptr && !emu::IsDeviceRange(g.workspace, g.workspace_bytes))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t CheckWorkspace(const void* workspace, size_t bytes) {
  if (bytes == 0) return CUBLAS_STATUS_SUCCESS;  // no workspace: nothing to check
  if (reinterpret_cast<uintptr_t>(workspace) % kWorkspaceAlign != 0) return CUBLAS_STATUS_INVALID_VALUE;
  if (!emu::IsDeviceRange(workspace, bytes)) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// The math modes the plain FP32 loop computes faithfully; the tensor-core modes would round
// differently on a card.
cublasStatus_t CheckMathMode(cublasMath_t mode) {
  const int base = int(mode) & ~int(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
  if (base == CUBLAS_DEFAULT_MATH || base == CUBLAS_PEDANTIC_MATH) return CUBLAS_STATUS_SUCCESS;
  if (base == CUBLAS_TENSOR_OP_MATH || base == CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_STATUS_NOT_SUPPORTED;
  return CUBLAS_STATUS_INVALID_VALUE;
}

}  // namespace

extern "C" {

// A handle belongs to the current device: without a working runtime there is none to create.
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return CUBLAS_STATUS_NOT_INITIALIZED;
  return Guarded([&] { return Handles().Add(*handle); });
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  return Guarded([&] { return Handles().Remove(handle); });
}

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  return Guarded([&] {
    return Handles().With(handle, [&](cublasContext& h) {
      h.stream = streamId;
      h.workspace = nullptr;  // documented: back to the library's own workspace
      h.workspace_bytes = 0;
      return CUBLAS_STATUS_SUCCESS;
    });
  });
}

// A size of 0 leaves cuBLAS without a workspace (the pointer is then not looked at).
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  return Guarded([&] {
    return Handles().With(handle, [&](cublasContext& h) {
      if (const cublasStatus_t s = CheckWorkspace(workspace, workspaceSizeInBytes); s != CUBLAS_STATUS_SUCCESS)
        return s;
      h.workspace = workspaceSizeInBytes == 0 ? nullptr : workspace;
      h.workspace_bytes = workspaceSizeInBytes;
      return CUBLAS_STATUS_SUCCESS;
    });
  });
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  return Guarded([&] {
    return Handles().With(handle, [&](cublasContext& h) {
      if (const cublasStatus_t s = CheckMathMode(mode); s != CUBLAS_STATUS_SUCCESS) return s;
      h.math = mode;
      return CUBLAS_STATUS_SUCCESS;
    });
  });
}

// Both modes give the same results here: the loop is deterministic either way.
cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode) {
  return Guarded([&] {
    return Handles().With(handle, [&](cublasContext& h) {
      if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) return CUBLAS_STATUS_INVALID_VALUE;
      h.atomics = mode;
      return CUBLAS_STATUS_SUCCESS;
    });
  });
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  return Guarded([&] {
    return Handles().With(handle, [&](cublasContext&) {
      if (mode == CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_SUCCESS;
      return mode == CUBLAS_POINTER_MODE_DEVICE ? CUBLAS_STATUS_NOT_SUPPORTED : CUBLAS_STATUS_INVALID_VALUE;
    });
  });
}

cublasStatus_t cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                              int k, const float* alpha, const float* A, int lda, const float* B, int ldb,
                              const float* beta, float* C, int ldc) {
  return Guarded([&] {
    cudaStream_t stream = nullptr;
    void* workspace = nullptr;
    size_t workspace_bytes = 0;
    const cublasStatus_t found = Handles().With(handle, [&](cublasContext& h) {
      stream = h.stream;
      workspace = h.workspace;
      workspace_bytes = h.workspace_bytes;
      return CUBLAS_STATUS_SUCCESS;
    });
    if (found != CUBLAS_STATUS_SUCCESS) return found;
    if (const cublasStatus_t s = CheckGemmArgs(transa, transb, m, n, k, lda, ldb, ldc, alpha, beta);
        s != CUBLAS_STATUS_SUCCESS)
      return s;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;  // BLAS's quick return: nothing to compute
    const Gemm g{.ta = Transposed(transa), .tb = Transposed(transb), .m = m, .n = n, .k = k, .alpha = *alpha,
                 .beta = *beta, .a = A, .lda = lda, .b = B, .ldb = ldb, .c = C, .ldc = ldc,
                 .workspace = workspace, .workspace_bytes = workspace_bytes};
    if (const cublasStatus_t s = CheckGemmData(g); s != CUBLAS_STATUS_SUCCESS) return s;
    const cudaError_t launched = emu::EnqueueLibraryKernel(stream, "cublasSgemm_v2", [g] {
      g.Run();
      return cudaSuccess;
    });
    return launched == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
  });
}

const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "<unknown>";
}

const char* cublasGetStatusString(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS: return "the operation completed successfully";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "the device lacks an architectural feature the function requires";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the functionality requested requires a license";
  }
  return "unknown error";
}

}  // extern "C"
