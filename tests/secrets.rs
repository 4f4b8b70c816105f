//! Secrets never reach what the harness writes: a token in a connection's URL, an
//! `Authorization` header (`--header`, `--token`, a client's through the proxy) and a server
//! echoing either are absent from captures, the four reports and every log line, for AHP
//! and AAP alike. Each test greps every file the commands wrote, and their output.

mod run_support;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use ahpspec::capture::{read, Close, Payload, Peer, Record, Recorder};
use run_support::{ahpspec, report_json, show, verdicts, Served, TempDir};

/// Every file under `dir` (recursively) with its text.
fn files(dir: &Path) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files(&path));
        } else {
            let bytes = std::fs::read(&path).expect("file");
            found.push((
                path.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
    }
    found
}

/// No file under `dir`, and no text of `logs`, holds any of `secrets`; returns how many
/// files were read.
fn assert_no_secret(dir: &Path, logs: &[&str], secrets: &[&str]) -> usize {
    let written = files(dir);
    for secret in secrets {
        for (path, text) in &written {
            assert!(!text.contains(secret), "{secret} in {path}");
        }
        for log in logs {
            assert!(!log.contains(secret), "{secret} in the output:\n{log}");
        }
    }
    written.len()
}

/// A stand-in server that refuses every HTTP request (a WebSocket upgrade or an AAP
/// request) with 401 and a JSON body quoting the `Authorization` header and the request
/// target it got — a server that echoes credentials. Returns its address and what it saw.
fn echoing_server() -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr").to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut head = Vec::new();
            loop {
                let mut line = String::new();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) if line == "\r\n" => break,
                    Ok(_) => head.push(line.trim_end().to_owned()),
                }
            }
            let target = head
                .first()
                .and_then(|l| l.split(' ').nth(1))
                .unwrap_or("")
                .to_owned();
            let auth = head
                .iter()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("authorization")
                        .then(|| value.trim().to_owned())
                })
                .unwrap_or_default();
            kept.lock().expect("lock").push(format!("{target} {auth}"));
            let body = format!(r#"{{"error":"refused {auth} for {target}"}}"#);
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, seen)
}

#[test]
fn a_proxied_session_whose_url_carries_a_token_leaves_it_nowhere() {
    let dir = TempDir::new("secrets-proxy");
    let host = Served::start(&["serve", "--fault", "binary-frame"]);
    let capture = dir.sub("proxy.jsonl");
    let upstream = format!("{}/?upstream_key=UPSTREAM-SECRET-77", host.url);
    let proxy = Served::start(&[
        "proxy",
        "--upstream",
        &upstream,
        "--record",
        &capture,
        "--report-dir",
        &dir.sub("proxy"),
    ]);
    let proxy_url = proxy.url.clone();
    let url = format!("{proxy_url}/?access_token=SUPERSECRET123");
    let run = ahpspec(&[
        "run",
        &url,
        "--filter",
        "TRANSPORT-00*,AUTH-001",
        "--record",
        &dir.sub("run.jsonl"),
        "--report-dir",
        &dir.sub("run"),
    ]);
    assert_eq!(run.status.code(), Some(1), "{}", show(&run));
    let (code, proxy_log) = proxy.terminate();
    assert_eq!(code, Some(1), "the proxy saw binary frames:\n{proxy_log}");
    // The capture re-checks as before: redaction kept every frame a frame.
    let check = ahpspec(&["check", &capture, "--report-dir", &dir.sub("offline")]);
    assert_eq!(check.status.code(), Some(1), "{}", show(&check));
    assert_eq!(
        verdicts(&report_json(&dir.path().join("offline"))),
        verdicts(&report_json(&dir.path().join("proxy")))
    );
    let logs = [show(&run), proxy_log, show(&check)];
    let logs: Vec<&str> = logs.iter().map(String::as_str).collect();
    let read = assert_no_secret(dir.path(), &logs, &["SUPERSECRET123", "UPSTREAM-SECRET-77"]);
    assert!(
        read >= 14,
        "two captures and three report directories: {read}"
    );
    // What was redacted is still shown as there.
    let recorded = std::fs::read_to_string(&capture).expect("capture");
    assert!(
        recorded.contains(r#""path":"/?access_token=<redacted>""#),
        "{recorded}"
    );
    let run_report = report_json(&dir.path().join("run"));
    assert_eq!(
        run_report["target"],
        format!("{proxy_url}/?access_token=<redacted>")
    );
}

#[test]
fn an_ahp_run_sends_its_header_and_no_secret_reaches_the_error() {
    let (addr, seen) = echoing_server();
    let url = format!("ws://{addr}/ahp?token=URL-SECRET-41&room=7");
    let out = ahpspec(&[
        "run",
        &url,
        "--header",
        "Authorization: Bearer HEADER-SECRET-42",
        "--header",
        "X-Tenant: acme",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("token=<redacted>&room=7"), "{stderr}");
    for secret in ["URL-SECRET-41", "HEADER-SECRET-42"] {
        assert!(!show(&out).contains(secret), "{secret}: {}", show(&out));
    }
    let seen = seen.lock().expect("lock").clone();
    assert_eq!(
        seen.first().map(String::as_str),
        Some("/ahp?token=URL-SECRET-41&room=7 Bearer HEADER-SECRET-42"),
        "the server got the URL and the header as given"
    );
    // Names a profile or `--redact` adds are secrets too.
    let dir = TempDir::new("secrets-names");
    let profile = dir.sub("profile.toml");
    std::fs::write(&profile, "name = \"pins\"\nsecrets = [\"tenant_pin\"]\n").expect("profile");
    let named = format!("ws://{addr}/ahp?tenant_pin=PIN-SECRET-45&room=ROOM-SECRET-46");
    let out = ahpspec(&[
        "run",
        &named,
        "--target-profile",
        &profile,
        "--redact",
        "Room",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("tenant_pin=<redacted>&room=<redacted>"),
        "{stderr}"
    );
    let bad = ahpspec(&[
        "run",
        &url,
        "--header",
        "Authorization Bearer HEADER-SECRET-42",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", show(&bad));
    assert!(!show(&bad).contains("HEADER-SECRET-42"), "{}", show(&bad));
}

#[test]
fn an_aap_run_with_an_authorization_header_shows_its_key_nowhere() {
    let dir = TempDir::new("secrets-aap");
    let server = Served::start(&["serve", "--protocol", "aap", "--token", "AAP-KEY-SECRET-43"]);
    let out = ahpspec(&[
        "run",
        &server.url,
        "--header",
        "Authorization: Bearer AAP-KEY-SECRET-43",
        "--report-dir",
        &dir.sub("served"),
    ]);
    // The header is the key: every endpoint serves it, and the unauthenticated requests
    // of AAP-AUTH-002 go without it.
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let served = verdicts(&report_json(&dir.path().join("served")));
    assert_eq!(served["AAP-AUTH-001"], "pass");
    assert_eq!(served["AAP-AUTH-002"], "pass");
    // A server that echoes the key in its refusals: the transcripts show it redacted.
    let (addr, seen) = echoing_server();
    let echoed = ahpspec(&[
        "run",
        &format!("http://{addr}"),
        "--header",
        "Authorization: Bearer AAP-ECHO-SECRET-44",
        "--timeout",
        "2s",
        "--report-dir",
        &dir.sub("echoed"),
    ]);
    assert_eq!(echoed.status.code(), Some(1), "{}", show(&echoed));
    assert!(
        seen.lock()
            .expect("lock")
            .iter()
            .any(|s| s.ends_with("Bearer AAP-ECHO-SECRET-44")),
        "the server got the key"
    );
    let transcript =
        std::fs::read_to_string(dir.path().join("echoed/report.json")).expect("report.json");
    assert!(
        transcript.contains(r#"refused <redacted> for /meta"#),
        "the echo is in the transcript, redacted"
    );
    let logs = [show(&out), show(&echoed)];
    let logs: Vec<&str> = logs.iter().map(String::as_str).collect();
    let read = assert_no_secret(
        dir.path(),
        &logs,
        &["AAP-KEY-SECRET-43", "AAP-ECHO-SECRET-44"],
    );
    // Every file of both report directories was read, whatever formats a report holds.
    let expected = ["served", "echoed"]
        .iter()
        .map(|d| {
            std::fs::read_dir(dir.path().join(d))
                .expect("report dir")
                .count()
        })
        .sum::<usize>();
    assert!(
        expected >= 8,
        "two report directories of four formats or more: {expected}"
    );
    assert_eq!(read, expected, "two report directories");
}

/// The recorder itself: a connection's path and upstream URL, a frame echoing a learned
/// secret and a close reason quoting it are written redacted, and read back.
#[test]
fn a_capture_holds_no_secret_of_its_connections_path_upstream_frames_or_closes() {
    let dir = TempDir::new("secrets-capture");
    let path = dir.path().join("secrets.jsonl");
    let recorder = Recorder::create(&path).expect("create");
    recorder.open(
        "1",
        "/ahp?access_token=CAPTURE-SECRET-1&x=1",
        Some("wss://u:CAPTURE-PASS-2@h:1/?key=CAPTURE-KEY-3"),
    );
    ahpspec::redact::learn_url("/ahp?access_token=CAPTURE-SECRET-1");
    recorder.write(&Record::text(
        "1",
        Peer::Server,
        1.0,
        r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"bad CAPTURE-SECRET-1"}}"#,
    ));
    recorder.write(&Record {
        conn: "1".into(),
        from: Some(Peer::Server),
        at_ms: 2.0,
        time: None,
        payload: Payload::Close(Close {
            code: Some(4001),
            reason: "token CAPTURE-SECRET-1 expired".into(),
        }),
    });
    recorder.finish().expect("flush");
    let written = std::fs::read_to_string(&path).expect("capture");
    for secret in ["CAPTURE-SECRET-1", "CAPTURE-PASS-2", "CAPTURE-KEY-3"] {
        assert!(!written.contains(secret), "{secret} in\n{written}");
    }
    assert!(
        written.contains("/ahp?access_token=<redacted>&x=1"),
        "{written}"
    );
    let mut records = Vec::new();
    read(&path, |r| records.push(r)).expect("a capture that reads back");
    assert_eq!(records.len(), 3);
}
