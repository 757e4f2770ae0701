#!/usr/bin/env bash
# Bearer tokens end to end: brain-server --tokens_file, brain-sim --token_file; a robot id the
# token does not cover is refused until the file covers it and the daemon gets SIGHUP, while a
# robot already driving is not dropped; the token never appears in the daemon's log.
#   tokens_test.sh BRAIN_SERVER BRAIN_SIM WORK_DIR
set -uo pipefail
server=$1 sim=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../start_brain_server.sh"
cd "$work"
token=fleet-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')
echo "$token robots=sim-1-*" > tokens
echo "$token" > robot.token
start_brain_server "$server" server.log --engine=cpu --field=small --max_robots=4 --threads=1 \
  --memory_arena_bytes=0 --tokens_file=tokens || fail "brain-server with a tokens file"
trap 'kill -KILL $server_pid 2>/dev/null' EXIT
target=127.0.0.1:$port
sim_run() {  # sim_run NAME SECONDS [FLAG...]
  "$sim" --target="$target" --robots=1 --seconds="$2" --deadline_ms=200 --connect_timeout_s=3 --quiet "${@:3}" > "$1.out" 2>&1
}

sim_run notoken 1 --seed=1 && fail "a robot without a token drove"
grep -q "UNAUTHENTICATED" notoken.out || { cat notoken.out; fail "no UNAUTHENTICATED"; }
sim_run covered 1 --seed=1 --token_file=robot.token || { cat covered.out; fail "a covered robot could not drive"; }
sim_run uncovered 1 --seed=2 --token_file=robot.token && fail "robot sim-2-0 drove with a token for sim-1-*"
grep -q 'PERMISSION_DENIED: this token may not drive robot_id .sim-2-0.' uncovered.out \
  || { cat uncovered.out; fail "no PERMISSION_DENIED"; }

# A robot drives across the reload; the reload lets sim-2-0 in.
sim_run across 4 --seed=1 --token_file=robot.token &
across=$!
sleep 1.5
echo "$token robots=sim-1-*,sim-2-*" > tokens
kill -HUP "$server_pid"
sleep 0.5
sim_run now 1 --seed=2 --token_file=robot.token || { cat now.out; fail "sim-2-0 refused after the reload"; }
wait "$across" || { cat across.out; fail "the robot driving across the reload failed"; }
grep -q "safe stops       0 (0.00 %)" across.out || { cat across.out; fail "the reload disturbed a live robot"; }
grep -q "SIGHUP: tokens file tokens reloaded" server.log || { cat server.log; fail "no reload line"; }

# A broken file on SIGHUP is refused and the tokens in use stay.
echo "short robots=*" > tokens
kill -HUP "$server_pid"
sleep 0.5
grep -q "SIGHUP: tokens: tokens file line 1: a token must be 16-256 characters; the tokens in use stay" server.log \
  || { cat server.log; fail "a broken tokens file was not refused"; }
sim_run still 1 --seed=2 --token_file=robot.token || { cat still.out; fail "the old tokens were dropped"; }
grep -q -- "$token" server.log && fail "the token appears in the daemon's log"
kill -TERM "$server_pid"; wait "$server_pid"
echo "tokens_test: passed"
