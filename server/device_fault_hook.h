// The test-only --test_inject_device_fault=KERNEL:ERROR[:NTH] (server/test_hook_flags.cc): once the
// daemon serves, the NTH launch (default 1) of the kernel named KERNEL fails with the CUDA error
// numbered ERROR, through the emulated device's fault injection (gpu/emu: a sticky error such as
// 700, cudaErrorIllegalAddress, latches the device context as on a card; another, such as 9,
// cudaErrorInvalidConfiguration, fails that launch alone). Only the emulation build can inject.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace fieldbrain::server {

struct DeviceFaultHook {
  std::string kernel;
  int error = 0;
  int nth = 1;
};

// INVALID_ARGUMENT for a malformed setting, FAILED_PRECONDITION in a build that cannot inject.
absl::StatusOr<DeviceFaultHook> ParseDeviceFaultHook(absl::string_view setting);
// Arms the fault on the emulated device.
absl::Status ArmDeviceFault(const DeviceFaultHook& hook);

}  // namespace fieldbrain::server
