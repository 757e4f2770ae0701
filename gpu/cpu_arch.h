// Whether this CPU runs the instructions the engines were built for. A build for other machines
// (FIELDBRAIN_NATIVE=OFF) targets x86-64-v3 on x86 (CMakeLists.txt); on an older CPU its engine
// code would stop the daemon with an illegal instruction, so the daemon asks first and refuses with
// the reason. Inline on purpose: it compiles into its caller, which the build leaves at the
// compiler's baseline.
#pragma once

#include <string>

#include "absl/status/status.h"

namespace fieldbrain {

inline absl::Status CheckCpuRunsEngines() {
#if defined(FIELDBRAIN_ENGINE_X86_LEVEL) && (defined(__x86_64__) || defined(__i386__))
#define FIELDBRAIN_STR2(x) #x
#define FIELDBRAIN_STR(x) FIELDBRAIN_STR2(x)
  constexpr const char* kLevel = "x86-64-v" FIELDBRAIN_STR(FIELDBRAIN_ENGINE_X86_LEVEL);
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("x86-64-v" FIELDBRAIN_STR(FIELDBRAIN_ENGINE_X86_LEVEL)))
    return absl::FailedPreconditionError(
        std::string("this build's engines need an ") + kLevel +
        " CPU (v3: AVX2 and FMA, Intel Haswell, AMD Excavator or later); rebuild with "
        "-DFIELDBRAIN_NATIVE=ON on this machine, or -DFIELDBRAIN_PORTABLE_ARCH= for any x86-64 CPU");
#undef FIELDBRAIN_STR
#undef FIELDBRAIN_STR2
#endif
  return absl::OkStatus();
}

}  // namespace fieldbrain
