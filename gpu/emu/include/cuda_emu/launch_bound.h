// A kernel's __launch_bounds__ as the emulation build sees it. nvcc keeps a kernel's maximum
// threads per block in the compiled kernel and the driver refuses a larger block
// (cudaErrorLaunchOutOfResources). Here a kernel is a plain function, so FB_KERNEL
// (gpu/cuda/kernel_macros.h) gives it one more parameter, defaulted, of type LaunchBound<N>: the
// bound is then part of the kernel's type, template kernels whose bound depends on their
// parameters included, and the launch reads it from there.
#pragma once

#include <cstddef>
#include <tuple>

namespace fieldbrain::emu {

template <int kMaxThreads>
struct LaunchBound {
  static_assert(kMaxThreads > 0, "a launch bound is a positive number of threads");
};

template <typename T>
struct LaunchBoundOf {
  static constexpr int value = 0;
};
template <int kMaxThreads>
struct LaunchBoundOf<LaunchBound<kMaxThreads>> {
  static constexpr int value = kMaxThreads;
};

// The bound a kernel with these parameters declared, or 0 when it declared none.
template <typename... Params>
constexpr int DeclaredLaunchBound() {
  if constexpr (sizeof...(Params) == 0) {
    return 0;
  } else {
    return LaunchBoundOf<std::tuple_element_t<sizeof...(Params) - 1, std::tuple<Params...>>>::value;
  }
}

}  // namespace fieldbrain::emu
