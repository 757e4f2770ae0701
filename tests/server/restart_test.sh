#!/usr/bin/env bash
# A daemon restart as a robot lives it: picarx-brainstem (--dry-run, 20 Hz, its resume token in a
# file) drives brain-server --checkpoint_dir; the daemon gets SIGTERM and is started again on the
# same port and directory; the robot reconnects by itself and resumes its brain from the
# checkpoint, its cycle count continuing. Prints what the restart cost the robot (ticks without
# an answer, and how long) and checks it is bounded.
#   restart_test.sh BRAIN_SERVER BRAINSTEM WORK_DIR
set -uo pipefail
server=$1 stem=$2 work=$3
rm -rf "$work" && mkdir -p "$work/ckpt"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../start_brain_server.sh"
common=(--engine=cpu --field=small --max_robots=2 --threads=1 --memory_arena_bytes=0 --checkpoint_dir="$work/ckpt"
        --checkpoint_every_cycles=20)
start_brain_server "$server" "$work/server1.log" "${common[@]}" || fail "first daemon"
pids=("$server_pid")
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done' EXIT
port_first=$port

"$stem" --dry-run --target="127.0.0.1:$port" --robot_id=car-restart --seconds=8 --deadline_ms=40 \
  --resume_token_file="$work/token" > "$work/stem.out" 2> "$work/stem.err" &
stem_pid=$!
sleep 3
kill -TERM "${pids[0]}"
wait "${pids[0]}" || fail "the first daemon did not stop cleanly"
"$server" --listen="127.0.0.1:$port_first" "${common[@]}" 2> "$work/server2.log" &
pids+=($!)
wait "$stem_pid" || { cat "$work/stem.err"; fail "the brainstem failed"; }
cat "$work/stem.out"
grep -q 'robot_id "car-restart" resumes from its checkpoint at cycle' "$work/server2.log" \
  || { cat "$work/server2.log"; fail "the robot did not resume from its checkpoint"; }
at=$(sed -n 's/.*resumes from its checkpoint at cycle \([0-9]*\).*/\1/p' "$work/server2.log")
[ "$at" -ge 40 ] || fail "resumed at cycle $at, expected the ~60 cycles run before the restart"
ticks=$(sed -n 's/.*ran .* \([0-9]*\) ticks (\([0-9]*\) answered.*/\1 \2/p' "$work/stem.out")
read -r total answered <<<"$ticks"
lost=$((total - answered))
echo "restart cost: $lost of $total ticks without an answer ($(awk "BEGIN{print $lost/20}") s at 20 Hz); resumed at cycle $at"
[ "$lost" -le 60 ] || fail "the restart cost $lost ticks (over 3 s)"
kill -TERM "${pids[1]}"; wait "${pids[1]}"
echo "restart_test: passed"
