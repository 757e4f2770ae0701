// Flags for tests that drive the real daemon into states a healthy machine never reaches. Kept
// out of server_flags.cc so that `brain-server --help` (which lists that file's flags) does not
// offer them to operators.
#include <cstdint>
#include <string>

#include "absl/flags/flag.h"

ABSL_FLAG(int64_t, test_fail_engine_after_batches, 0,
          "testing only: with --engine=cpu, the engine fails after this many batches as a GPU "
          "would after a device error (0 = never)");
ABSL_FLAG(std::string, test_inject_device_fault, "",
          "testing only, emulation build: KERNEL:ERROR[:NTH], once the daemon serves the NTH launch of "
          "KERNEL fails with CUDA error number ERROR (server/device_fault_hook.h)");
