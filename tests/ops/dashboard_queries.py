#!/usr/bin/env python3
"""Evaluates every expression of the Grafana dashboard against a Prometheus that scrapes a daemon.

  dashboard_queries.py DASHBOARD_JSON PROMETHEUS_URL [--wait SECONDS]

Each panel target's expr (Grafana's interval variables replaced by what Grafana would use) goes to
/api/v1/query. It passes when Prometheus answers success with a non-empty vector, every value of a
histogram_quantile is finite, and the series the test drives (cycles, sessions, slots, HRR
operations, checkpoints) show activity (a value above 0). A rate of a counter that exists but has not
moved is data (0), as Grafana draws it: the rejected-frames and checkpoint-failure panels pass that
way on a daemon that rejects nothing.

Exception, checked rather than skipped: the CUDA-only series (CUDA_ONLY) must return no data on a
daemon whose brain_build_info says engine="cpu" (and data on one that runs the CUDA engine), and
the panel that draws them must say "CUDA engine only" in its description. Likewise the quantiles
of the stages no engine times (UNTIMED) must be NaN, and every other quantile finite.

Before any query, every histogram_quantile must aggregate its buckets by le ("sum by (le)", plus
any label the panel splits by): a quantile of unsummed buckets draws one line per daemon and breaks
once several are scraped, which one test daemon cannot show.

Waits for --scrapes scrapes of the daemon, then retries until everything passes or --wait seconds
have gone, then prints a table: panel, expression, number of series, a value. Exits 1 on any
failure.
"""
import argparse
import json
import math
import re
import sys
import time
import urllib.parse
import urllib.request

# Series the daemon exports only with the CUDA engine (telemetry/metrics.h: "the series appear with
# the first call (only the CUDA engine ...)"; docs/decisions.md, "Device memory figures").
CUDA_ONLY = {
    "brain_device_memory_used_bytes": "GPU memory, read with cudaMemGetInfo: the CUDA engine only",
    "brain_device_memory_total_bytes": "GPU memory, read with cudaMemGetInfo: the CUDA engine only",
}
CUDA_ONLY_NOTE = "CUDA engine only"

# Metrics the test drives (dashboard_queries_test.sh): an expression over one of them must show a
# value above 0 somewhere, or the test did not exercise what the panel draws.
DRIVEN = ["brain_cycles_total", "brain_cycle_duration_seconds", "brain_batch_size",
          "brain_queue_wait_seconds", "brain_stage_duration_seconds", "brain_sessions_active",
          "brain_slots_used", "brain_slots_capacity", "brain_engine_healthy", "brain_pool_bytes",
          "brain_hrr_operations_total", "brain_checkpoint_duration_seconds"]

# Series that exist without observations: telemetry registers a histogram for every Stage, and
# neither engine times imprint or gradient on their own (gpu/stage_timing.h: they name stages "a
# later engine may time"), so their quantiles are NaN. Checked as such: when an engine starts timing
# one, this test fails and the entry goes.
UNTIMED = {("stage", "imprint"): "no engine times this stage (gpu/stage_timing.h)",
           ("stage", "gradient"): "no engine times this stage (gpu/stage_timing.h)"}

# Grafana's built-in interval variables, as Grafana would fill them for a 1 s scrape interval.
GRAFANA_VARIABLES = {"__rate_interval": "1m", "__interval": "15s", "__range": "15m"}


def substitute(expr):
    def var(m):
        name = m.group(1) or m.group(2)
        if name not in GRAFANA_VARIABLES:
            raise ValueError(f"unknown Grafana variable ${name} in {expr!r}")
        return GRAFANA_VARIABLES[name]
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", var, expr)


def panels(dashboard):
    for p in dashboard.get("panels", []):
        yield p
        yield from p.get("panels", [])  # a collapsed row keeps its panels inside


def query(url, expr):
    with urllib.request.urlopen(f"{url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}",
                                timeout=10) as r:
        return json.load(r)


def uses(expr, metric):
    return re.search(rf"\b{metric}(_bucket|_count|_sum)?\b", expr) is not None


def unsummed_quantiles(expr):
    """The histogram_quantile calls of expr whose buckets are not summed by a list including le."""
    bad = []
    for m in re.finditer(r"histogram_quantile\(\s*[0-9.]+\s*,\s*", expr):
        rest = expr[m.end():]
        by = re.match(r"sum\s+by\s*\(([^)]*)\)\s*\(", rest)
        if by is None or "le" not in [label.strip() for label in by.group(1).split(",")]:
            bad.append(rest[:60])
    return bad


def untimed(series):
    return next((why for (k, v), why in UNTIMED.items() if series["metric"].get(k) == v), None)


def show(result):
    """One value, "all V", or label=value pairs for the labels that tell the series apart."""
    values = [float(s["value"][1]) for s in result]
    if len(values) == 1:
        return f"{values[0]:.6g}"
    if len(set(values)) == 1:
        return f"all {values[0]:.6g}"
    keys = sorted({k for s in result for k in s["metric"]})
    keys = [k for k in keys if len({s["metric"].get(k) for s in result}) > 1]
    return ", ".join("/".join(s["metric"].get(k, "") for k in keys) + f" {float(s['value'][1]):.6g}"
                     for s in result)


def evaluate(targets, url, engine):
    rows, failures = [], []
    for title, description, expr in targets:
        try:
            promql = substitute(expr)
            answer = query(url, promql)
        except Exception as e:  # noqa: BLE001 (the reason goes into the report)
            failures.append(f"{expr}: {e}")
            rows.append((title, expr, "-", "error"))
            continue
        if answer.get("status") != "success" or answer["data"]["resultType"] != "vector":
            failures.append(f"{expr}: Prometheus answered {answer}")
            rows.append((title, expr, "-", "error"))
            continue
        result = answer["data"]["result"]
        values = [float(s["value"][1]) for s in result]
        shown = show(result)
        cuda = [m for m in CUDA_ONLY if uses(promql, m)]
        if cuda:
            if CUDA_ONLY_NOTE not in description:
                failures.append(f"{expr}: panel '{title}' draws {cuda[0]} but its description does "
                                f"not say '{CUDA_ONLY_NOTE}'")
            if engine == "cuda" and not result:
                failures.append(f"{expr}: no data on the CUDA engine")
            elif engine != "cuda" and result:
                failures.append(f"{expr}: data on the {engine} engine, which has no GPU: {shown}")
            if engine != "cuda":
                shown = f"no data, as expected: {CUDA_ONLY[cuda[0]]} (needs a GPU)"
            rows.append((title, expr, len(result), shown))
            continue
        rows.append((title, expr, len(result), shown or "NO DATA"))
        if not result:
            failures.append(f"{expr}: no data")
            continue
        if "histogram_quantile" in promql:
            for series in result:
                value, why = float(series["value"][1]), untimed(series)
                if why is None and not math.isfinite(value):
                    failures.append(f"{expr}: {series['metric']} is {value}: no observations in the window")
                elif why is not None and math.isfinite(value):
                    failures.append(f"{expr}: {series['metric']} is {value}; UNTIMED says {why}: update it")
            names = [f"{k}={v}" for (k, v) in UNTIMED if any(s["metric"].get(k) == v for s in result)]
            if names:
                shown += f"; NaN as expected for {', '.join(names)}: {UNTIMED[next(iter(UNTIMED))]}"
        if any(uses(promql, m) for m in DRIVEN) and not any(v > 0 for v in values):
            failures.append(f"{expr}: no activity ({shown}) although the test drives it")
    return rows, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dashboard")
    parser.add_argument("url", help="Prometheus, e.g. http://127.0.0.1:9090")
    parser.add_argument("--wait", type=float, default=60, help="seconds to retry for")
    parser.add_argument("--scrapes", type=int, default=15,
                        help="first wait until Prometheus holds this many scrapes of the daemon in "
                             "the last minute (a [1m] rate over a few seconds of samples is data, "
                             "but far below the true rate)")
    args = parser.parse_args()

    dashboard = json.load(open(args.dashboard))
    targets = [(p.get("title", ""), p.get("description", ""), t["expr"])
               for p in panels(dashboard) for t in p.get("targets", []) if t.get("expr")]
    if not targets:
        print(f"dashboard_queries: no expressions in {args.dashboard}")
        return 1

    static = [f"{t[2]}: histogram_quantile over buckets not summed by le" for t in targets
              if unsummed_quantiles(t[2])]
    for f in static:
        print(f"FAIL: {f}")
    if static:
        return 1

    deadline = time.monotonic() + args.wait
    scrapes = 0
    while scrapes < args.scrapes and time.monotonic() < deadline:
        answer = query(args.url, 'count_over_time(up{job="fieldbrain"}[1m])')["data"]["result"]
        scrapes = int(float(answer[0]["value"][1])) if answer else 0
        if scrapes < args.scrapes:
            time.sleep(1)
    print(f"dashboard_queries: {scrapes} scrapes of the daemon in the last minute")
    attempt = 0
    while True:
        attempt += 1
        info = query(args.url, "brain_build_info")["data"]["result"]
        engines = sorted({s["metric"].get("engine", "?") for s in info})
        engine = engines[0] if len(engines) == 1 else ("none" if not engines else "mixed")
        rows, failures = evaluate(targets, args.url, engine)
        if not failures or time.monotonic() > deadline:
            break
        time.sleep(2)

    print(f"dashboard_queries: {len(targets)} expressions of {args.dashboard} against {args.url} "
          f"(engine {engine}, attempt {attempt})")
    width = max(len(r[1]) for r in rows)
    print(f"  {'expression':<{width}}  series  value")
    panel = None
    for title, expr, n, shown in rows:
        if title != panel:
            print(f"[{title}]")
            panel = title
        print(f"  {expr:<{width}}  {n!s:>6}  {shown}")
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        return 1
    print(f"dashboard_queries: every expression returns data "
          f"({sum(1 for t in targets if not any(uses(t[2], m) for m in CUDA_ONLY))} checked with data, "
          f"{sum(1 for t in targets if any(uses(t[2], m) for m in CUDA_ONLY))} CUDA-only checked empty "
          f"on the {engine} engine)" if engine != "cuda" else
          "dashboard_queries: every expression returns data (CUDA engine: the GPU series included)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
