#!/usr/bin/env bash
# Issue 23's table, one command: the brain (reward on and off, several brain seeds) against the
# baselines (random-held and the linear actor-critic over several draws of their randomness, the
# reactive driver) on the same held-out rooms, lockstep through the wire, reflex off, CPU engine,
# small field. Prints one markdown row per run and the mean over draws per policy. Not part of
# `make test` (about 30 minutes on 2 cores with the defaults).
#
#   tests/bench/driving_table.sh [BUILD_DIR]
#   ROOMS=5001 ROBOTS=8 TICKS=12000 BRAIN_SEEDS="1 101 201 301" DRAWS="1 1001 2001 3001" PORT=50091
#
# ROOMS is the first room seed (robot i drives room ROOMS + i). 5001-5008 are held out: nothing is
# tuned on them (docs/brain.md lists the seed sets and what each was used for).
set -euo pipefail
build=${1:-build}
rooms=${ROOMS:-5001}
robots=${ROBOTS:-8}
ticks=${TICKS:-12000}
brain_seeds=${BRAIN_SEEDS:-"1 101 201 301"}
draws=${DRAWS:-"1 1001 2001 3001"}
port=${PORT:-50091}
sim="$build/client/brain-sim"
server="$build/server/brain-server"
[[ -x "$sim" && -x "$server" ]] || { echo "build brain-sim and brain-server first" >&2; exit 1; }

log=$(mktemp -t driving-table-server.XXXXXX.log)
"$server" --listen="127.0.0.1:$port" --engine=cpu --field=small --max_robots=$((2 * robots)) >"$log" 2>&1 &
server_pid=$!
trap 'kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  grep -q listening "$log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$log"; exit 1; }
  sleep 0.1
done

common=(--target="127.0.0.1:$port" --arena=random --reflex=off --ticks="$ticks" --robots="$robots" --quiet
        --seed="$rooms")
means=$(mktemp)
trap 'kill -TERM "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; rm -f "$means"' EXIT

# One run: its row, and its figures appended to the means file under `name`.
row() {
  local name=$1 label=$2
  shift 2
  local out
  out=$("$sim" "${common[@]}" "$@")
  local b r wb wr dist
  b=$(awk '/^  blocked \/ 1000/ {gsub(",", "", $7); print $7, $11}' <<<"$out")
  r=$(awk '/^  reward \/ tick/ {gsub(",", "", $7); print $7, $11}' <<<"$out")
  wb=$(awk '/^  by 2000 ticks/ {$1=$2=$3=$4=""; print}' <<<"$out" | sed 's/^ *//; s/blocked\/1000 //')
  wr=$(awk '/^                   reward\/tick/ {$1=""; print}' <<<"$out" | sed 's/^ *//')
  dist=$(awk '/^  distance driven/ {print $(NF-3)}' <<<"$out")
  read -r b1 b2 <<<"$b"
  read -r r1 r2 <<<"$r"
  printf '| %s | %s | %s -> %s | %s -> %s | %s m | %s | %s |\n' "$name" "$label" "$b1" "$b2" "$r1" "$r2" "$dist" "$wb" "$wr"
  echo "$name $b1 $b2 $r1 $r2" >>"$means"
}

echo "rooms $rooms-$((rooms + robots - 1)), $ticks lockstep ticks, reflex off, CPU engine, small field ($(date -u +%F))"
echo
echo "| policy | seed or draw | blocked / 1000, first -> last 1000 | reward / tick, first -> last 1000 | distance per robot | blocked / 1000 by 2000 ticks | reward / tick by 2000 ticks |"
echo "|---|---|---|---|---|---|---|"
for s in $brain_seeds; do row "brain, reward on" "$s" --policy=brain --reward=on --brain_seed="$s"; done
for s in $brain_seeds; do row "brain, reward off" "$s" --policy=brain --reward=off --brain_seed="$s"; done
for d in $draws; do row "random-held" "$d" --policy=random-held --brain_seed="$d"; done
for d in $draws; do row "linear actor-critic (tuned)" "$d" --policy=actor-critic --brain_seed="$d"; done
row "reactive driver" "-" --policy=reactive
echo
echo "Means over seeds or draws (blocked first, last; reward first, last):"
awk '{
  n = $0; sub(/ [^ ]+ [^ ]+ [^ ]+ [^ ]+$/, "", n)
  k[n]++; b1[n] += $(NF-3); b2[n] += $(NF-2); r1[n] += $(NF-1); r2[n] += $NF
} END {
  for (n in k) printf "  %-30s %6.1f -> %6.1f   %+.4f -> %+.4f   (%d runs)\n", n, b1[n]/k[n], b2[n]/k[n], r1[n]/k[n], r2[n]/k[n], k[n]
}' "$means" | sort
