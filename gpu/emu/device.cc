#include "gpu/emu/device.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

#include "cuda_emu/control.h"
#include "gpu/emu/sanitizers.h"

namespace fieldbrain::emu {
namespace {

constexpr size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

// Limits from NVIDIA's CUDA C++ Programming Guide (compute capability tables) and the cards'
// datasheets.
constexpr Card kCards[] = {
    {"h100", "NVIDIA H100 80GB HBM3 (emulated)", 9, 0, 132, 80 * GiB, 48 * KiB, 227 * KiB, 228 * KiB, 2048,
     50 * int(MiB), 5120, 1980000},
    {"t4", "Tesla T4 (emulated)", 7, 5, 40, 15 * GiB, 48 * KiB, 64 * KiB, 64 * KiB, 1024, 4 * int(MiB), 256, 1590000},
    {"orin", "Orin (emulated)", 8, 7, 16, 61 * GiB, 48 * KiB, 163 * KiB, 164 * KiB, 1536, 4 * int(MiB), 256, 1300000},
    {"rtx5090", "NVIDIA GeForce RTX 5090 (emulated)", 12, 0, 170, 31 * GiB, 48 * KiB, 99 * KiB, 100 * KiB, 1536,
     96 * int(MiB), 512, 2410000},
};

const Card* FindCard(std::string_view key) {
  for (const Card& c : kCards)
    if (key == c.key) return &c;
  return nullptr;
}

struct Injection {
  std::string name;
  int countdown;
  KernelInjection what;
};

struct State {
  explicit State(const Card* c) : card(c) {}
  std::mutex mu;
  const Card* card;
  cudaError_t sticky = cudaSuccess;
  std::map<const std::byte*, Allocation> allocations;
  size_t device_in_use = 0;
  std::map<const void*, size_t> max_dynamic_shared;
  std::vector<Injection> launch_faults;
  std::vector<Injection> run_injections;
  std::vector<Injection> call_faults;
  std::vector<std::string> reports;
};

const Card* CardFromEnvironment() {
  const char* env = std::getenv("FIELDBRAIN_EMU_CARD");
  const Card* card = FindCard(env != nullptr ? env : "h100");
  if (card == nullptr) {
    std::fprintf(stderr, "fieldbrain cuda-emu: FIELDBRAIN_EMU_CARD=%s is not one of h100, t4, orin, rtx5090\n", env);
    std::exit(2);
  }
  return card;
}

// Made on first use, before any stream (whose workers use it), so destroyed after them.
State& S() {
  static State s(CardFromEnvironment());
  return s;
}

thread_local cudaError_t last_error = cudaSuccess;

}  // namespace

const Card& CurrentCard() {
  std::lock_guard<std::mutex> lock(S().mu);
  return *S().card;
}

size_t DeviceMemoryBytes() {
  if (const char* env = std::getenv("FIELDBRAIN_EMU_DEVICE_MEMORY")) return size_t(std::strtoull(env, nullptr, 10));
  const size_t host = size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGESIZE));
  return std::min(CurrentCard().global_bytes, host / 2);
}

cudaError_t Record(cudaError_t e) {
  if (e != cudaSuccess) last_error = e;
  return e;
}

cudaError_t TakeLastError() {
  const cudaError_t sticky = Sticky();
  if (sticky != cudaSuccess) return last_error = sticky;
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t PeekLastError() {
  const cudaError_t sticky = Sticky();
  return sticky != cudaSuccess ? sticky : last_error;
}

cudaError_t Sticky() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().sticky;
}

void Latch(cudaError_t e) {
  std::lock_guard<std::mutex> lock(S().mu);
  if (S().sticky == cudaSuccess) S().sticky = e;
}

bool IsStickyError(cudaError_t e) {
  // The faults after which NVIDIA says the context cannot be used: the 7xx launch errors
  // except the resource errors a launch returns synchronously.
  const int v = int(e);
  return v >= 700 && v < 800 && e != cudaErrorLaunchOutOfResources;
}

void Report(const std::string& line) {
  std::fprintf(stderr, "fieldbrain cuda-emu: %s\n", line.c_str());
  {
    std::lock_guard<std::mutex> lock(S().mu);
    S().reports.push_back(line);
  }
  if (std::getenv("FIELDBRAIN_EMU_ABORT_ON_REPORT") != nullptr) std::abort();
}

cudaError_t EnterCall(const char* call) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  for (auto it = s.call_faults.begin(); it != s.call_faults.end(); ++it) {
    if (it->name != call || --it->countdown > 0) continue;
    const cudaError_t e = it->what.error;
    s.call_faults.erase(it);
    last_error = e;
    return e;
  }
  if (s.sticky != cudaSuccess) last_error = s.sticky;
  return s.sticky;
}

void FillPoison(void* p, size_t bytes) {
  constexpr uint32_t kSignallingNan = 0x7fa00000u;
  auto* b = static_cast<unsigned char*>(p);
  size_t i = 0;
  for (; i + 4 <= bytes; i += 4) std::memcpy(b + i, &kSignallingNan, 4);
  for (; i < bytes; ++i) b[i] = 0xa0;
}

void* Allocate(size_t bytes, MemoryKind kind) {
  State& s = S();
  const size_t limit = DeviceMemoryBytes();
  const size_t reserved = kind == MemoryKind::kDevice ? bytes : 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.device_in_use + reserved > limit) return nullptr;
    s.device_in_use += reserved;  // reserved before the allocation, so two threads cannot both pass
  }
  // 256 bytes: cudaMalloc's documented alignment. At least one byte, so each allocation has an
  // address of its own.
  void* p = ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(256), std::nothrow);
  std::lock_guard<std::mutex> lock(s.mu);
  if (p == nullptr) {
    s.device_in_use -= reserved;
    return nullptr;
  }
  FillPoison(p, bytes);
  s.allocations[static_cast<std::byte*>(p)] = Allocation{static_cast<std::byte*>(p), bytes, kind};
  return p;
}

bool Free(void* p, MemoryKind kind) {
  State& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.allocations.find(static_cast<std::byte*>(p));
    if (it == s.allocations.end() || it->second.kind != kind) return false;
    if (kind == MemoryKind::kDevice) s.device_in_use -= it->second.bytes;
    s.allocations.erase(it);
  }
  ::operator delete(p, std::align_val_t(256));
  return true;
}

std::optional<Allocation> FindAllocation(const void* p) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.upper_bound(static_cast<const std::byte*>(p));
  if (it == s.allocations.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  const auto* b = static_cast<const std::byte*>(p);
  if (b < a.begin || b >= a.begin + std::max<size_t>(a.bytes, 1)) return std::nullopt;
  return a;
}

size_t DeviceBytesInUse() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().device_in_use;
}

size_t MaxDynamicShared(const void* kernel) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.max_dynamic_shared.find(kernel);
  return it != s.max_dynamic_shared.end() ? it->second : s.card->shared_per_block;
}

std::optional<size_t> DynamicSharedAttribute(const void* kernel) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.max_dynamic_shared.find(kernel);
  if (it == s.max_dynamic_shared.end()) return std::nullopt;
  return it->second;
}

void SetMaxDynamicShared(const void* kernel, size_t bytes) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().max_dynamic_shared[kernel] = bytes;
}

namespace {

KernelInjection Take(std::vector<Injection>& list, std::string_view kernel) {
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (it->name != kernel || --it->countdown > 0) continue;
    const KernelInjection what = it->what;
    list.erase(it);
    return what;
  }
  return KernelInjection{};
}

}  // namespace

cudaError_t TakeLaunchFault(std::string_view kernel) {
  std::lock_guard<std::mutex> lock(S().mu);
  return Take(S().launch_faults, kernel).error;
}

KernelInjection TakeRunInjection(std::string_view kernel) {
  std::lock_guard<std::mutex> lock(S().mu);
  return Take(S().run_injections, kernel);
}

// --- control.h ---

std::vector<std::string> CardNames() {
  std::vector<std::string> names;
  for (const Card& c : kCards) names.emplace_back(c.key);
  return names;
}

bool SelectCard(std::string_view name) {
  const Card* c = FindCard(name);
  if (c == nullptr) return false;
  std::lock_guard<std::mutex> lock(S().mu);
  S().card = c;  // kernel attributes stay, as in a process; a launch over the new card's limits fails
  return true;
}

std::string_view SelectedCardName() { return CurrentCard().key; }

void InjectKernelFault(std::string_view kernel, cudaError_t error, int nth) {
  std::lock_guard<std::mutex> lock(S().mu);
  (IsStickyError(error) ? S().run_injections : S().launch_faults)
      .push_back(Injection{std::string(kernel), nth, KernelInjection{error, nullptr, nullptr}});
}

void InjectCallFault(std::string_view call, cudaError_t error, int nth) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().call_faults.push_back(Injection{std::string(call), nth, KernelInjection{error, nullptr, nullptr}});
}

void InjectKernelEffect(std::string_view kernel, KernelPerturbation perturb, void* context, int nth) {
  std::lock_guard<std::mutex> lock(S().mu);
  S().run_injections.push_back(Injection{std::string(kernel), nth, KernelInjection{cudaSuccess, perturb, context}});
}

void ClearFaults() {
  std::lock_guard<std::mutex> lock(S().mu);
  S().launch_faults.clear();
  S().run_injections.clear();
  S().call_faults.clear();
}

void MarkNoAccess(void* p, size_t bytes) { sanitizer::PoisonRange(p, bytes); }

std::vector<std::string> Reports() {
  std::lock_guard<std::mutex> lock(S().mu);
  return S().reports;
}

void ResetDevice() {
  std::lock_guard<std::mutex> lock(S().mu);
  S().sticky = cudaSuccess;
  S().reports.clear();
  S().launch_faults.clear();
  S().run_injections.clear();
  S().call_faults.clear();
  last_error = cudaSuccess;
}

}  // namespace fieldbrain::emu
