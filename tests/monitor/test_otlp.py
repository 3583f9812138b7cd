"""launchgap-monitor's OTLP push (--otlp-endpoint) against a receiver on
loopback that decodes each request with the OpenTelemetry project's own
message classes (the opentelemetry-proto package): the names, units, types,
labels and values it gets are the /metrics page's at that moment, the
launches cudasim's truth; a push that fails is counted by kind, said once
per kind, and never holds up the page."""

from __future__ import annotations

import json
import math
import re
import socket
import subprocess
import threading
import time
from collections import Counter
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from tests.conftest import CUDASIM, LIBCUDA, REPO
from tests.monitor.conftest import MONITOR, needs_bpf, running_monitor

pytestmark = needs_bpf

DOCS = REPO / "docs" / "monitor.md"
PUSH_WAIT_S = 60
WARNING = "launchgap-monitor: warning: OTLP push to "


class Receiver:
    """An OTLP/HTTP metrics receiver: keeps every request decoded with its
    path and content type; `mode` picks the answer: "ok" (200), "reject"
    (400), "hang" (no answer until released)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, ExportMetricsServiceRequest]] = []
        self.mode = "ok"
        self.release = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.mode == "hang":
                    receiver.release.wait(60)
                if receiver.mode == "reject":
                    self.send_response(400)
                    self.end_headers()
                    self.wfile.write(b"bad data")
                    return
                request = ExportMetricsServiceRequest()
                request.ParseFromString(body)
                receiver.requests.append((self.path, self.headers["Content-Type"], request))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/metrics"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def receiver_on_loopback():
    receiver = Receiver()
    try:
        yield receiver
    finally:
        receiver.close()


def wait_for(what: str, condition, timeout: float = PUSH_WAIT_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def taken_at(request: ExportMetricsServiceRequest) -> int:
    """When the monitor took the page a push carries (its points' time)."""
    for metric in request.resource_metrics[0].scope_metrics[0].metrics:
        data = getattr(metric, metric.WhichOneof("data"))
        return data.data_points[0].time_unix_nano
    raise AssertionError("a push without metrics")


def attributes(point) -> tuple:
    return tuple(sorted((kv.key, kv.value.string_value) for kv in point.attributes))


def number(point) -> float:
    return float(getattr(point, point.WhichOneof("value")))


def pushed_series(request: ExportMetricsServiceRequest) -> dict:
    """Every pushed metric: name -> (kind, monotonic, unit, {labels: value}),
    a histogram's value as (cumulative counts by bound, count, sum)."""
    out = {}
    for metric in request.resource_metrics[0].scope_metrics[0].metrics:
        kind = metric.WhichOneof("data")
        data = getattr(metric, kind)
        if kind == "histogram":
            values = {}
            for p in data.data_points:
                cumulative, running = [], 0
                for count in p.bucket_counts:
                    running += count
                    cumulative.append(running)
                values[attributes(p)] = (list(zip([*p.explicit_bounds, math.inf], cumulative)), p.count, p.sum)
        else:
            values = {attributes(p): number(p) for p in data.data_points}
        out[metric.name] = (kind, getattr(data, "is_monotonic", None), metric.unit, values)
    return out


def scraped_series(scrape) -> dict:
    """The page, in the shape of pushed_series, by the names Prometheus stores."""
    kinds = {
        "counter": ("sum", True, "_total"),
        "gauge": ("gauge", None, ""),
        "info": ("sum", False, "_info"),
        "histogram": ("histogram", None, ""),
    }
    out = {}
    for name, family in scrape.families.items():
        if not family.samples:
            continue
        kind, monotonic, suffix = kinds[family.type]
        values = {}
        if kind == "histogram":
            for s in family.samples:
                labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                buckets, count, total = values.get(labels, ([], 0, 0.0))
                if s.name.endswith("_bucket"):
                    buckets.append((float(s.labels["le"]), int(s.value)))
                elif s.name.endswith("_count"):
                    count = int(s.value)
                elif s.name.endswith("_sum"):
                    total = float(s.value)
                values[labels] = (buckets, count, total)
        else:
            values = {tuple(sorted(s.labels.items())): float(s.value) for s in family.samples}
        unit = {"seconds": "s", "": ""}[family.unit]
        out[name + suffix] = (kind, monotonic, unit, values)
    return out


def cudasim(tmp_path: Path, *args: str) -> dict:
    truth = tmp_path / "truth.json"
    proc = subprocess.run(
        [str(CUDASIM), "decode", "--quiet", *args, "--truth", str(truth)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(truth.read_text())


def test_a_push_carries_the_names_units_types_labels_and_values_of_the_page(tmp_path):
    with (
        receiver_on_loopback() as receiver,
        running_monitor(
            "--cuda-lib", str(LIBCUDA), "--otlp-endpoint", receiver.url, "--otlp-interval", "0.5"
        ) as monitor,
    ):
        truth = cudasim(tmp_path, "--tokens", "30", "--threads", "2", "--launch", "mixed")
        # the process has exited: once the sweeps have taken its threads' counters, they stay as they are
        monitor.settle()
        before_ns = time.time_ns()
        before = monitor.scrape()
        wait_for(
            "a push of a page taken after the scrape",
            lambda: any(taken_at(r) > before_ns for _, _, r in list(receiver.requests)),
        )
        after = monitor.scrape()
        after_ns = time.time_ns()
        assert monitor.stop() == 0
    between = [(path, kind, r) for path, kind, r in receiver.requests if before_ns < taken_at(r) < after_ns]
    assert between, "no push of a page taken between the two scrapes"
    path, content_type, request = between[0]
    assert (path, content_type) == ("/v1/metrics", "application/x-protobuf")
    resource = {kv.key: kv.value.string_value for kv in request.resource_metrics[0].resource.attributes}
    assert resource["service.name"] == "launchgap-monitor"
    assert resource["host.name"] == socket.gethostname()

    pushed, first, last = pushed_series(request), scraped_series(before), scraped_series(after)
    # every metric the page has, under the same name, type, monotonicity and unit, with the same series
    assert set(pushed) == set(last)
    assert "launchgap_monitor_otlp_pushes_total" in last
    assert set(last) <= set(re.findall(r"^\| `(launchgap_[a-z_]+)`", DOCS.read_text(), flags=re.MULTILINE))
    for name, (kind, monotonic, unit, values) in last.items():
        assert pushed[name][:3] == (kind, monotonic, unit), name
        assert set(pushed[name][3]) == set(values), name
    # every series that stood still from one scrape to the next has the pushed value (the push's page was taken
    # between them); the open-connection gauge counts each scrape's own connection, which a push has not
    compared = set()
    for name, (_, _, _, values) in last.items():
        if name == "launchgap_monitor_http_connections":
            continue
        for labels, value in values.items():
            if first.get(name, (0, 0, 0, {}))[3].get(labels) == value:
                assert pushed[name][3][labels] == value, (name, labels)
                compared.add((name, labels))
    # cudasim's series all stood still: they are among those compared, and equal its truth
    process = truth["processes"][0]
    pid = str(process["pid"])
    cudasim_series = {
        (name, labels) for name, (_, _, _, values) in last.items() for labels in values if ("pid", pid) in labels
    }
    assert {name for name, _ in cudasim_series} >= {
        "launchgap_kernel_launches_total",
        "launchgap_syncs_total",
        "launchgap_sync_seconds_total",
        "launchgap_preempted_seconds_total",
        "launchgap_runqueue_wait_seconds_total",
        "launchgap_irq_seconds_total",
        "launchgap_context_switches_total",
        "launchgap_launch_gap_seconds",
        "launchgap_threads",
        "launchgap_gpu_idle_caused_upper_seconds_total",
    }
    assert cudasim_series <= compared
    launches = {
        dict(labels)["api"]: value
        for labels, value in pushed["launchgap_kernel_launches_total"][3].items()
        if ("pid", pid) in labels
    }
    assert launches == process["launches_by_api"]
    assert last["launchgap_monitor_otlp_pushes_total"][3][(("result", "ok"),)] >= 1


def pushes(monitor, result: str) -> float:
    return monitor.scrape().total("launchgap_monitor_otlp_pushes_total", result=result)


def failing_pushes(receiver: Receiver, monitor) -> None:
    """The receiver rejects, then hangs, then is gone."""
    wait_for("rejected pushes", lambda: pushes(monitor, "rejected") >= 3)
    receiver.mode = "hang"
    # a push waits for an answer that never comes: the page still answers meanwhile (these scrapes), and the
    # pushes that fall due are skipped, until the push times out
    wait_for("pushes skipped while one hangs", lambda: pushes(monitor, "busy") >= 3)
    wait_for("a timed-out push", lambda: pushes(monitor, "timeout") >= 1, timeout=30)
    receiver.mode = "reject"  # what the push still hanging gets, once released
    receiver.close()
    # nothing listens there any more
    wait_for("refused pushes", lambda: pushes(monitor, "connect") >= 3)


def test_a_failed_push_is_counted_said_once_for_each_kind_and_never_holds_up_the_page():
    with receiver_on_loopback() as receiver:
        receiver.mode = "reject"
        with running_monitor(
            "--otlp-endpoint", receiver.url, "--otlp-interval", "0.2", "--otlp-timeout", "3"
        ) as monitor:
            failing_pushes(receiver, monitor)
            stderr = monitor.stderr()
            assert monitor.stop() == 0
    warnings = [line for line in stderr.splitlines() if line.startswith(WARNING)]
    kinds = Counter(line.split(" failed (")[1].split(")")[0] for line in warnings)
    # each kind once, however often it happened (a push caught by the receiver's shutdown may end malformed)
    assert set(kinds.values()) == {1}, warnings
    assert (
        {"busy", "connect", "rejected", "timeout"}
        <= set(kinds)
        <= {"busy", "connect", "rejected", "timeout", "malformed"}
    ), warnings
    rejected = next(line for line in warnings if "(rejected)" in line)
    assert "the collector answered 400 Bad Request: bad data" in rejected
    assert receiver.requests == []


def test_bad_otlp_flags_are_one_line_and_exit_2():
    for args, expected in [
        (["--otlp-endpoint", "https://collector:4318"], "--otlp-endpoint 'https://collector:4318': https is not"),
        (["--otlp-endpoint", "collector:4318"], "--otlp-endpoint 'collector:4318': not an http:// URL"),
        (["--otlp-endpoint", "http://collector:99999"], "bad port '99999'"),
        (["--otlp-endpoint", "http://c", "--otlp-interval", "0"], "--otlp-interval 0: must be at least 0.1 s"),
        (["--otlp-timeout", "5"], "--otlp-timeout needs --otlp-endpoint"),
    ]:
        proc = subprocess.run([str(MONITOR), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("launchgap-monitor: --otlp-"), (args, proc.stderr)
        assert expected in lines[0], (args, lines[0])
