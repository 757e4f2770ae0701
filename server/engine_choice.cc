#include "server/engine_choice.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "gpu/engine_canary.h"
#include "gpu/hrr/hrr_canary.h"

namespace fieldbrain::server {
namespace {

// OK with what was measured, or FAILED_PRECONDITION with it. An HRR backend the build or the
// machine lacks (cuFFT and cuBLAS not installed) is no failure of the card: the Memory service
// then runs on the CPU backend.
absl::StatusOr<std::string> SelfCheck(Engine& engine) {
  absl::StatusOr<CanaryReport> canary = RunCanary(engine);
  if (!canary.ok()) return absl::FailedPreconditionError(absl::StrCat("the canary brains failed: ", canary.status().message()));
  std::string measured = DescribeCanary(*canary);
  if (!CanaryPassed(*canary)) return absl::FailedPreconditionError(measured);
  absl::StatusOr<hrr::HrrCanaryReport> round_trip = hrr::RunHrrCanary("cuda");
  if (absl::IsUnavailable(round_trip.status())) {
    absl::StrAppend(&measured, "; no CUDA HRR backend (", round_trip.status().message(), ")");
    return measured;
  }
  if (!round_trip.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(measured, "; the HRR round trip failed: ", round_trip.status().message()));
  absl::StrAppend(&measured, "; ", hrr::DescribeHrrCanary(*round_trip));
  if (!hrr::HrrCanaryPassed(*round_trip)) return absl::FailedPreconditionError(measured);
  return measured;
}

}  // namespace

std::string_view EngineReasonName(EngineReason reason) {
  switch (reason) {
    case EngineReason::kCpuRequested: return "cpu_requested";
    case EngineReason::kNoCudaDevice: return "no_cuda_device";
    case EngineReason::kSelfCheckPassed: return "self_check_passed";
    case EngineReason::kSelfCheckFailed: return "self_check_failed";
  }
  return "unknown";
}

absl::StatusOr<EngineChoice> ChooseEngine(std::string_view kind, const EngineConfig& config) {
  const bool want_cuda = kind == "cuda" || (kind == "auto" && CudaEngineAvailable());
  if (!want_cuda) {
    absl::StatusOr<std::unique_ptr<Engine>> cpu = MakeEngine(kind == "auto" ? "cpu" : kind, config);
    if (!cpu.ok()) return cpu.status();
    return EngineChoice{*std::move(cpu), kind == "auto" ? EngineReason::kNoCudaDevice : EngineReason::kCpuRequested, ""};
  }
  absl::StatusOr<std::unique_ptr<Engine>> cuda = MakeEngine("cuda", config);
  if (!cuda.ok()) return cuda.status();
  absl::StatusOr<std::string> checked = SelfCheck(**cuda);
  if (checked.ok()) return EngineChoice{*std::move(cuda), EngineReason::kSelfCheckPassed, *std::move(checked)};
  const std::string failure = absl::StrCat("the CUDA engine failed its start-up self-check: ", checked.status().message());
  if (kind == "cuda") return absl::FailedPreconditionError(failure);
  cuda->reset();  // its device memory goes before the CPU engine takes the host's
  absl::StatusOr<std::unique_ptr<Engine>> cpu = MakeEngine("cpu", config);
  if (!cpu.ok()) return cpu.status();
  return EngineChoice{*std::move(cpu), EngineReason::kSelfCheckFailed, failure};
}

absl::StatusOr<HrrBackendChoice> ChooseHrrBackend(std::string_view kind) {
  const bool want_cuda = kind == "cuda" || (kind == "auto" && CudaEngineAvailable());
  if (!want_cuda) return HrrBackendChoice{"cpu", kind == "auto" ? EngineReason::kNoCudaDevice : EngineReason::kCpuRequested, ""};
  absl::StatusOr<hrr::HrrCanaryReport> round_trip = hrr::RunHrrCanary("cuda");
  if (absl::IsUnavailable(round_trip.status()))
    return HrrBackendChoice{"cpu", EngineReason::kNoCudaDevice,
                            absl::StrCat("no CUDA HRR backend (", round_trip.status().message(), ")")};
  std::string measured = round_trip.ok() ? hrr::DescribeHrrCanary(*round_trip)
                                         : absl::StrCat("the HRR round trip failed: ", round_trip.status().message());
  if (round_trip.ok() && hrr::HrrCanaryPassed(*round_trip))
    return HrrBackendChoice{"cuda", EngineReason::kSelfCheckPassed, std::move(measured)};
  const std::string failure = absl::StrCat("the CUDA HRR backend failed its start-up self-check: ", measured);
  if (kind == "cuda") return absl::FailedPreconditionError(failure);
  return HrrBackendChoice{"cpu", EngineReason::kSelfCheckFailed, failure};
}

}  // namespace fieldbrain::server
