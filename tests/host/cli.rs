use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use super::support::*;

fn ahpspec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ahpspec"))
}

#[tokio::test]
async fn serve_prints_its_url_serves_and_stops_on_sigterm() {
    let mut child = ahpspec()
        .args(["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ahpspec serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("first line");
    let url = line.trim().to_owned();
    assert!(
        url.starts_with("ws://127.0.0.1:"),
        "first line is the URL: {url:?}"
    );
    let mut c = Client::init(&url, "cli").await;
    assert_eq!(
        c.ok("ping", json!({ "channel": "ahp-root://" })).await,
        serde_json::Value::Null
    );
    let pid = child.id().to_string();
    let status = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let closed = c
        .conn
        .wait_for(T, |i| {
            matches!(i, ahpspec::transport::Incoming::Closed { .. })
        })
        .await;
    assert!(closed.is_ok(), "the host closes sockets on shutdown");
    for _ in 0..100 {
        if let Ok(Some(status)) = child.try_wait() {
            assert!(status.success(), "exit status {status}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let _ = child.kill();
    panic!("ahpspec serve did not exit after SIGTERM");
}

#[test]
fn fault_list_and_bad_fault_names() {
    let out = ahpspec()
        .args(["serve", "--fault", "list"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // Faults grouped under `# area (n)` lines, one line each: name, rule, description.
    let mut names = Vec::new();
    let mut areas = Vec::new();
    for line in text.lines() {
        if let Some(area) = line.strip_prefix("# ") {
            areas.push(area.to_owned());
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 3, "name, rule, description: {line}");
        names.push(fields[0].to_owned());
    }
    let all: Vec<&str> = ahpspec::host::Fault::ALL.iter().map(|f| f.name()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    let mut expected = all.clone();
    expected.sort();
    assert_eq!(sorted, expected, "every fault listed once");
    assert!(areas.len() >= 5, "{text}");
    let unique: std::collections::BTreeSet<&String> = areas.iter().collect();
    assert_eq!(unique.len(), areas.len(), "each area once: {text}");
    let bad = ahpspec()
        .args(["serve", "--fault", "no-such-fault"])
        .output()
        .expect("runs");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(err.trim().lines().count(), 1, "one-line error: {err}");
    let usage = ahpspec()
        .args(["serve", "--listen", "nonsense"])
        .output()
        .expect("runs");
    assert_eq!(usage.status.code(), Some(2));
}
