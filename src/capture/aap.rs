//! AAP captures: one `http` record per exchange, written by `proxy --protocol aap --record`
//! and by the AAP client of `fuzz --protocol aap --record` ([`sink`]), read back by
//! `ahpspec check` and judged, in file order, by the same AAP checks the proxy runs.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::{read, CaptureError, Checked, Payload, Record, Recorder};
use crate::aap::http::exchange::{BodyCopy, Exchange};
use crate::aap::http::ExchangeSink;
use crate::aap::AapVersion;
use crate::traffic::aap::AapTraffic;

/// The record of one exchange, `at_ms` after the proxy (or the recording client) started.
pub fn record(conn: &str, at_ms: f64, exchange: Exchange) -> Record {
    Record {
        conn: conn.to_owned(),
        from: None,
        at_ms,
        time: Some(format!("{:.3}", jiff::Timestamp::now())),
        payload: Payload::Http(Box::new(exchange)),
    }
}

/// Where a recording AAP client hands its exchanges: each one, as it ends, an `http` record
/// of `recorder` on a connection of its own (`h1`, `h2`, …), `atMs` after the sink was made.
pub fn sink(recorder: Recorder) -> ExchangeSink {
    let (started, next) = (Instant::now(), AtomicU64::new(1));
    ExchangeSink::new(move |exchange| {
        let conn = format!("h{}", next.fetch_add(1, Ordering::Relaxed));
        let at_ms = started.elapsed().as_secs_f64() * 1000.0;
        recorder.write(&record(&conn, at_ms, exchange));
    })
}

/// The exchange with the secrets the harness knows redacted from its path and text
/// bodies; `None` when there were none.
pub(super) fn redacted(exchange: &Exchange) -> Option<Exchange> {
    let path = crate::redact::url(&exchange.path);
    let body = |copy: &Option<BodyCopy>| -> Option<BodyCopy> {
        let copy = copy.as_ref()?;
        let kept = copy.text.as_deref()?;
        match crate::redact::text(kept) {
            Cow::Borrowed(_) => None,
            // A whole copy stays whole (its length is the redacted text's); a cut one
            // stays cut.
            Cow::Owned(text) => Some(BodyCopy {
                length: match copy.length == kept.len() {
                    true => text.len(),
                    false => copy.length,
                },
                text: Some(text),
                base64: None,
            }),
        }
    };
    let (request, response) = (body(&exchange.request), body(&exchange.response));
    if matches!(path, Cow::Borrowed(_)) && request.is_none() && response.is_none() {
        return None;
    }
    Some(Exchange {
        path: path.into_owned(),
        request: request.or_else(|| exchange.request.clone()),
        response: response.or_else(|| exchange.response.clone()),
        ..exchange.clone()
    })
}

/// Whether the capture at `path` holds AAP exchanges (its first record is one).
pub fn holds_exchanges(path: &Path) -> Result<bool, CaptureError> {
    let mut first = None;
    read(path, |record| {
        first.get_or_insert(matches!(record.payload, Payload::Http(_)));
    })?;
    Ok(first.unwrap_or(false))
}

/// Re-checks AAP captures offline through the checks a live AAP proxy runs, judged at
/// `asked` or at the version each `GET /meta` recorded names.
pub fn check(paths: &[PathBuf], asked: Option<AapVersion>) -> Result<Checked, CaptureError> {
    let started = std::time::Instant::now();
    let started_at = format!("{:.0}", jiff::Timestamp::now());
    let mut traffic = AapTraffic::new(asked).map_err(|e| CaptureError::Bad {
        path: PathBuf::new(),
        line: 0,
        why: e.to_string(),
    })?;
    for path in paths {
        let mut stray = None;
        read(path, |record| match &record.payload {
            Payload::Http(exchange) => {
                traffic.exchange(exchange);
            }
            _ => {
                stray.get_or_insert(record.conn);
            }
        })?;
        if let Some(conn) = stray {
            return Err(CaptureError::Bad {
                path: path.clone(),
                line: 0,
                why: format!("connection {conn}: a WebSocket frame in a capture of AAP exchanges"),
            });
        }
    }
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let report = traffic.report(
        &format!("capture {}", shown.join(", ")),
        started_at,
        started.elapsed().as_secs_f64() * 1000.0,
        &format!("ahpspec check {}", shown.join(" ")),
    );
    Ok(Checked {
        report,
        client_problems: Vec::new(),
        client_problem_count: 0,
    })
}
