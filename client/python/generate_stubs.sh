#!/usr/bin/env bash
# Generates the Python modules of proto/brain/v1 (brain_pb2.py, memory_pb2.py, recording_pb2.py)
# into OUT_DIR/brain/v1/, then checks that this machine's Python imports them.
#
#   client/python/generate_stubs.sh [OUT_DIR]
#
# OUT_DIR defaults to client/python/fieldbrain/_generated, where the fieldbrain package looks
# first; anywhere else, point FIELDBRAIN_STUBS at it (client/python/README.md).
#
# The compiler: $PROTOC if set, else `protoc` on PATH (Debian and Raspberry Pi OS:
# protobuf-compiler), else `$PYTHON -m grpc_tools.protoc` (pip's grpcio-tools 1.32 or newer).
# Debian 12's python3-grpc-tools bundles protoc 3.5, which predates proto3 `optional`
# (SensorFrame.reward) and cannot compile brain.proto. Only messages are generated: fieldbrain
# calls Brain/Cycle through grpcio directly, so no gRPC plugin is needed. Generate on the machine
# that runs the client: the modules must match its protobuf runtime (protoc 3.21 output needs
# python3-protobuf 3.20 or newer; Debian 12 ships both at 3.21).
#
# Environment: PROTOC, PYTHON (default python3), FIELDBRAIN_PROTO_DIR (default ../../proto from
# this script, the repository's proto/).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
proto_root=${FIELDBRAIN_PROTO_DIR:-$here/../../proto}
out=${1:-$here/fieldbrain/_generated}
python=${PYTHON:-python3}

usage() { sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then usage; exit 0; fi
if [ $# -gt 1 ]; then usage >&2; exit 2; fi
if [ ! -f "$proto_root/brain/v1/brain.proto" ]; then
  echo "generate_stubs: $proto_root/brain/v1/brain.proto not found (set FIELDBRAIN_PROTO_DIR)" >&2
  exit 1
fi

if [ -n "${PROTOC:-}" ]; then
  compiler=("$PROTOC")
elif command -v protoc >/dev/null 2>&1; then
  compiler=(protoc)
elif "$python" -c 'import grpc_tools.protoc' 2>/dev/null; then
  compiler=("$python" -m grpc_tools.protoc)
else
  echo "generate_stubs: no protoc found; install one (Debian, Raspberry Pi OS:" \
       "sudo apt install protobuf-compiler) or set PROTOC" >&2
  exit 1
fi

mkdir -p "$out"
if ! "${compiler[@]}" -I "$proto_root" --python_out="$out" "$proto_root"/brain/v1/*.proto; then
  echo "generate_stubs: ${compiler[*]} failed; brain.proto needs protoc 3.15 or newer (proto3" \
       "optional); Debian's protobuf-compiler is new enough" >&2
  exit 1
fi

# The modules must load with this interpreter's protobuf runtime, or the client cannot start.
if ! "$python" - "$out" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from brain.v1 import brain_pb2, memory_pb2, recording_pb2  # noqa: F401
PY
then
  echo "generate_stubs: the generated modules do not import with $python (is python3-protobuf" \
       "installed, and not older than the protoc that generated them?)" >&2
  exit 1
fi
echo "generate_stubs: wrote $out/brain/v1/{brain,memory,recording}_pb2.py"
