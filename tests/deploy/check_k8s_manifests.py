#!/usr/bin/python3
"""Checks the Kubernetes manifests of deploy/k8s without a cluster.

    check_k8s_manifests.py [--dir DIR] [--flags server/server_flags.cc]
    check_k8s_manifests.py --reject-broken WORK_DIR [--dir DIR] [--flags FILE]

Parses every YAML document under DIR and checks the fields brain-server depends on: the wiring
between objects (kustomization, Services, PDB, Ingress, claim), the daemon's arguments against the
flags server_flags.cc defines (ABSL_FLAG), ports, gRPC probes, the GPU limit, the shared
ReadWriteMany checkpoint volume, the grace period, and the ingress-nginx annotations that route a
robot by its x-robot-id. Exit 0 with a one-line summary, 1 with every failure.

--reject-broken writes broken copies of the manifests (and of the flags file) under WORK_DIR, one
mistake each, and exits 0 only if the checker rejects every one of them with the expected message,
so the checker cannot silently pass everything.
"""

import argparse
import copy
import os
import re
import shutil
import subprocess
import sys

try:
    import yaml
except ImportError:
    sys.exit("check_k8s_manifests: python3-yaml is missing "
             "(Debian: python3-yaml; deploy/install-deps.sh installs it)")

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.normpath(os.path.join(HERE, "..", ".."))
ANN = "nginx.ingress.kubernetes.io/"
STREAM_TIMEOUT_MIN_S = 3600  # Cycle streams live as long as the robot runs
CHECKPOINT_SLACK_S = 10      # the grace period must leave this for writing every checkpoint
PATH_FLAGS = ("checkpoint_dir", "tokens_file", "tls_cert", "tls_key", "tls_client_ca")


def read_flags(path):
    """{name: default or None} for every ABSL_FLAG(type, name, default, ...) in path."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    flags = {}
    for m in re.finditer(r"\bABSL_FLAG\(\s*[^,]+?\s*,\s*([A-Za-z_]\w*)\s*,\s*([^,]*),", text):
        default = m.group(2).strip()
        flags[m.group(1)] = int(default) if re.fullmatch(r"-?\d+", default) else None
    return flags


def load(directory):
    """[(file name, [documents])] for every .yaml/.yml file directly under directory."""
    out = []
    for name in sorted(os.listdir(directory)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                out.append((name, [d for d in yaml.safe_load_all(f) if d is not None]))
    return out


def under(path, mount):
    mount = mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount + "/")


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


class Checker:
    def __init__(self, directory, flags_path):
        self.dir = directory
        self.flags_path = flags_path
        self.failures = []
        self.checked = []

    def fail(self, where, message):
        self.failures.append(f"{where}: {message}")

    def run(self):
        try:
            self.flags = read_flags(self.flags_path)
        except OSError as e:
            self.fail(self.flags_path, f"cannot read the daemon's flags: {e}")
            return
        if not self.flags:
            self.fail(self.flags_path, "no ABSL_FLAG(type, name, ...) found: wrong file?")
            return
        try:
            files = load(self.dir)
        except (OSError, yaml.YAMLError) as e:
            self.fail(self.dir, f"cannot parse: {e}")
            return
        self.objects = {}  # (kind, name) -> (file, object)
        kustomizations = []
        for name, docs in files:
            for doc in docs:
                where = name
                if not isinstance(doc, dict) or not doc.get("kind"):
                    self.fail(where, "a document without kind")
                    continue
                if doc["kind"] == "Kustomization":
                    kustomizations.append((name, doc))
                    continue
                meta_name = (doc.get("metadata") or {}).get("name")
                if not doc.get("apiVersion") or not meta_name:
                    self.fail(where, f"{doc['kind']} without apiVersion or metadata.name")
                    continue
                key = (doc["kind"], meta_name)
                if key in self.objects:
                    self.fail(where, f"{doc['kind']} {meta_name} defined twice")
                self.objects[key] = (name, doc)
        self.check_kustomization(files, kustomizations)
        statefulsets = self.of_kind("StatefulSet")
        if not statefulsets:
            self.fail(self.dir, "no StatefulSet")
        self.pod_labels = []
        for where, sts in statefulsets:
            self.check_statefulset(where, sts)
        for where, svc in self.of_kind("Service"):
            self.check_service(where, svc)
        for where, pdb in self.of_kind("PodDisruptionBudget"):
            self.check_pdb(where, pdb)
        if not self.of_kind("PodDisruptionBudget"):
            self.fail(self.dir, "no PodDisruptionBudget")
        ingresses = self.of_kind("Ingress")
        if not ingresses:
            self.fail(self.dir, "no Ingress")
        for where, ing in ingresses:
            self.check_ingress(where, ing)
        for where, pvc in self.of_kind("PersistentVolumeClaim"):
            self.check_pvc(where, pvc)
        kinds = sorted({k for k, _ in self.objects})
        self.summary = (f"{len(files)} files, {len(self.objects)} objects ({', '.join(kinds)}); "
                        + "; ".join(self.checked))

    def of_kind(self, kind):
        return [(f"{f} {kind} {n}", o) for (k, n), (f, o) in sorted(self.objects.items()) if k == kind]

    def get(self, kind, name):
        entry = self.objects.get((kind, name))
        return entry[1] if entry else None

    def check_kustomization(self, files, kustomizations):
        if len(kustomizations) != 1:
            self.fail(self.dir, f"expected one kustomization.yaml, found {len(kustomizations)}")
            return
        where, k = kustomizations[0]
        resources = k.get("resources") or []
        for r in resources:
            if not os.path.isfile(os.path.join(self.dir, r)):
                self.fail(where, f"resource {r} does not exist")
        listed = {os.path.normpath(r) for r in resources}
        for name, docs in files:
            if name != where and docs and name not in listed:
                self.fail(where, f"{name} is not listed in resources (kubectl apply -k would skip it)")
        self.checked.append(f"kustomization lists all {len(resources)} files")

    def check_statefulset(self, where, sts):
        spec = sts.get("spec") or {}
        template = spec.get("template") or {}
        meta = template.get("metadata") or {}
        labels = meta.get("labels") or {}
        self.pod_labels.append(labels)
        if not matches((spec.get("selector") or {}).get("matchLabels"), labels):
            self.fail(where, "spec.selector.matchLabels does not match the pod template's labels")
        service_name = spec.get("serviceName")
        headless = self.get("Service", service_name)
        if headless is None:
            self.fail(where, f"serviceName {service_name!r} names no Service in the manifests")
        else:
            if (headless.get("spec") or {}).get("clusterIP") != "None":
                self.fail(where, f"serviceName {service_name}: that Service is not headless (clusterIP: None)")
            if not matches((headless.get("spec") or {}).get("selector"), labels):
                self.fail(where, f"serviceName {service_name}: its selector does not match the pod labels")
        pod = template.get("spec") or {}
        containers = pod.get("containers") or []
        container = next((c for c in containers
                          if any(p.get("name") == "grpc" for p in c.get("ports") or [])), None)
        if container is None:
            self.fail(where, "no container with a port named grpc")
            return
        cwhere = f"{where} container {container.get('name')}"
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports") or []}
        grpc_port, metrics_port = ports.get("grpc"), ports.get("metrics")
        if metrics_port is None:
            self.fail(cwhere, "no port named metrics")

        args = self.parse_args(cwhere, container.get("args") or [])

        def expect_listen(flag, port):
            value = args.get(flag)
            if value != f"0.0.0.0:{port}":
                self.fail(cwhere, f"--{flag}={value} must be 0.0.0.0:{port} (all interfaces, the "
                                  f"container's {'grpc' if flag == 'listen' else 'metrics'} port)")
        expect_listen("listen", grpc_port)
        if metrics_port is not None:
            expect_listen("metrics_listen", metrics_port)
            ann = meta.get("annotations") or {}
            want = {"prometheus.io/scrape": "true", "prometheus.io/port": str(metrics_port),
                    "prometheus.io/path": "/metrics"}
            for key, value in want.items():
                if str(ann.get(key)) != value:
                    self.fail(where, f"pod annotation {key}: {ann.get(key)!r}, expected {value!r}")

        if args.get("field") not in ("default", "small"):
            self.fail(cwhere, f"--field={args.get('field')}: name the field shape (default or small); "
                              "pods sharing checkpoints must all run the same one")
        if args.get("engine") == "cpu":
            self.fail(cwhere, "--engine=cpu on a pod that holds a GPU")

        limits = (container.get("resources") or {}).get("limits") or {}
        requests = (container.get("resources") or {}).get("requests") or {}
        if str(limits.get("nvidia.com/gpu")) != "1":
            self.fail(cwhere, f"resources.limits nvidia.com/gpu is {limits.get('nvidia.com/gpu')!r}, expected 1")
        for r in ("cpu", "memory"):
            if r not in requests:
                self.fail(cwhere, f"no resources.requests.{r}")

        self.check_probe(cwhere, container, "readinessProbe", grpc_port, "brain.v1.Brain")
        self.check_probe(cwhere, container, "livenessProbe", grpc_port, "")
        if "startupProbe" in container:
            self.check_probe(cwhere, container, "startupProbe", grpc_port, "")

        ctx = {**(pod.get("securityContext") or {}), **(container.get("securityContext") or {})}
        if ctx.get("runAsNonRoot") is not True:
            self.fail(cwhere, "securityContext.runAsNonRoot is not true")

        # Paths the daemon reads or writes must lie on volumes; the checkpoints on the shared claim.
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        templates = {(t.get("metadata") or {}).get("name") for t in spec.get("volumeClaimTemplates") or []}
        mounts = container.get("volumeMounts") or []
        for flag in PATH_FLAGS:
            if flag in args and not any(under(args[flag], m.get("mountPath", "")) for m in mounts):
                self.fail(cwhere, f"--{flag}={args[flag]} lies on no volumeMount")
        ckpt = args.get("checkpoint_dir")
        if not ckpt:
            self.fail(cwhere, "no --checkpoint_dir: brains could not move between pods")
        else:
            mount = max((m for m in mounts if under(ckpt, m.get("mountPath", ""))),
                        key=lambda m: len(m.get("mountPath", "")), default=None)
            if mount is not None:
                claim = (volumes.get(mount.get("name")) or {}).get("persistentVolumeClaim") or {}
                pvc = self.get("PersistentVolumeClaim", claim.get("claimName"))
                if mount.get("name") in templates:
                    self.fail(cwhere, f"--checkpoint_dir is on volumeClaimTemplate {mount.get('name')}: "
                                      "one volume per pod, not shared")
                elif not claim:
                    self.fail(cwhere, f"--checkpoint_dir is on volume {mount.get('name')}, "
                                      "which is not a persistentVolumeClaim")
                elif pvc is None:
                    self.fail(cwhere, f"--checkpoint_dir's claim {claim.get('claimName')} is not in the manifests")
                elif "ReadWriteMany" not in ((pvc.get("spec") or {}).get("accessModes") or []):
                    self.fail(cwhere, f"--checkpoint_dir's claim {claim.get('claimName')} is not ReadWriteMany")
                if mount.get("readOnly"):
                    self.fail(cwhere, "the checkpoint volume is mounted readOnly")

        deadline = args.get("shutdown_deadline_s", self.flags.get("shutdown_deadline_s"))
        grace = pod.get("terminationGracePeriodSeconds", 30)
        try:
            if not int(grace) > int(deadline) + CHECKPOINT_SLACK_S:
                self.fail(where, f"terminationGracePeriodSeconds {grace} must exceed --shutdown_deadline_s "
                                 f"({deadline}) + {CHECKPOINT_SLACK_S} s for the checkpoints")
        except (TypeError, ValueError):
            self.fail(where, f"cannot compare terminationGracePeriodSeconds {grace!r} with "
                             f"--shutdown_deadline_s {deadline!r}")
        self.grpc_port, self.metrics_port, self.container_ports = grpc_port, metrics_port, ports
        self.checked.append(f"{sts['metadata']['name']}: {len(args)} args against "
                            f"{len(self.flags)} flags of {os.path.basename(self.flags_path)}, "
                            "grpc probes, gpu, checkpoints on RWX claim, "
                            f"grace {grace} s > {deadline}+{CHECKPOINT_SLACK_S} s")

    def parse_args(self, where, args):
        out = {}
        for a in args:
            m = re.fullmatch(r"--([A-Za-z_]\w*)=(.*)", str(a))
            if not m:
                self.fail(where, f"argument {a!r}: use --name=value")
                continue
            name, value = m.groups()
            if name not in self.flags:
                self.fail(where, f"--{name} is not a flag the daemon defines ({self.flags_path})")
            if name in out:
                self.fail(where, f"--{name} given twice")
            out[name] = value
        return out

    def check_probe(self, where, container, kind, port, service):
        probe = container.get(kind)
        if not probe:
            self.fail(where, f"no {kind}")
            return
        grpc = probe.get("grpc")
        if not isinstance(grpc, dict):
            self.fail(where, f"{kind} is not a grpc probe (grpc.health.v1.Health)")
            return
        if grpc.get("port") != port:
            self.fail(where, f"{kind} grpc.port {grpc.get('port')!r} is not the grpc containerPort {port}")
        if (grpc.get("service") or "") != service:
            self.fail(where, f"{kind} grpc.service {grpc.get('service')!r}, expected {service!r}")

    def check_service(self, where, svc):
        spec = svc.get("spec") or {}
        if not any(matches(spec.get("selector"), labels) for labels in self.pod_labels):
            self.fail(where, f"selector {spec.get('selector')} matches no pod template's labels")
        ports = getattr(self, "container_ports", {})
        for p in spec.get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            if target not in ports and target not in ports.values():
                self.fail(where, f"port {p.get('name')}: targetPort {target!r} is no container port")
        self.checked.append(f"Service {svc['metadata']['name']} selects the pods")

    def check_pdb(self, where, pdb):
        spec = pdb.get("spec") or {}
        if not any(matches((spec.get("selector") or {}).get("matchLabels"), labels) for labels in self.pod_labels):
            self.fail(where, "selector.matchLabels matches no pod template's labels")
        if ("maxUnavailable" in spec) == ("minAvailable" in spec):
            self.fail(where, "set exactly one of maxUnavailable and minAvailable")
        self.checked.append("PDB selects the pods")

    def check_ingress(self, where, ing):
        ann = (ing.get("metadata") or {}).get("annotations") or {}
        spec = ing.get("spec") or {}

        def annotation(name, want):
            if str(ann.get(ANN + name)) != want:
                self.fail(where, f"annotation {ANN}{name}: {ann.get(ANN + name)!r}, expected {want!r}")
        annotation("backend-protocol", "GRPC")
        annotation("upstream-hash-by", "$http_x_robot_id")
        annotation("proxy-body-size", "0")  # nginx counts a whole stream against the body limit
        for name in ("proxy-read-timeout", "proxy-send-timeout"):
            value = ann.get(ANN + name)
            try:
                ok = int(str(value)) >= STREAM_TIMEOUT_MIN_S
            except ValueError:
                ok = False
            if not ok:
                self.fail(where, f"annotation {ANN}{name}: {value!r}, expected >= {STREAM_TIMEOUT_MIN_S} "
                                 "(long-lived Cycle streams)")
        if spec.get("ingressClassName") != "nginx":
            self.fail(where, f"ingressClassName {spec.get('ingressClassName')!r}, expected 'nginx'")
        tls_hosts = {h for t in spec.get("tls") or [] for h in t.get("hosts") or []}
        if not tls_hosts or not all(t.get("secretName") for t in spec.get("tls")):
            self.fail(where, "no tls section with hosts and secretName (gRPC through ingress-nginx needs TLS)")
        backends = 0
        for rule in spec.get("rules") or []:
            if rule.get("host") and rule["host"] not in tls_hosts:
                self.fail(where, f"host {rule['host']} is not in the tls hosts")
            for path in (rule.get("http") or {}).get("paths") or []:
                backends += 1
                self.check_backend(where, (path.get("backend") or {}).get("service") or {})
        if backends == 0:
            self.fail(where, "no rule with a backend service")
        self.checked.append("Ingress: GRPC backend, x-robot-id hash, stream timeouts, TLS, backend exists")

    def check_backend(self, where, backend):
        name, port = backend.get("name"), backend.get("port") or {}
        svc = self.get("Service", name)
        if svc is None:
            self.fail(where, f"backend service {name!r} is not in the manifests")
            return
        sp = next((p for p in (svc.get("spec") or {}).get("ports") or []
                   if ("name" in port and p.get("name") == port["name"])
                   or ("number" in port and p.get("port") == port["number"])), None)
        if sp is None:
            self.fail(where, f"backend port {port} is not a port of Service {name}")
            return
        target = sp.get("targetPort", sp.get("port"))
        if target not in ("grpc", getattr(self, "grpc_port", None)):
            self.fail(where, f"backend Service {name} port {port} does not lead to the grpc container port")
        if sp.get("appProtocol") != "grpc":
            self.fail(where, f"Service {name} port {sp.get('name')} has no appProtocol: grpc")

    def check_pvc(self, where, pvc):
        spec = pvc.get("spec") or {}
        if "ReadWriteMany" not in (spec.get("accessModes") or []):
            self.fail(where, f"accessModes {spec.get('accessModes')} lacks ReadWriteMany "
                             "(pods share the checkpoints)")
        if not ((spec.get("resources") or {}).get("requests") or {}).get("storage"):
            self.fail(where, "no resources.requests.storage")
        self.checked.append("checkpoint claim is ReadWriteMany")


def check(directory, flags_path):
    c = Checker(directory, flags_path)
    c.run()
    return c


# --reject-broken: each mutation breaks one thing and names a fragment the failure must contain.
def _sts(docs):
    return docs["statefulset.yaml"][0]


def _container(docs):
    return _sts(docs)["spec"]["template"]["spec"]["containers"][0]


def _ingress_ann(docs):
    return docs["ingress.yaml"][0]["metadata"]["annotations"]


def _replace_arg(docs, prefix, new):
    args = _container(docs)["args"]
    args[:] = [new if a.startswith(prefix) else a for a in args]


MUTATIONS = [
    ("gpu limit removed", lambda d: _container(d)["resources"]["limits"].pop("nvidia.com/gpu"),
     "nvidia.com/gpu"),
    ("readiness asks another service", lambda d: _container(d)["readinessProbe"]["grpc"].update(service="brain.v1.Memory"),
     "readinessProbe grpc.service"),
    ("liveness is a tcp probe", lambda d: _container(d).update(livenessProbe={"tcpSocket": {"port": 50051}}),
     "livenessProbe is not a grpc probe"),
    ("probe on the metrics port", lambda d: _container(d)["readinessProbe"]["grpc"].update(port=9464),
     "readinessProbe grpc.port"),
    ("flag renamed in the manifest", lambda d: _replace_arg(d, "--checkpoint_every_cycles=", "--checkpoint_every=500"),
     "--checkpoint_every is not a flag"),
    ("listen on loopback", lambda d: _replace_arg(d, "--listen=", "--listen=127.0.0.1:50051"),
     "--listen=127.0.0.1:50051"),
    ("metrics annotation disagrees", lambda d: _sts(d)["spec"]["template"]["metadata"]["annotations"].update(
        {"prometheus.io/port": "9090"}), "prometheus.io/port"),
    ("checkpoints off the shared volume", lambda d: _replace_arg(d, "--checkpoint_dir=", "--checkpoint_dir=/tmp/ckpt"),
     "lies on no volumeMount"),
    ("claim is ReadWriteOnce", lambda d: d["checkpoints-pvc.yaml"][0]["spec"].update(accessModes=["ReadWriteOnce"]),
     "not ReadWriteMany"),
    ("grace period too short", lambda d: _sts(d)["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=25),
     "terminationGracePeriodSeconds 25"),
    ("field left to auto", lambda d: _replace_arg(d, "--field=", "--field=auto"), "--field=auto"),
    ("headless service has a cluster IP", lambda d: d["service-headless.yaml"][0]["spec"].pop("clusterIP"),
     "not headless"),
    ("service selects nothing", lambda d: d["service.yaml"][0]["spec"].update(selector={"app.kubernetes.io/name": "brain"}),
     "matches no pod"),
    ("pdb selects nothing", lambda d: d["pdb.yaml"][0]["spec"]["selector"].update(matchLabels={"app": "x"}),
     "PodDisruptionBudget"),
    ("no consistent hash", lambda d: _ingress_ann(d).pop(ANN + "upstream-hash-by"), "upstream-hash-by"),
    ("short stream timeout", lambda d: _ingress_ann(d).update({ANN + "proxy-read-timeout": "60"}),
     "proxy-read-timeout"),
    ("plain HTTP backend", lambda d: _ingress_ann(d).update({ANN + "backend-protocol": "HTTP"}), "backend-protocol"),
    ("ingress backend misnamed", lambda d: d["ingress.yaml"][0]["spec"]["rules"][0]["http"]["paths"][0]["backend"]
     ["service"].update(name="brain"), "backend service 'brain'"),
    ("file left out of kustomization", lambda d: d["kustomization.yaml"][0]["resources"].remove("pdb.yaml"),
     "pdb.yaml is not listed"),
]


def reject_broken(work, directory, flags_path):
    """Runs this script on broken copies; returns the list of problems (empty: all rejected)."""
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    originals = {name: docs for name, docs in load(directory)}
    problems = []

    def run(case_dir, flags, label, fragment):
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--dir", case_dir, "--flags", flags],
                           capture_output=True, text=True, timeout=30)
        out = p.stdout + p.stderr
        if fragment is None:
            if p.returncode != 0:
                problems.append(f"{label}: the unbroken copy fails:\n{out}")
        elif p.returncode != 1 or fragment not in out:
            problems.append(f"{label}: expected exit 1 naming {fragment!r}, got exit {p.returncode}:\n{out}")
        else:
            print(f"rejected ({label}): " + next(l.strip() for l in out.splitlines() if fragment in l))

    def write_copy(case, mutate):
        case_dir = os.path.join(work, case)
        os.makedirs(case_dir)
        docs = copy.deepcopy(originals)
        if mutate:
            mutate(docs)
        for name, content in docs.items():
            with open(os.path.join(case_dir, name), "w", encoding="utf-8") as f:
                yaml.safe_dump_all(content, f, sort_keys=False)
        return case_dir

    # The copy as written, unbroken, must pass: each rejection below is then its mutation's doing.
    run(write_copy("unbroken", None), flags_path, "unbroken copy", None)
    for i, (label, mutate, fragment) in enumerate(MUTATIONS):
        run(write_copy(f"{i:02d}", mutate), flags_path, label, fragment)
    # A flag the daemon renames breaks the manifests that still use the old name.
    with open(flags_path, encoding="utf-8") as f:
        text = f.read()
    renamed = os.path.join(work, "server_flags_renamed.cc")
    with open(renamed, "w", encoding="utf-8") as f:
        f.write(re.sub(r"ABSL_FLAG\((\s*[^,]+,\s*)shutdown_deadline_s\b", r"ABSL_FLAG(\1shutdown_grace_s", text))
    run(write_copy("flag_renamed_in_daemon", None), renamed, "flag renamed in the daemon",
        "--shutdown_deadline_s is not a flag")
    return problems, len(MUTATIONS) + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default=os.path.join(SOURCE_DIR, "deploy", "k8s"))
    parser.add_argument("--flags", default=os.path.join(SOURCE_DIR, "server", "server_flags.cc"))
    parser.add_argument("--reject-broken", metavar="WORK_DIR")
    a = parser.parse_args()
    if a.reject_broken:
        problems, count = reject_broken(a.reject_broken, a.dir, a.flags)
        if problems:
            print(f"check_k8s_manifests --reject-broken: {len(problems)} of {count} broken copies not rejected "
                  "as expected:", file=sys.stderr)
            for p in problems:
                print(f"  {p}", file=sys.stderr)
            return 1
        print(f"check_k8s_manifests --reject-broken: OK, all {count} broken copies rejected")
        return 0
    c = check(a.dir, a.flags)
    if c.failures:
        print(f"check_k8s_manifests: {len(c.failures)} failures in {a.dir}:")
        for f in c.failures:
            print(f"  {f}")
        return 1
    print(f"check_k8s_manifests: OK {a.dir}: {c.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
