//! The AAP proxy at its edges, against small upstreams written here (raw HTTP on loopback)
//! and the built-in server: an SSE event reaches the client while the upstream's response
//! is still open; an upstream that is down, one that breaks a stream off, one whose GET
//! /meta names an unknown version, and a body longer than the proxy keeps each give a
//! clear line and verdict, never a hang; bad command lines are one line and exit 2; Ctrl-C
//! writes the report.

mod run_support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ahpspec::aap::sse::{self, StreamEnd};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use run_support::{ahpspec, report_json, show, verdicts, Served, TempDir};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What the upstream does after reading a request.
enum Step {
    Write(&'static str),
    /// Waits for the notify (at most 10 s); the bool says whether it came in time.
    Wait(Arc<Notify>, tokio::sync::oneshot::Sender<bool>),
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

/// One chunk of a chunked body.
fn chunk(text: &str) -> String {
    format!("{:x}\r\n{text}\r\n", text.len())
}

/// An upstream on a free port that answers one request with `steps`, then closes.
async fn upstream(steps: Vec<Step>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let Ok((mut tcp, _)) = listener.accept().await else {
            return;
        };
        read_request(&mut tcp).await;
        for step in steps {
            match step {
                Step::Write(text) => {
                    if tcp.write_all(text.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = tcp.flush().await;
                }
                Step::Wait(notify, told) => {
                    let came =
                        tokio::time::timeout(Duration::from_secs(10), notify.notified()).await;
                    let _ = told.send(came.is_ok());
                }
            }
        }
        // Dropped: the connection closes (mid-body when no last chunk was written).
    });
    url
}

/// Reads a request head and its Content-Length body.
async fn read_request(tcp: &mut TcpStream) {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
    let head_end = text.find("\r\n\r\n").unwrap_or(0) + 4;
    let length: usize = text
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut have = bytes.len() - head_end;
    while have < length {
        match tcp.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => have += n,
        }
    }
}

/// A proxy process in front of `upstream`, with `extra` arguments.
fn proxy(dir: &TempDir, upstream: &str, extra: &[&str]) -> (Served, String) {
    let reports = dir.sub("reports");
    let mut args = vec!["proxy", "--upstream", upstream, "--report-dir", &reports];
    args.extend_from_slice(extra);
    (Served::start(&args), reports)
}

/// A request through `base`; the response (status, content type, body stream).
async fn request(
    base: &str,
    method: &str,
    path: &str,
    body: &str,
) -> hyper::Response<hyper::body::Incoming> {
    let authority = base.trim_start_matches("http://");
    let tcp = TcpStream::connect(authority).await.expect("connects");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", authority)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request");
    sender.send_request(request).await.expect("a response")
}

/// A response's whole body.
async fn body_of(response: hyper::Response<hyper::body::Incoming>) -> Bytes {
    response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes()
}

fn row<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["info"]["id"] == id))
        .unwrap_or_else(|| panic!("no row {id}"))
}

fn broken(report: &Value) -> Vec<String> {
    verdicts(report)
        .into_iter()
        .filter(|(_, v)| v == "fail" || v == "warn")
        .map(|(id, _)| id)
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn an_event_reaches_the_client_while_the_upstream_is_still_open() {
    let dir = TempDir::new("aap-proxy-stream");
    let release = Arc::new(Notify::new());
    let (told, released) = tokio::sync::oneshot::channel();
    let first = chunk("event: turn_start\ndata: {}\n\n");
    let rest = chunk("event: text_delta\ndata: {\"delta\":\"hi\"}\n\nevent: turn_stop\ndata: {\"stopReason\":\"end_turn\"}\n\n");
    let head_and_first: &'static str = Box::leak(format!("{SSE_HEAD}{first}").into_boxed_str());
    let rest_and_end: &'static str = Box::leak(format!("{rest}0\r\n\r\n").into_boxed_str());
    let url = upstream(vec![
        Step::Write(head_and_first),
        Step::Wait(Arc::clone(&release), told),
        Step::Write(rest_and_end),
    ])
    .await;
    let (proxy, reports) = proxy(&dir, &url, &[]);
    let response = request(
        &proxy.url,
        "POST",
        "/sessions/s1/turns",
        r#"{"stream":"delta"}"#,
    )
    .await;
    // The project's SSE reader: on the first event, let the upstream go on.
    let read = sse::read(
        response.into_body().into_data_stream(),
        Duration::from_secs(20),
        |_| release.notify_one(),
    )
    .await;
    assert_eq!(
        released.await,
        Ok(true),
        "the first event came only after the upstream gave up waiting"
    );
    let names: Vec<&str> = read.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["turn_start", "text_delta", "turn_stop"]);
    assert_eq!(read.end, StreamEnd::Closed);
    let (_, stderr) = proxy.terminate();
    let report = report_json(Path::new(&reports));
    assert!(broken(&report).is_empty(), "{stderr}");
    assert_eq!(row(&report, "AAP-SSE-003")["verdict"], "pass");
}

#[tokio::test(flavor = "current_thread")]
async fn an_upstream_breaking_a_stream_off_fails_turn_stop_with_a_line() {
    let dir = TempDir::new("aap-proxy-broken");
    let first: &'static str = Box::leak(
        format!("{SSE_HEAD}{}", chunk("event: turn_start\ndata: {}\n\n")).into_boxed_str(),
    );
    let url = upstream(vec![Step::Write(first)]).await;
    let (proxy, reports) = proxy(&dir, &url, &[]);
    let response = request(
        &proxy.url,
        "POST",
        "/sessions/s1/turns",
        r#"{"stream":"delta"}"#,
    )
    .await;
    let read = tokio::time::timeout(
        Duration::from_secs(20),
        sse::read(
            response.into_body().into_data_stream(),
            Duration::from_secs(20),
            |_| {},
        ),
    )
    .await
    .expect("the client is not left hanging");
    assert!(matches!(read.end, StreamEnd::Broken(_)), "{read:?}");
    let (code, stderr) = proxy.terminate();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("broke off the response body"), "{stderr}");
    let report = report_json(Path::new(&reports));
    assert_eq!(broken(&report), ["AAP-SSE-003"], "{stderr}");
    let summary = row(&report, "AAP-SSE-003")["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(summary.contains("broke off"), "{summary}");
}

/// A stream still open when the proxy stops: the proxy ends at once, and the exchange is
/// skipped (counted), not failed.
#[tokio::test(flavor = "current_thread")]
async fn a_stream_still_open_at_the_stop_is_skipped_and_the_proxy_ends() {
    let dir = TempDir::new("aap-proxy-open");
    let never = Arc::new(Notify::new());
    let (told, _gave_up) = tokio::sync::oneshot::channel();
    let first: &'static str = Box::leak(
        format!("{SSE_HEAD}{}", chunk("event: turn_start\ndata: {}\n\n")).into_boxed_str(),
    );
    let url = upstream(vec![Step::Write(first), Step::Wait(never, told)]).await;
    let (proxy, reports) = proxy(&dir, &url, &[]);
    let response = request(
        &proxy.url,
        "POST",
        "/sessions/s1/turns",
        r#"{"stream":"delta"}"#,
    )
    .await;
    let mut body = response.into_body();
    let first_frame = body.frame().await.expect("a frame").expect("data");
    assert!(first_frame
        .data_ref()
        .is_some_and(|d| d.starts_with(b"event: turn_start")));
    let stopping = std::time::Instant::now();
    let (code, stderr) = proxy.terminate();
    assert!(
        stopping.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopping.elapsed()
    );
    assert_eq!(code, Some(0), "{stderr}");
    let report = report_json(Path::new(&reports));
    assert!(broken(&report).is_empty(), "{stderr}");
    let summary = row(&report, "AAP-SSE-003")["summary"]
        .as_str()
        .unwrap_or_default();
    assert!(
        summary.contains(
            "a response still open when the proxy or the recording client stopped reading: 1"
        ),
        "{summary}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_upstream_that_is_down_gets_a_502_and_a_line() {
    let dir = TempDir::new("aap-proxy-down");
    let closed = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", closed.local_addr().expect("addr"));
    drop(closed);
    let (proxy, reports) = proxy(&dir, &url, &["--timeout", "2s"]);
    let response = request(&proxy.url, "GET", "/meta", "").await;
    assert_eq!(response.status().as_u16(), 502);
    let body = body_of(response).await;
    assert!(String::from_utf8_lossy(&body).contains("ahpspec proxy: cannot connect"));
    let (code, stderr) = proxy.terminate();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("exchange 1: GET /meta: no response from the upstream"),
        "{stderr}"
    );
    let report = report_json(Path::new(&reports));
    assert!(report["target"]
        .as_str()
        .unwrap_or_default()
        .contains("1 without a response"));
    assert!(broken(&report).is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn a_meta_of_an_unknown_version_is_said_and_nothing_judged() {
    let dir = TempDir::new("aap-proxy-v7");
    let meta = r#"{"version":7,"agents":[]}"#;
    let answer: &'static str = Box::leak(
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{meta}",
            meta.len()
        )
        .into_boxed_str(),
    );
    let url = upstream(vec![Step::Write(answer)]).await;
    let (proxy, reports) = proxy(&dir, &url, &[]);
    let response = request(&proxy.url, "GET", "/meta", "").await;
    let body = body_of(response).await;
    assert_eq!(body.as_ref(), meta.as_bytes());
    let (_, stderr) = proxy.terminate();
    assert!(
        stderr.contains("AAP version 7, which ahpspec does not know"),
        "{stderr}"
    );
    let report = report_json(Path::new(&reports));
    assert_eq!(report["protocolVersion"], "AAP 7 (unknown: not judged)");
    assert_eq!(row(&report, "AAP-META-004")["verdict"], "not-testable");
}

#[tokio::test(flavor = "current_thread")]
async fn a_body_longer_than_the_proxy_keeps_goes_through_whole_unjudged() {
    let dir = TempDir::new("aap-proxy-long");
    let server = Served::start(&["serve", "--protocol", "aap"]);
    let (proxy, reports) = proxy(&dir, &server.url, &["--max-body", "64"]);
    let through = request(&proxy.url, "GET", "/meta", "").await;
    let through = body_of(through).await;
    let direct = request(&server.url, "GET", "/meta", "").await;
    let direct = body_of(direct).await;
    assert!(direct.len() > 64);
    assert_eq!(through, direct);
    let (_, stderr) = proxy.terminate();
    assert!(
        stderr.contains("a body longer than the proxy keeps was forwarded whole"),
        "{stderr}"
    );
    let report = report_json(Path::new(&reports));
    let http_001 = row(&report, "AAP-HTTP-001");
    assert_eq!(http_001["verdict"], "not-testable");
    assert!(http_001["summary"]
        .as_str()
        .unwrap_or_default()
        .contains("longer than the proxy keeps"));
    assert!(broken(&report).is_empty());
}

#[tokio::test(flavor = "current_thread")]
async fn ctrl_c_writes_the_report() {
    let dir = TempDir::new("aap-proxy-int");
    let server = Served::start(&["serve", "--protocol", "aap"]);
    let (proxy, reports) = proxy(&dir, &server.url, &[]);
    let response = request(&proxy.url, "GET", "/meta", "").await;
    let _ = response.into_body().collect().await;
    let (code, stderr) = proxy.signal("-INT");
    assert_eq!(code, Some(0), "{stderr}");
    let report = report_json(Path::new(&reports));
    assert!(
        report["target"]
            .as_str()
            .unwrap_or_default()
            .contains("(1 exchanges)"),
        "{report:#}"
    );
    assert_eq!(row(&report, "AAP-META-004")["verdict"], "pass");
}

#[test]
fn bad_command_lines_are_one_line_and_exit_2() {
    let dir = TempDir::new("aap-proxy-cli");
    let capture = dir.sub("one.jsonl");
    std::fs::write(
        &capture,
        r#"{"conn":"1","atMs":0,"http":{"method":"GET","path":"/meta","status":200}}"#,
    )
    .expect("write");
    let cases: &[&[&str]] = &[
        &["proxy", "--upstream", "ftp://127.0.0.1:1"],
        &[
            "proxy",
            "--protocol",
            "aap",
            "--upstream",
            "ws://127.0.0.1:1",
        ],
        &[
            "proxy",
            "--upstream",
            "http://127.0.0.1:1",
            "--protocol-version",
            "4",
        ],
        &[
            "proxy",
            "--upstream",
            "http://127.0.0.1:1",
            "--max-body",
            "lots",
        ],
        &[
            "proxy",
            "--upstream",
            "ws://127.0.0.1:1",
            "--max-body",
            "10",
        ],
        &["proxy", "--upstream", "http://:80"],
        &["check", &capture, "--protocol-version", "9"],
    ];
    for args in cases {
        let out = ahpspec(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("ahpspec: "), "{args:?}: {stderr}");
    }
    // The same capture with a known version is judged.
    let out = ahpspec(&[
        "check",
        &capture,
        "--protocol-version",
        "1",
        "--report-dir",
        &dir.sub("r"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}
