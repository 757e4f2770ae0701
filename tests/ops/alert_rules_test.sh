#!/usr/bin/env bash
# The Prometheus side of deploy/: the alert rules are valid, their unit tests pass (every alert fires
# on the input meant to trip it and stays quiet beside it), the compose stack's Prometheus config
# loads them, and every brain_* metric the rules name is one the daemon exports
# (telemetry/metrics.cc), so a renamed metric cannot leave an alert that never fires.
#   alert_rules_test.sh SOURCE_DIR [PROMTOOL]
set -uo pipefail
src=$1 promtool=${2:-promtool}
prom=$src/deploy/prometheus

if ! command -v "$promtool" >/dev/null; then
  echo "alert_rules_test: no promtool (Debian: the prometheus package; deploy/install-deps.sh installs it)" >&2
  exit 1
fi
fail=0
run() {
  echo "+ $*"
  "$@" || { echo "FAIL: $*"; fail=1; }
}
run "$promtool" check rules "$prom/alerts.yml"
run "$promtool" test rules "$prom/alerts_test.yml"
# rule_files in prometheus.yml is relative to the config file's directory, as in the container.
run "$promtool" check config "$prom/prometheus.yml"

exported=$(sed -n 's/.*\.Name("\(brain_[a-z0-9_]*\)").*/\1/p' "$src/telemetry/metrics.cc" | sort -u)
[ -n "$exported" ] || { echo "FAIL: no metric names found in telemetry/metrics.cc"; fail=1; }
for name in $(grep -v '^ *#' "$prom/alerts.yml" | grep -o 'brain_[a-z0-9_]*' | sort -u); do
  base=$name
  grep -qx "$base" <<<"$exported" || base=$(sed -E 's/_(bucket|count|sum)$//' <<<"$name")
  if grep -qx "$base" <<<"$exported"; then
    echo "ok: $name is exported (telemetry/metrics.cc)"
  else
    echo "FAIL: alerts.yml uses $name, which telemetry/metrics.cc does not export"; fail=1
  fi
done
[ "$fail" = 0 ] && echo "alert_rules_test: passed"
exit "$fail"
