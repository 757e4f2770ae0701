#!/usr/bin/env bash
# A real Prometheus scrapes a running daemon, and every expression of the Grafana dashboard
# (deploy/grafana/dashboards/fieldbrain.json) returns data (tests/ops/dashboard_queries.py says
# exactly what is checked, and how the CUDA-only GPU memory series are checked on the CPU engine).
# The same Prometheus loads deploy/prometheus/alerts.yml: every rule must evaluate without error
# against the real series, and none may fire on this healthy daemon.
#
# Starts brain-server (CPU engine, small field, checkpoints every 50 cycles) and its metrics on free
# loopback ports, drives it with brain-sim robots and the Memory service example
# (examples/memory_client.py, stubs generated with grpc_tools.protoc), starts Prometheus scraping
# every second, waits for the samples a [1m] rate needs and queries. Everything it started is
# killed on exit.
#   dashboard_queries_test.sh BRAIN_SERVER BRAIN_SIM WORK_DIR [PYTHON] [PROMETHEUS]
set -euo pipefail
server=$1 sim=$2 work=$3 python=${4:-/usr/bin/python3} prometheus=${5:-prometheus}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)

command -v "$prometheus" >/dev/null || {
  echo "dashboard_queries_test: no prometheus (Debian: the prometheus package; deploy/install-deps.sh installs it)" >&2
  exit 1
}
"$python" -c 'import grpc, grpc_tools.protoc' 2>/dev/null || {
  echo "dashboard_queries_test: $python lacks grpcio or grpc_tools (Debian: python3-grpcio, python3-grpc-tools)" >&2
  exit 1
}

rm -rf "$work"
mkdir -p "$work/ckpt" "$work/gen" "$work/tsdb"
"$python" -m grpc_tools.protoc -I "$src/proto" --python_out="$work/gen" --grpc_python_out="$work/gen" \
  "$src/proto/brain/v1/memory.proto"

server_pid="" sim_pid="" prom_pid="" memory_pid=""
cleanup() {
  touch "$work/stop"  # the Memory client loop ends after its current run
  for pid in $memory_pid $sim_pid $prom_pid $server_pid; do kill -KILL "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

source "$here/../start_brain_server.sh"
start_brain_server "$server" "$work/server.log" --metrics_listen=127.0.0.1:0 --engine=cpu --field=small \
  --max_robots=8 --threads=1 --checkpoint_dir="$work/ckpt" --checkpoint_every_cycles=50
metrics_port=$(sed -n 's/.* metrics=127\.0\.0\.1:\([0-9][0-9]*\)\/metrics.*/\1/p' "$work/server.log")
[ -n "$metrics_port" ] || { echo "FAIL: the daemon did not log its metrics port:"; cat "$work/server.log"; exit 1; }
echo "brain-server: pid $server_pid, gRPC 127.0.0.1:$port, metrics 127.0.0.1:$metrics_port"

# Robots for the whole test (the test ends them); the daemon checkpoints each every 50 cycles (1 s).
"$sim" --target="127.0.0.1:$port" --robots=2 --seconds=170 --quiet >"$work/sim.log" 2>&1 &
sim_pid=$!

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
http_ok() {
  "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1" 2>/dev/null
}
cat >"$work/prom.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $src/deploy/prometheus/alerts.yml
scrape_configs:
  - job_name: fieldbrain
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
EOF
# A free port can be taken between the check and Prometheus's bind: try three.
for _ in 1 2 3; do
  prom_port=$(free_port)
  "$prometheus" --config.file="$work/prom.yml" --storage.tsdb.path="$work/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
  prom_pid=$!
  for _ in $(seq 1 100); do
    http_ok "http://127.0.0.1:$prom_port/-/ready" && break
    kill -0 "$prom_pid" 2>/dev/null || break
    sleep 0.2
  done
  http_ok "http://127.0.0.1:$prom_port/-/ready" && break
  kill -KILL "$prom_pid" 2>/dev/null || true
  prom_pid=""
done
[ -n "$prom_pid" ] || { echo "FAIL: Prometheus did not start:"; tail -20 "$work/prometheus.log"; exit 1; }
url="http://127.0.0.1:$prom_port"
echo "prometheus: pid $prom_pid, $url, scraping 127.0.0.1:$metrics_port every 1 s"

# Wait for the first scrape, so that the Memory calls below move counters Prometheus has seen.
up_query="$url/api/v1/query?query=up%7Bjob%3D%22fieldbrain%22%7D%3D%3D1"
for _ in $(seq 1 100); do
  "$python" -c 'import json, sys, urllib.request
sys.exit(0 if json.load(urllib.request.urlopen(sys.argv[1], timeout=2))["data"]["result"] else 1)' \
    "$up_query" 2>/dev/null && break
  sleep 0.2
done
# The Memory service example once (it must pass), then every 5 s until the test ends, so that the
# HRR counters keep moving inside the dashboard's [1m] windows.
PYTHONPATH="$work/gen" "$python" "$src/examples/memory_client.py" --target="127.0.0.1:$port" \
  >"$work/memory_client.out"
echo "memory client: $(head -1 "$work/memory_client.out"); again every 5 s"
(
  while [ ! -e "$work/stop" ]; do
    sleep 5
    PYTHONPATH="$work/gen" "$python" "$src/examples/memory_client.py" --target="127.0.0.1:$port" \
      >>"$work/memory_client.out" 2>&1 || true
  done
) &
memory_pid=$!

"$python" "$here/dashboard_queries.py" "$src/deploy/grafana/dashboards/fieldbrain.json" "$url" --scrapes=15 --wait=60

# The alert rules ran every second against the real series: none failed to evaluate, none fires.
"$python" - "$url" <<'EOF'
import json, sys, urllib.request
groups = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/rules", timeout=5))["data"]["groups"]
rules = [r for g in groups for r in g["rules"]]
bad = [f"{r['name']}: health {r['health']} {r.get('lastError', '')}" for r in rules if r["health"] != "ok"]
bad += [f"{r['name']}: {r['state']} on a healthy daemon" for r in rules if r.get("state") == "firing"]
for r in rules:
    print(f"  alert {r['name']:<34} health {r['health']:<4} state {r.get('state', '-')}")
for b in bad:
    print("FAIL: " + b)
if not rules:
    print("FAIL: Prometheus loaded no alert rules")
sys.exit(1 if bad or not rules else 0)
EOF

touch "$work/stop"
wait "$memory_pid" 2>/dev/null || true
memory_pid=""
kill -INT "$sim_pid"  # brain-sim stops its robots and prints its summary
wait "$sim_pid" || { echo "FAIL: brain-sim:"; tail -20 "$work/sim.log"; exit 1; }
sim_pid=""
kill -TERM "$server_pid"
wait "$server_pid"  # a clean stop exits 0
server_pid=""
echo "dashboard_queries_test: passed"
