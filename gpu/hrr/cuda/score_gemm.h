// Cleanup's scores as one cuBLAS SGEMM: spectra viewed as real rows of 2 * bins floats, items
// (contiguous slots) against the Parseval-weighted queries. The handle is bound to the space's
// stream and to a workspace the space allocates, in the default math mode (no TF32 for SGEMM)
// with atomics not allowed, so that a call's scores are the same bits every time.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cstddef>

#include "absl/status/status.h"

namespace fieldbrain::hrr::cuda {

class ScoreGemm {
 public:
  ScoreGemm() = default;
  ~ScoreGemm();
  ScoreGemm(const ScoreGemm&) = delete;
  ScoreGemm& operator=(const ScoreGemm&) = delete;

  // cuBLAS's recommended workspace for the current device (larger from Hopper on).
  static absl::Status WorkspaceBytes(size_t& bytes);

  absl::Status Init(cudaStream_t stream, void* workspace, size_t workspace_bytes);
  // scores[q * n_items + i] <- sum over `len` floats of items[i][j] * queries[q][j], rows of
  // `len` floats each (column-major: scores is n_items x n_queries).
  absl::Status Scores(const float* items, int n_items, const float* queries, int n_queries, int len,
                      float* scores) const;

 private:
  cublasHandle_t handle_ = nullptr;
};

}  // namespace fieldbrain::hrr::cuda
