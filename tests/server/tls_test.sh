#!/usr/bin/env bash
# TLS and mutual TLS end to end, with certificates made here by the openssl command line (no key
# is committed): brain-server with --tls_cert/--tls_key, brain-sim with --tls_ca; then
# --tls_client_ca, where only a client certificate from that CA gets in; and the refusals of
# half-given or unreadable TLS options.
#   tls_test.sh BRAIN_SERVER BRAIN_SIM WORK_DIR
set -uo pipefail
server=$1 sim=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
source "$(dirname "$0")/../start_brain_server.sh"
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done' EXIT
cd "$work"

# A CA, a server certificate for 127.0.0.1, a client certificate from the same CA, and one from
# another CA.
ossl() { openssl "$@" 2>>openssl.log || { cat openssl.log; fail "openssl $1"; }; }
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=fieldbrain-test-ca -keyout ca.key -out ca.pem
ossl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=rogue-ca -keyout rogue-ca.key -out rogue-ca.pem
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > server.ext
ossl req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout server.key -out server.csr
ossl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext -out server.pem
ossl req -newkey rsa:2048 -nodes -subj /CN=robot-1 -keyout client.key -out client.csr
ossl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out client.pem
ossl req -newkey rsa:2048 -nodes -subj /CN=intruder -keyout rogue.key -out rogue.csr
ossl x509 -req -in rogue.csr -CA rogue-ca.pem -CAkey rogue-ca.key -CAcreateserial -days 2 -out rogue.pem

common=(--engine=cpu --field=small --max_robots=2 --threads=1 --memory_arena_bytes=0)
sim_run() {  # sim_run NAME [FLAG...]: one robot for 1 s; its exit status
  "$sim" --target="127.0.0.1:$port" --robots=1 --seconds=1 --deadline_ms=200 --connect_timeout_s=3 --quiet \
    "${@:2}" > "$1.out" 2>&1
}

# 1. TLS: a client that trusts the CA drives; a plaintext client cannot.
start_brain_server "$server" tls.log "${common[@]}" --tls_cert=server.pem --tls_key=server.key || fail "TLS server"
pids+=("$server_pid")
sim_run tls --tls_ca=ca.pem || { cat tls.out; fail "TLS client could not drive"; }
grep -q "robots           1 (1 connected at start)" tls.out || { cat tls.out; fail "TLS client not connected"; }
sim_run plain && { cat plain.out; fail "a plaintext client drove a TLS server"; }
sim_run wrongca --tls_ca=rogue-ca.pem && fail "a client trusting another CA connected"
kill -TERM "$server_pid"; wait "$server_pid"

# 2. Mutual TLS: only a client certificate from the CA gets in.
start_brain_server "$server" mtls.log "${common[@]}" --tls_cert=server.pem --tls_key=server.key \
  --tls_client_ca=ca.pem || fail "mTLS server"
pids+=("$server_pid")
sim_run mtls --tls_ca=ca.pem --tls_cert=client.pem --tls_key=client.key || { cat mtls.out; fail "mTLS client"; }
sim_run nocert --tls_ca=ca.pem && fail "a client without a certificate got through mutual TLS"
sim_run rogue --tls_ca=ca.pem --tls_cert=rogue.pem --tls_key=rogue.key && fail "a certificate from another CA got in"
kill -TERM "$server_pid"; wait "$server_pid"

# 3. Half-given or unreadable options are refused with the reason.
"$server" --listen=127.0.0.1:0 "${common[@]}" --tls_cert=server.pem > half.log 2>&1 && fail "cert without key accepted"
grep -q -- "--tls_cert and --tls_key go together" half.log || { cat half.log; fail "no reason for a half TLS config"; }
"$server" --listen=127.0.0.1:0 "${common[@]}" --tls_cert=missing.pem --tls_key=server.key > missing.log 2>&1 \
  && fail "missing cert accepted"
grep -q -- "--tls_cert=missing.pem: No such file or directory" missing.log || { cat missing.log; fail "no reason"; }
"$server" --listen=127.0.0.1:0 "${common[@]}" --tls_cert=server.ext --tls_key=server.key > notpem.log 2>&1 \
  && fail "non-PEM cert accepted"
grep -q "not a PEM file" notpem.log || { cat notpem.log; fail "no reason for a non-PEM file"; }
"$sim" --target=127.0.0.1:1 --tls_cert=client.pem --tls_key=client.key > simhalf.out 2>&1
[ $? = 2 ] || fail "brain-sim accepted a client certificate without --tls_ca"
grep -q -- "--tls_cert needs --tls_ca" simhalf.out || { cat simhalf.out; fail "no reason"; }
echo "tls_test: passed"
