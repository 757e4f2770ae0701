// A space's cuFFT plans: batched R2C (Put) and C2R (Get) of its dimension, one pair per batch-size
// bucket (gpu/cuda/staging.h BatchBuckets: powers of two below max_batch, then max_batch), all
// made when the space is made. A cuFFT plan has a fixed batch, so a call of n vectors runs the
// smallest bucket holding n on padded staging rows (the padding rows' results are never read):
// no plan is made per call. Auto-allocation is off: every plan runs in the one work area the
// space allocates (plans on one stream never run at once).
#pragma once

#include <cuda_runtime_api.h>
#include <cufft.h>

#include <cstddef>
#include <vector>

#include "absl/status/status.h"
#include "gpu/hrr/hrr_math.h"

namespace fieldbrain::hrr::cuda {

// "cufftExecR2C failed: CUFFT_EXEC_FAILED (6)".
absl::Status CufftError(cufftResult r, const char* what);

class FftPlans {
 public:
  FftPlans() = default;
  FftPlans(FftPlans&&) noexcept = default;
  FftPlans& operator=(FftPlans&&) noexcept = default;

  // Makes the plans for vectors of `dim` and every bucket up to max_batch, bound to `stream`.
  absl::Status Init(int dim, int max_batch, cudaStream_t stream);
  // The largest work area any plan needs.
  size_t work_bytes() const { return work_bytes_; }
  absl::Status SetWorkArea(void* work);

  // Rows a call of n vectors transforms: its bucket. Input and output hold that many rows.
  int Rows(int n) const;
  // out[i] <- FFT(in[i]) (half spectra) for the bucket of n rows.
  absl::Status Forward(int n, float* in, Cf* out) const;
  // out[i] <- unnormalised inverse FFT of in[i]; cuFFT may overwrite `in` (C2R always does).
  absl::Status Inverse(int n, Cf* in, float* out) const;

 private:
  class Plan {
   public:
    Plan() = default;
    ~Plan();
    Plan(Plan&& o) noexcept;
    Plan& operator=(Plan&& o) noexcept;
    absl::Status Make(int dim, int batch, cufftType type, cudaStream_t stream, size_t& work_bytes);
    cufftHandle get() const { return handle_; }

   private:
    void Reset();
    cufftHandle handle_ = 0;
    bool valid_ = false;
  };

  std::vector<int> buckets_;
  std::vector<Plan> forward_;
  std::vector<Plan> inverse_;
  size_t work_bytes_ = 0;
};

}  // namespace fieldbrain::hrr::cuda
