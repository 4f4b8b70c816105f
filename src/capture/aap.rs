//! AAP captures: the HTTP exchanges of an AAP client and server in JSON Lines, one record
//! a line (format: `schemas/aap-capture.schema.json`), beside the WebSocket captures of
//! [`crate::capture`]. Written by `fuzz --protocol aap --record` (and meant for an AAP
//! proxy's `--record`), read back by `ahpspec check`. One connection carries one request:
//! its `request` record, then the server's `response` head, then either one `body`
//! (everything but an SSE stream) or its `event`s and an `end`, or a `failed` record when
//! no response came.
//!
//! This module is data and file handling only (the transport layer's client writes it);
//! the offline re-check is [`super::aap_check`]. No credential is ever recorded: the
//! `Authorization` header is not part of a record, and bodies go through
//! [`crate::redact::text`].

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

/// The JSON Schema (draft 2020-12) every AAP capture line conforms to.
pub const AAP_CAPTURE_SCHEMA: &str = include_str!("../../schemas/aap-capture.schema.json");

/// A request as it went on the wire (the method and path of the version spoken).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AapRequest {
    pub method: String,
    /// Path and query, relative to the base URL.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// The body as text (bytes that are not UTF-8 shown lossily).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
}

/// The head of a response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AapResponseHead {
    pub status: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AapEvent {
    /// The `event:` field (`message` when the server sent none).
    pub name: String,
    pub data: String,
}

/// How an SSE stream ended.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AapStreamEnd {
    /// `closed` (the server finished the body), `timedOut` (still open when the reader
    /// gave up) or `broken` (cut off).
    pub how: String,
    /// The idle time of `timedOut` (ms), the error of `broken`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Bytes after the last blank line: an event cut off before its end.
    #[serde(default)]
    pub unterminated: bool,
}

/// What one record holds: exactly one of these members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AapPayload {
    Request(AapRequest),
    Response(AapResponseHead),
    /// A whole body that is not an SSE stream (text; empty bodies have no record).
    Body(String),
    Event(AapEvent),
    End(AapStreamEnd),
    /// No response: why (refused connection, timeout, broken exchange).
    Failed(String),
}

/// One line of an AAP capture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AapRecord {
    /// The connection (one exchange), unique within the capture.
    pub conn: String,
    /// Milliseconds since the connection opened.
    pub at_ms: f64,
    /// Wall-clock time (RFC 3339), on `request` records.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(flatten)]
    pub payload: AapPayload,
}

/// Capture file failures.
#[derive(Debug, thiserror::Error)]
pub enum AapCaptureError {
    #[error("cannot write the AAP capture {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the AAP capture {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: not an AAP capture record: {why}")]
    Bad {
        path: PathBuf,
        line: usize,
        why: String,
    },
}

/// Appends AAP records to a capture file; cheap to clone and share between clients (each
/// record is one line written whole, so concurrent exchanges never interleave a line).
#[derive(Debug, Clone)]
pub struct AapRecorder {
    path: PathBuf,
    out: Arc<Mutex<BufWriter<File>>>,
    next_conn: Arc<AtomicU64>,
    failed: Arc<Mutex<Option<String>>>,
}

impl AapRecorder {
    /// Creates (or truncates) the capture at `path`.
    pub fn create(path: &Path) -> Result<AapRecorder, AapCaptureError> {
        let file = File::create(path).map_err(|source| AapCaptureError::Write {
            path: path.to_owned(),
            source,
        })?;
        Ok(AapRecorder {
            path: path.to_owned(),
            out: Arc::new(Mutex::new(BufWriter::new(file))),
            next_conn: Arc::new(AtomicU64::new(1)),
            failed: Arc::new(Mutex::new(None)),
        })
    }

    /// A new exchange's recorder: its own connection name and clock.
    pub fn exchange(&self) -> AapExchange {
        let n = self.next_conn.fetch_add(1, Ordering::Relaxed);
        AapExchange {
            recorder: self.clone(),
            conn: format!("h{n}"),
            opened: Instant::now(),
        }
    }

    fn write(&self, record: &AapRecord) {
        let Ok(mut line) = serde_json::to_string(record) else {
            return;
        };
        line.push('\n');
        let Ok(mut out) = self.out.lock() else {
            return;
        };
        if let Err(error) = out.write_all(line.as_bytes()) {
            if let Ok(mut failed) = self.failed.lock() {
                failed.get_or_insert(error.to_string());
            }
        }
    }

    /// Flushes the file; the first write error, if any.
    pub fn finish(&self) -> Result<(), AapCaptureError> {
        let error = |e: String| AapCaptureError::Write {
            path: self.path.clone(),
            source: std::io::Error::other(e),
        };
        if let Some(failed) = self.failed.lock().ok().and_then(|f| f.clone()) {
            return Err(error(failed));
        }
        match self.out.lock() {
            Ok(mut out) => out.flush().map_err(|e| error(e.to_string())),
            Err(_) => Err(error("the capture writer panicked".into())),
        }
    }
}

/// The records of one exchange.
#[derive(Debug)]
pub struct AapExchange {
    recorder: AapRecorder,
    conn: String,
    opened: Instant,
}

impl AapExchange {
    /// Records `payload` now.
    pub fn record(&self, payload: AapPayload) {
        let time = matches!(payload, AapPayload::Request(_))
            .then(|| format!("{:.3}", jiff::Timestamp::now()));
        self.recorder.write(&AapRecord {
            conn: self.conn.clone(),
            at_ms: self.opened.elapsed().as_secs_f64() * 1000.0,
            time,
            payload,
        });
    }
}

/// Whether `line` (one line of a capture) is an AAP record rather than a WebSocket one.
pub fn is_aap_line(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|v| {
        ["request", "response", "body", "event", "end", "failed"]
            .iter()
            .any(|key| v.get(key).is_some())
    })
}

/// Reads every record of the AAP capture at `path`, in file order (blank lines skipped).
pub fn read(path: &Path) -> Result<Vec<AapRecord>, AapCaptureError> {
    let file = File::open(path).map_err(|source| AapCaptureError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut records = Vec::new();
    for (number, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|source| AapCaptureError::Read {
            path: path.to_owned(),
            source,
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line).map_err(|e| AapCaptureError::Bad {
            path: path.to_owned(),
            line: number + 1,
            why: e.to_string(),
        })?;
        records.push(record);
    }
    Ok(records)
}

/// Whether the capture at `path` holds AAP records (its first non-blank line is one).
pub fn is_aap_capture(path: &Path) -> bool {
    File::open(path).ok().is_some_and(|file| {
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .find(|l| !l.trim().is_empty())
            .is_some_and(|l| is_aap_line(&l))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_are_told_from_websocket_ones() {
        let record = AapRecord {
            conn: "h1".into(),
            at_ms: 1.5,
            time: None,
            payload: AapPayload::Event(AapEvent {
                name: "turn_stop".into(),
                data: "{}".into(),
            }),
        };
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.contains("\"event\":{\"name\":\"turn_stop\""), "{line}");
        assert_eq!(serde_json::from_str::<AapRecord>(&line).unwrap(), record);
        assert!(is_aap_line(&line));
        assert!(!is_aap_line(r#"{"conn":"c1","atMs":0,"text":"{}"}"#));
    }
}
