"""Helpers for the replica tests: scripts/replicas.sh's state folder, the
replicas' Prometheus metrics (prometheus_client's parser) and nginx's
access log (the format scripts/replicas.sh writes)."""
import os
import signal
import subprocess
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

SOURCE = os.environ.get("WEFT_SOURCE_DIR", ".")
SCRIPT = os.path.join(SOURCE, "scripts", "replicas.sh")


class Replicas:
    """N `weft serve` replicas behind nginx, driven by scripts/replicas.sh."""

    def __init__(self, n, state_dir, weft, model, serve_args="", env=None):
        self.n = n
        self.dir = str(state_dir)
        self.env = dict(os.environ, WEFT=weft, MODEL=model,
                        SERVE_ARGS=serve_args, **(env or {}))
        self.url = self._run("start", str(n), self.dir).strip().splitlines()[-1]
        with open(os.path.join(self.dir, "ports")) as f:
            self.ports = [int(p) for p in f.read().split()]

    def _run(self, *args, timeout=180):
        r = subprocess.run(["bash", SCRIPT, *args], env=self.env, text=True,
                           capture_output=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"replicas.sh {' '.join(args)} failed:\n"
                               f"{r.stdout}{r.stderr}\n{self.logs()}")
        return r.stdout

    def restart(self, i):
        self._run("restart", self.dir, str(i))

    def kill(self, i):
        """SIGKILL replica i; returns the time just before the signal."""
        with open(os.path.join(self.dir, f"replica-{i}.pid")) as f:
            pid = int(f.read())
        t = time.time()
        os.kill(pid, signal.SIGKILL)
        return t

    def revive(self, i):
        self._run("revive", self.dir, str(i))

    def stop(self):
        self._run("stop", self.dir)

    def replica_url(self, i):
        return f"http://127.0.0.1:{self.ports[i]}"

    def log(self, i):
        with open(os.path.join(self.dir, f"replica-{i}.log"),
                  errors="replace") as f:
            return f.read()

    def logs(self):
        out = []
        for name in sorted(os.listdir(self.dir)):
            if name.endswith(".log"):
                with open(os.path.join(self.dir, name), errors="replace") as f:
                    out.append(f"--- {name} (last lines)\n" +
                               "".join(f.readlines()[-15:]))
        return "\n".join(out)

    def access_log(self):
        """nginx's access log: one dict per request."""
        rows = []
        with open(os.path.join(self.dir, "nginx-access.log")) as f:
            for line in f:
                msec, rtime, status, rest = line.split(" ", 3)
                addrs, ustatus, rid = rest.rsplit(" ", 2)
                rows.append({
                    "end": float(msec), "time": float(rtime),
                    "status": int(status),
                    "upstreams": [a.strip() for a in addrs.split(",")],
                    "upstream_status": ustatus.strip('"').split(", "),
                    "id": rid.strip(),
                })
        return rows


def scrape(url):
    """GET url/metrics, parsed: {name: Metric} (prometheus_client)."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def value(families, name, **labels):
    """The value of the one sample of `name` whose labels include `labels`."""
    found = [s.value for s in families[name].samples
             if all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, families[name].samples)
    return found[0]
