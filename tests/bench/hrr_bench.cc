// The HRR library's CPU backend (gpu/hrr), D = 1024, each figure beside a reference measured in
// the same run: NumPy's FFT bind and superposition (the seed's CPU baseline, through
// numpy_hrr_reference.py and Debian's python3) and memcpy of the same bytes. The seed's targets
// (single bind 0.1 ms, 100 binds 2 ms, a 1000-vector superposition 1 ms) are printed beside ours.
//
// Bytes model of a resident bind: read two half spectra, write one: 3 x (D/2 + 1) x 8 bytes.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "gpu/hrr/hrr_space.h"
#include "tests/hrr/slot_lists.h"

#ifndef FIELDBRAIN_NUMPY_REFERENCE
#error "FIELDBRAIN_NUMPY_REFERENCE must name numpy_hrr_reference.py"
#endif

namespace fieldbrain::hrr {
namespace {

using testing::Ids;
using testing::Range;

constexpr int kDim = 1024;

// NumPy's figures (microseconds by name), measured once at start; empty when NumPy is missing.
std::map<std::string, double>& Numpy() {
  static std::map<std::string, double> figures;
  return figures;
}

void MeasureNumpy() {
  const std::string cmd = std::string("/usr/bin/python3 ") + FIELDBRAIN_NUMPY_REFERENCE + " --dim " +
                          std::to_string(kDim) + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return;
  char name[128];
  double us = 0;
  char line[256];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    std::fputs(line, stdout);
    if (std::sscanf(line, "%127s %lf", name, &us) == 2) Numpy()[name] = us;
  }
  pclose(p);
}

void VsNumpy(benchmark::State& state, const char* name, double ours_us) {
  auto it = Numpy().find(name);
  if (it != Numpy().end() && ours_us > 0) state.counters[std::string("numpy_") + name + "_us"] = it->second,
                                         state.counters["x_faster_than_numpy"] = it->second / ours_us;
}

std::unique_ptr<HrrSpace> Space(int capacity, int max_batch) {
  auto s = MakeHrrSpace("cpu", HrrConfig{kDim, capacity, max_batch});
  return s.ok() ? *std::move(s) : nullptr;
}

std::vector<float> Gaussian(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> g(0.0f, 1.0f / 32.0f);
  std::vector<float> v(size_t(n) * kDim);
  for (float& x : v) x = g(rng);
  return v;
}

// A failed call ends the benchmark with its message instead of timing nothing.
bool Ok(benchmark::State& state, const absl::Status& status) {
  if (!status.ok()) state.SkipWithError(std::string(status.message()).c_str());
  return status.ok();
}

double UsPerIteration(benchmark::State& state, std::chrono::steady_clock::duration total) {
  return std::chrono::duration<double, std::micro>(total).count() / double(state.iterations());
}

// One bind of two vectors already in the space (frequency domain): no FFT.
void BM_SingleBindResident(benchmark::State& state) {
  auto s = Space(3, 2);
  const std::vector<int32_t> a = {0}, b = {1}, out = {2};
  if (!Ok(state, s->Put(Range(0, 2), Gaussian(2, 1)))) return;
  std::chrono::steady_clock::duration total{};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Ok(state, s->Bind(out, a, b))) return;
    total += std::chrono::steady_clock::now() - t0;
  }
  VsNumpy(state, "single_bind", UsPerIteration(state, total));
  state.counters["seed_target_us"] = 100;
}

// The seed's operation: two raw vectors in, their binding out (two forward FFTs, one inverse).
void BM_SingleBindFromRaw(benchmark::State& state) {
  auto s = Space(3, 2);
  const std::vector<float> in = Gaussian(2, 2);
  std::vector<float> result(kDim);
  const std::vector<int32_t> ab = {0, 1}, a = {0}, b = {1}, out = {2};
  std::chrono::steady_clock::duration total{};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Ok(state, s->Put(ab, in))) return;
    if (!Ok(state, s->Bind(out, a, b))) return;
    if (!Ok(state, s->Get(out, result))) return;
    total += std::chrono::steady_clock::now() - t0;
    benchmark::DoNotOptimize(result.data());
  }
  VsNumpy(state, "single_bind", UsPerIteration(state, total));
  state.counters["seed_target_us"] = 100;
}

// 100 pairs from raw vectors, as the seed's "100 binds".
void BM_HundredBindsFromRaw(benchmark::State& state) {
  auto s = Space(300, 200);
  const std::vector<float> in = Gaussian(200, 3);
  std::vector<float> result(size_t(100) * kDim);
  std::chrono::steady_clock::duration total{};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Ok(state, s->Put(Range(0, 200), in))) return;
    if (!Ok(state, s->Bind(Range(200, 100), Range(0, 100), Range(100, 100)))) return;
    if (!Ok(state, s->Get(Range(200, 100), result))) return;
    total += std::chrono::steady_clock::now() - t0;
    benchmark::DoNotOptimize(result.data());
  }
  VsNumpy(state, "binds_100", UsPerIteration(state, total));
  state.counters["seed_target_us"] = 2000;
}

// 1000 resident vectors superposed and normalised.
void BM_SuperposeThousand(benchmark::State& state) {
  auto s = Space(1001, 1000);
  if (!Ok(state, s->Put(Range(0, 1000), Gaussian(1000, 4)))) return;
  const std::vector<int32_t> out = {1000}, offsets = {0, 1000};
  const std::vector<int32_t> terms = Range(0, 1000);
  std::chrono::steady_clock::duration total{};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Ok(state, s->Superpose(out, offsets, terms, {}, true))) return;
    total += std::chrono::steady_clock::now() - t0;
  }
  VsNumpy(state, "superpose_1000", UsPerIteration(state, total));
  state.counters["seed_target_us"] = 1000;
}

// B resident binds in one call, in GB/s of the bytes model, against memcpy of the same bytes
// (measured here, same buffers' size, median of 5).
void BM_BatchedBindResident(benchmark::State& state) {
  const int n = int(state.range(0));
  auto s = Space(3 * n, 2 * n);
  if (!s) {
    state.SkipWithError("cannot make the space");
    return;
  }
  const std::vector<int32_t> filled = Range(0, 2 * n);
  if (!Ok(state, s->Random(filled, VectorKind::kGaussian, 5, std::vector<uint64_t>(filled.begin(), filled.end()))))
    return;
  const double bytes = 3.0 * double(Bins(kDim)) * 8.0 * n;
  std::vector<char> src(static_cast<size_t>(bytes)), dst(static_cast<size_t>(bytes));
  std::memset(src.data(), 1, src.size());
  std::vector<double> memcpy_s;
  for (int r = 0; r < 5; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    memcpy_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    benchmark::DoNotOptimize(dst.data());
  }
  std::sort(memcpy_s.begin(), memcpy_s.end());
  const double memcpy_gbps = 2.0 * bytes / memcpy_s[2] / 1e9;  // read + write, like the model
  const std::vector<int32_t> out = Range(2 * n, n), a = Range(0, n), b = Range(n, n);
  std::chrono::steady_clock::duration total{};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!Ok(state, s->Bind(out, a, b))) return;
    total += std::chrono::steady_clock::now() - t0;
  }
  const double seconds = std::chrono::duration<double>(total).count() / double(state.iterations());
  state.counters["binds_per_s"] = double(n) / seconds;
  state.counters["GBps"] = bytes / seconds / 1e9;
  state.counters["memcpy_GBps"] = memcpy_gbps;
  state.counters["frac_of_memcpy"] = bytes / seconds / 1e9 / memcpy_gbps;
  state.counters["us_per_bind"] = seconds * 1e6 / n;
}

BENCHMARK(BM_SingleBindResident)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SingleBindFromRaw)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_HundredBindsFromRaw)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SuperposeThousand)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_BatchedBindResident)->RangeMultiplier(10)->Range(1, 100000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace fieldbrain::hrr

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  std::printf("HRR CPU backend, D = %d, %d OpenMP threads; NumPy reference (same run):\n", fieldbrain::hrr::kDim,
              omp_get_max_threads());
  fieldbrain::hrr::MeasureNumpy();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
