"""The deployment examples hold together: the Grafana dashboard and the
alerting rules query only metrics the monitor exports (checked against a
real scrape), and a real Prometheus scraping a real monitor over loopback
evaluates every one of their queries without error, to data; the YAML and
the unit parse; the README points at each file."""

from __future__ import annotations

import configparser
import json
import os
import re
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml

from tests.conftest import CUDASIM, LIBCUDA, REPO
from tests.monitor.conftest import cpu_hog, needs_bpf, running_monitor

DASHBOARD = REPO / "docs" / "grafana" / "launchgap-monitor.json"
ALERTS = REPO / "deploy" / "prometheus" / "launchgap-alerts.yaml"
DAEMONSET = REPO / "deploy" / "kubernetes" / "launchgap-monitor.yaml"
UNIT = REPO / "deploy" / "systemd" / "launchgap-monitor.service"
# Grafana's variables, as a query over everything would set them
GRAFANA_VARIABLES = {"$instance": ".*", "$command": ".*", "$class": ".*", "$__rate_interval": "10s", "$__range": "5m"}
# series Prometheus makes itself, not the monitor
PROMETHEUS_SERIES = {"up"}
PROMETHEUS_READY_S = 60


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def dashboard_variable_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [v["definition"] for v in dashboard["templating"]["list"] if v["type"] == "query"]


def alert_rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


def metric_names(expr: str) -> set[str]:
    names = set(re.findall(r"\blaunchgap_[a-z_]+\b", expr))
    # anything else that looks like a series name must be one Prometheus makes
    others = set(re.findall(r"\b([a-z_:][a-z0-9_:]*_(?:total|bucket|count|sum|seconds|info))\b", expr)) - names
    assert others <= PROMETHEUS_SERIES, f"{expr}: not launchgap's: {others - PROMETHEUS_SERIES}"
    return names


def grafana_to_promql(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr, f"an unknown Grafana variable in {expr}"
    return expr


def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_api(base: str, path: str, **params: str) -> dict:
    url = f"{base}/api/v1/{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


def test_the_files_parse_and_the_readme_points_at_each():
    assert json.loads(DASHBOARD.read_text())["panels"]
    assert len(alert_rules()) >= 4 and all({"alert", "expr"} <= set(r) for r in alert_rules())
    namespace, daemonset = yaml.safe_load_all(DAEMONSET.read_text())
    assert namespace["kind"] == "Namespace" and daemonset["kind"] == "DaemonSet"
    pod = daemonset["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["hostPID"] is True and container["securityContext"]["privileged"] is True
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert {"/sys/kernel/btf", "/sys/kernel/debug", "/sys/fs/cgroup"} <= mounts
    listen = container["args"][container["args"].index("--listen") + 1]
    port = listen.rsplit(":", 1)[1]
    annotations = daemonset["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == port == str(container["ports"][0]["containerPort"])
    unit = configparser.ConfigParser(interpolation=None, strict=False)
    unit.read_string(UNIT.read_text())
    assert unit["Service"]["ExecStart"].startswith("/usr/local/bin/launchgap-monitor --listen 127.0.0.1:9464")
    assert unit["Service"]["KillSignal"] == "SIGTERM"
    readme = (REPO / "README.md").read_text()
    for path in (DASHBOARD, ALERTS, DAEMONSET, UNIT):
        assert str(path.relative_to(REPO)) in readme, f"README does not mention {path.relative_to(REPO)}"


def test_promtool_accepts_the_rules():
    if shutil.which("promtool") is None:
        pytest.fail("promtool is missing: scripts/setup.sh installs the prometheus package")
    proc = subprocess.run(["promtool", "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@needs_bpf
def test_prometheus_scraping_the_monitor_answers_every_dashboard_and_alert_query(tmp_path):
    if shutil.which("prometheus") is None:
        pytest.fail("prometheus is missing: scripts/setup.sh installs it")
    cpu = sorted(os.sched_getaffinity(0))[-1]
    with cpu_hog(cpu), running_monitor("--cuda-lib", str(LIBCUDA)) as monitor:
        # a workload beside the hog, so culprits, gaps of every kind and launches exist
        workload = subprocess.Popen(
            ["taskset", "-c", str(cpu), str(CUDASIM), "decode", "--quiet", "--tokens", "400", "--host-us", "1000"],
            stdout=subprocess.DEVNULL,
        )
        port = free_loopback_port()
        config = tmp_path / "prometheus.yml"
        shutil.copy(ALERTS, tmp_path / ALERTS.name)
        target = monitor.url.split("//")[1].split("/")[0]
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [ALERTS.name],
                    "scrape_configs": [{"job_name": "launchgap", "static_configs": [{"targets": [target]}]}],
                }
            )
        )
        server = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + PROMETHEUS_READY_S
            while True:
                try:
                    samples = prometheus_api(base, "query", query="count(launchgap_kernel_launches_total)")
                    if samples["data"]["result"] and float(samples["data"]["result"][0]["value"][1]) > 0:
                        break
                except OSError:
                    pass
                assert time.monotonic() < deadline, "Prometheus never scraped the monitor"
                time.sleep(0.5)
            assert workload.wait(timeout=300) == 0
            time.sleep(3)  # a few more scrapes and rule evaluations
            scrape = monitor.scrape()
            targets = prometheus_api(base, "targets")["data"]["activeTargets"]
            assert [t["health"] for t in targets] == ["up"]
            results = {
                expr: prometheus_api(base, "query", query=grafana_to_promql(expr)) for expr in dashboard_queries()
            }
            rules = prometheus_api(base, "rules")["data"]["groups"][0]["rules"]
        finally:
            workload.kill()
            workload.wait()
            os.killpg(server.pid, 15)
            server.wait(timeout=60)
    exported = scrape.names()
    for expr in [*dashboard_queries(), *dashboard_variable_queries(), *(r["expr"] for r in alert_rules())]:
        missing = metric_names(expr) - exported
        assert not missing, f"{expr} uses {missing}, which the monitor does not export"
    for expr, answer in results.items():
        assert answer["status"] == "success", (expr, answer)
        assert answer["data"]["result"], f"no data for {expr}"
    assert len(rules) == len(alert_rules())
    assert all(rule["health"] == "ok" for rule in rules), rules
