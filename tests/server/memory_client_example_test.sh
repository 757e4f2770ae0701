#!/usr/bin/env bash
# Runs examples/memory_client.py against the real brain-server: generates the Python stubs of
# memory.proto into the build tree with grpc_tools.protoc, starts the daemon on a free loopback
# port (it binds port 0 and logs the port it got), runs the example and checks what it prints.
# Fails when any step does, the example included.
#   memory_client_example_test.sh BRAIN_SERVER PROTO_DIR EXAMPLE WORK_DIR PYTHON
set -euo pipefail
server=$1 proto_dir=$2 example=$3 work=$4 python=$5

source "$(dirname "$0")/../memory_example.sh"
memory_example_stubs "$python" "$proto_dir" "$work"

source "$(dirname "$0")/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --engine=cpu --field=small --max_robots=1 --threads=1 \
  --memory_arena_bytes=16777216
pid=$server_pid
trap 'kill -KILL $pid 2>/dev/null || true' EXIT

memory_example_run "$python" "$example" "$work" "$port"

kill -TERM "$pid"
wait "$pid"  # a clean stop exits 0
trap - EXIT
echo "memory_client_example_test: passed"
