#!/usr/bin/env python3
"""Checks deploy/'s Docker files without Docker: the compose file, its GPU override, the image's
HEALTHCHECK and .dockerignore.

  compose_check.py SOURCE_DIR

- deploy/docker-compose.yml starts without a GPU: no service reserves a device, asks for the
  nvidia runtime or for gpus; deploy/docker-compose.gpu.yml reserves an NVIDIA GPU (driver nvidia,
  capabilities [gpu]) for the brain service, and names only services the base file has.
- Grafana's admin password is no literal: only a required variable, ${NAME:?message}; no other
  service carries a literal password either.
- Every bind mount's source (relative to deploy/) exists; every named volume is declared.
- Prometheus mounts its config where the image reads it and every rule file of rule_files where
  that config resolves it (relative to the config's directory); the scrape target is the brain
  service at the metrics port the image's CMD listens on.
- deploy/Dockerfile has a HEALTHCHECK that runs brain-server --health_probe against the port of
  CMD's --listen.
- .dockerignore exists, excludes the build trees and .git, and excludes nothing the image build
  reads: the Dockerfile's COPY sources and every tracked file of what CMake configures (the
  top-level CMakeLists.txt, its add_subdirectory directories, cmake/).

Prints one line per check; exits 1 when any fails.
"""
import json
import os
import re
import subprocess
import sys

import yaml

failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)
    return ok


def walk(node, path=""):
    """Every (path, value) pair of a parsed YAML tree."""
    yield path, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk(v, f"{path}.{k}" if path else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from walk(v, f"{path}[{i}]")


def gpu_requests(service):
    """Where a compose service asks for a GPU, as paths into it."""
    found = []
    for path, value in walk(service):
        if path.endswith("reservations.devices") and value:
            found.append(path)
        if path in ("runtime", "gpus") and value:
            found.append(f"{path}: {value}")
        if isinstance(value, dict) and value.get("driver") == "nvidia":
            found.append(f"{path}: driver nvidia")
    return found


def environment(service):
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, None) for item in env)
    return env


def volume_specs(service):
    """(source, target) of each of a service's volumes, short or long syntax."""
    for v in service.get("volumes") or []:
        if isinstance(v, dict):
            yield v.get("source"), v.get("target")
        else:
            parts = v.split(":")
            if len(parts) == 1:
                yield None, parts[0]
            else:
                yield parts[0], parts[1]


# --- .dockerignore: Docker's matching (Go filepath.Match with **, the last matching pattern wins,
# "!" re-includes, a path is excluded when it or a parent directory matches).
def dockerignore_patterns(text):
    patterns = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        line = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        patterns.append((negate, re.compile(glob_regex(line))))
    return patterns


def glob_regex(pattern):
    out, i = "", 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out += "(.*/)?"
            i += 3
            continue
        if pattern.startswith("**", i):
            out += ".*"
            i += 2
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return f"^{out}$"


def excluded(path, patterns):
    parts = path.split("/")
    prefixes = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    result = False
    for negate, regex in patterns:
        if any(regex.match(p) for p in prefixes):
            result = not negate
    return result


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
    deploy = os.path.join(src, "deploy")
    base = yaml.safe_load(open(os.path.join(deploy, "docker-compose.yml")))
    gpu = yaml.safe_load(open(os.path.join(deploy, "docker-compose.gpu.yml")))
    services = base.get("services") or {}
    check(all(s in services for s in ("brain", "prometheus", "grafana")),
          f"docker-compose.yml has the services brain, prometheus, grafana ({', '.join(services)})")

    # A GPU only through the override.
    for name, service in services.items():
        asks = gpu_requests(service)
        check(not asks, f"docker-compose.yml: {name} asks for no GPU" + (f" (it does: {asks})" if asks else ""))
    gpu_services = gpu.get("services") or {}
    check(set(gpu_services) <= set(services),
          f"docker-compose.gpu.yml names only services of docker-compose.yml ({', '.join(gpu_services)})")
    devices = (((gpu_services.get("brain") or {}).get("deploy") or {}).get("resources") or {}) \
        .get("reservations", {}).get("devices") or []
    check(any(d.get("driver") == "nvidia" and "gpu" in (d.get("capabilities") or []) for d in devices),
          f"docker-compose.gpu.yml reserves an NVIDIA GPU for brain (devices: {devices})")

    # No literal passwords.
    required = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*:\?[^}]+\}$")
    grafana_env = environment(services.get("grafana") or {})
    password = grafana_env.get("GF_SECURITY_ADMIN_PASSWORD")
    check(password is not None and required.match(str(password)) is not None,
          f"grafana: GF_SECURITY_ADMIN_PASSWORD is a required variable ${{NAME:?message}}, not a literal "
          f"({password!r})")
    for name, service in services.items():
        for key, value in environment(service).items():
            if key == "GF_SECURITY_ADMIN_PASSWORD" and name == "grafana":
                continue  # checked above
            if re.search(r"PASSWORD|SECRET|TOKEN", key) and not key.endswith("__FILE"):
                check(value is None or required.match(str(value)) is not None,
                      f"{name}: {key} is not a literal ({value!r})")

    # Mounts.
    declared = set((base.get("volumes") or {}).keys())
    mounts = {}
    for name, service in services.items():
        for source, target in volume_specs(service):
            mounts.setdefault(name, []).append((source, target))
            if source is None:
                continue
            if source.startswith((".", "/", "~")):
                path = os.path.normpath(os.path.join(deploy, source))
                check(os.path.exists(path), f"{name}: bind mount {source} exists ({os.path.relpath(path, src)})")
            else:
                check(source in declared, f"{name}: named volume {source} is declared under volumes:")

    # Prometheus: config and rule files where the image reads them, and a target that is the brain.
    prom_mounts = {target: source for source, target in mounts.get("prometheus", []) if source}
    config_target = "/etc/prometheus/prometheus.yml"  # prom/prometheus's --config.file
    config_source = prom_mounts.get(config_target)
    check(config_source is not None, f"prometheus mounts its config at {config_target}")
    if config_source is not None:
        config_path = os.path.normpath(os.path.join(deploy, config_source))
        config = yaml.safe_load(open(config_path))
        rule_files = config.get("rule_files") or []
        check(bool(rule_files), f"{os.path.relpath(config_path, src)} loads rule files ({rule_files})")
        for rule in rule_files:
            in_container = os.path.normpath(os.path.join(os.path.dirname(config_target), rule))
            source = prom_mounts.get(in_container)
            on_host = os.path.normpath(os.path.join(os.path.dirname(config_path), rule))
            check(source is not None and os.path.normpath(os.path.join(deploy, source)) == on_host,
                  f"prometheus mounts {os.path.relpath(on_host, src)} at {in_container} (rule_files: {rule})")
        targets = [t for job in config.get("scrape_configs") or [] for sc in job.get("static_configs") or []
                   for t in sc.get("targets") or []]
        dockerfile = open(os.path.join(deploy, "Dockerfile")).read()
        metrics = re.search(r"--metrics_listen=[^:\"]*:(\d+)", dockerfile)
        want = f"brain:{metrics.group(1)}" if metrics else None
        check(want is not None and want in targets,
              f"prometheus scrapes {want} (the brain service, the image's --metrics_listen port): {targets}")

    # The image's HEALTHCHECK.
    dockerfile = open(os.path.join(deploy, "Dockerfile")).read()
    joined = re.sub(r"\\\n\s*", " ", dockerfile)
    health = re.search(r"^HEALTHCHECK\s.*$", joined, re.M)
    listen = re.search(r"--listen=[^:\"]*:(\d+)", joined)
    probe = re.search(r"--health_probe=127\.0\.0\.1:(\d+)", health.group(0)) if health else None
    check(health is not None and "brain-server" in health.group(0) and probe is not None,
          f"Dockerfile: HEALTHCHECK runs brain-server --health_probe ({health.group(0) if health else None})")
    check(probe is not None and listen is not None and probe.group(1) == listen.group(1),
          f"Dockerfile: the probe asks the port of CMD's --listen "
          f"({probe.group(1) if probe else None} vs {listen.group(1) if listen else None})")

    # .dockerignore.
    ignore_path = os.path.join(src, ".dockerignore")
    if not check(os.path.exists(ignore_path), ".dockerignore exists at the repository root (the build context)"):
        return report()
    patterns = dockerignore_patterns(open(ignore_path).read())
    for path in (".git", "build", "build-client/CMakeCache.txt"):
        check(excluded(path, patterns), f".dockerignore excludes {path}")
    copies = []
    for m in re.finditer(r"^COPY\s+(.*)$", joined, re.M):
        args = m.group(1).split()
        if any(a.startswith("--from") for a in args):
            continue
        args = [a for a in args if not a.startswith("--")]
        if args and args[0].startswith("["):
            args = json.loads(m.group(1))
        copies.extend(args[:-1])
    needed = [c for c in copies if c not in (".", "./")]
    top = open(os.path.join(src, "CMakeLists.txt")).read()
    roots = ["CMakeLists.txt", "cmake"] + re.findall(r"add_subdirectory\((\w+)\)", top)
    try:
        # tracked files and new ones not yet added (but not those .gitignore drops)
        tracked = subprocess.run(["git", "-C", src, "ls-files", "--cached", "--others", "--exclude-standard"],
                                 check=True, capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        tracked = [os.path.relpath(os.path.join(d, f), src) for root in roots if os.path.isdir(os.path.join(src, root))
                   for d, _, files in os.walk(os.path.join(src, root)) for f in files]
    needed += [f for f in tracked if any(f == r or f.startswith(r + "/") for r in roots)]
    dropped = [f for f in needed if excluded(os.path.normpath(f), patterns)]
    check(not dropped, f".dockerignore keeps the {len(needed)} files the image build reads (COPY "
                       f"{', '.join(copies)}; {', '.join(roots)})" + (f"; excluded: {dropped[:10]}" if dropped else ""))
    return report()


def report():
    if failures:
        print(f"compose_check: {len(failures)} check(s) failed")
        return 1
    print("compose_check: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
