//! Pushing the metrics as OTLP (HTTP/protobuf) to an OpenTelemetry collector.
//!
//! What is pushed is the /metrics page itself, read back into OTLP: the
//! exposition stays the one place a metric is defined, and a push carries
//! exactly the names, units, types, labels and values a scrape at that
//! moment would have. The message types are the OpenTelemetry project's
//! (`opentelemetry-proto`, encoded with prost); the POST is a plain HTTP/1.1
//! exchange on a `TcpStream`, bounded in time and size, on a thread of its
//! own: the monitor's loop hands it a page and never waits for it.
//!
//! Mapping (the OpenTelemetry specification's "Prometheus and OpenMetrics
//! compatibility"): a counter is a cumulative monotonic Sum named as its
//! samples are (`..._total`); a gauge a Gauge; a histogram a cumulative
//! Histogram of the same bounds (+Inf implied); an info a non-monotonic Sum
//! of 1 named `..._info`. Unit `seconds` is UCUM `s`. Counters and
//! histograms start when the monitor started.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Result};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Histogram, HistogramDataPoint,
    Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

/// OTLP/HTTP's default port and metrics path.
pub const DEFAULT_PORT: u16 = 4318;
pub const DEFAULT_PATH: &str = "/v1/metrics";
/// The OpenTelemetry SDKs' default export interval (OTEL_METRIC_EXPORT_INTERVAL).
pub const DEFAULT_INTERVAL_S: f64 = 60.0;
/// The OpenTelemetry SDKs' default export timeout (OTEL_EXPORTER_OTLP_TIMEOUT).
pub const DEFAULT_TIMEOUT_S: f64 = 10.0;
/// A collector's answer is a status line, a few headers and a small
/// ExportMetricsServiceResponse: read no more than this of it.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Of what a collector says when it refuses, this much is repeated on stderr.
const MAX_SAID_CHARS: usize = 200;

/// Where to push: a validated `http://HOST[:PORT][/PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    /// "host:port", as written (a name is resolved at each push: a collector may move).
    pub authority: String,
    pub host: String,
    pub port: u16,
    pub path: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct OtlpConfig {
    pub endpoint: Endpoint,
    pub interval: Duration,
    pub timeout: Duration,
}

/// `http://HOST[:PORT][/PATH]`: the port defaults to OTLP/HTTP's 4318, an
/// empty path to /v1/metrics. Only plain HTTP: a collector on the node or
/// its network; TLS and credentials belong to that collector.
pub fn parse_endpoint(text: &str) -> Result<Endpoint> {
    let hint = "use http://HOST:PORT/v1/metrics, e.g. http://127.0.0.1:4318/v1/metrics";
    let Some(rest) = text.strip_prefix("http://") else {
        if text.starts_with("https://") {
            bail!("--otlp-endpoint '{text}': https is not supported: point it at an OpenTelemetry collector on this \
                   node or its network, over http ({hint})");
        }
        bail!("--otlp-endpoint '{text}': not an http:// URL ({hint})");
    };
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) || rest.contains('#') {
        bail!(
            "--otlp-endpoint '{}': spaces, control characters or a fragment in the URL ({hint})",
            text.escape_debug()
        );
    }
    let (authority, path) = match rest.find('/') {
        Some(slash) => (&rest[..slash], &rest[slash..]),
        None => (rest, ""),
    };
    if authority.contains('@') {
        bail!("--otlp-endpoint '{text}': credentials in the URL are not supported ({hint})");
    }
    let (host, port) = match authority.rsplit_once(':') {
        // "[::1]" alone has colons but no port
        Some((host, port)) if !port.contains(']') => {
            let Ok(port) = port.parse::<u16>() else {
                bail!("--otlp-endpoint '{text}': bad port '{port}' ({hint})")
            };
            (host, port)
        }
        _ => (authority, DEFAULT_PORT),
    };
    let bare_host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    if bare_host.is_empty()
        || port == 0
        || (host.starts_with('[') && bare_host.parse::<std::net::Ipv6Addr>().is_err())
    {
        bail!("--otlp-endpoint '{text}': no host, or port 0 ({hint})");
    }
    let path = if path.is_empty() || path == "/" { DEFAULT_PATH } else { path };
    Ok(Endpoint {
        url: format!("http://{host}:{port}{path}"),
        authority: format!("{host}:{port}"),
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

// ---------------------------------------------------------------------------
// The page, read back (pure)

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
    Info,
    Unknown,
}

type Labels = Vec<(String, String)>;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Number {
    Int(i64),
    Double(f64),
}

#[derive(Debug, Default, PartialEq)]
struct HistogramPoint {
    /// (le, cumulative count), +Inf last
    buckets: Vec<(f64, u64)>,
    sum: f64,
    count: u64,
}

#[derive(Debug, PartialEq)]
struct Family {
    name: String,
    kind: Kind,
    unit: String,
    help: String,
    /// (sample name, labels, value) for counters, gauges and infos
    numbers: Vec<(String, Labels, Number)>,
    histograms: Vec<(Labels, HistogramPoint)>,
}

fn number(text: &str) -> Option<Number> {
    match text.parse::<i64>() {
        Ok(i) => Some(Number::Int(i)),
        Err(_) => text.parse::<f64>().ok().map(Number::Double),
    }
}

fn as_f64(n: Number) -> f64 {
    match n {
        Number::Int(i) => i as f64,
        Number::Double(d) => d,
    }
}

/// OpenMetrics escapes (`\\`, `\"`, `\n`) undone.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// Where a quoted label value (after its opening quote) ends.
fn closing_quote(text: &str) -> Option<usize> {
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            '"' if !escaped => return Some(i),
            '\\' => escaped = !escaped,
            _ => escaped = false,
        }
    }
    None
}

/// `{a="x",b="y\"z"} 1.5` -> labels and the value's text.
fn labels_and_value(text: &str) -> Option<(Labels, &str)> {
    let mut labels = Vec::new();
    let Some(mut rest) = text.strip_prefix('{') else { return Some((labels, text.trim())) };
    loop {
        rest = rest.trim_start_matches(',');
        if let Some(after) = rest.strip_prefix('}') {
            return Some((labels, after.trim()));
        }
        let (key, after) = rest.split_once("=\"")?;
        let end = closing_quote(after)?;
        labels.push((key.to_string(), unescape(&after[..end])));
        rest = &after[end + 1..];
    }
}

/// The page's families in order, as the OpenMetrics text encoder wrote them.
fn read_page(page: &str) -> Result<Vec<Family>> {
    let mut families: Vec<Family> = Vec::new();
    for line in page.lines() {
        if line == "# EOF" || line.is_empty() {
            continue;
        }
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (what, name, text) = (
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
                parts.next().unwrap_or(""),
            );
            if families.last().is_none_or(|f| f.name != name) {
                families.push(Family {
                    name: name.to_string(),
                    kind: Kind::Unknown,
                    unit: String::new(),
                    help: String::new(),
                    numbers: Vec::new(),
                    histograms: Vec::new(),
                });
            }
            let family = families.last_mut().expect("pushed above");
            match what {
                "TYPE" => {
                    family.kind = match text {
                        "counter" => Kind::Counter,
                        "gauge" => Kind::Gauge,
                        "histogram" => Kind::Histogram,
                        "info" => Kind::Info,
                        _ => Kind::Unknown,
                    }
                }
                "UNIT" => family.unit = text.to_string(),
                "HELP" => family.help = unescape(text),
                _ => {}
            }
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let sample = &line[..name_end];
        let Some((mut labels, value)) = labels_and_value(&line[name_end..]) else {
            bail!("unreadable sample: {line}")
        };
        let value = value.split(' ').next().unwrap_or("");
        let Some(value) = number(value) else { bail!("unreadable value: {line}") };
        let Some(family) = families.last_mut().filter(|f| sample.starts_with(f.name.as_str()))
        else {
            bail!("a sample outside its family: {line}")
        };
        if family.kind != Kind::Histogram {
            family.numbers.push((sample.to_string(), labels, value));
            continue;
        }
        let suffix = &sample[family.name.len()..];
        let le = labels.iter().position(|(k, _)| k == "le").map(|i| labels.remove(i).1);
        // the encoder writes each series' samples together: a new label set is a new series
        if family.histograms.last().is_none_or(|(l, _)| *l != labels) {
            family.histograms.push((labels, HistogramPoint::default()));
        }
        let point = &mut family.histograms.last_mut().expect("pushed above").1;
        match (suffix, le) {
            ("_bucket", Some(le)) => {
                let Ok(le) = le.parse::<f64>() else { bail!("unreadable bucket bound: {line}") };
                point.buckets.push((le, as_f64(value) as u64));
            }
            ("_sum", _) => point.sum = as_f64(value),
            ("_count", _) => point.count = as_f64(value) as u64,
            _ => {}
        }
    }
    Ok(families)
}

// ---------------------------------------------------------------------------
// OTLP messages (pure)

fn text_value(text: &str) -> Option<AnyValue> {
    Some(AnyValue { value: Some(any_value::Value::StringValue(text.to_string())) })
}

fn attributes(labels: &[(String, String)]) -> Vec<KeyValue> {
    labels
        .iter()
        .map(|(k, v)| KeyValue { key: k.clone(), value: text_value(v), ..Default::default() })
        .collect()
}

/// OpenMetrics units (base units, spelled out) as UCUM, which OTLP uses.
fn ucum(unit: &str) -> String {
    match unit {
        "seconds" => "s".to_string(),
        "bytes" => "By".to_string(),
        "ratio" => "1".to_string(),
        other => other.to_string(),
    }
}

/// When the page was taken, and when the counters on it started.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    pub start_unix_ns: u64,
    pub now_unix_ns: u64,
}

pub fn unix_ns(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

fn number_points(
    numbers: &[(String, Labels, Number)],
    start_unix_ns: u64,
    now_unix_ns: u64,
) -> Vec<NumberDataPoint> {
    numbers
        .iter()
        .map(|(_, labels, value)| NumberDataPoint {
            attributes: attributes(labels),
            start_time_unix_nano: start_unix_ns,
            time_unix_nano: now_unix_ns,
            value: Some(match *value {
                Number::Int(i) => number_data_point::Value::AsInt(i),
                Number::Double(d) => number_data_point::Value::AsDouble(d),
            }),
            ..Default::default()
        })
        .collect()
}

fn histogram_point(
    labels: &[(String, String)],
    point: &HistogramPoint,
    times: Times,
) -> HistogramDataPoint {
    let mut counts = Vec::with_capacity(point.buckets.len());
    let mut below = 0u64;
    for &(_, cumulative) in &point.buckets {
        counts.push(cumulative.saturating_sub(below));
        below = cumulative;
    }
    HistogramDataPoint {
        attributes: attributes(labels),
        start_time_unix_nano: times.start_unix_ns,
        time_unix_nano: times.now_unix_ns,
        count: point.count,
        sum: Some(point.sum),
        bucket_counts: counts,
        explicit_bounds: point
            .buckets
            .iter()
            .map(|(le, _)| *le)
            .filter(|le| le.is_finite())
            .collect(),
        ..Default::default()
    }
}

fn cumulative() -> i32 {
    AggregationTemporality::Cumulative as i32
}

fn to_metric(family: &Family, times: Times) -> Option<Metric> {
    let (name, data) = match family.kind {
        Kind::Counter | Kind::Info => {
            let sample =
                family.numbers.first().map_or_else(|| family.name.clone(), |(s, _, _)| s.clone());
            let start = if family.kind == Kind::Counter { times.start_unix_ns } else { 0 };
            (
                sample,
                metric::Data::Sum(Sum {
                    data_points: number_points(&family.numbers, start, times.now_unix_ns),
                    aggregation_temporality: cumulative(),
                    is_monotonic: family.kind == Kind::Counter,
                }),
            )
        }
        Kind::Gauge | Kind::Unknown => (
            family.name.clone(),
            metric::Data::Gauge(Gauge {
                data_points: number_points(&family.numbers, 0, times.now_unix_ns),
            }),
        ),
        Kind::Histogram => (
            family.name.clone(),
            metric::Data::Histogram(Histogram {
                data_points: family
                    .histograms
                    .iter()
                    .map(|(labels, p)| histogram_point(labels, p, times))
                    .collect(),
                aggregation_temporality: cumulative(),
            }),
        ),
    };
    let empty = match &data {
        metric::Data::Sum(s) => s.data_points.is_empty(),
        metric::Data::Gauge(g) => g.data_points.is_empty(),
        metric::Data::Histogram(h) => h.data_points.is_empty(),
        _ => false,
    };
    (!empty).then(|| Metric {
        name,
        description: family.help.clone(),
        unit: ucum(&family.unit),
        data: Some(data),
        ..Default::default()
    })
}

/// The export request for one /metrics page. A family without series is
/// left out (OTLP has no empty metric; a scrape shows only its header).
pub fn request(page: &str, times: Times, host_name: &str) -> Result<ExportMetricsServiceRequest> {
    let metrics = read_page(page)?.iter().filter_map(|f| to_metric(f, times)).collect();
    let resource = Resource {
        attributes: attributes(&[
            ("service.name".to_string(), "launchgap-monitor".to_string()),
            ("service.version".to_string(), env!("CARGO_PKG_VERSION").to_string()),
            ("host.name".to_string(), host_name.to_string()),
        ]),
        ..Default::default()
    };
    Ok(ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(resource),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "launchgap-monitor".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    })
}

// ---------------------------------------------------------------------------
// Pushing (I/O)

/// How a push ended; the order of `RESULTS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Ok,
    /// Accepted in part: the collector said it rejected some data points.
    Partial,
    /// The collector answered a status other than 2xx.
    Rejected,
    /// No address for the host name.
    Unresolved,
    /// No connection (refused, unreachable, or not within the timeout).
    Connect,
    /// Connected, but the request or the answer did not pass within the timeout.
    Timeout,
    /// The answer was not HTTP, or the connection ended before one.
    Malformed,
    /// Not sent: the previous push was still in flight when this one was due.
    Busy,
}

pub const RESULTS: [&str; 8] =
    ["ok", "partial", "rejected", "unresolved", "connect", "timeout", "malformed", "busy"];

/// Pushes by result, for the /metrics page (launchgap_monitor_otlp_pushes_total).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Health {
    pub pushes: [u64; RESULTS.len()],
}

/// A push's end, with what to say about it the first time its kind is seen.
fn post(endpoint: &Endpoint, body: &[u8], timeout: Duration) -> (Outcome, String) {
    let deadline = Instant::now() + timeout;
    let addresses: Vec<_> =
        match (endpoint.host.trim_start_matches('[').trim_end_matches(']'), endpoint.port)
            .to_socket_addrs()
        {
            Ok(a) => a.collect(),
            Err(e) => {
                return (Outcome::Unresolved, format!("cannot resolve {}: {e}", endpoint.host))
            }
        };
    let Some(address) = addresses.first() else {
        return (Outcome::Unresolved, format!("cannot resolve {}: no address", endpoint.host));
    };
    let mut stream = match TcpStream::connect_timeout(address, timeout) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
            return (Outcome::Connect, format!("no connection to {address} within {timeout:?}"))
        }
        Err(e) => return (Outcome::Connect, format!("cannot connect to {address}: {e}")),
    };
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: launchgap-monitor/{}\r\nContent-Type: application/x-protobuf\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        endpoint.path, endpoint.authority, env!("CARGO_PKG_VERSION"), body.len());
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let timed_out = |e: &std::io::Error| {
        matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)
    };
    let mut sent =
        stream.set_write_timeout(Some(left())).and_then(|_| stream.write_all(head.as_bytes()));
    if sent.is_ok() {
        sent = stream.write_all(body);
    }
    if let Err(e) = sent {
        return if timed_out(&e) {
            (Outcome::Timeout, format!("the request was not taken within {timeout:?}"))
        } else {
            (Outcome::Malformed, format!("the connection ended while sending: {e}"))
        };
    }
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if Instant::now() >= deadline {
            return (Outcome::Timeout, format!("no complete answer within {timeout:?}"));
        }
        let _ = stream.set_read_timeout(Some(left()));
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                answer.extend_from_slice(&chunk[..n]);
                if answer.len() >= MAX_ANSWER_BYTES {
                    break;
                }
            }
            Err(e) if timed_out(&e) => {
                return (Outcome::Timeout, format!("no complete answer within {timeout:?}"))
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return (
                    Outcome::Malformed,
                    format!("the connection ended while reading the answer: {e}"),
                )
            }
        }
    }
    judge(&answer)
}

/// google.rpc.Status, which OTLP/HTTP answers a refusal with (when not plain text).
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

/// What a refusal's body says, for the one line about it: its google.rpc.Status
/// message, or its text; nothing if it is neither.
fn refusal(body: &[u8]) -> String {
    let text = match RpcStatus::decode(body) {
        Ok(status) if !status.message.is_empty() => status.message,
        _ => String::from_utf8_lossy(body).into_owned(),
    };
    let text: String = text
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(MAX_SAID_CHARS)
        .collect();
    if text.is_empty() || text.chars().any(|c| c.is_control() || c == char::REPLACEMENT_CHARACTER) {
        return String::new();
    }
    format!(": {text}")
}

/// The collector's answer, read: status, and a partial success in the body.
fn judge(answer: &[u8]) -> (Outcome, String) {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let body_at = match response.parse(answer) {
        Ok(httparse::Status::Complete(n)) => n,
        _ => return (Outcome::Malformed, "the answer was not HTTP".to_string()),
    };
    let status = response.code.unwrap_or(0);
    let reason = response.reason.unwrap_or("").to_string();
    let body = &answer[body_at..];
    if !(200..300).contains(&status) {
        return (
            Outcome::Rejected,
            format!("the collector answered {status} {}{}", reason.escape_debug(), refusal(body)),
        );
    }
    // a 2xx is a success only with what OTLP/HTTP answers one with: an ExportMetricsServiceResponse, in protobuf
    // (the request's encoding), empty or not; anything else is not an OTLP collector's answer
    let content_type = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-type"))
        .map(|h| h.value);
    let protobuf = content_type.is_none_or(|v| {
        let media =
            String::from_utf8_lossy(v).split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        media == "application/x-protobuf" || media == "application/protobuf"
    });
    let decoded = ExportMetricsServiceResponse::decode(body);
    let Ok(export) =
        decoded.as_ref().map_err(|_| ()).and_then(|r| if protobuf { Ok(r) } else { Err(()) })
    else {
        let what = content_type
            .map(|v| format!(" ({})", String::from_utf8_lossy(v).escape_debug()))
            .unwrap_or_default();
        return (Outcome::Malformed, format!("the collector answered {status} with a body that is not an OTLP export response{what}"));
    };
    let partial = export.partial_success.clone();
    match partial {
        Some(p) if p.rejected_data_points > 0 || !p.error_message.is_empty() => {
            let said: String = p.error_message.chars().take(MAX_SAID_CHARS).collect();
            (
                Outcome::Partial,
                format!(
                    "the collector rejected {} data points: {}",
                    p.rejected_data_points,
                    said.escape_debug()
                ),
            )
        }
        _ => (Outcome::Ok, String::new()),
    }
}

/// A page handed to the pushing thread, with the time it was taken.
struct Page {
    text: String,
    taken_unix_ns: u64,
}

/// The pushing thread's handle: the monitor's loop calls `push` when `due`,
/// which never waits (a push still in flight skips this one, counted as busy).
pub struct Pusher {
    config: OtlpConfig,
    next: Instant,
    pages: SyncSender<Page>,
    health: Arc<Mutex<Health>>,
    quiet: bool,
    said_busy: bool,
}

fn count(health: &Mutex<Health>, outcome: Outcome) {
    health.lock().unwrap_or_else(|e| e.into_inner()).pushes[outcome as usize] += 1;
}

/// The node's name, as uname(2) gives it (resource attribute host.name).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

fn push_pages(
    config: OtlpConfig,
    pages: Receiver<Page>,
    health: Arc<Mutex<Health>>,
    started_unix_ns: u64,
    quiet: bool,
) {
    let host = host_name();
    let mut said: HashSet<Outcome> = HashSet::new();
    for page in pages {
        let times = Times { start_unix_ns: started_unix_ns, now_unix_ns: page.taken_unix_ns };
        let (outcome, message) = match request(&page.text, times, &host) {
            Ok(request) => post(&config.endpoint, &request.encode_to_vec(), config.timeout),
            // the page is ours: not expected, but said rather than dropped silently
            Err(e) => (Outcome::Malformed, format!("cannot read the page back: {e:#}")),
        };
        count(&health, outcome);
        if outcome != Outcome::Ok && said.insert(outcome) && !quiet {
            warn(&config.endpoint, outcome, &message);
        }
    }
}

fn warn(endpoint: &Endpoint, outcome: Outcome, message: &str) {
    eprintln!("launchgap-monitor: warning: OTLP push to {} failed ({}): {message} (said once for each kind of failure; \
               counted in launchgap_monitor_otlp_pushes_total)", endpoint.url, RESULTS[outcome as usize]);
}

impl Pusher {
    /// Starts the pushing thread; the first push is one interval from now.
    pub fn start(config: OtlpConfig, started: SystemTime, quiet: bool) -> Result<Pusher> {
        let (pages, receiver) = sync_channel::<Page>(0);
        let health = Arc::new(Mutex::new(Health::default()));
        let thread_health = Arc::clone(&health);
        let thread_config = config.clone();
        std::thread::Builder::new().name("otlp-push".to_string()).spawn(move || {
            push_pages(thread_config, receiver, thread_health, unix_ns(started), quiet)
        })?;
        Ok(Pusher {
            next: Instant::now() + config.interval,
            config,
            pages,
            health,
            quiet,
            said_busy: false,
        })
    }

    pub fn due(&self) -> bool {
        Instant::now() >= self.next
    }

    /// Hands the page to the pushing thread, unless it is still busy with the last one.
    pub fn push(&mut self, page: String, taken: SystemTime) {
        self.next = Instant::now() + self.config.interval;
        match self.pages.try_send(Page { text: page, taken_unix_ns: unix_ns(taken) }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                count(&self.health, Outcome::Busy);
                if !std::mem::replace(&mut self.said_busy, true) && !self.quiet {
                    warn(
                        &self.config.endpoint,
                        Outcome::Busy,
                        &format!(
                            "skipped: the previous push was still in flight (at most {:?} each)",
                            self.config.timeout
                        ),
                    );
                }
            }
        }
    }

    pub fn health(&self) -> Health {
        self.health.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;

    #[test]
    fn endpoints_are_http_urls_with_defaults_and_the_rest_is_refused() {
        let e = parse_endpoint("http://127.0.0.1:4318/v1/metrics").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.path.as_str()), ("127.0.0.1", 4318, "/v1/metrics"));
        assert_eq!(
            parse_endpoint("http://collector").unwrap().url,
            "http://collector:4318/v1/metrics"
        );
        assert_eq!(parse_endpoint("http://[::1]/").unwrap().url, "http://[::1]:4318/v1/metrics");
        assert_eq!(parse_endpoint("http://[::1]:9/x?y=1").unwrap().path, "/x?y=1");
        for bad in [
            "https://c:4318",
            "127.0.0.1:4318",
            "http://",
            "http://:4318",
            "http://c:0",
            "http://c:99999",
            "http://c:port",
            "http://u:p@c:4318",
            "http://c:4318/a b",
            "http://c/#f",
            "http://[zz]:1",
        ] {
            let message = parse_endpoint(bad).unwrap_err().to_string();
            assert!(message.starts_with("--otlp-endpoint"), "{bad}: {message}");
            assert!(!message.contains('\n'), "{bad}: {message}");
        }
    }

    const PAGE: &str = "\
# HELP t_sync_seconds Time inside syncs\\\\now.
# TYPE t_sync_seconds counter
# UNIT t_sync_seconds seconds
t_sync_seconds_total{pid=\"7\",command=\"a \\\"b\\\"\\\\c\",api=\"cuCtxSynchronize\"} 0.25
# HELP t_threads Live threads.
# TYPE t_threads gauge
t_threads{pid=\"7\",command=\"x\"} 3
# HELP t_empty Nothing yet.
# TYPE t_empty counter
# HELP t_gap_seconds Gaps.
# TYPE t_gap_seconds histogram
# UNIT t_gap_seconds seconds
t_gap_seconds_sum{pid=\"7\",class=\"clean\"} 1.5
t_gap_seconds_count{pid=\"7\",class=\"clean\"} 6
t_gap_seconds_bucket{le=\"5.12e-7\",pid=\"7\",class=\"clean\"} 1
t_gap_seconds_bucket{le=\"1.024e-6\",pid=\"7\",class=\"clean\"} 4
t_gap_seconds_bucket{le=\"+Inf\",pid=\"7\",class=\"clean\"} 6
# HELP t_monitor The settings.
# TYPE t_monitor info
t_monitor_info{version=\"0.1.0\"} 1
# EOF
";

    fn label_pairs(points: &[KeyValue]) -> Vec<(String, String)> {
        points
            .iter()
            .map(|kv| {
                let Some(AnyValue { value: Some(any_value::Value::StringValue(v)) }) = &kv.value
                else {
                    panic!("{kv:?}")
                };
                (kv.key.clone(), v.clone())
            })
            .collect()
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_page_becomes_otlp_metrics_of_the_same_names_types_units_labels_and_values() {
        let times = Times { start_unix_ns: 1_000, now_unix_ns: 5_000 };
        let request = request(PAGE, times, "node-1").unwrap();
        let metrics = &request.resource_metrics[0].scope_metrics[0].metrics;
        let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["t_sync_seconds_total", "t_threads", "t_gap_seconds", "t_monitor_info"]);

        let Some(Data::Sum(sum)) = &metrics[0].data else { panic!() };
        assert!(sum.is_monotonic);
        assert_eq!(sum.aggregation_temporality, AggregationTemporality::Cumulative as i32);
        assert_eq!(metrics[0].unit, "s");
        assert_eq!(metrics[0].description, "Time inside syncs\\now.");
        let point = &sum.data_points[0];
        assert_eq!(
            label_pairs(&point.attributes),
            pairs(&[("pid", "7"), ("command", "a \"b\"\\c"), ("api", "cuCtxSynchronize")])
        );
        assert_eq!(point.value, Some(number_data_point::Value::AsDouble(0.25)));
        assert_eq!((point.start_time_unix_nano, point.time_unix_nano), (1_000, 5_000));

        let Some(Data::Gauge(gauge)) = &metrics[1].data else { panic!() };
        assert_eq!(metrics[1].unit, "");
        assert_eq!(gauge.data_points[0].value, Some(number_data_point::Value::AsInt(3)));

        let Some(Data::Histogram(histogram)) = &metrics[2].data else { panic!() };
        let point = &histogram.data_points[0];
        assert_eq!(label_pairs(&point.attributes), pairs(&[("pid", "7"), ("class", "clean")]));
        assert_eq!(point.explicit_bounds, vec![5.12e-7, 1.024e-6]);
        assert_eq!(point.bucket_counts, vec![1, 3, 2]);
        assert_eq!((point.count, point.sum), (6, Some(1.5)));

        let Some(Data::Sum(info)) = &metrics[3].data else { panic!() };
        assert!(!info.is_monotonic);
        assert_eq!(info.data_points[0].value, Some(number_data_point::Value::AsInt(1)));

        let resource =
            label_pairs(&request.resource_metrics[0].resource.as_ref().unwrap().attributes);
        assert!(resource.contains(&("host.name".to_string(), "node-1".to_string())));
        // what goes on the wire reads back the same
        let bytes = request.encode_to_vec();
        assert_eq!(ExportMetricsServiceRequest::decode(bytes.as_slice()).unwrap(), request);
    }

    #[test]
    fn answers_are_judged_by_status_and_partial_success() {
        assert_eq!(judge(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").0, Outcome::Ok);
        let (outcome, message) = judge(b"HTTP/1.1 400 Bad Request\r\n\r\nbad data\n");
        assert_eq!(outcome, Outcome::Rejected);
        assert_eq!(message, "the collector answered 400 Bad Request: bad data");
        assert_eq!(judge(b"SSH-2.0-OpenSSH\r\n").0, Outcome::Malformed);
        let mut answer =
            b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-protobuf\r\n\r\n".to_vec();
        answer.extend(
            RpcStatus { code: 3, message: "unknown metric type".to_string() }.encode_to_vec(),
        );
        assert_eq!(judge(&answer).1, "the collector answered 400 Bad Request: unknown metric type");
        let (_, message) = judge(b"HTTP/1.1 503 Busy\r\n\r\n\x1b[31mred\x00");
        assert_eq!(message, "the collector answered 503 Busy");
        let body = ExportMetricsServiceResponse {
            partial_success: Some(
                opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsPartialSuccess {
                    rejected_data_points: 2,
                    error_message: "too old".to_string(),
                },
            ),
        }
        .encode_to_vec();
        let mut answer = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        answer.extend(body);
        assert_eq!(
            judge(&answer),
            (Outcome::Partial, "the collector rejected 2 data points: too old".to_string())
        );
        // a 2xx whose body is no export response is no success (issue 31, item 6: counted as ok)
        let (outcome, message) =
            judge(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>login</html>");
        assert_eq!(outcome, Outcome::Malformed);
        assert_eq!(message, "the collector answered 200 with a body that is not an OTLP export response (text/html)");
        assert_eq!(judge(b"HTTP/1.1 200 OK\r\n\r\n\xff\xff\xff\xff").0, Outcome::Malformed);
        assert_eq!(
            judge(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n\r\n").0,
            Outcome::Ok
        );
    }
}
