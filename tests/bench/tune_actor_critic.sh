#!/usr/bin/env bash
# Tunes brain-sim's linear actor-critic baseline (--policy=actor-critic) on tuning rooms only:
# random rooms 201-232 (four sets of 8), 12,000 lockstep ticks, reflex off, and four draws of its
# exploration noise per room. Scores each setting by its reward per tick over the last 1000 ticks,
# mean over rooms and draws, and prints the best. The held-out rooms of docs/brain.md are never
# run here. Not part of `make test` (a few minutes on 2 cores).
#
#   tests/bench/tune_actor_critic.sh [BUILD_DIR]
#   CRITIC="0.03 0.1 0.3 1.0" ACTOR="0.003 0.01 0.03 0.1" LAMBDA="0.8 0.9 0.95" NOISE="0.2 0.4 0.6"
# (the grid; the defaults are the first one run, docs/brain.md has the second, around its best)
set -euo pipefail
build=${1:-build}
sim="$build/client/brain-sim"
[[ -x "$sim" ]] || { echo "no $sim: build first" >&2; exit 1; }

rooms=(201 209 217 225)
draws=(1 1001 2001 3001)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

for critic in ${CRITIC:-0.03 0.1 0.3 1.0}; do
  for actor in ${ACTOR:-0.003 0.01 0.03 0.1}; do
    for lambda in ${LAMBDA:-0.8 0.9 0.95}; do
      for noise in ${NOISE:-0.2 0.4 0.6}; do
        sum_r=0 sum_b=0 n=0
        for room in "${rooms[@]}"; do
          for draw in "${draws[@]}"; do
            out=$("$sim" --policy=actor-critic --arena=random --reflex=off --ticks=12000 --robots=8 --quiet \
                    --seed="$room" --brain_seed="$draw" --ac_critic_rate="$critic" --ac_actor_rate="$actor" \
                    --ac_lambda="$lambda" --ac_noise="$noise")
            r=$(awk '/^  reward \/ tick/ {print $NF}' <<<"$out")
            b=$(awk '/^  blocked \/ 1000/ {print $(NF-3)}' <<<"$out" | tr -d ',')
            sum_r=$(awk -v a="$sum_r" -v b="$r" 'BEGIN {print a + b}')
            sum_b=$(awk -v a="$sum_b" -v b="$b" 'BEGIN {print a + b}')
            n=$((n + 1))
          done
        done
        awk -v r="$sum_r" -v b="$sum_b" -v n="$n" -v c="$critic" -v a="$actor" -v l="$lambda" -v s="$noise" \
          'BEGIN {printf "%+.5f %7.2f  critic %s actor %s lambda %s noise %s\n", r / n, b / n, c, a, l, s}' >>"$results"
      done
    done
  done
done
echo "reward/tick and blocked/1000 over the last 1000 ticks, mean of 32 tuning rooms x 4 draws; best first:"
sort -r -g "$results" | head -15
