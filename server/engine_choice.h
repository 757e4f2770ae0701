// Which engine serves, and why (brain_engine_info{engine, reason}): what --engine asks for,
// whether a usable CUDA device exists, and whether it passed the start-up self-check against the
// CPU engine (a canary batch, gpu/engine_canary.h, and an HRR round trip, gpu/hrr/hrr_canary.h).
// A card that computes something else never serves a robot.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "gpu/engine.h"

namespace fieldbrain::server {

enum class EngineReason {
  kCpuRequested,     // --engine=cpu
  kNoCudaDevice,     // --engine=auto, and no usable CUDA device (or none in this build)
  kSelfCheckPassed,  // the CUDA engine, proven against the CPU engine at start
  kSelfCheckFailed,  // --engine=auto: the CUDA engine computed something else; the CPU engine serves
};
std::string_view EngineReasonName(EngineReason reason);

struct EngineChoice {
  std::unique_ptr<Engine> engine;
  EngineReason reason = EngineReason::kCpuRequested;
  std::string self_check;  // what the self-check measured (for the log); empty when none ran
};

// cpu: the CPU engine. cuda: the CUDA engine, which must pass the self-check (FAILED_PRECONDITION
// with the figures when it does not). auto: the CUDA engine when a device exists and passes, else
// the CPU engine, with the reason. Runs on the thread that will own the engine.
absl::StatusOr<EngineChoice> ChooseEngine(std::string_view kind, const EngineConfig& config);

// The Memory service's backend where no engine runs (--serve=memory), by the same rules: a CUDA
// backend serves only after its HRR round trip matched the CPU backend's at start. cuda: refused
// (FAILED_PRECONDITION with the figures) when it does not; auto: the CPU backend, with the reason.
// A machine without the CUDA HRR libraries (no cuFFT) is no failure of the card: cpu, and the
// self_check says why. Runs on the thread that starts the service, before any request.
struct HrrBackendChoice {
  std::string backend;  // "cpu" or "cuda"
  EngineReason reason = EngineReason::kCpuRequested;
  std::string self_check;
};
absl::StatusOr<HrrBackendChoice> ChooseHrrBackend(std::string_view kind);

}  // namespace fieldbrain::server
