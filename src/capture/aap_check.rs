//! `ahpspec check` of AAP captures ([`super::aap`]): every recorded exchange goes through
//! the always-on AAP checks a live run applies to each response, offline. The version
//! comes from the capture's own `GET /meta` answer (the newest when it has none), paths are
//! read back into version 3's terms, and each session's client tools are followed from the
//! requests that set them, as a live case does.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::aap::{self, AapCaptureError, AapPayload, AapRecord, AapStreamEnd};
use crate::aap::case::{created_id, session_of, tool_names};
use crate::aap::checks::{
    always_on_holds_at, schemas_for, Endpoint, Observer, Seen, AAP_ALWAYS_ON,
};
use crate::aap::http::{name_from_data, Body, Response};
use crate::aap::sse::{SseEvent, SseRead, StreamEnd};
use crate::aap::version::AapVersion;
use crate::rows::AlwaysOnRows;
use crate::schema::SchemaError;
use crate::verdict::{ReportedFrame, RunReport, Verdict};

/// Why AAP captures could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum AapCheckError {
    #[error(transparent)]
    Capture(#[from] AapCaptureError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(
        "{0}: GET /meta says AAP version {1}, which ahpspec does not know (it knows 1, 2 and 3)"
    )]
    UnknownVersion(String, String),
}

/// One recorded exchange, put back together.
struct Exchange {
    conn: String,
    method: String,
    /// As on the wire.
    path: String,
    request_body: Option<String>,
    response: Option<Response>,
    /// The transcript rows a finding shows.
    frames: Vec<ReportedFrame>,
}

/// The exchanges of `records`, in the order their requests were recorded.
fn exchanges(records: Vec<AapRecord>) -> Vec<Exchange> {
    let mut order: Vec<String> = Vec::new();
    let mut by_conn: HashMap<String, Vec<AapRecord>> = HashMap::new();
    for record in records {
        if !by_conn.contains_key(&record.conn) {
            order.push(record.conn.clone());
        }
        by_conn.entry(record.conn.clone()).or_default().push(record);
    }
    order
        .into_iter()
        .filter_map(|conn| {
            let records = by_conn.remove(&conn)?;
            assemble(conn, records)
        })
        .collect()
}

fn assemble(conn: String, records: Vec<AapRecord>) -> Option<Exchange> {
    let mut exchange: Option<Exchange> = None;
    let mut head = None;
    let mut body = None;
    let mut events = Vec::new();
    let mut end = None;
    let mut frames = Vec::new();
    for record in records {
        let frame = |direction: &str, text: String| ReportedFrame {
            conn: conn.clone(),
            direction: direction.to_owned(),
            at_ms: record.at_ms,
            text,
        };
        match record.payload {
            AapPayload::Request(request) => {
                let shown = request.body.as_deref().map(|b| format!("\n{b}"));
                frames.push(frame(
                    "sent",
                    format!(
                        "{} {}{}",
                        request.method,
                        request.path,
                        shown.unwrap_or_default()
                    ),
                ));
                exchange = Some(Exchange {
                    conn: conn.clone(),
                    method: request.method,
                    path: request.path,
                    request_body: request.body,
                    response: None,
                    frames: Vec::new(),
                });
            }
            AapPayload::Response(h) => {
                frames.push(frame(
                    "received",
                    format!("{} ({:?})", h.status, h.content_type),
                ));
                head = Some(h);
            }
            AapPayload::Body(text) => {
                frames.push(frame("received", text.clone()));
                body = Some(text);
            }
            AapPayload::Event(event) => {
                frames.push(frame(
                    "received",
                    format!("event: {}\ndata: {}", event.name, event.data),
                ));
                events.push(SseEvent {
                    name: event.name,
                    data: event.data,
                });
            }
            AapPayload::End(e) => end = Some(e),
            AapPayload::Failed(why) => {
                frames.push(frame("received", format!("<no response: {why}>")))
            }
        }
    }
    let mut exchange = exchange?;
    exchange.response = head.map(|head| {
        let streamed = end.is_some()
            || head
                .content_type
                .as_deref()
                .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"));
        let body = if streamed {
            let end = end.unwrap_or_else(|| AapStreamEnd {
                how: "broken".into(),
                detail: Some("the capture ends before the stream did".into()),
                unterminated: false,
            });
            let how = match end.how.as_str() {
                "closed" => StreamEnd::Closed,
                "timedOut" => StreamEnd::TimedOut(std::time::Duration::from_millis(
                    end.detail
                        .as_deref()
                        .and_then(|d| d.parse().ok())
                        .unwrap_or(0),
                )),
                _ => StreamEnd::Broken(end.detail.clone().unwrap_or_default()),
            };
            name_from_data(&mut events);
            Body::Events(SseRead {
                events: std::mem::take(&mut events),
                end: how,
                unterminated: end.unterminated,
            })
        } else {
            match body {
                None => Body::Empty,
                Some(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(value) => Body::Json(value),
                    Err(_) => Body::Text(text),
                },
            }
        };
        Response {
            status: head.status,
            content_type: head.content_type,
            body,
        }
    });
    exchange.frames = frames;
    Some(exchange)
}

/// The version the capture's own `GET /meta` answer names (the newest without one).
fn version_of(label: &str, exchanges: &[Exchange]) -> Result<AapVersion, AapCheckError> {
    let said = exchanges
        .iter()
        .filter(|e| e.method == "GET" && e.path.split('?').next() == Some("/meta"))
        .filter_map(|e| e.response.as_ref()?.json()?.get("version").cloned())
        .next();
    AapVersion::choose(None, said.as_ref())
        .map_err(|said| AapCheckError::UnknownVersion(label.to_owned(), said))
}

/// Re-checks AAP captures offline: one row per always-on AAP rule.
pub fn check_aap(paths: &[PathBuf]) -> Result<RunReport, AapCheckError> {
    let started = std::time::Instant::now();
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let mut all = Vec::new();
    for (number, path) in paths.iter().enumerate() {
        let prefix = (paths.len() > 1).then(|| format!("{}:", number + 1));
        let mut records = aap::read(path)?;
        if let Some(prefix) = &prefix {
            for record in &mut records {
                record.conn = format!("{prefix}{}", record.conn);
            }
        }
        all.extend(exchanges(records));
    }
    let label = shown.join(", ");
    let version = version_of(&label, &all)?;
    let mut observer = Observer::at(Arc::new(schemas_for(version)?), version);
    let mut rows = AlwaysOnRows::default();
    let mut client_tools: HashMap<String, HashSet<String>> = HashMap::new();
    let no_tools = HashSet::new();
    let mut unanswered = 0;
    for exchange in &all {
        let Some(response) = &exchange.response else {
            unanswered += 1;
            continue;
        };
        let (method, path) = version.canonical(&exchange.method, &exchange.path);
        let request: Option<Value> = exchange
            .request_body
            .as_deref()
            .and_then(|b| serde_json::from_str(b).ok());
        let tools = session_of(&path)
            .and_then(|id| client_tools.get(id))
            .unwrap_or(&no_tools);
        observer.observe(&Seen {
            method: &method,
            path: &path,
            request: request.as_ref(),
            response,
            client_tools: tools,
        });
        for violation in std::mem::take(&mut observer.violations) {
            let at = format!(
                "on {} ({} {})",
                exchange.conn, exchange.method, exchange.path
            );
            rows.found(violation, &at, exchange.frames.clone());
        }
        let ok = (200..300).contains(&response.status);
        let set = request.as_ref().and_then(|b| b.get("tools"));
        match Endpoint::of(&method, &path) {
            Some(Endpoint::Create) if ok => {
                if let Some(id) = created_id(response) {
                    client_tools.insert(id, tool_names(set));
                }
            }
            Some(Endpoint::Turn) if ok && set.is_some() => {
                if let Some(id) = session_of(&path) {
                    client_tools.insert(id.to_owned(), tool_names(set));
                }
            }
            _ => {}
        }
    }
    rows.looked_at(&observer.counts, &observer.skips);
    let rerun = format!("ahpspec check {}", shown.join(" "));
    let over = "response of every recorded exchange";
    let cases = AAP_ALWAYS_ON
        .iter()
        .map(|rule| {
            let mut row = rows.row(rule, over, rerun.clone());
            if !always_on_holds_at(rule.rule, version) {
                row.verdict = Verdict::NotApplicable;
                row.summary = format!("not applicable: no {} at AAP version {version}", rule.unit);
                row.findings.clear();
            }
            row
        })
        .collect();
    let unanswered = if unanswered > 0 {
        format!(", {unanswered} without a response")
    } else {
        String::new()
    };
    let target = format!("capture {label} ({} exchanges{unanswered})", all.len());
    let mut report = RunReport {
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        ..RunReport::of(target, format!("AAP {version}"), cases)
    };
    crate::rows::reconcile(&mut report, None);
    Ok(report)
}
