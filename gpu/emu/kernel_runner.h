// Runs one kernel launch on the calling (stream worker) thread: the blocks one after another,
// the threads of a block as fibers scheduled in thread order, switching only at __syncthreads and
// warp shuffles. What a card would do with a broken kernel the checkers report instead (gpu/emu/
// README.md lists them), failing the kernel with a sticky cudaErrorLaunchFailure.
#pragma once

#include <functional>

#include "cuda_emu/launch.h"

namespace fieldbrain::emu {

void RunGrid(const LaunchConfig& config, const std::function<void()>& thread_body);

}  // namespace fieldbrain::emu
