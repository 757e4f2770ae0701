#!/usr/bin/env bash
# The demo of `make demo`: brain-server on loopback, DEMO_ROBOTS simulated PiCar-X robots driving
# against it for DEMO_SECONDS, a live line per second, a summary, then a clean stop.
# Ctrl-C at any point stops both and still prints the summary.
set -uo pipefail
build=${BUILD:-build}
seconds=${DEMO_SECONDS:-30}
robots=${DEMO_ROBOTS:-4}
port=${DEMO_PORT:-50051}
server_log=$(mktemp -t brain-server.XXXXXX.log)

server_pid=""
sim_pid=""
stop() {
  [ -n "$sim_pid" ] && kill -INT "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid"
    wait "$server_pid"
    echo "demo: brain-server stopped (exit $?)"
  fi
}
trap 'stop; exit 130' INT TERM

"$build/server/brain-server" --listen="127.0.0.1:$port" --engine=auto --field=auto \
    --max_robots="$robots" >"$server_log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q "listening" "$server_log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { echo "demo: brain-server failed to start:"; cat "$server_log"; exit 1; }
  sleep 0.1
done
echo "demo: $(grep -m1 listening "$server_log")"

"$build/client/brain-sim" --target="127.0.0.1:$port" --robots="$robots" --seconds="$seconds" &
sim_pid=$!
wait "$sim_pid"
sim_rc=$?
sim_pid=""
stop
echo "demo: server log in $server_log"
exit "$sim_rc"
