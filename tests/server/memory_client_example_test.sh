#!/usr/bin/env bash
# Runs examples/memory_client.py against the real brain-server: generates the Python stubs of
# memory.proto into the build tree with grpc_tools.protoc, starts the daemon on a free loopback
# port (it binds port 0 and logs the port it got), runs the example and checks what it prints.
# Fails when any step does, the example included.
#   memory_client_example_test.sh BRAIN_SERVER PROTO_DIR EXAMPLE WORK_DIR PYTHON
set -euo pipefail
server=$1 proto_dir=$2 example=$3 work=$4 python=$5

if ! "$python" -c 'import grpc, grpc_tools.protoc' 2>/dev/null; then
  echo "memory_client_example_test: $python lacks grpcio or grpc_tools (Debian: python3-grpcio," \
       "python3-grpc-tools; deploy/install-deps.sh installs them)" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work/gen"
"$python" -m grpc_tools.protoc -I "$proto_dir" --python_out="$work/gen" --grpc_python_out="$work/gen" \
  "$proto_dir/brain/v1/memory.proto"

source "$(dirname "$0")/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --engine=cpu --field=small --max_robots=1 --threads=1 \
  --memory_arena_bytes=16777216
pid=$server_pid
trap 'kill -KILL $pid 2>/dev/null || true' EXIT

PYTHONPATH="$work/gen" "$python" "$example" --target="127.0.0.1:$port" | tee "$work/example.out"
grep -qx "cleanup: color -> red, shape -> round, size -> big" "$work/example.out"
grep -q "^similarity(unbind(record, color), red) = 0\.[3-9]" "$work/example.out"

kill -TERM "$pid"
wait "$pid"  # a clean stop exits 0
trap - EXIT
echo "memory_client_example_test: passed"
