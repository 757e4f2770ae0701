#!/usr/bin/env bash
# brain-server --engine=cuda on the emulated device (the cuda-emu build), end to end: the daemon
# starts on the CUDA engine once it passed its self-check against the CPU engine, serves simulated robots through brain-sim (lockstep ticks: every
# frame answered by the CUDA kernels) and the Memory example through the CUDA HRR backend, and
# stops cleanly on SIGTERM.
#   daemon_on_emulated_device_test.sh BRAIN_SERVER BRAIN_SIM PROTO_DIR EXAMPLE WORK_DIR PYTHON
set -euo pipefail
server=$1 sim=$2 proto_dir=$3 example=$4 work=$5 python=$6
fail() { echo "FAIL: $*" >&2; exit 1; }

source "$(dirname "$0")/../memory_example.sh"
memory_example_stubs "$python" "$proto_dir" "$work" || fail "no Python gRPC stubs"

source "$(dirname "$0")/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --engine=cuda --field=tiny --max_robots=4 --threads=1 \
  --memory_arena_bytes=67108864  # the shared cuBLAS work area (32 MiB on the emulated H100) and the spaces
pid=$server_pid
trap 'kill -KILL $pid 2>/dev/null || true' EXIT
grep -q "engine=cuda" "$work/server.log" || fail "the daemon did not start on the CUDA engine: $(cat "$work/server.log")"
grep -q "(emulated)" "$work/server.log" || fail "the device is not the emulated card: $(cat "$work/server.log")"
grep -q "Memory service: backend=cuda" "$work/server.log" || fail "the Memory service is not on the CUDA HRR backend"
grep -q "CUDA engine self-check passed: " "$work/server.log" || fail "no start-up self-check in the log"
grep "self-check" "$work/server.log"

# Robots: lockstep ticks with a generous deadline (the emulated device is slow, not late).
"$sim" --target="127.0.0.1:$port" --robots=3 --ticks=150 --arena=random --seed=5 --deadline_ms=2000 --quiet \
  > "$work/sim.txt" 2>&1 || { cat "$work/sim.txt"; fail "brain-sim failed"; }
cat "$work/sim.txt"
grep -q "engine cuda" "$work/sim.txt" || fail "brain-sim was not served by the CUDA engine"
grep -q "safe stops       0 " "$work/sim.txt" || fail "safe stops on the emulated device"
grep -q "cycles           450 " "$work/sim.txt" || fail "not every tick was answered"

# The Memory service on the CUDA HRR backend.
memory_example_run "$python" "$example" "$work" "$port" || fail "the Memory example"

kill -TERM "$pid"
wait "$pid" || fail "brain-server did not exit 0 on SIGTERM: $(tail -5 "$work/server.log")"
trap - EXIT
grep -q "device error\|CUDA error\|cuda-emu:" "$work/server.log" && fail "device errors in the log: $(cat "$work/server.log")"
echo "daemon_on_emulated_device_test: passed"
