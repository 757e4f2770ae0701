#include "server/device_fault_hook.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

#if defined(FIELDBRAIN_CUDA_EMU)
#include "cuda_emu/control.h"
#endif

namespace fieldbrain::server {

absl::StatusOr<DeviceFaultHook> ParseDeviceFaultHook(absl::string_view setting) {
#if !defined(FIELDBRAIN_CUDA_EMU)
  return absl::FailedPreconditionError(
      absl::StrCat("--test_inject_device_fault=\"", setting, "\" works in the emulation build only"));
#else
  const std::vector<absl::string_view> parts = absl::StrSplit(setting, ':');
  DeviceFaultHook hook;
  const bool ok = (parts.size() == 2 || parts.size() == 3) && !parts[0].empty() &&
                  absl::SimpleAtoi(parts[1], &hook.error) && hook.error > 0 &&
                  (parts.size() == 2 || (absl::SimpleAtoi(parts[2], &hook.nth) && hook.nth >= 1));
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat("--test_inject_device_fault=\"", setting,
                                                   "\" is not KERNEL:ERROR[:NTH] (ERROR a CUDA error number > 0, "
                                                   "NTH >= 1)"));
  }
  hook.kernel = std::string(parts[0]);
  return hook;
#endif
}

absl::Status ArmDeviceFault(const DeviceFaultHook& hook) {
#if defined(FIELDBRAIN_CUDA_EMU)
  emu::InjectKernelFault(hook.kernel, static_cast<cudaError_t>(hook.error), hook.nth);
  return absl::OkStatus();
#else
  return absl::FailedPreconditionError(absl::StrCat("cannot inject a fault into ", hook.kernel,
                                                    ": this is not the emulation build"));
#endif
}

}  // namespace fieldbrain::server
