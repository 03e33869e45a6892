"""deploy/: the Kubernetes manifests and the Helm chart.

- yamllint (deploy/.yamllint) on every YAML file and on the rendered chart;
- Deployment and Service against the Kubernetes OpenAPI schemas
  (kubernetes-validate, strict: unknown fields fail) of the oldest and the
  newest Kubernetes the manifests target;
- InferencePool and HTTPRoute against deploy/kubernetes/schemas/;
- the chart, rendered by Helm's own engine (helm-python-sdk binds Helm's Go
  SDK), equals deploy/kubernetes/*.yaml with its defaults and stays valid
  with the other settings; `helm lint --strict` has no errors;
- the settings hang together: the pool selects the pods, the grace period
  covers preStop + drain, every `weft serve` flag exists.
Each validator is also shown a broken object, so none can pass vacuously.
"""
import copy
import glob
import os
import re
import subprocess

import helm_python
import jsonschema
import kubernetes_validate
import pytest
import yaml
from yamllint import config as yl_config
from yamllint import linter

ROOT = os.environ.get("WEFT_SOURCE_DIR",
                      os.path.dirname(os.path.dirname(os.path.dirname(
                          os.path.abspath(__file__)))))
WEFT = os.environ.get("WEFT_BINARY", os.path.join(ROOT, "build/release/weft"))
K8S = os.path.join(ROOT, "deploy", "kubernetes")
CHART = os.path.join(ROOT, "deploy", "helm", "weft")
# The preStop sleep action needs 1.30; the newest schemas the pinned
# kubernetes-validate ships.
KUBE_VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]
CRD_SCHEMAS = {
    ("inference.networking.k8s.io/v1", "InferencePool"): "inferencepool-v1.yaml",
    ("gateway.networking.k8s.io/v1", "HTTPRoute"): "httproute-v1.yaml",
}


def load_all(text):
    return [d for d in yaml.safe_load_all(text) if d]


def manifests():
    docs = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(path) as f:
            docs += load_all(f.read())
    return docs


def render(values=None):
    out = helm_python.Chart.load(CHART).render(
        values, name="weft", namespace="default", is_install=True)
    return "\n---\n".join(out[k] for k in sorted(out))


def validate(doc):
    """Raises when `doc` breaks its schema."""
    key = (doc["apiVersion"], doc["kind"])
    if key in CRD_SCHEMAS:
        with open(os.path.join(K8S, "schemas", CRD_SCHEMAS[key])) as f:
            schema = yaml.safe_load(f)
        jsonschema.validate(doc, schema,
                            cls=jsonschema.Draft202012Validator)
        return
    for v in KUBE_VERSIONS:
        kubernetes_validate.validate(doc, v, strict=True)


def by_kind(docs):
    out = {}
    for d in docs:
        assert d["kind"] not in out, d["kind"]
        out[d["kind"]] = d
    return out


def yamllint_problems(text, name):
    conf = yl_config.YamlLintConfig(file=os.path.join(ROOT, "deploy", ".yamllint"))
    return [f"{name}:{p.line}: {p.desc}" for p in linter.run(text, conf)]


def test_yaml_files_pass_yamllint():
    files = glob.glob(os.path.join(K8S, "**", "*.yaml"), recursive=True)
    files += [os.path.join(CHART, "Chart.yaml"), os.path.join(CHART, "values.yaml")]
    problems = []
    for path in files:
        with open(path) as f:
            problems += yamllint_problems(f.read(), os.path.relpath(path, ROOT))
    problems += yamllint_problems(render().rstrip("\n") + "\n", "helm template")
    assert not problems, "\n".join(problems)
    assert yamllint_problems("a: 1\na: 2\n", "dup"), "yamllint checks nothing"


def test_manifests_validate():
    docs = manifests()
    assert sorted(d["kind"] for d in docs) == [
        "Deployment", "HTTPRoute", "InferencePool", "Service"]
    for d in docs:
        validate(d)


@pytest.mark.parametrize("kind,path,bad", [
    ("Deployment", ["spec", "template", "spec", "containers", 0,
                    "readinessProbe", "httpGet", "paht"], "/health/ready"),
    ("Deployment", ["spec", "replicas"], "two"),
    ("Service", ["spec", "ports", 0, "port"], "http"),
    ("InferencePool", ["spec", "targetPortNumber"], 8000),  # v1alpha2's
    ("InferencePool", ["spec", "targetPorts", 0, "number"], 70000),
    ("InferencePool", ["spec", "endpointPickerRef", "failureMode"], "Open"),
    ("HTTPRoute", ["spec", "rules", 0, "backendRefs", 0, "nmae"], "weft"),
    ("HTTPRoute", ["spec", "rules", 0, "timeouts", "request"], "10 minutes"),
])
def test_validators_reject_broken_objects(kind, path, bad):
    doc = copy.deepcopy(by_kind(manifests())[kind])
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = bad
    with pytest.raises((kubernetes_validate.ValidationError,
                        jsonschema.ValidationError)):
        validate(doc)


def test_inference_pool_needs_a_picker_port():
    doc = copy.deepcopy(by_kind(manifests())["InferencePool"])
    del doc["spec"]["endpointPickerRef"]["port"]
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


def test_chart_defaults_render_the_manifests():
    assert load_all(render()) == manifests()


@pytest.mark.parametrize("values", [
    {"model": {"source": "pvc"}, "replicaCount": 4},
    {"serve": {"extraArgs": ["--max-queue=64"], "drainTimeoutSeconds": 120},
     "preStopSleepSeconds": 10},
    {"fullnameOverride": "qwen", "inferencePool": {"enabled": False},
     "httpRoute": {"enabled": False}, "service": {"enabled": False}},
])
def test_chart_settings_render_valid_objects(values):
    docs = load_all(render(values))
    for d in docs:
        validate(d)
    check_consistent(by_kind(docs))


def test_chart_rejects_an_unknown_model_source():
    with pytest.raises(helm_python.HelmError):
        render({"model": {"source": "s3"}})


def test_chart_lints_clean():
    result = helm_python.lint(CHART, strict=True)
    assert not result["errors"], result


def serve_flags(container):
    return dict(a[2:].split("=", 1) for a in container["args"][1:])


def check_consistent(k):
    dep = k["Deployment"]
    pod = dep["spec"]["template"]
    c = pod["spec"]["containers"][0]
    flags = serve_flags(c)
    labels = pod["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    sleep = c["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["spec"]["terminationGracePeriodSeconds"] > (
        sleep + float(flags["drain-timeout"]))
    assert c["readinessProbe"]["httpGet"]["path"] == "/health/ready"
    assert c["livenessProbe"]["httpGet"]["path"] == "/health"
    port = c["ports"][0]["containerPort"]
    assert int(flags["port"]) == port
    if "InferencePool" in k:
        pool = k["InferencePool"]
        assert pool["spec"]["selector"]["matchLabels"].items() <= labels.items()
        assert pool["spec"]["targetPorts"] == [{"number": port}]
    if "HTTPRoute" in k:
        ref = k["HTTPRoute"]["spec"]["rules"][0]["backendRefs"][0]
        assert (ref["kind"], ref["name"]) == (
            "InferencePool", k["InferencePool"]["metadata"]["name"])
    if "Service" in k:
        assert k["Service"]["spec"]["selector"].items() <= labels.items()


def test_manifests_hang_together():
    check_consistent(by_kind(manifests()))


def test_serve_flags_exist():
    c = by_kind(manifests())["Deployment"]["spec"]["template"]["spec"][
        "containers"][0]
    assert c["command"] == ["weft"] and c["args"][0] == "serve"
    help_text = subprocess.run([WEFT, "serve", "--help"], capture_output=True,
                               text=True, timeout=30).stdout
    known = set(re.findall(r"--([a-z][a-z0-9-]*)", help_text))
    assert "drain-timeout" in known, help_text
    assert set(serve_flags(c)) <= known, set(serve_flags(c)) - known
