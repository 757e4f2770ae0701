# Sourced by the end-to-end test scripts. start_brain_server SERVER LOG [FLAG...] starts brain-server
# on a free loopback port (it binds port 0 and logs the port it got) with FLAG..., sets
# $server_pid and $port, and returns 1 (after printing the log) when it does not start listening
# within 30 s.
start_brain_server() {
  local server=$1 log=$2
  shift 2
  "$server" --listen=127.0.0.1:0 "$@" 2>"$log" &
  server_pid=$!
  port=""
  for _ in $(seq 1 300); do
    port=$(sed -n 's/.* listening on 127\.0\.0\.1:\([0-9][0-9]*\) .*/\1/p' "$log")
    [ -n "$port" ] && return 0
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "brain-server did not start listening:" >&2
  cat "$log" >&2
  return 1
}
