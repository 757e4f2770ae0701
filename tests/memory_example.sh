# Sourced by the end-to-end tests that run examples/memory_client.py against a daemon.
#   memory_example_stubs PYTHON PROTO_DIR WORK   fresh WORK, memory.proto's Python stubs in WORK/gen
#   memory_example_run PYTHON EXAMPLE WORK PORT  runs the example and checks what it prints;
#                                                returns non-zero when it fails or prints otherwise
memory_example_stubs() {
  local python=$1 proto_dir=$2 work=$3
  if ! "$python" -c 'import grpc, grpc_tools.protoc' 2>/dev/null; then
    echo "$python lacks grpcio or grpc_tools (Debian: python3-grpcio, python3-grpc-tools;" \
         "deploy/install-deps.sh installs them)" >&2
    return 1
  fi
  rm -rf "$work"
  mkdir -p "$work/gen"
  "$python" -m grpc_tools.protoc -I "$proto_dir" --python_out="$work/gen" --grpc_python_out="$work/gen" \
    "$proto_dir/brain/v1/memory.proto"
}

memory_example_run() {
  local python=$1 example=$2 work=$3 port=$4
  PYTHONPATH="$work/gen" "$python" "$example" --target="127.0.0.1:$port" | tee "$work/example.out" &&
    grep -qx "cleanup: color -> red, shape -> round, size -> big" "$work/example.out" &&
    grep -q "^similarity(unbind(record, color), red) = 0\.[3-9]" "$work/example.out"
}
