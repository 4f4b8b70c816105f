//! `ahpspec proxy --protocol aap` between the harness's own AAP client and the built-in AAP
//! server, all real processes on loopback: a session arrives unchanged (what the client got
//! is what the proxy recorded from the upstream, and a raw turn stream is byte for byte the
//! one the server sends directly) and the proxy's report is clean; behind a faulty server
//! the report fails that fault's rule and nothing else; `--record` then `ahpspec check`
//! gives the same verdicts; a version 1 server is judged at version 1.

mod run_support;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use ahpspec::aap::http::exchange::Exchange;
use ahpspec::aap::http::{Body, Client, Request, Response, Target};
use ahpspec::capture::Payload;
use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use ahpspec::target::Protocol;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use run_support::{ahpspec, report_json, show, verdicts, Served, TempDir};
use serde_json::{json, Value};

/// Rows a proxy never judges (it has no scripted turns nor history model).
const NOT_JUDGED: &[&str] = &["AAP-SSE-007", "AAP-HISTORY-004"];

/// A built-in AAP server and a recording proxy in front of it, both processes.
struct Pair {
    _server: Served,
    proxy: Served,
    server_url: String,
    capture: String,
    reports: String,
}

fn pair(dir: &TempDir, server_args: &[&str]) -> Pair {
    let mut args = vec!["serve", "--protocol", "aap"];
    args.extend_from_slice(server_args);
    let server = Served::start(&args);
    let (capture, reports) = (dir.sub("capture.jsonl"), dir.sub("proxy-report"));
    let proxy = Served::start(&[
        "proxy",
        "--upstream",
        &server.url,
        "--record",
        &capture,
        "--report-dir",
        &reports,
    ]);
    Pair {
        server_url: server.url.clone(),
        _server: server,
        proxy,
        capture,
        reports,
    }
}

impl Pair {
    /// Stops the proxy (SIGTERM): its report's verdicts, and the capture re-checked.
    fn finish(self, dir: &TempDir) -> (Value, Value, String) {
        let (code, stderr) = self.proxy.terminate();
        assert!(matches!(code, Some(0 | 1)), "proxy exit {code:?}: {stderr}");
        let proxied = report_json(Path::new(&self.reports));
        let offline_dir = dir.sub("offline-report");
        let out = ahpspec(&["check", &self.capture, "--report-dir", &offline_dir]);
        assert!(matches!(out.status.code(), Some(0 | 1)), "{}", show(&out));
        (proxied, report_json(Path::new(&offline_dir)), stderr)
    }
}

/// The rows of a report that failed or warned.
fn broken(report: &Value) -> BTreeSet<String> {
    verdicts(report)
        .into_iter()
        .filter(|(_, v)| v == "fail" || v == "warn")
        .map(|(id, _)| id)
        .collect()
}

fn verdict<'a>(report: &'a Value, id: &str) -> &'a str {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["info"]["id"] == id))
        .and_then(|c| c["verdict"].as_str())
        .unwrap_or_else(|| panic!("no row {id}"))
}

/// The recorded exchanges, in order.
fn exchanges(capture: &str) -> Vec<Exchange> {
    let mut all = Vec::new();
    ahpspec::capture::read(Path::new(capture), |record| {
        if let Payload::Http(exchange) = record.payload {
            all.push(*exchange);
        }
    })
    .expect("capture reads");
    all
}

/// The whole AAP catalog through `url` (the harness's own client, as `run` drives it).
async fn catalog_through(url: &str) -> ahpspec::verdict::RunReport {
    let options = Options {
        protocol: Protocol::Aap,
        url: Some(url.to_owned()),
        timeout: Duration::from_secs(5),
        ..Options::default()
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    certify(&options, &mut Quiet, interrupt).await.expect("run")
}

async fn send(client: &mut Client, method: &str, path: &str, body: Option<Value>) -> Response {
    let request = Request {
        method: method.into(),
        path: path.into(),
        body: body.map(|b| b.to_string().into_bytes()),
        ..Request::default()
    };
    client.send(&request).await.expect("a response")
}

/// A scripted turn: two texts, then the end of the turn.
fn scripted(mode: &str) -> Value {
    let script = json!({"steps": [{"text": "one"}, {"text": "two"}], "stop": "end_turn"});
    json!({"stream": mode, "messages": [{"role": "user", "content": format!("ahpspec-script:{script}")}]})
}

/// A turn's raw response body, read with hyper: every byte as it came.
async fn raw_turn(base: &str, session: &str, body: &Value) -> (u16, String, Vec<u8>) {
    let target = Target::parse(base).expect("target");
    let tcp = tokio::net::TcpStream::connect((target.host.as_str(), target.port))
        .await
        .expect("connects");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = hyper::Request::post(format!("/sessions/{session}/turns"))
        .header("host", target.host.as_str())
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let response = sender.send_request(request).await.expect("response");
    let status = response.status().as_u16();
    let content_type = response.headers()["content-type"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, content_type, bytes.to_vec())
}

#[tokio::test(flavor = "current_thread")]
async fn a_session_through_the_proxy_arrives_unchanged_and_its_report_is_clean() {
    let dir = TempDir::new("aap-proxy-session");
    let pair = pair(&dir, &[]);
    let timeout = Duration::from_secs(5);
    let mut client = Client::new(Target::parse(&pair.proxy.url).expect("url"), None, timeout);
    let mut got = vec![send(&mut client, "GET", "/meta", None).await];
    let created = send(
        &mut client,
        "POST",
        "/sessions",
        Some(json!({"agent": {"name": "ahpspec-scripted"}, "tools": [{"name": "pick", "description": "Picks.", "inputSchema": {"type": "object"}}]})),
    )
    .await;
    let id = created
        .json()
        .and_then(|b| b["sessionId"].as_str())
        .expect("id")
        .to_owned();
    got.push(created);
    for mode in ["delta", "message", "none"] {
        let turn = format!("/sessions/{id}/turns");
        got.push(send(&mut client, "POST", &turn, Some(scripted(mode))).await);
    }
    let history = format!("/sessions/{id}/history?type=full");
    got.push(send(&mut client, "GET", &history, None).await);
    got.push(send(&mut client, "GET", "/sessions", None).await);
    assert!(
        matches!(&got[2].body, Body::Events(read) if read.events.len() >= 4),
        "a delta stream: {:?}",
        got[2]
    );
    // Byte for byte: a raw delta turn through the proxy and one straight to the server
    // (each on a fresh session: the scripted turn's stream names no session).
    let mut direct = Client::new(Target::parse(&pair.server_url).expect("url"), None, timeout);
    let fresh = send(
        &mut direct,
        "POST",
        "/sessions",
        Some(json!({"agent": {"name": "ahpspec-scripted"}})),
    )
    .await;
    let direct_id = fresh
        .json()
        .and_then(|b| b["sessionId"].as_str())
        .expect("id")
        .to_owned();
    let through = raw_turn(&pair.proxy.url, &id, &scripted("delta")).await;
    let straight = raw_turn(&pair.server_url, &direct_id, &scripted("delta")).await;
    assert_eq!(through.0, 200);
    assert_eq!(
        through, straight,
        "the proxied stream differs from the direct one"
    );
    let (proxied, offline, stderr) = pair.finish(&dir);

    // Every record conforms to the published capture format.
    let schema: Value = serde_json::from_str(ahpspec::capture::CAPTURE_SCHEMA).expect("schema");
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let written = std::fs::read_to_string(dir.sub("capture.jsonl")).expect("capture");
    for line in written.lines() {
        let record: Value = serde_json::from_str(line).expect("a JSON line");
        assert!(validator.is_valid(&record), "{line}");
    }
    // What the client got is what the proxy took from the upstream, exchange by exchange.
    let recorded = exchanges(&dir.sub("capture.jsonl"));
    assert_eq!(recorded.len(), got.len() + 1, "{recorded:#?}");
    for (n, (client_saw, exchange)) in got.iter().zip(&recorded).enumerate() {
        assert_eq!(
            Some(client_saw),
            exchange.response().as_ref(),
            "exchange {}",
            n + 1
        );
    }
    let last = recorded.last().expect("the raw turn");
    assert_eq!(
        last.response.as_ref().map(|b| b.bytes()),
        Some(through.2.clone())
    );

    assert!(broken(&proxied).is_empty(), "{proxied:#}\n{stderr}");
    for id in [
        "AAP-HTTP-001",
        "AAP-HTTP-002",
        "AAP-SSE-001",
        "AAP-SSE-002",
        "AAP-SSE-003",
        "AAP-SSE-004",
        "AAP-SSE-005",
        "AAP-META-004",
    ] {
        assert_eq!(verdict(&proxied, id), "pass", "{id}: {proxied:#}");
    }
    for id in NOT_JUDGED {
        assert_eq!(verdict(&proxied, id), "not-testable", "{id}");
    }
    assert_eq!(verdict(&proxied, "AAP-SSE-009"), "not-applicable");
    assert_eq!(proxied["protocolVersion"], "AAP 3");
    assert_eq!(verdicts(&offline), verdicts(&proxied));
}

/// For each fault: the catalog through the proxy to the faulty server; the proxy's report
/// and the capture's fail exactly the fault's rule.
#[tokio::test(flavor = "current_thread")]
async fn behind_a_faulty_server_the_proxy_fails_exactly_the_faults_rule() {
    let faults = [
        ("sse-event-name-mismatch", "AAP-SSE-001"),
        ("delta-drops-turn-stop", "AAP-SSE-003"),
        ("version-not-semver", "AAP-META-004"),
        ("list-text-plain", "AAP-HTTP-002"),
        ("client-result-echoed", "AAP-TOOL-008"),
        ("secret-plaintext", "AAP-OPTION-003"),
    ];
    for (fault, rule) in faults {
        let dir = TempDir::new("aap-proxy-fault");
        let pair = pair(&dir, &["--fault", fault]);
        let run = catalog_through(&pair.proxy.url).await;
        let (proxied, offline, stderr) = pair.finish(&dir);
        let want = BTreeSet::from([rule.to_owned()]);
        assert_eq!(broken(&proxied), want, "{fault}: {stderr}");
        assert_eq!(verdicts(&offline), verdicts(&proxied), "{fault} offline");
        assert!(
            stderr.contains(rule),
            "{fault}: no live line for {rule}: {stderr}"
        );
        // The run itself (the same traffic) blames the same rule.
        assert!(
            run.cases
                .iter()
                .any(|c| c.info.id == rule && c.verdict == ahpspec::verdict::Verdict::Fail),
            "{fault}: the run did not fail {rule}"
        );
    }
}

/// A version 1 server: the proxy learns 1 from GET /meta and judges with version 1's
/// rules (creation streams open with session_start), clean; its version-1 fault fails
/// AAP-SSE-009 alone, live and offline.
#[tokio::test(flavor = "current_thread")]
async fn a_version_1_server_is_judged_at_version_1() {
    for (fault, want) in [
        (None, None),
        (Some("create-no-session-start"), Some("AAP-SSE-009")),
    ] {
        let dir = TempDir::new("aap-proxy-v1");
        let mut args = vec!["--protocol-version", "1"];
        if let Some(fault) = fault {
            args.extend(["--fault", fault]);
        }
        let pair = pair(&dir, &args);
        let run = catalog_through(&pair.proxy.url).await;
        assert_eq!(run.protocol_version, "AAP 1");
        let (proxied, offline, stderr) = pair.finish(&dir);
        assert_eq!(proxied["protocolVersion"], "AAP 1", "{stderr}");
        let want: BTreeSet<String> = want.into_iter().map(str::to_owned).collect();
        assert_eq!(broken(&proxied), want, "{fault:?}: {stderr}");
        if fault.is_none() {
            assert_eq!(verdict(&proxied, "AAP-SSE-009"), "pass");
        }
        assert_eq!(verdicts(&offline), verdicts(&proxied));
    }
}
