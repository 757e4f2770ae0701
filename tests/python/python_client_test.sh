#!/usr/bin/env bash
# The Python client (client/python, package fieldbrain) against the real brain-server: generates
# the stubs of proto/brain/v1 into the build tree with client/python/generate_stubs.sh, compiles
# every Python file of the client, its example and this test, then runs test_robot.py, which
# starts and kills its own daemons (CPU engine, small field, free loopback ports).
#   python_client_test.sh BRAIN_SERVER SOURCE_DIR WORK_DIR PYTHON PROTOC
set -euo pipefail
server=$1 source_dir=$2 work=$3 python=$4 protoc=$5

if ! "$python" -c 'import grpc, google.protobuf' 2>/dev/null; then
  echo "python_client_test: $python lacks grpcio or protobuf (Debian: python3-grpcio," \
       "python3-protobuf; deploy/install-deps.sh installs them)" >&2
  exit 1
fi
rm -rf "$work"
mkdir -p "$work"
# Bytecode goes to the build tree, not next to the sources.
export PYTHONPYCACHEPREFIX="$work/pycache"

PROTOC="$protoc" PYTHON="$python" bash "$source_dir/client/python/generate_stubs.sh" "$work/gen"

"$python" -m py_compile "$source_dir"/client/python/fieldbrain/*.py \
  "$source_dir"/client/python/examples/*.py "$source_dir"/tests/python/*.py

BRAIN_SERVER="$server" FIELDBRAIN_STUBS="$work/gen" FIELDBRAIN_TEST_WORK="$work" \
PICARX_EXAMPLE="$source_dir/client/python/examples/picarx_drive.py" \
PYTHONPATH="$source_dir/client/python" \
  "$python" "$source_dir/tests/python/test_robot.py"
echo "python_client_test: passed"
