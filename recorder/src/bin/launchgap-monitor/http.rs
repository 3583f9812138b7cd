//! The monitor's HTTP server: HTTP/1.1 GET and HEAD of /metrics, / and
//! nothing else, served from the monitor's own thread with non-blocking
//! sockets and poll(2). Whatever a client does, it holds at most one of
//! MAX_CONNECTIONS slots, MAX_HEAD_BYTES of buffer, and no thread; a
//! connection that sends no complete request head within REQUEST_TIMEOUT
//! (idle, or slow on purpose) or does not take its answer within
//! RESPONSE_TIMEOUT is closed. Request bodies are never read. Each limit
//! and why: docs/monitor.md, "The HTTP server".

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

/// Connections open at once. A new one beyond it takes the slot of the one
/// that has waited longest for its request (or is closed if none waits).
pub const MAX_CONNECTIONS: usize = 64;
/// Answers waiting for their client to take them, at once: each may hold a
/// whole page. A new answer beyond it closes the one waiting longest.
pub const MAX_ANSWERS_IN_FLIGHT: usize = 4;
/// From a connection's opening (or its previous answer's end) to a
/// complete request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// From a request head's arrival to the client having taken all the answer.
pub const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// A request line and its headers, in bytes.
pub const MAX_HEAD_BYTES: usize = 8192;
/// Header fields in one request.
const MAX_HEADERS: usize = 64;
/// Connections taken from the kernel's queue per turn, so a flood of them
/// cannot keep the monitor from its other work.
const MAX_ACCEPTS_PER_TURN: usize = 4 * MAX_CONNECTIONS;

pub const INDEX_PAGE: &str = "launchgap-monitor: metrics at /metrics (docs/monitor.md)\n";
pub const NOT_FOUND_PAGE: &str = "not found: try /metrics\n";
const TEXT: &str = "text/plain; charset=UTF-8";

/// Why the server closed a connection before its exchange was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// To keep within MAX_CONNECTIONS or MAX_ANSWERS_IN_FLIGHT.
    Capacity,
    /// No complete request head within REQUEST_TIMEOUT.
    RequestTimeout,
    /// The answer not taken within RESPONSE_TIMEOUT.
    ResponseTimeout,
    /// A head over MAX_HEAD_BYTES or MAX_HEADERS (answered 431).
    HeadTooLarge,
    /// Not an HTTP/1.x request (answered 400).
    Malformed,
}

/// The `reason` label of each `Dropped`, in its order.
pub const DROP_REASONS: [&str; 5] =
    ["capacity", "request_timeout", "response_timeout", "head_too_large", "malformed"];

/// The server's own health, exported on the page.
#[derive(Debug, Clone, Default)]
pub struct Health {
    /// Connections open now (the scrape's own included).
    pub open: usize,
    /// Connections dropped, by `Dropped as usize`.
    pub dropped: [u64; DROP_REASONS.len()],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    Other,
}

/// A complete request head.
#[derive(Debug, PartialEq, Eq)]
pub struct Request {
    pub method: Method,
    /// The request target up to any query.
    pub path: String,
    /// Bytes of the input the head took.
    pub head_len: usize,
    /// Whether the connection may carry another request after the answer:
    /// HTTP/1.1, no `Connection: close`, and no body (bodies are never read,
    /// so what follows one cannot be found).
    pub keep_alive: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// More bytes are needed.
    Partial,
    Request(Request),
    TooLarge,
    Malformed,
}

fn has_token(value: &[u8], token: &str) -> bool {
    value.split(|&b| b == b',').any(|part| part.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// Parses the request head at the start of `input` (at most MAX_HEAD_BYTES
/// of it are looked at).
pub fn parse_head(input: &[u8]) -> Parsed {
    let input = &input[..input.len().min(MAX_HEAD_BYTES)];
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    let head_len = match request.parse(input) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) if input.len() >= MAX_HEAD_BYTES => return Parsed::TooLarge,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::TooLarge,
        Err(_) => return Parsed::Malformed,
    };
    let method = match request.method {
        Some("GET") => Method::Get,
        Some("HEAD") => Method::Head,
        _ => Method::Other,
    };
    let path = request.path.unwrap_or("").split('?').next().unwrap_or("").to_string();
    let is = |h: &httparse::Header, name: &str| h.name.eq_ignore_ascii_case(name);
    let has_body = request.headers.iter().any(|h| {
        is(h, "Transfer-Encoding") || (is(h, "Content-Length") && h.value.trim_ascii() != b"0")
    });
    let close = request.headers.iter().any(|h| is(h, "Connection") && has_token(h.value, "close"));
    let keep_alive = request.version == Some(1) && !close && !has_body;
    Parsed::Request(Request { method, path, head_len, keep_alive })
}

/// What to answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    Metrics,
    Index,
    NotFound,
    MethodNotAllowed,
}

pub fn route(request: &Request) -> Route {
    if request.method == Method::Other {
        return Route::MethodNotAllowed;
    }
    match request.path.as_str() {
        "/metrics" => Route::Metrics,
        "/" => Route::Index,
        _ => Route::NotFound,
    }
}

/// One answer's bytes: the status line, headers, and the body unless `head_only`.
pub fn response(
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
    close: bool,
    date: &str,
) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        431 => "Request Header Fields Too Large",
        _ => "",
    };
    let length = body.len();
    let mut head =
        format!("HTTP/1.1 {status} {reason}\r\nDate: {date}\r\nContent-Type: {content_type}\r\nContent-Length: {length}\r\n");
    if status == 405 {
        head.push_str("Allow: GET, HEAD\r\n");
    }
    if close {
        head.push_str("Connection: close\r\n");
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(body);
    }
    out
}

enum State {
    /// Waiting for a complete request head.
    Reading,
    /// Sending an answer: `out[sent..]` is left; closed after if `close`.
    Writing { out: Vec<u8>, sent: usize, close: bool },
}

struct Connection {
    stream: TcpStream,
    state: State,
    /// When it began waiting for its client, in either state: its deadline
    /// counts from here, and the one waiting longest goes first for room.
    since: Instant,
    input: Vec<u8>,
    closed: bool,
}

impl Connection {
    fn new(stream: TcpStream, now: Instant) -> Connection {
        Connection { stream, state: State::Reading, since: now, input: Vec::new(), closed: false }
    }

    fn writing(&self) -> bool {
        matches!(self.state, State::Writing { .. })
    }

    fn deadline(&self) -> Instant {
        self.since + if self.writing() { RESPONSE_TIMEOUT } else { REQUEST_TIMEOUT }
    }

    /// Reads what has arrived, up to MAX_HEAD_BYTES held.
    fn fill(&mut self) -> Progress {
        let mut chunk = [0u8; 4096];
        while self.input.len() < MAX_HEAD_BYTES {
            let room = (MAX_HEAD_BYTES - self.input.len()).min(chunk.len());
            match self.stream.read(&mut chunk[..room]) {
                Ok(0) => return Progress::Ended,
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Progress::Failed,
            }
        }
        Progress::Waiting
    }

    /// Sends what the socket takes.
    fn flush(&mut self) -> Progress {
        let State::Writing { out, sent, .. } = &mut self.state else { return Progress::Ended };
        while *sent < out.len() {
            match self.stream.write(&out[*sent..]) {
                Ok(0) => return Progress::Failed,
                Ok(n) => *sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Progress::Waiting,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Progress::Failed,
            }
        }
        Progress::Ended
    }
}

/// Where a read or write left a connection.
enum Progress {
    /// The socket takes or gives nothing more for now.
    Waiting,
    /// Reading: the client sent all it will (a request already in may still
    /// be answered). Writing: all of the answer is sent.
    Ended,
    /// The client is gone.
    Failed,
}

pub struct Server {
    listener: TcpListener,
    connections: Vec<Connection>,
    health: Health,
}

impl Server {
    pub fn bind(address: SocketAddr) -> io::Result<Server> {
        let listener = TcpListener::bind(address)?;
        listener.set_nonblocking(true)?;
        Ok(Server { listener, connections: Vec::new(), health: Health::default() })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn health(&self) -> &Health {
        &self.health
    }

    fn drop_connection(&mut self, index: usize, why: Dropped) {
        self.connections[index].closed = true;
        self.health.dropped[why as usize] += 1;
    }

    /// Waits up to `wait` for connections and requests, and answers those
    /// that came; `metrics` renders the /metrics page.
    pub fn turn(
        &mut self,
        wait: Duration,
        mut metrics: impl FnMut(&Health) -> String,
    ) -> io::Result<()> {
        let now = Instant::now();
        let soonest =
            self.connections.iter().map(|c| c.deadline().saturating_duration_since(now)).min();
        let timeout = soonest.map_or(wait, |d| d.min(wait));
        let mut fds: Vec<libc::pollfd> = std::iter::once(libc::pollfd {
            fd: self.listener.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .chain(self.connections.iter().map(|c| libc::pollfd {
            fd: c.stream.as_raw_fd(),
            events: if c.writing() { libc::POLLOUT } else { libc::POLLIN },
            revents: 0,
        }))
        .collect();
        // rounded up: a deadline 0.4 ms away is not polled for with 0 ms, again and again
        let millis = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: `fds` is a valid array of that many pollfd.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, millis) };
        if ready < 0 {
            let error = io::Error::last_os_error();
            return if error.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(error) };
        }
        for (index, fd) in fds.iter().enumerate().skip(1) {
            if fd.revents != 0 {
                self.step(index - 1, &mut metrics);
            }
        }
        let now = Instant::now();
        for index in 0..self.connections.len() {
            let connection = &self.connections[index];
            if !connection.closed && now >= connection.deadline() {
                let why = if connection.writing() {
                    Dropped::ResponseTimeout
                } else {
                    Dropped::RequestTimeout
                };
                self.drop_connection(index, why);
            }
        }
        self.connections.retain(|c| !c.closed);
        if fds[0].revents != 0 {
            self.accept(&mut metrics);
        }
        Ok(())
    }

    /// Takes new connections, making room as MAX_CONNECTIONS says, and
    /// answers any whose request came with it.
    fn accept(&mut self, metrics: &mut impl FnMut(&Health) -> String) {
        for _ in 0..MAX_ACCEPTS_PER_TURN {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue
                }
                // out of descriptors or memory for now: the connection waits in the kernel's queue
                Err(_) => break,
            };
            if stream.set_nonblocking(true).is_err() {
                continue;
            }
            if self.connections.len() >= MAX_CONNECTIONS {
                self.health.dropped[Dropped::Capacity as usize] += 1;
                let waiting = self.connections.iter().enumerate().filter(|(_, c)| !c.writing());
                match waiting.min_by_key(|(_, c)| c.since).map(|(i, _)| i) {
                    Some(oldest) => drop(self.connections.remove(oldest)),
                    // every slot is answering: the newcomer goes
                    None => continue,
                }
            }
            self.connections.push(Connection::new(stream, Instant::now()));
            // a scraper sends its request at once: answered now, later arrivals cannot push it out
            self.step(self.connections.len() - 1, metrics);
            self.connections.retain(|c| !c.closed);
        }
    }

    /// Moves one connection on as far as its socket allows: reads, answers
    /// each complete request, sends.
    fn step(&mut self, index: usize, metrics: &mut impl FnMut(&Health) -> String) {
        let mut client_done = false;
        loop {
            let connection = &mut self.connections[index];
            if connection.closed {
                return;
            }
            if let State::Writing { close, .. } = connection.state {
                match connection.flush() {
                    Progress::Waiting => return,
                    Progress::Failed => connection.closed = true,
                    Progress::Ended if close => connection.closed = true,
                    Progress::Ended => {
                        connection.state = State::Reading;
                        connection.since = Instant::now();
                    }
                }
                // a pipelined request may be in the input already
                if connection.closed || connection.input.is_empty() {
                    return;
                }
            } else {
                match connection.fill() {
                    Progress::Waiting => {}
                    Progress::Ended => client_done = true,
                    Progress::Failed => {
                        connection.closed = true;
                        return;
                    }
                }
            }
            let (out, close) = match parse_head(&connection.input) {
                Parsed::Partial => {
                    connection.closed = client_done;
                    return;
                }
                Parsed::TooLarge => {
                    self.health.dropped[Dropped::HeadTooLarge as usize] += 1;
                    (
                        response(431, TEXT, b"request head too large\n", false, true, &now_date()),
                        true,
                    )
                }
                Parsed::Malformed => {
                    self.health.dropped[Dropped::Malformed as usize] += 1;
                    (response(400, TEXT, b"bad request\n", false, true, &now_date()), true)
                }
                Parsed::Request(request) => {
                    connection.input.drain(..request.head_len);
                    let close = !request.keep_alive || client_done;
                    (self.answer(index, &request, close, metrics), close)
                }
            };
            let connection = &mut self.connections[index];
            if close {
                connection.input.clear();
            }
            connection.state = State::Writing { out, sent: 0, close };
            connection.since = Instant::now();
        }
    }

    fn answer(
        &mut self,
        index: usize,
        request: &Request,
        close: bool,
        metrics: &mut impl FnMut(&Health) -> String,
    ) -> Vec<u8> {
        self.make_room_for_an_answer(index);
        let head_only = request.method == Method::Head;
        let date = now_date();
        match route(request) {
            Route::Metrics => {
                self.health.open = self.connections.iter().filter(|c| !c.closed).count();
                let page = metrics(&self.health);
                response(
                    200,
                    crate::exposition::CONTENT_TYPE,
                    page.as_bytes(),
                    head_only,
                    close,
                    &date,
                )
            }
            Route::Index => response(200, TEXT, INDEX_PAGE.as_bytes(), head_only, close, &date),
            Route::NotFound => {
                response(404, TEXT, NOT_FOUND_PAGE.as_bytes(), head_only, close, &date)
            }
            Route::MethodNotAllowed => {
                response(405, TEXT, b"method not allowed: use GET or HEAD\n", false, close, &date)
            }
        }
    }

    /// Closes the connection whose answer has waited longest, if
    /// MAX_ANSWERS_IN_FLIGHT others wait already.
    fn make_room_for_an_answer(&mut self, index: usize) {
        let waiting = || {
            self.connections
                .iter()
                .enumerate()
                .filter(|(i, c)| *i != index && !c.closed && c.writing())
        };
        if waiting().count() < MAX_ANSWERS_IN_FLIGHT {
            return;
        }
        if let Some(oldest) = waiting().min_by_key(|(_, c)| c.since).map(|(i, _)| i) {
            self.drop_connection(oldest, Dropped::Capacity);
        }
    }
}

fn now_date() -> String {
    httpdate::fmt_http_date(SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> Request {
        match parse_head(text.as_bytes()) {
            Parsed::Request(r) => r,
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn a_scrape_is_a_get_of_metrics_kept_alive() {
        let head = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nAccept: application/openmetrics-text\r\n\r\n";
        let r = request(head);
        assert_eq!(
            r,
            Request {
                method: Method::Get,
                path: "/metrics".into(),
                head_len: head.len(),
                keep_alive: true
            }
        );
        assert_eq!(route(&r), Route::Metrics);
    }

    #[test]
    fn the_query_is_not_part_of_the_path() {
        assert_eq!(route(&request("GET /metrics?name[]=x HTTP/1.1\r\n\r\n")), Route::Metrics);
        assert_eq!(route(&request("HEAD /?x HTTP/1.1\r\n\r\n")), Route::Index);
        assert_eq!(route(&request("GET /metrics/ HTTP/1.1\r\n\r\n")), Route::NotFound);
        assert_eq!(route(&request("POST /metrics HTTP/1.1\r\n\r\n")), Route::MethodNotAllowed);
    }

    #[test]
    fn a_body_is_never_read_so_its_connection_ends_after_the_answer() {
        let huge = request("GET /metrics HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n");
        assert!(!huge.keep_alive);
        assert_eq!(route(&huge), Route::Metrics);
        assert!(
            !request("GET / HTTP/1.1\r\nContent-Length: 18446744073709551616\r\n\r\n").keep_alive
        );
        assert!(!request("GET / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n").keep_alive);
        assert!(request("GET / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").keep_alive);
    }

    #[test]
    fn http_1_0_and_connection_close_end_the_connection() {
        assert!(!request("GET / HTTP/1.0\r\n\r\n").keep_alive);
        assert!(!request("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n").keep_alive);
        assert!(request("GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n").keep_alive);
    }

    #[test]
    fn a_head_is_partial_until_its_blank_line_and_no_longer_than_the_limit() {
        assert_eq!(parse_head(b""), Parsed::Partial);
        assert_eq!(parse_head(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), Parsed::Partial);
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(MAX_HEAD_BYTES));
        assert_eq!(parse_head(long.as_bytes()), Parsed::TooLarge);
        let exact = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES - 23));
        assert_eq!(exact.len(), MAX_HEAD_BYTES);
        assert_eq!(request(&exact).head_len, MAX_HEAD_BYTES);
        let many: String = (0..MAX_HEADERS + 1).map(|i| format!("X{i}: y\r\n")).collect();
        assert_eq!(
            parse_head(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()),
            Parsed::TooLarge
        );
    }

    #[test]
    fn what_is_not_http_1_is_malformed() {
        assert_eq!(parse_head(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), Parsed::Malformed);
        assert_eq!(parse_head(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), Parsed::Malformed);
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\nBad Header\r\n\r\n"), Parsed::Malformed);
    }

    #[test]
    fn pipelined_requests_are_parsed_one_at_a_time() {
        let first = "GET / HTTP/1.1\r\n\r\n";
        let both = format!("{first}GET /metrics HTTP/1.1\r\n\r\n");
        assert_eq!(request(&both).head_len, first.len());
        assert_eq!(request(&both[first.len()..]).path, "/metrics");
    }

    #[test]
    fn an_answer_carries_its_length_and_head_leaves_the_body_out() {
        let date = "Thu, 01 Jan 1970 00:00:00 GMT";
        let get = response(200, TEXT, b"hello\n", false, false, date);
        assert_eq!(get, format!("HTTP/1.1 200 OK\r\nDate: {date}\r\nContent-Type: {TEXT}\r\nContent-Length: 6\r\n\r\nhello\n")
            .into_bytes());
        let head = response(200, TEXT, b"hello\n", true, true, date);
        assert_eq!(
            head,
            format!(
                "HTTP/1.1 200 OK\r\nDate: {date}\r\nContent-Type: {TEXT}\r\nContent-Length: 6\r\n\
                                  Connection: close\r\n\r\n"
            )
            .into_bytes()
        );
        let refused = String::from_utf8(response(405, TEXT, b"no\n", false, false, date)).unwrap();
        assert!(
            refused.starts_with("HTTP/1.1 405 Method Not Allowed\r\n")
                && refused.contains("\r\nAllow: GET, HEAD\r\n")
        );
    }
}
