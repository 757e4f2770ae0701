#include "absl/strings/str_cat.h"
#include "gpu/cpu/cpu_engine.h"
#include "gpu/engine.h"
#if FIELDBRAIN_HAVE_CUDA
#include "gpu/cuda/cuda_engine.h"
#endif

namespace fieldbrain {
namespace {

absl::Status CheckConfig(const EngineConfig& c) {
  if (!c.shape.valid())
    return absl::InvalidArgumentError(absl::StrCat("invalid field shape ", c.shape.channels, "x", c.shape.nx, "x",
                                                   c.shape.ny, "x", c.shape.nz));
  if (c.max_robots < 1) return absl::InvalidArgumentError("max_robots must be at least 1");
  if (c.max_batch < 1 || c.max_batch > c.max_robots)
    return absl::InvalidArgumentError(absl::StrCat("max_batch must be in 1..max_robots (", c.max_robots, ")"));
  if (c.threads < 0) return absl::InvalidArgumentError("threads must be 0 (all cores) or positive");
  return absl::OkStatus();
}

}  // namespace

bool CudaEngineAvailable() {
#if FIELDBRAIN_HAVE_CUDA
  return cuda::CudaDevicePresent();
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<Engine>> MakeEngine(std::string_view kind, const EngineConfig& config) {
  if (absl::Status s = CheckConfig(config); !s.ok()) return s;
  if (kind == "auto") kind = CudaEngineAvailable() ? "cuda" : "cpu";
  if (kind == "cpu") return cpu::MakeCpuEngine(config);
  if (kind == "cuda") {
#if FIELDBRAIN_HAVE_CUDA
    if (!cuda::CudaDevicePresent()) return absl::UnavailableError("no usable CUDA device");
    return cuda::MakeCudaEngine(config);
#else
    return absl::UnavailableError("this build has no CUDA engine (nvcc was not found at build time)");
#endif
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown engine '", std::string(kind), "': use auto, cpu or cuda"));
}

}  // namespace fieldbrain
