// The emulated device's controls, for tests and for whoever runs the emulation build: which real
// card it plays, injected faults, and what its checkers found. Not part of CUDA.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cuda_runtime_api.h"

namespace fieldbrain::emu {

// The cards the emulator can play (the limits of each are enforced: threads and shared memory
// per block, opt-in shared memory, grid dimensions): "h100" (the default; FIELDBRAIN_EMU_CARD
// picks another at start), "t4", "orin", "rtx5090".
std::vector<std::string> CardNames();
// Plays `name` from now on; false for a name not in CardNames(). Memory already allocated and
// kernel attributes already set stay.
bool SelectCard(std::string_view name);
std::string_view SelectedCardName();

// The nth launch from now of the kernel called `kernel` fails with `error`. A sticky error
// (cudaErrorIllegalAddress, cudaErrorLaunchFailure and the other 7xx faults) happens as the
// kernel runs: the context is latched and every later call returns it, as on a card. Any other
// error is returned by the launch itself, which then does not run.
void InjectKernelFault(std::string_view kernel, cudaError_t error, int nth = 1);
// The nth call from now of the runtime function `call` ("cudaMemcpyAsync", ...) returns `error`
// and does nothing else.
void InjectCallFault(std::string_view call, cudaError_t error, int nth = 1);
// After the nth launch from now of `kernel` has run, perturb(context, params) runs on the stream's
// worker, where `params` points at the launch's std::tuple of the kernel's arguments (device
// memory is host memory here, so it may change what the kernel wrote): how a test makes one
// kernel's output wrong.
using KernelPerturbation = void (*)(void* context, const void* params);
void InjectKernelEffect(std::string_view kernel, KernelPerturbation perturb, void* context, int nth = 1);
void ClearFaults();

// How many times the runtime entry point `call` ("cudaMalloc", "cudaFreeAsync", ...) was called in
// this process, failed calls included: how a test proves what a piece of code never calls.
int64_t CallCount(std::string_view call);

// AddressSanitizer reports any access to [p, p + bytes) of device memory from now until it is
// freed: red zones inside one allocation (between the brains of the engine's pool). Nothing
// without AddressSanitizer.
void MarkNoAccess(void* p, size_t bytes);

// What the checkers found (a divergent barrier, a bad shuffle, shared memory over the card's
// limit, a deadlocked block), one line each, in order; each also went to stderr and failed its
// kernel with a sticky cudaErrorLaunchFailure.
std::vector<std::string> Reports();
// Forgets a latched sticky error, the reports and the injected faults: what a process restart
// does on a card. Only for tests that go on after a fault.
void ResetDevice();

}  // namespace fieldbrain::emu
