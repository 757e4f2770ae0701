#!/usr/bin/env bash
# What a GPU session runs, in one device call: the gpu-labelled tests (gpu_tests, from
# tests/gpu/CMakeLists.txt), the CUDA HRR backend's tests and benchmark (hrr_gpu_test,
# hrr_gpu_bench), the CUDA benchmark (cuda_cycle_bench) and the PyTorch peer
# (torch_reference.py: eager, torch.compile and torch.compile with CUDA graphs), then a summary of
# DESIGN.md section 8's targets with the ratios torch eager / ours and best torch.compile / ours per
# field and batch size.
#
# The device machine has the CUDA driver, nvcc and PyTorch, but none of our Debian libraries
# (Abseil, Google Benchmark, GoogleTest, libgomp...), so the C++ programs travel as a bundle that
# /work/shared/tools/device-bundle.sh makes here, with their libraries and a `run` wrapper:
#
#   1. Build, on the build machine (-j1 where the cores are shared):
#        cmake -S /work/main -B /work/main/build-bench
#        cmake --build /work/main/build-bench -j1 --target gpu_tests cuda_cycle_bench server_e2e_test brain-server \
#            hrr_gpu_test hrr_gpu_bench
#   2. Bundle into a folder of the checkout that git ignores (/bundle*/ is in .gitignore):
#        cd /work/main && /work/shared/tools/device-bundle.sh bundle-gpu \
#            build-bench/tests/gpu/gpu_tests build-bench/tests/bench/cuda_cycle_bench \
#            build-bench/tests/server/server_e2e_test build-bench/server/brain-server \
#            build-bench/tests/hrr/hrr_gpu_test build-bench/tests/bench/hrr_gpu_bench
#   3. One device call (the `run` tool; it starts in the repository root there):
#        command:   bash tests/bench/run_gpu_bench.sh bundle-gpu
#        carry:     ["bundle-gpu"]
#        timeout_s: 600
#      Everything is written under $OUT and comes back with the reply: gpu_tests.log,
#      hrr_gpu_test.log, hrr_gpu_bench.log, hrr_gpu_bench.json, cuda_cycle_bench.log, cuda_cycle_bench.json, torch_reference.log, torch_reference.json,
#      summary.txt. Without OUT (a manual run) they go to a fresh folder under /tmp, named at the end.
#      If the summary shows torch rows "skipped: time budget" (10 torch.compile compilations can take
#      minutes), make a second call with SKIP_TESTS=1 in front of the command: the benchmarks then
#      have the whole budget.
#
# Optional environment:
#   SKIP_TESTS=1      leave out gpu_tests (a second call for the benchmarks only)
#   SKIP_BENCH=1      leave out cuda_cycle_bench
#   SKIP_HRR=1        leave out hrr_gpu_test and hrr_gpu_bench
#   SKIP_TORCH=1      leave out torch_reference.py
#   GTEST_FILTER=...  passed to gpu_tests as --gtest_filter
#   TORCH_ARGS="..."  more arguments for torch_reference.py, e.g.
#                     "--modes compile-max" or "--batch 64,256 --field default"
#   BUDGET_S=560      seconds the whole script may take (the device tool kills a command at 600).
#                     gpu_tests gets at most TESTS_BUDGET_S (default 300); torch_reference.py gets
#                     what is left: it starts no configuration in its last TORCH_TAIL_S (90) seconds
#                     and reports those as skipped, and is stopped 10 s before the budget ends.
#                     hrr_gpu_test and hrr_gpu_bench get at most HRR_BUDGET_S (default 150) together,
#                     before cuda_cycle_bench.
#
# Exit status: 0 when every part that ran passed; 1 otherwise (the summary says which); 2 on usage.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed 's/^# \{0,1\}//' | head -n -1 >&2; exit 2; }
[ $# -eq 1 ] || usage
bundle=$(cd "$1" 2>/dev/null && pwd) || { echo "error: no bundle folder '$1' (see the header: step 2)" >&2; exit 2; }
[ -x "$bundle/run" ] || { echo "error: $bundle/run is missing: make the bundle with device-bundle.sh (header, step 2)" >&2; exit 2; }
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$(mktemp -d /tmp/gpu-bench.XXXXXX)}
mkdir -p "$out"
export PYTHONUNBUFFERED=1

budget=${BUDGET_S:-560}
tests_budget=${TESTS_BUDGET_S:-300}
torch_tail=${TORCH_TAIL_S:-90}
started=$(date +%s)
elapsed() { echo $(( $(date +%s) - started )); }
left() { echo $(( budget - $(elapsed) )); }

tests_status="not run"; e2e_status="not run"; bench_status="not run"; torch_status="not run"
hrr_test_status="not run"; hrr_bench_status="not run"
hrr_budget=${HRR_BUDGET_S:-150}
failed=0

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null \
  || echo "(nvidia-smi not available)"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' 2>/dev/null \
  || echo "(python3 has no torch)"

# 1. The gpu-labelled tests: parity with the CPU engine, batch independence, graphs, copy counts.
if [ "${SKIP_TESTS:-0}" = 1 ]; then
  tests_status="skipped (SKIP_TESTS=1)"
elif [ ! -x "$bundle/bin/gpu_tests" ]; then
  tests_status="FAILED: gpu_tests is not in the bundle"; failed=1
else
  echo "== gpu_tests (at most ${tests_budget}s)"
  t0=$(date +%s)
  timeout "$tests_budget" "$bundle/run" gpu_tests --gtest_color=no ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} \
    2>&1 | tee "$out/gpu_tests.log"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - t0 ))
  # On the GPU machine a skip means the device was not usable: that is a failure here.
  if [ "$rc" = 0 ] && grep -q "no CUDA device" "$out/gpu_tests.log"; then
    tests_status="FAILED: tests skipped: $(grep -m1 -o 'no CUDA device.*' "$out/gpu_tests.log")"; failed=1
  elif [ "$rc" = 0 ]; then tests_status="passed (${took}s)";
  elif [ "$rc" = 124 ]; then tests_status="FAILED: stopped after ${tests_budget}s"; failed=1;
  else tests_status="FAILED: exit status $rc (${took}s)"; failed=1; fi
fi

# 1b. The daemon end to end on the CUDA engine: the e2e suite with --engine=cuda.
if [ "${SKIP_TESTS:-0}" = 1 ]; then
  e2e_status="skipped (SKIP_TESTS=1)"
elif [ ! -x "$bundle/bin/server_e2e_test" ] || [ ! -x "$bundle/bin/brain-server" ]; then
  e2e_status="FAILED: server_e2e_test or brain-server is not in the bundle"; failed=1
else
  echo "== server_e2e_test with --engine=cuda"
  FIELDBRAIN_E2E_ENGINE=cuda BRAIN_SERVER="$bundle/bin/brain-server" timeout 180 \
    "$bundle/run" server_e2e_test --gtest_color=no 2>&1 | tee "$out/server_e2e_cuda.log"
  rc=${PIPESTATUS[0]}
  if [ "$rc" = 0 ]; then e2e_status="passed"; else e2e_status="FAILED: exit status $rc"; failed=1; fi
fi

# 1c. The CUDA HRR backend: parity with the CPU backend, copy counts (hrr_gpu_test), then its
# benchmark (hrr_gpu_bench: binds, superposition, cleanup against a same-bytes copy reference).
if [ "${SKIP_HRR:-0}" = 1 ]; then
  hrr_test_status="skipped (SKIP_HRR=1)"; hrr_bench_status="skipped (SKIP_HRR=1)"
elif [ ! -x "$bundle/bin/hrr_gpu_test" ] || [ ! -x "$bundle/bin/hrr_gpu_bench" ]; then
  hrr_test_status="FAILED: hrr_gpu_test or hrr_gpu_bench is not in the bundle"; hrr_bench_status="$hrr_test_status"
  failed=1
else
  hrr_deadline=$(( $(elapsed) + ( hrr_budget < $(left) ? hrr_budget : $(left) ) ))
  hrr_left() { local l=$(( hrr_deadline - $(elapsed) )); echo $(( l > 10 ? l : 10 )); }
  if [ "${SKIP_TESTS:-0}" = 1 ]; then
    hrr_test_status="skipped (SKIP_TESTS=1)"
  else
    echo "== hrr_gpu_test (at most $(hrr_left)s)"
    t0=$(date +%s)
    timeout "$(hrr_left)" "$bundle/run" hrr_gpu_test --gtest_color=no 2>&1 | tee "$out/hrr_gpu_test.log"
    rc=${PIPESTATUS[0]}
    took=$(( $(date +%s) - t0 ))
    if [ "$rc" = 0 ] && grep -q "no CUDA device" "$out/hrr_gpu_test.log"; then
      hrr_test_status="FAILED: tests skipped: $(grep -m1 -o 'no CUDA device.*' "$out/hrr_gpu_test.log")"; failed=1
    elif [ "$rc" = 0 ]; then hrr_test_status="passed (${took}s)";
    elif [ "$rc" = 124 ]; then hrr_test_status="FAILED: stopped after ${took}s"; failed=1;
    else hrr_test_status="FAILED: exit status $rc (${took}s)"; failed=1; fi
  fi
  echo "== hrr_gpu_bench (at most $(hrr_left)s)"
  t0=$(date +%s)
  timeout "$(hrr_left)" "$bundle/run" hrr_gpu_bench --benchmark_format=console --benchmark_color=false \
    --benchmark_out="$out/hrr_gpu_bench.json" --benchmark_out_format=json 2>&1 | tee "$out/hrr_gpu_bench.log"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ] && grep -q "^no CUDA device" "$out/hrr_gpu_bench.log"; then
    hrr_bench_status="FAILED: $(grep -m1 '^no CUDA device' "$out/hrr_gpu_bench.log")"; failed=1
  elif [ "$rc" = 0 ]; then hrr_bench_status="ran (${took}s)";
  elif [ "$rc" = 124 ]; then hrr_bench_status="FAILED: stopped after ${took}s (rows so far are in the log)"; failed=1;
  else hrr_bench_status="FAILED: exit status $rc"; failed=1; fi
fi

# 2. The CUDA benchmark.
if [ "${SKIP_BENCH:-0}" = 1 ]; then
  bench_status="skipped (SKIP_BENCH=1)"
elif [ ! -x "$bundle/bin/cuda_cycle_bench" ]; then
  bench_status="FAILED: cuda_cycle_bench is not in the bundle"; failed=1
else
  echo "== cuda_cycle_bench"
  t0=$(date +%s)
  timeout "$(( $(left) > 30 ? $(left) - 20 : 10 ))" "$bundle/run" cuda_cycle_bench --benchmark_format=console \
    --benchmark_color=false --benchmark_out="$out/cuda_cycle_bench.json" --benchmark_out_format=json \
    2>&1 | tee "$out/cuda_cycle_bench.log"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ] && grep -q "^no CUDA device" "$out/cuda_cycle_bench.log"; then
    bench_status="FAILED: $(grep -m1 '^no CUDA device' "$out/cuda_cycle_bench.log")"; failed=1
  elif [ "$rc" = 0 ]; then bench_status="ran (${took}s)"; else bench_status="FAILED: exit status $rc"; failed=1; fi
fi

# 3. The PyTorch peer, eager and torch.compile (with and without CUDA graphs), with whatever time is left.
if [ "${SKIP_TORCH:-0}" = 1 ]; then
  torch_status="skipped (SKIP_TORCH=1)"
elif [ "$(left)" -lt $(( torch_tail + 30 )) ]; then
  torch_status="FAILED: only $(left)s of the budget left"; failed=1
else
  hard=$(( $(left) - 10 ))
  echo "== torch_reference.py (deadline $(( hard - torch_tail ))s, stopped at ${hard}s)"
  t0=$(date +%s)
  # shellcheck disable=SC2086  # TORCH_ARGS is a list of words on purpose
  timeout "$hard" python3 "$repo/tests/bench/torch_reference.py" --out "$out/torch_reference.json" \
    --deadline-s "$(( hard - torch_tail ))" ${TORCH_ARGS:-} 2>&1 | tee "$out/torch_reference.log"
  rc=${PIPESTATUS[0]}
  took=$(( $(date +%s) - t0 ))
  if [ "$rc" = 0 ]; then torch_status="ran, checks passed (${took}s)";
  elif [ "$rc" = 124 ]; then torch_status="FAILED: stopped after ${hard}s (rows so far are in the JSON)"; failed=1;
  else torch_status="FAILED: exit status $rc (${took}s)"; failed=1; fi
fi

# 4. Summary: the targets of DESIGN.md section 8, from the two JSON files.
echo "== summary"
python3 - "$out" "$tests_status" "$bench_status" "$torch_status" <<'EOF' | tee "$out/summary.txt"
import json, os, re, sys

out, tests_status, bench_status, torch_status = sys.argv[1:5]
EAGER_TARGET, COMPILE_TARGET = 10.0, 3.0   # DESIGN.md section 8: >= 10x eager, >= 3x the best torch.compile
BANDWIDTH_TARGET, BANDWIDTH_FROM = 0.7, 64  # evolve >= 70 % of the copy bandwidth at 64+ robots
COMPILE_MODES = ("compile", "compile-ro", "compile-max")
ONE_ROBOT_TARGET_US = 50.0                  # one robot's full cycle, default field, GPU time

def load(name):
    try:
        with open(os.path.join(out, name)) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"({name}: {e})")
        return None

def mark(ok):
    return "ok" if ok else "MISS"

ours, skipped, one = {}, {}, None
bench = load("cuda_cycle_bench.json")
if bench:
    ctx = bench.get("context", {})
    print(f"device: {ctx.get('cuda_device', '?')}; copy reference {float(ctx.get('copy_GBps', 'nan')):.0f} GB/s "
          f"(device-to-device cudaMemcpy, bytes read + written)")
    for b in bench.get("benchmarks", []):
        name = b.get("run_name", b.get("name", ""))
        if b.get("error_occurred"):
            skipped[name.split("/iterations")[0]] = b.get("error_message", "")
            continue
        m = re.match(r"cuda_cycle/(\w+)_field/robots:(\d+)", name)
        if m:
            ours[(m.group(1), int(m.group(2)))] = b
        elif name.startswith("cuda_one_robot/"):
            one = b
torch_report = load("torch_reference.json")
peer = {}
if torch_report:
    for r in torch_report.get("rows", []):
        peer[(r["field"], r["batch"], r["mode"])] = r

print(f"gpu_tests:          {tests_status}")
print(f"cuda_cycle_bench:   {bench_status}")
print(f"torch_reference.py: {torch_status}")
if torch_report:
    checks = torch_report.get("checks", {})
    print(f"  torch {torch_report.get('torch')}, modes {', '.join(torch_report.get('modes', []))}, "
          f"parity with the scalar cycle: {checks.get('parity', 'not run')}")
for name, msg in skipped.items():
    print(f"  {name}: {msg}")
for r in (torch_report or {}).get("rows", []):
    if r.get("status") != "ok":
        print(f"  torch {r['field']} B={r['batch']} {r['mode']}: {r.get('status')}")

if one:
    k = one.get("kernels_us", float("nan"))
    print(f"\none robot, default field: kernels {k:.1f} us (target < {ONE_ROBOT_TARGET_US:.0f}: "
          f"{mark(k < ONE_ROBOT_TARGET_US)}), RunBatch {one.get('batch_wall_us', float('nan')):.1f} us wall, "
          f"{one.get('batch_event_us', float('nan')):.1f} us device clock; stages: "
          + ", ".join(f"{s} {one[s + '_us']:.1f} us" for s in ("predict", "evolve", "motor") if s + "_us" in one)
          + f"; copies per batch {one.get('h2d_per_batch', float('nan')):g} H2D, "
          f"{one.get('d2h_per_batch', float('nan')):g} D2H, allocations in the loop {one.get('allocs_in_loop', float('nan')):g}")

def us(row):
    return row["ms_per_cycle"] * 1e3 if row and "ms_per_cycle" in row else None

def fmt(v, spec):
    return format(v, spec) if v is not None else "-"

print("\nper batch: ours = cuda_cycle_bench batch_wall_us (median RunBatch, copies and sync included);"
      "\ntorch = torch_reference.py median ms per cycle (CUDA events); ratio = torch time / ours;"
      "\nbest compile = the fastest torch.compile mode measured (compile, compile-ro = CUDA graphs, compile-max)")
header = (f"{'field':>7} {'B':>5} {'ours us':>10} {'robot-cyc/s':>12} {'evolve/copy':>12} "
          f"{'eager us':>10} {'compile us':>11} {'c-graphs us':>12} {'eager/ours':>11} {'best compile/ours':>18}")
print(header)
keys = sorted({(f, b) for f, b in ours} | {(f, b) for f, b, _ in peer}, key=lambda k: (k[0] != "default", k[1]))
for field, batch in keys:
    o = ours.get((field, batch))
    ours_us = o.get("batch_wall_us") if o else None
    eager_us = us(peer.get((field, batch, "eager")))
    compile_us = us(peer.get((field, batch, "compile")))
    graphs_us = us(peer.get((field, batch, "compile-ro")))
    measured = [(us(peer.get((field, batch, m))), m) for m in COMPILE_MODES]
    measured = [(t, m) for t, m in measured if t]
    best_us, best_mode = min(measured) if measured else (None, None)
    frac = o.get("evolve_frac_of_copy") if o else None
    r_eager = eager_us / ours_us if eager_us and ours_us else None
    r_compile = best_us / ours_us if best_us and ours_us else None
    frac_txt = fmt(frac, ".2f")
    if frac is not None and batch >= BANDWIDTH_FROM:
        frac_txt += " " + mark(frac >= BANDWIDTH_TARGET)
    e_txt = fmt(r_eager, ".1f") + (" " + mark(r_eager >= EAGER_TARGET) if r_eager else "")
    c_txt = (fmt(r_compile, ".1f") + (" " + mark(r_compile >= COMPILE_TARGET) if r_compile else "")
             + (f" ({best_mode})" if best_mode else ""))
    print(f"{field:>7} {batch:>5} {fmt(ours_us, '.1f'):>10} {fmt(o.get('robot_cycles_per_s') if o else None, '.0f'):>12} "
          f"{frac_txt:>12} {fmt(eager_us, '.1f'):>10} {fmt(compile_us, '.1f'):>11} {fmt(graphs_us, '.1f'):>12} "
          f"{e_txt:>11} {c_txt:>18}")
print(f"\ntargets: eager/ours >= {EAGER_TARGET:g}, best compile/ours >= {COMPILE_TARGET:g}, "
      f"evolve/copy >= {BANDWIDTH_TARGET:g} at {BANDWIDTH_FROM}+ robots; '-' = not measured (see the logs)")
EOF

echo "server_e2e (cuda):  $e2e_status" | tee -a "$out/summary.txt"
# The seed's bind in torch.fft on the same GPU, the peer of hrr_gpu_bench's batched binds.
if [ "${SKIP_HRR:-0}" != 1 ] && [ "${SKIP_TORCH:-0}" != 1 ] && [ "$(left)" -gt 40 ]; then
  echo "== torch_hrr_reference.py"
  timeout "$(( $(left) - 10 ))" python3 "$repo/tests/bench/torch_hrr_reference.py" --out "$out/torch_hrr_reference.json" \
    2>&1 | tee "$out/torch_hrr_reference.log"
fi
echo "hrr_gpu_test:       $hrr_test_status" | tee -a "$out/summary.txt"
echo "hrr_gpu_bench:      $hrr_bench_status" | tee -a "$out/summary.txt"
# The HRR target of DESIGN.md section 8: batched binds at B >= 10^4 at >= 50 % of a same-bytes copy.
python3 - "$out" <<'EOF' | tee -a "$out/summary.txt"
import json, os, re, sys
try:
    with open(os.path.join(sys.argv[1], "hrr_gpu_bench.json")) as f:
        rows = json.load(f).get("benchmarks", [])
except (OSError, ValueError) as e:
    print(f"(hrr_gpu_bench.json: {e})")
    sys.exit(0)
for b in rows:
    name = b.get("run_name", b.get("name", ""))
    if b.get("error_occurred"):
        print(f"  {name}: {b.get('error_message', '')}")
        continue
    frac = b.get("frac_of_copy")
    m = re.match(r"hrr_bind/resident/binds:(\d+)", name)
    mark = ""
    if m and int(m.group(1)) >= 10000 and frac is not None:
        mark = " ok" if frac >= 0.5 else " MISS"
    extra = f", {b['bytes_GBps']:.0f} GB/s, {frac:.2f} of the copy{mark}" if frac is not None else ""
    print(f"  {name}: {b.get('call_us', float('nan')):.1f} us per call{extra}; "
          f"copies per call {b.get('h2d_per_call', float('nan')):g} H2D, {b.get('d2h_per_call', float('nan')):g} D2H")
# Against torch.fft doing the seed's bind (target: ours >= 3x faster at every B, resident binds).
try:
    with open(os.path.join(sys.argv[1], "torch_hrr_reference.json")) as f:
        torch_rows = {r["batch"]: r for r in json.load(f)["rows"]}
except (OSError, ValueError, KeyError) as e:
    print(f"(torch_hrr_reference.json: {e})")
    sys.exit(0)
ours = {}
for b in rows:
    m = re.match(r"hrr_bind/(resident|raw)/binds:(\d+)", b.get("run_name", b.get("name", "")))
    if m and not b.get("error_occurred"):
        ours[(m.group(1), int(m.group(2)))] = b.get("call_us")
print("  vs torch.fft (seed's bind, inputs on the GPU): B, torch us, ours resident us, ratio, ours raw us, ratio")
for batch, t in sorted(torch_rows.items()):
    res, raw = ours.get(("resident", batch)), ours.get(("raw", batch))
    r1 = t["seed_fft_us"] / res if res else None
    r2 = t["seed_fft_us"] / raw if raw else None
    mark = "" if r1 is None else (" ok" if r1 >= 3.0 else " MISS")
    print(f"  {batch:>7} {t['seed_fft_us']:>10.1f} {res if res else float('nan'):>10.1f} "
          f"{(r1 or float('nan')):>6.1f}{mark} {raw if raw else float('nan'):>10.1f} {(r2 or float('nan')):>6.1f}")
EOF
echo "== results in $out (elapsed $(elapsed)s)"
exit "$failed"
