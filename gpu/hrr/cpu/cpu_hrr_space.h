// The CPU backend of HrrSpace: spectra in one host block, KissFFT for the transforms (BSD; the
// project cannot ship FFTW's GPL next to cuFFT), OpenMP over the entries of a batch.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "gpu/hrr/hrr_space.h"

namespace fieldbrain::hrr::cpu {

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeCpuHrrSpace(const HrrConfig& config, HrrStorage storage = {});

}  // namespace fieldbrain::hrr::cpu
