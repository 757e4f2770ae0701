#include "gpu/hrr/cuda/score_gemm.h"

#include "gpu/hrr/cuda/cuda_libraries.h"

#include "absl/strings/str_cat.h"
#include "gpu/cuda/cuda_check.h"

namespace fieldbrain::hrr::cuda {
namespace {

absl::Status CublasError(cublasStatus_t s, const char* what) {
  const std::string message =
      absl::StrCat(what, " failed: ", Cublas().status_name(s), " (", Cublas().status_string(s), ")");
  if (s == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  if (s == CUBLAS_STATUS_NOT_INITIALIZED || s == CUBLAS_STATUS_ARCH_MISMATCH) return absl::UnavailableError(message);
  return absl::InternalError(message);
}

#define FB_CUBLAS_CHECK(expr)                                                              \
  do {                                                                                     \
    if (const cublasStatus_t fb_cublas_status_ = (expr); fb_cublas_status_ != CUBLAS_STATUS_SUCCESS) \
      return CublasError(fb_cublas_status_, #expr);                                        \
  } while (0)

}  // namespace

ScoreGemm::~ScoreGemm() {
  if (handle_ != nullptr) static_cast<void>(Cublas().destroy(handle_));
}

absl::Status ScoreGemm::WorkspaceBytes(size_t& bytes) {
  int device = 0, major = 0;
  FB_CUDA_CHECK(cudaGetDevice(&device));
  FB_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  // cuBLAS's own default pool: 32 MiB from Hopper on, 4 MiB before.
  bytes = size_t(major >= 9 ? 32 : 4) << 20;
  return absl::OkStatus();
}

absl::Status ScoreGemm::Init(cudaStream_t stream, void* workspace, size_t workspace_bytes) {
  FB_CUBLAS_CHECK(Cublas().create(&handle_));
  FB_CUBLAS_CHECK(Cublas().set_stream(handle_, stream));
  // After the stream: setting a stream resets the workspace to cuBLAS's own pool.
  FB_CUBLAS_CHECK(Cublas().set_workspace(handle_, workspace, workspace_bytes));
  FB_CUBLAS_CHECK(Cublas().set_math_mode(handle_, CUBLAS_DEFAULT_MATH));
  FB_CUBLAS_CHECK(Cublas().set_atomics_mode(handle_, CUBLAS_ATOMICS_NOT_ALLOWED));
  FB_CUBLAS_CHECK(Cublas().set_pointer_mode(handle_, CUBLAS_POINTER_MODE_HOST));
  return absl::OkStatus();
}

absl::Status ScoreGemm::Scores(const float* items, int n_items, const float* queries, int n_queries, int len,
                               float* scores) const {
  const float one = 1.0f, zero = 0.0f;
  // Column-major: items is len x n_items (column i = item i), queries len x n_queries;
  // scores = items^T queries, n_items x n_queries.
  FB_CUBLAS_CHECK(Cublas().sgemm(handle_, CUBLAS_OP_T, CUBLAS_OP_N, n_items, n_queries, len, &one, items, len, queries,
                              len, &zero, scores, n_items));
  return absl::OkStatus();
}

}  // namespace fieldbrain::hrr::cuda
