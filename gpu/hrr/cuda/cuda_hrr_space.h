// The CUDA backend of HrrSpace: spectra in one device allocation, cuFFT batched R2C/C2R plans with
// work areas we allocate, fused bin-by-bin kernels, cleanup as one cuBLAS GEMM plus a top-k pass.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr::cuda {

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeCudaHrrSpace(const HrrConfig& config, HrrStorage storage = {});

}  // namespace fieldbrain::hrr::cuda
