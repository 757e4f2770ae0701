#!/usr/bin/env bash
# picarx-brainstem end to end: --dry-run against the real brain-server (recorded, then replayed
# identically), a clean stop on SIGTERM, safe stops with no server, and the refusals without the
# hardware (no GPIO chip) and with a malformed calibration file.
#   brainstem_test.sh BRAIN_SERVER BRAINSTEM BRAIN_REPLAY WORK_DIR
set -uo pipefail
server=$1 stem=$2 replay=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --engine=cpu --field=small --max_robots=2 --threads=1 \
  --memory_arena_bytes=0 || fail "brain-server did not start"
trap 'kill -KILL $server_pid 2>/dev/null' EXIT

# 1. Three seconds at 20 Hz in the simulated arena, recorded; the replay is identical.
"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-e2e --seconds=3 --deadline_ms=200 \
  --record="$work/car.rec" > "$work/run.out" 2> "$work/run.err"
rc=$?
cat "$work/run.out" "$work/run.err"
[ "$rc" = 0 ] || fail "dry run exited $rc"
grep -q "connected to 127.0.0.1:$port as car-e2e: engine cpu, new brain" "$work/run.err" || fail "no connect line"
grep -q "ran .* 60 ticks (60 answered by the brain)" "$work/run.out" || fail "expected 60 ticks, all answered"
grep -q "done; the car is stopped" "$work/run.err" || fail "no clean stop"
recording=$(ls "$work"/car-*.rec)
[[ "$recording" =~ car-[0-9]{8}T[0-9]{6}Z\.rec$ ]] || fail "recording not named with its start time: '$recording'"
"$replay" --target="127.0.0.1:$port" --recording="$recording" > "$work/replay.out" 2>&1 || { cat "$work/replay.out"; fail "replay"; }
grep -q "^result        identical" "$work/replay.out" || { cat "$work/replay.out"; fail "replay not identical"; }

# 1b. The resume token survives a restart of the program: without it the kept brain is refused,
#     with it the brain comes back where it was.
"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-keep --seconds=1 --deadline_ms=200 \
  --resume_token_file="$work/token" > /dev/null 2> "$work/keep1.err" || { cat "$work/keep1.err"; fail "keep run 1"; }
grep -qE '^[0-9a-f]{32}$' "$work/token" || fail "no token file: '$(cat "$work/token" 2>&1)'"
[ "$(stat -c %a "$work/token")" = 600 ] || fail "token file readable by others"
"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-keep --seconds=1 > "$work/keep2.out" 2> "$work/keep2.err"
cat "$work/keep2.err"
grep -q 'FAILED_PRECONDITION: robot_id "car-keep" has a kept brain' "$work/keep2.err" || fail "kept brain not protected"
grep -q "safe stops       link_down 20" "$work/keep2.out" || fail "a refused robot must stay stopped"
"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-keep --seconds=1 --deadline_ms=200 \
  --resume_token_file="$work/token" > /dev/null 2> "$work/keep3.err"
cat "$work/keep3.err"
grep -q "as car-keep: engine cpu, brain resumed at cycle 20" "$work/keep3.err" || fail "brain not resumed with the kept token"

# 2. SIGTERM stops a run without end cleanly.
"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-term > "$work/term.out" 2> "$work/term.err" &
pid=$!
sleep 1.5
kill -TERM "$pid"
wait "$pid"
rc=$?
cat "$work/term.out" "$work/term.err"
[ "$rc" = 0 ] || fail "SIGTERM run exited $rc"
grep -q "stopped by signal; the car is stopped" "$work/term.err" || fail "no signal stop line"

# 3. No server: every tick a safe stop (link down), and the program still ends cleanly.
"$stem" --dry-run --target=127.0.0.1:1 --seconds=1 > "$work/nolink.out" 2> "$work/nolink.err"
rc=$?
cat "$work/nolink.out"
[ "$rc" = 0 ] || fail "no-server run exited $rc"
grep -q "safe stops       link_down 20" "$work/nolink.out" || fail "expected 20 link_down safe stops"

# 4. Without the hardware: a clear error, the car stopped, exit 1.
"$stem" --target="127.0.0.1:$port" --gpio_chip=gpiochip-missing --calibration="$work/none.conf" \
  > "$work/nohw.out" 2> "$work/nohw.err"
rc=$?
cat "$work/nohw.err"
[ "$rc" = 1 ] || fail "no-hardware run exited $rc"
grep -q "hardware error: cannot open GPIO chip gpiochip-missing" "$work/nohw.err" || fail "no hardware error line"
grep -q "no calibration file; running uncalibrated" "$work/nohw.err" || fail "missing calibration not reported"

# 5. A malformed calibration file is refused before any hardware is touched.
printf 'picarx_dir_servo = 2\npicarx_dir_motor = [1, 7]\n' > "$work/bad.conf"
"$stem" --target="127.0.0.1:$port" --calibration="$work/bad.conf" > "$work/badcal.out" 2> "$work/badcal.err"
rc=$?
cat "$work/badcal.err"
[ "$rc" = 2 ] || fail "malformed calibration exited $rc"
grep -q "refusing the calibration: .*bad.conf: line 2: picarx_dir_motor" "$work/badcal.err" || fail "no reason given"
echo "brainstem_test: passed"
