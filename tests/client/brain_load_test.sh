#!/usr/bin/env bash
# brain-load against the real daemon (tiny field): every robot connected and answered, the
# summary's figures present, the daemon's CPU measured; a run where a robot's frames overrun the
# daemon's rate limit reports them by status; no server at all exits 1.
# Usage: brain_load_test.sh BRAIN_LOAD BRAIN_SERVER WORKDIR
set -u
load=$1 server=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --engine=cpu --field=tiny --max_robots=24 --threads=1 --max_frame_hz=30 --frame_burst=10
pid=$server_pid
trap 'kill -KILL $pid 2>/dev/null || true' EXIT

# 1. 16 robots at 20 Hz for 2 s: nobody starved, every status OK, figures printed.
"$load" --target="127.0.0.1:$port" --robots=16 --hz=20 --seconds=2 --warmup_s=0.5 --server_pid="$pid" \
  > "$work/run.txt" 2>&1 || fail "run exited $?"
cat "$work/run.txt"
grep -q "16 connected" "$work/run.txt" || fail "not every robot connected"
grep -q "robots starved: 0 of 16" "$work/run.txt" || fail "a robot was starved"
grep -q "non-OK statuses: 0 (none)" "$work/run.txt" || fail "non-OK statuses at 20 Hz"
answered=$(sed -n 's|.*throughput: \([0-9]*\) frames/s answered.*|\1|p' "$work/run.txt")
[[ -n "$answered" && "$answered" -ge 288 ]] || fail "throughput '$answered' < 90 % of 320 frames/s"
grep -qE "round trip: p50 [0-9.]+ ms  p99 [0-9.]+ ms  max [0-9.]+ ms" "$work/run.txt" || fail "no round trip line"
grep -qE "server CPU: [0-9.]+ us per frame" "$work/run.txt" || fail "server CPU not measured"

# 2. 50 Hz against a 30 Hz per-robot limit: the excess comes back RATE_LIMITED, counted by status.
"$load" --target="127.0.0.1:$port" --robots=2 --hz=50 --seconds=3 --warmup_s=0 --quiet \
  > "$work/limited.txt" 2>&1 || fail "limited run exited $?"
cat "$work/limited.txt"
grep -qE "non-OK statuses: [0-9]+ \(RATE_LIMITED [0-9]+\)" "$work/limited.txt" || fail "RATE_LIMITED not reported"

# 3. Nothing listening: exit status 1 and a reason.
kill -TERM "$pid"; wait "$pid" 2>/dev/null
"$load" --target="127.0.0.1:$port" --robots=2 --connect_timeout_s=1 > "$work/none.txt" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "no server: exit $rc, want 1"
grep -q "no robot got a Welcome" "$work/none.txt" || fail "no reason given"
echo "brain_load_test: OK"
