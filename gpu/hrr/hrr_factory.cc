#include <string>

#include "absl/strings/str_cat.h"
#include "gpu/engine.h"
#include "gpu/hrr/cpu/cpu_hrr_space.h"
#include "gpu/hrr/hrr_backend_context.h"
#include "gpu/hrr/hrr_space.h"
#if FIELDBRAIN_HAVE_CUDA_HRR
#include "gpu/hrr/cuda/cuda_hrr_space.h"
#include "gpu/hrr/cuda/cuda_libraries.h"
#endif

namespace fieldbrain::hrr {
namespace {

class CpuBackendContext final : public BackendContext {
 public:
  std::string_view backend() const override { return "cpu"; }
  int64_t bytes() const override { return 0; }
  absl::Status health() const override { return absl::OkStatus(); }
  absl::Status Reserve(const HrrConfig&) override { return absl::OkStatus(); }
};

}  // namespace

absl::StatusOr<std::unique_ptr<HrrSpace>> MakeHrrSpace(std::string_view backend, const HrrConfig& config,
                                                       HrrStorage storage) {
  if (backend == "auto") backend = CudaEngineAvailable() ? "cuda" : "cpu";
  if (backend == "cpu") return cpu::MakeCpuHrrSpace(config, storage);
  if (backend == "cuda") {
#if FIELDBRAIN_HAVE_CUDA_HRR
    if (!CudaEngineAvailable()) return absl::UnavailableError("no usable CUDA device");
    return cuda::MakeCudaHrrSpace(config, storage);
#else
    return absl::UnavailableError("this build has no CUDA backend (nvcc was not found at build time)");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown HRR backend '", std::string(backend), "': use auto, cpu or cuda"));
}

absl::StatusOr<std::shared_ptr<BackendContext>> AcquireBackendContext(std::string_view backend) {
  if (backend == "cpu") return std::make_shared<CpuBackendContext>();
  if (backend == "cuda") {
#if FIELDBRAIN_HAVE_CUDA_HRR
    if (!CudaEngineAvailable()) return absl::UnavailableError("no usable CUDA device");
    absl::StatusOr<std::shared_ptr<cuda::LibraryContext>> context = cuda::LibraryContext::Acquire();
    if (!context.ok()) return context.status();
    return std::shared_ptr<BackendContext>(*std::move(context));
#else
    return absl::UnavailableError("this build has no CUDA backend (nvcc was not found at build time)");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown HRR backend '", std::string(backend), "': use cpu or cuda"));
}

}  // namespace fieldbrain::hrr
