#include "gpu/emu/device.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
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
  CUmemPoolHandle_st default_pool;
  std::map<cudaMemPool_t, std::unique_ptr<CUmemPoolHandle_st>> pools;
  std::map<std::string, int64_t, std::less<>> calls;  // entry points by name, for CallCount
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
  ++s.calls[call];
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

namespace {

// A pool's bytes of one allocation are free for reuse (s.mu held). A destroyed pool gives them
// back to the device, and goes with its last allocation.
void ReturnLocked(State& s, cudaMemPool_t pool, size_t bytes) {
  pool->used -= bytes;
  if (!pool->destroyed) return;
  s.device_in_use -= pool->reserved - pool->used;
  pool->reserved = pool->used;
  if (pool->used == 0) s.pools.erase(pool);
}

}  // namespace

bool Free(void* p, MemoryKind kind) {
  State& s = S();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.allocations.find(static_cast<std::byte*>(p));
    if (it == s.allocations.end() || it->second.kind != kind) return false;
    // cudaFree also frees a stream-ordered allocation (it synchronises first).
    if (it->second.pool != nullptr) {
      ReturnLocked(s, it->second.pool, it->second.bytes);
    } else if (kind == MemoryKind::kDevice) {
      s.device_in_use -= it->second.bytes;
    }
    s.allocations.erase(it);
  }
  ::operator delete(p, std::align_val_t(256));
  return true;
}

void* AllocateFromPool(cudaMemPool_t pool, size_t bytes) {
  State& s = S();
  const size_t limit = DeviceMemoryBytes();
  size_t grown = 0;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    const size_t unused = pool->reserved - pool->used;
    grown = bytes > unused ? bytes - unused : 0;
    if (s.device_in_use + grown > limit) return nullptr;
    s.device_in_use += grown;
    pool->reserved += grown;
    pool->used += bytes;
    pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
    pool->used_high = std::max(pool->used_high, pool->used);
  }
  // Each allocation its own heap block, as cudaMalloc's (AddressSanitizer sees overruns and uses
  // after the free); the pool's figures are what a card's pool would reserve.
  void* p = ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(256), std::nothrow);
  std::lock_guard<std::mutex> lock(s.mu);
  if (p == nullptr) {
    ReturnLocked(s, pool, bytes);
    return nullptr;
  }
  FillPoison(p, bytes);
  s.allocations[static_cast<std::byte*>(p)] = Allocation{static_cast<std::byte*>(p), bytes, MemoryKind::kDevice, pool};
  return p;
}

bool ReturnToPool(void* p) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.allocations.find(static_cast<std::byte*>(p));
  if (it == s.allocations.end() || it->second.pool == nullptr) return false;
  ReturnLocked(s, it->second.pool, it->second.bytes);
  s.allocations.erase(it);  // no later call may name it; work already queued still may use it
  return true;
}

void Release(void* p) { ::operator delete(p, std::align_val_t(256)); }

cudaMemPool_t DefaultPool() { return &S().default_pool; }

cudaMemPool_t CreatePool() {
  State& s = S();
  auto pool = std::make_unique<CUmemPoolHandle_st>();
  cudaMemPool_t handle = pool.get();
  std::lock_guard<std::mutex> lock(s.mu);
  s.pools.emplace(handle, std::move(pool));
  return handle;
}

bool DestroyPool(cudaMemPool_t pool) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.pools.find(pool);
  if (it == s.pools.end() || pool->destroyed) return false;
  // As the runtime: returns at once; the pool goes when its last allocation is freed.
  pool->destroyed = true;
  s.device_in_use -= pool->reserved - pool->used;
  pool->reserved = pool->used;
  if (pool->used == 0) s.pools.erase(it);
  return true;
}

bool IsPool(cudaMemPool_t pool) {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (pool == &s.default_pool) return true;
  auto it = s.pools.find(pool);
  return it != s.pools.end() && !pool->destroyed;
}

PoolFigures FiguresOf(cudaMemPool_t pool) {
  std::lock_guard<std::mutex> lock(S().mu);
  return PoolFigures{pool->release_threshold, pool->reserved, pool->reserved_high, pool->used, pool->used_high};
}

bool SetPoolFigure(cudaMemPool_t pool, cudaMemPoolAttr attr, uint64_t value) {
  std::lock_guard<std::mutex> lock(S().mu);
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold: pool->release_threshold = value; return true;
    case cudaMemPoolAttrReservedMemHigh:
      if (value != 0) return false;
      pool->reserved_high = pool->reserved;
      return true;
    case cudaMemPoolAttrUsedMemHigh:
      if (value != 0) return false;
      pool->used_high = pool->used;
      return true;
    default: return false;
  }
}

void TrimPools() {
  State& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto trim = [&](CUmemPoolHandle_st& pool) {
    const size_t keep = std::max<size_t>(size_t(std::min<uint64_t>(pool.release_threshold, SIZE_MAX)), pool.used);
    if (pool.reserved <= keep) return;
    s.device_in_use -= pool.reserved - keep;
    pool.reserved = keep;
  };
  trim(s.default_pool);
  for (auto& [handle, pool] : s.pools) trim(*pool);
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

int64_t CallCount(std::string_view call) {
  std::lock_guard<std::mutex> lock(S().mu);
  auto it = S().calls.find(call);
  return it != S().calls.end() ? it->second : 0;
}

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
