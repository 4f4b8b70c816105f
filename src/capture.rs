//! Captures: the frames of one or more WebSocket connections in JSON Lines, one record a
//! line (format: `schemas/capture.schema.json`), written by `proxy --record`,
//! `run --record` and `fuzz --record` and read back by `ahpspec check`. Secrets
//! ([`crate::redact`]: `authenticate` tokens, credentials in the connection's URL, learned
//! keys) are redacted before a record is written.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checks::words::{EarlierDispatches, InvalidDispatches};
pub use crate::traffic::Peer;
use crate::traffic::{ConnWatch, Seen, Traffic};

/// The JSON Schema (draft 2020-12) every capture line conforms to.
pub const CAPTURE_SCHEMA: &str = include_str!("../schemas/capture.schema.json");

pub use crate::redact::REDACTED;

// AAP captures: exchange records, re-checked by the AAP checks.
pub mod aap;

/// A close frame's code and reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Close {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    #[serde(default)]
    pub reason: String,
}

/// What one record holds: exactly one of these members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Payload {
    /// The connection opened: the request path and, when the proxy recorded it, where it
    /// was forwarded.
    Open {
        path: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        upstream: Option<String>,
    },
    Text(String),
    /// A binary frame's bytes, base64 (standard alphabet, padded).
    Binary(String),
    Close(Close),
    /// The connection broke without a close frame.
    Lost(bool),
    /// One AAP HTTP exchange, whole ([`crate::aap::http::exchange`]).
    Http(Box<crate::aap::http::exchange::Exchange>),
}

/// One line of a capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// The connection, unique within the capture.
    pub conn: String,
    /// Absent on `open` records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Peer>,
    /// Milliseconds since the connection opened.
    pub at_ms: f64,
    /// Wall-clock time (RFC 3339), on `open` records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(flatten)]
    pub payload: Payload,
}

impl Record {
    /// A binary frame's record.
    pub fn binary(conn: &str, from: Peer, at_ms: f64, bytes: &[u8]) -> Record {
        Record {
            conn: conn.to_owned(),
            from: Some(from),
            at_ms,
            time: None,
            payload: Payload::Binary(base64::engine::general_purpose::STANDARD.encode(bytes)),
        }
    }

    /// A text frame's record (redacted).
    pub fn text(conn: &str, from: Peer, at_ms: f64, text: &str) -> Record {
        Record {
            conn: conn.to_owned(),
            from: Some(from),
            at_ms,
            time: None,
            payload: Payload::Text(crate::redact::frame(text).into_owned()),
        }
    }
}

impl Record {
    /// The record with its secrets redacted ([`crate::redact`]): the connection's path and
    /// upstream URL, a text frame, a close reason. `None` when there was none.
    fn redacted(&self) -> Option<Record> {
        let payload = match &self.payload {
            Payload::Open { path, upstream } => {
                let (path_r, upstream_r) = (
                    crate::redact::url(path),
                    upstream.as_deref().map(crate::redact::url),
                );
                if matches!(path_r, Cow::Borrowed(_)) && !matches!(upstream_r, Some(Cow::Owned(_)))
                {
                    return None;
                }
                Payload::Open {
                    path: path_r.into_owned(),
                    upstream: upstream_r.map(Cow::into_owned),
                }
            }
            Payload::Text(text) => match crate::redact::frame(text) {
                Cow::Borrowed(_) => return None,
                Cow::Owned(text) => Payload::Text(text),
            },
            Payload::Close(close) => match crate::redact::text(&close.reason) {
                Cow::Borrowed(_) => return None,
                Cow::Owned(reason) => Payload::Close(Close {
                    code: close.code,
                    reason,
                }),
            },
            Payload::Http(exchange) => Payload::Http(Box::new(aap::redacted(exchange)?)),
            Payload::Binary(_) | Payload::Lost(_) => return None,
        };
        Some(Record {
            payload,
            ..self.clone()
        })
    }

    /// The frame this record holds as the checks see it (`None` for an `open` record), or
    /// why it cannot be one.
    fn seen(&self) -> Result<Option<Seen<'_>>, String> {
        Ok(Some(match &self.payload {
            Payload::Open { .. } => return Ok(None),
            Payload::Http(_) => {
                return Err(format!(
                    "connection {}: an AAP exchange in a capture of WebSocket frames",
                    self.conn
                ))
            }
            Payload::Text(text) => Seen::Text(text),
            Payload::Binary(data) => match binary_len(data) {
                Some(n) => Seen::Binary(n),
                None => {
                    return Err(format!(
                        "connection {}: binary data that is not base64",
                        self.conn
                    ))
                }
            },
            Payload::Close(close) => Seen::Close {
                code: close.code,
                reason: &close.reason,
            },
            Payload::Lost(_) => Seen::Lost,
        }))
    }
}

/// Capture failures.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot write the capture {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the capture {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {without} of its {frames} frames were recorded without their body (the upstream CLI needs --include-content): nothing to check them by")]
    NoBodies {
        path: PathBuf,
        without: usize,
        frames: usize,
    },
    #[error("{path}:{line}: not a capture record: {why}")]
    Bad {
        path: PathBuf,
        line: usize,
        why: String,
    },
}

/// Appends records to a capture file; cheap to clone and share between connections (each
/// record is one `write` of one line, so lines of concurrent connections never interleave).
#[derive(Debug, Clone)]
pub struct Recorder {
    path: PathBuf,
    out: Arc<Mutex<BufWriter<File>>>,
    /// The first write error; later records are dropped and `finish` reports it.
    failed: Arc<Mutex<Option<String>>>,
}

impl Recorder {
    /// Creates (or truncates) the capture at `path`.
    pub fn create(path: &Path) -> Result<Recorder, CaptureError> {
        let file = File::create(path).map_err(|source| CaptureError::Write {
            path: path.to_owned(),
            source,
        })?;
        Ok(Recorder {
            path: path.to_owned(),
            out: Arc::new(Mutex::new(BufWriter::new(file))),
            failed: Arc::new(Mutex::new(None)),
        })
    }

    /// The `open` record of a connection; returns it with its wall-clock time set.
    pub fn open(&self, conn: &str, path: &str, upstream: Option<&str>) {
        self.write(&Record {
            conn: conn.to_owned(),
            from: None,
            at_ms: 0.0,
            time: Some(format!("{:.3}", jiff::Timestamp::now())),
            payload: Payload::Open {
                path: path.to_owned(),
                upstream: upstream.map(str::to_owned),
            },
        });
    }

    /// Appends one record, its secrets redacted.
    pub fn write(&self, record: &Record) {
        let redacted = record.redacted();
        let mut line = match serde_json::to_vec(redacted.as_ref().unwrap_or(record)) {
            Ok(line) => line,
            Err(error) => return self.fail(error.to_string()),
        };
        line.push(b'\n');
        let written = match self.out.lock() {
            Ok(mut out) => out.write_all(&line),
            Err(_) => return self.fail("a writer panicked".to_owned()),
        };
        if let Err(error) = written {
            self.fail(error.to_string());
        }
    }

    fn fail(&self, why: String) {
        if let Ok(mut failed) = self.failed.lock() {
            failed.get_or_insert(why);
        }
    }

    /// Flushes the file; the first error any write met, if one did.
    pub fn finish(&self) -> Result<(), CaptureError> {
        let failed = self.failed.lock().ok().and_then(|f| f.clone());
        let flushed = match self.out.lock() {
            Ok(mut out) => out.flush().map_err(|e| e.to_string()),
            Err(_) => Err("a writer panicked".to_owned()),
        };
        match failed.map_or(flushed, Err) {
            Ok(()) => Ok(()),
            Err(why) => Err(CaptureError::Write {
                path: self.path.clone(),
                source: std::io::Error::other(why),
            }),
        }
    }
}

/// Reads a capture record by record, in file order (a capture of any size: nothing is
/// kept but the current line). Blank lines are skipped. Captures of the upstream AHP CLI
/// (`ahp … --record`) are read too: see [`Upstream`].
pub fn read(path: &Path, mut each: impl FnMut(Record)) -> Result<usize, CaptureError> {
    read_counting(path, &mut Upstream::default(), &mut each)
}

/// Lines of the upstream AHP CLI's capture format (JSON Lines; `kind` "capture" marks its
/// start and end, `kind` "frame" a frame with `direction` "out" (sent by the CLI) or "in",
/// an ISO `timestamp`, and the frame's body in `message` only when recorded with
/// `--include-content`). Such a capture is one connection, named `ahp`.
#[derive(Debug, Default)]
pub struct Upstream {
    /// The first frame's time, in ms since the epoch (times are relative to it).
    first_ms: Option<f64>,
    /// Frames recorded without their body: nothing to check in them.
    pub without_body: usize,
    pub frames: usize,
}

impl Upstream {
    /// The record an upstream line stands for (`None` for markers and frames without a
    /// body), or why it is not one.
    fn record(&mut self, line: &Value) -> Result<Option<Record>, String> {
        match line.get("kind").and_then(Value::as_str) {
            Some("capture") => return Ok(None),
            Some("frame") => {}
            other => return Err(format!("unknown upstream record kind {other:?}")),
        }
        self.frames += 1;
        let from = match line.get("direction").and_then(Value::as_str) {
            Some("out") => Peer::Client,
            Some("in") => Peer::Server,
            other => return Err(format!("unknown upstream direction {other:?}")),
        };
        let at = line
            .get("timestamp")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .ok_or("an upstream frame without an ISO timestamp")?;
        let at = at.as_millisecond() as f64;
        let first = *self.first_ms.get_or_insert(at);
        let Some(message) = line.get("message") else {
            self.without_body += 1;
            return Ok(None);
        };
        Ok(Some(Record {
            conn: "ahp".to_owned(),
            from: Some(from),
            at_ms: (at - first).max(0.0),
            time: None,
            payload: Payload::Text(message.to_string()),
        }))
    }
}

/// [`read`], with what the upstream lines held counted into `upstream`.
pub fn read_counting(
    path: &Path,
    upstream: &mut Upstream,
    mut each: impl FnMut(Record),
) -> Result<usize, CaptureError> {
    let file = File::open(path).map_err(|source| CaptureError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut count = 0;
    for (index, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| CaptureError::Read {
            path: path.to_owned(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why: String| CaptureError::Bad {
            path: path.to_owned(),
            line: index + 1,
            why,
        };
        let value: Value = serde_json::from_str(&line).map_err(|e| bad(e.to_string()))?;
        let record = if value.get("conn").is_none() && value.get("kind").is_some() {
            upstream.record(&value).map_err(bad)?
        } else {
            Some(serde_json::from_value::<Record>(value).map_err(|e| bad(e.to_string()))?)
        };
        if let Some(record) = record {
            each(record);
            count += 1;
        }
    }
    Ok(count)
}

/// A binary record's length in bytes (its base64 decoded), or `None` when it is not base64.
pub fn binary_len(base64_text: &str) -> Option<usize> {
    base64::engine::general_purpose::STANDARD
        .decode(base64_text)
        .ok()
        .map(|bytes| bytes.len())
}

/// What `ahpspec check` found in some captures: the report, and what the clients sent
/// that their schema rejects (the clients' problems, not the server's).
#[derive(Debug)]
pub struct Checked {
    pub report: crate::verdict::RunReport,
    pub client_problems: Vec<String>,
    pub client_problem_count: usize,
}

/// Re-checks captures offline through the checks a live proxy runs (one connection at a
/// time, in file order; a connection still open at the end of its file ends there, and
/// requests younger than `timeout_ms` then are skipped, not judged). With several files,
/// connections are named `FILE#:CONN`.
pub fn check(
    paths: &[PathBuf],
    schemas: &crate::checks::frame::Schemas,
    timeout_ms: f64,
) -> Result<Checked, CaptureError> {
    let started = std::time::Instant::now();
    let started_at = format!("{:.0}", jiff::Timestamp::now());
    let mut traffic = Traffic::default();
    for (number, path) in paths.iter().enumerate() {
        let prefix = (paths.len() > 1).then_some(number + 1);
        check_file(path, prefix, schemas, timeout_ms, &mut traffic)?;
    }
    let (problems, count) = traffic.client_problem_summary();
    let (client_problems, client_problem_count) = (problems.to_vec(), count);
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let rerun = format!("ahpspec check {}", shown.join(" "));
    let report = traffic.report(
        &format!("capture {}", shown.join(", ")),
        started_at,
        started.elapsed().as_secs_f64() * 1000.0,
        &rerun,
    );
    Ok(Checked {
        report,
        client_problems,
        client_problem_count,
    })
}

/// One capture's connections through the checks, into `traffic` (connections named
/// `PREFIX:CONN` when there is a prefix).
fn check_file(
    path: &Path,
    prefix: Option<usize>,
    schemas: &crate::checks::frame::Schemas,
    timeout_ms: f64,
    traffic: &mut Traffic,
) -> Result<(), CaptureError> {
    let mut open: std::collections::HashMap<String, (ConnWatch, f64)> = Default::default();
    let mut order: Vec<String> = Vec::new();
    let mut bad = None;
    let mut upstream = Upstream::default();
    // One capture is one runner's traffic: its connections share their invalid dispatches.
    let invalid = InvalidDispatches::default();
    let earlier = EarlierDispatches::default();
    read_counting(path, &mut upstream, |record| {
        let name = match prefix {
            Some(prefix) => format!("{prefix}:{}", record.conn),
            None => record.conn.clone(),
        };
        if !open.contains_key(&name) {
            order.push(name.clone());
        }
        let (watch, last) = open.entry(name.clone()).or_insert_with(|| {
            let watch = ConnWatch::new(&name, timeout_ms).sharing(&invalid, &earlier);
            (watch, 0.0)
        });
        *last = record.at_ms;
        let from = record.from.unwrap_or(Peer::Client);
        match record.seen() {
            Ok(Some(seen)) => {
                for found in watch.frame(from, record.at_ms, seen, schemas) {
                    traffic.found(found);
                }
            }
            Ok(None) => {}
            Err(why) => {
                bad.get_or_insert(why);
            }
        }
    })?;
    if let Some(why) = bad {
        return Err(CaptureError::Bad {
            path: path.to_owned(),
            line: 0,
            why,
        });
    }
    if upstream.without_body > 0 {
        // Metadata alone (method, channel, serverSeq) is too little to judge anything by:
        // say so rather than report rules that looked at nothing.
        return Err(CaptureError::NoBodies {
            path: path.to_owned(),
            without: upstream.without_body,
            frames: upstream.frames,
        });
    }
    for name in order {
        if let Some((mut watch, last)) = open.remove(&name) {
            for found in watch.end(last) {
                traffic.found(found);
            }
            traffic.close(watch);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::frame as redact;

    #[test]
    fn authenticate_tokens_are_redacted_and_nothing_else_changes() {
        let auth = r#"{"jsonrpc":"2.0","id":4,"method":"authenticate","params":{"resource":"https://r","token":"s3cret"}}"#;
        let redacted = redact(auth);
        assert!(!redacted.contains("s3cret"), "{redacted}");
        assert!(redacted.contains(REDACTED));
        assert!(redacted.contains("\"resource\":\"https://r\""));
        // A token elsewhere is not a credential the protocol marks.
        let other = r#"{"jsonrpc":"2.0","id":5,"method":"createSession","params":{"progressToken":"authenticate"}}"#;
        assert!(matches!(redact(other), Cow::Borrowed(_)));
        assert!(matches!(
            redact("not json authenticate token"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn upstream_cli_captures_are_read_with_their_bodies() {
        let dir = std::env::temp_dir().join(format!("ahpspec-upstream-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("ahp.jsonl");
        let lines = [
            r#"{"kind":"capture","state":"started","version":1,"cursor":1,"timestamp":"2026-01-01T00:00:00.000Z"}"#,
            r#"{"kind":"frame","direction":"out","bytes":60,"method":"ping","rpcId":1,"message":{"jsonrpc":"2.0","id":1,"method":"ping","params":{"channel":"ahp-root://"}},"version":1,"cursor":2,"timestamp":"2026-01-01T00:00:00.010Z"}"#,
            r#"{"kind":"frame","direction":"in","bytes":36,"rpcId":1,"message":{"jsonrpc":"2.0","id":1,"result":null},"version":1,"cursor":3,"timestamp":"2026-01-01T00:00:00.025Z"}"#,
            r#"{"kind":"capture","state":"completed","version":1,"cursor":4,"timestamp":"2026-01-01T00:00:00.030Z"}"#,
        ];
        std::fs::write(&path, lines.join("\n")).expect("write");
        let mut records = Vec::new();
        assert_eq!(read(&path, |r| records.push(r)).expect("read"), 2);
        assert_eq!(records[0].from, Some(Peer::Client));
        assert_eq!(records[1].from, Some(Peer::Server));
        assert_eq!(records[1].at_ms, 15.0);
        assert!(matches!(&records[1].payload, Payload::Text(t) if t.contains("\"result\":null")));
        let schemas = crate::checks::frame::Schemas::load(None).expect("schemas");
        let checked = check(std::slice::from_ref(&path), &schemas, 1000.0).expect("checked");
        let transport_003 = checked
            .report
            .cases
            .iter()
            .find(|c| c.info.id == "TRANSPORT-003");
        assert_eq!(
            transport_003.map(|c| c.verdict),
            Some(crate::verdict::Verdict::Pass)
        );
        // Without bodies there is nothing to check: an error, not an empty pass.
        let bare: Vec<String> = lines
            .iter()
            .map(|l| {
                let mut v: Value = serde_json::from_str(l).expect("json");
                if let Some(o) = v.as_object_mut() {
                    o.remove("message");
                }
                v.to_string()
            })
            .collect();
        std::fs::write(&path, bare.join("\n")).expect("write");
        let error = check(std::slice::from_ref(&path), &schemas, 1000.0).expect_err("no bodies");
        assert!(error.to_string().contains("2 of its 2 frames"), "{error}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn records_round_trip_through_a_file() {
        let dir = std::env::temp_dir().join(format!("ahpspec-capture-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("round-trip.jsonl");
        let recorder = Recorder::create(&path).expect("create");
        recorder.open("1", "/", Some("ws://127.0.0.1:1"));
        recorder.write(&Record::text("1", Peer::Client, 1.5, "{}"));
        recorder.write(&Record::binary("1", Peer::Server, 2.0, &[0, 1, 2]));
        recorder.write(&Record {
            conn: "1".into(),
            from: Some(Peer::Server),
            at_ms: 3.0,
            time: None,
            payload: Payload::Close(Close {
                code: Some(1000),
                reason: "bye".into(),
            }),
        });
        recorder.finish().expect("flush");
        // Every line the recorder wrote conforms to the published schema; a line with two
        // payloads does not.
        let schema: Value = serde_json::from_str(CAPTURE_SCHEMA).expect("schema is JSON");
        let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
        let written = std::fs::read_to_string(&path).expect("capture");
        for line in written.lines() {
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            assert!(validator.is_valid(&record), "{line}");
        }
        let two = serde_json::json!({"conn": "1", "from": "client", "atMs": 0, "text": "{}", "lost": true});
        assert!(!validator.is_valid(&two));
        let mut records = Vec::new();
        assert_eq!(read(&path, |r| records.push(r)).expect("read"), 4);
        assert!(matches!(&records[0].payload, Payload::Open { path, .. } if path == "/"));
        assert_eq!(records[1].payload, Payload::Text("{}".into()));
        match &records[2].payload {
            Payload::Binary(data) => assert_eq!(binary_len(data), Some(3)),
            other => panic!("not binary: {other:?}"),
        }
        assert_eq!(records[3].from, Some(Peer::Server));
        std::fs::write(&path, "{\"conn\":1}\n").expect("write");
        let error = read(&path, |_| {}).expect_err("bad record");
        assert!(
            error.to_string().contains(":1: not a capture record"),
            "{error}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
