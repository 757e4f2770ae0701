#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (clang, -fsanitize=fuzzer,address,undefined) into
# WORK_DIR and runs one of them for SECONDS on a copy of its seed corpus. Exits non-zero on a
# crash, a leak or a sanitizer report (the reproducer is left in WORK_DIR/<target>/), which then
# becomes a unit test.
#   run_fuzzers.sh SOURCE_DIR WORK_DIR TARGET SECONDS
set -euo pipefail
src=$1 work=$2 target=$3 seconds=$4
clangxx=$(command -v clang++ || true)
[ -n "$clangxx" ] || { echo "run_fuzzers: clang++ missing (deploy/install-deps.sh installs clang, libfuzzer-14-dev)"; exit 1; }
mkdir -p "$work"
# One configure and build for every target; targets run in parallel, so the build is locked.
(
  flock 9
  if [ ! -x "$work/build/$target" ] || [ -n "$(find "$src/tests/fuzz" "$src/server" "$src/client/picarx" "$src/common" "$src/proto" \
        -newer "$work/build/$target" -name '*.*' -print -quit)" ]; then
    cmake -S "$src/tests/fuzz" -B "$work/build" -DCMAKE_CXX_COMPILER="$clangxx" -DCMAKE_BUILD_TYPE=Release > "$work/configure.log"
    cmake --build "$work/build" -j2 > "$work/build.log" || { cat "$work/build.log"; exit 1; }
  fi
) 9> "$work/.lock"
run="$work/$target"
rm -rf "$run" && mkdir -p "$run/corpus"
cp "$src/tests/fuzz/corpus/$target/"* "$run/corpus/"  # every target has seeds
echo "run_fuzzers: $target from $(ls "$run/corpus" | wc -l) seeds"
cd "$run"
"$work/build/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -print_final_stats=1 corpus 2>&1 | tail -25
echo "run_fuzzers: $target ran ${seconds}s without a finding"
