// BackendContext: what every HrrSpace of one backend shares in a process. The CUDA backend's is
// one stream, one cuBLAS handle and its work area (gpu/hrr/cuda/cuda_libraries.h): made when the
// first space needs it, freed when the last holder lets go, so N spaces cost one work area, not N.
// The CPU backend shares nothing (0 bytes).
//
// Whoever keeps spaces alive across many creations and deletions (the Memory service's store)
// should hold the context too, so that it is made once and its bytes are counted once.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fieldbrain::hrr {

struct HrrConfig;

class BackendContext {
 public:
  virtual ~BackendContext() = default;
  virtual std::string_view backend() const = 0;
  // Bytes the context holds (the cuBLAS work area; the pinned staging block), beside every space's own.
  virtual int64_t bytes() const = 0;
  // OK, or the sticky device error some space found (NVIDIA: every context of the process is then
  // lost until it restarts). Latched for the process's life.
  virtual absl::Status health() const = 0;
  // Sizes what the context shares for spaces of up to `largest`'s dimension and max_batch now, so
  // that making such spaces later allocates nothing shared (the CUDA context's pinned staging
  // block, whose allocation synchronises the device). bytes() then includes it. CPU: nothing.
  virtual absl::Status Reserve(const HrrConfig& largest) = 0;
};

// The process's context of `backend` ("cpu" or "cuda"); UNAVAILABLE when that backend cannot
// run here, INVALID_ARGUMENT for another name.
absl::StatusOr<std::shared_ptr<BackendContext>> AcquireBackendContext(std::string_view backend);

}  // namespace fieldbrain::hrr
