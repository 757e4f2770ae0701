#!/usr/bin/env bash
# brain-sim end to end against the fake Brain service: a timed run, a run stopped by SIGINT, and a
# run with no server at all. Usage: brain_sim_test.sh BRAIN_SIM FAKE_SERVER WORKDIR
set -u
sim=$1 server=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }

"$server" --port_file="$work/port" --seconds=50 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null' EXIT
for _ in $(seq 100); do [[ -s "$work/port" ]] && break; sleep 0.1; done
[[ -s "$work/port" ]] || fail "fake server did not start"
target="127.0.0.1:$(cat "$work/port")"

# 1. A timed run: live lines, a summary, every robot answered.
"$sim" --target="$target" --robots=2 --seconds=2.5 --hz=50 --deadline_ms=200 > "$work/run.txt" 2>&1
rc=$?
cat "$work/run.txt"
[[ $rc -eq 0 ]] || fail "timed run exited $rc"
grep -q "cycles/s  rtt p50" "$work/run.txt" || fail "no live line"
grep -q "^brain-sim summary" "$work/run.txt" || fail "no summary"
grep -q "robots           2 (2 connected at start)" "$work/run.txt" || fail "robots line"
answered=$(sed -n 's|.*cycles/s, \([0-9]*\) answered.*|\1|p' "$work/run.txt")
[[ -n "$answered" && "$answered" -ge 100 ]] || fail "answered frames: '$answered' < 100"
grep -q "engine fake" "$work/run.txt" || fail "server's Welcome not shown"

# 2. SIGINT stops a long run cleanly with a summary and exit status 0.
"$sim" --target="$target" --robots=2 --seconds=60 --quiet > "$work/int.txt" 2>&1 &
sim_pid=$!
sleep 1.5
kill -INT $sim_pid
wait $sim_pid
rc=$?
cat "$work/int.txt"
[[ $rc -eq 0 ]] || fail "SIGINT run exited $rc"
grep -q "stopped by signal" "$work/int.txt" || fail "no signal note"
grep -q "^brain-sim summary" "$work/int.txt" || fail "no summary after SIGINT"

# 3. Nothing listening: a clear message and a non-zero exit.
kill $server_pid; wait $server_pid 2>/dev/null
"$sim" --target="$target" --robots=1 --seconds=1 --connect_timeout_s=1 > "$work/none.txt" 2>&1
rc=$?
cat "$work/none.txt"
[[ $rc -eq 1 ]] || fail "no-server run exited $rc, expected 1"
grep -q "could not connect to $target" "$work/none.txt" || fail "no clear message"
# 4. A baseline needs no server: lockstep ticks in random rooms, with the learning-curve lines.
"$sim" --policy=random-held --arena=random --ticks=3000 --robots=3 --seed=11 --quiet > "$work/base.txt" 2>&1
rc=$?
cat "$work/base.txt"
[[ $rc -eq 0 ]] || fail "baseline run exited $rc"
grep -q "cycles           9000 " "$work/base.txt" || fail "3 robots x 3000 ticks"
grep -q "blocked / 1000   first 1000 ticks" "$work/base.txt" || fail "no blocked line"
grep -q "reward / tick    first 1000 ticks" "$work/base.txt" || fail "no reward-per-tick line"
grep -q "longest blocked" "$work/base.txt" || fail "no longest-blocked line"
"$sim" --policy=walk --ticks=10 > "$work/bad.txt" 2>&1
[[ $? -eq 2 ]] || fail "an unknown policy must exit 2"

echo PASS
