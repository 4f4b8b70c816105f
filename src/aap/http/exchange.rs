//! One AAP HTTP exchange as a proxy forwarded it or the harness's client made it: the
//! request, the response's status and content type (none when no response came: `error`
//! says why), the copies of both bodies the checks read, and how the response ended. A
//! capture records it whole (`http` records, written by `proxy --protocol aap --record` and
//! `fuzz --protocol aap --record`); `ahpspec check` reads it back.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::aap::http::{self, Body, Response};
use crate::aap::sse::{self, StreamEnd};
use crate::verdict::ReportedFrame;

/// Longest body text a transcript line shows.
const SHOWN_CHARS: usize = 2000;

/// A copy of a body: its bytes (as text when they are UTF-8, else base64), up to what the
/// proxy keeps, and the whole body's length.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BodyCopy {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
    /// The whole body's length in bytes (more than the copy holds when it was cut).
    pub length: usize,
}

impl BodyCopy {
    /// The copy of `kept`, the first bytes of a body of `length` bytes.
    pub fn of(kept: &[u8], length: usize) -> BodyCopy {
        match std::str::from_utf8(kept) {
            Ok(text) => BodyCopy {
                text: Some(text.to_owned()),
                base64: None,
                length,
            },
            Err(_) => BodyCopy {
                text: None,
                base64: Some(base64::engine::general_purpose::STANDARD.encode(kept)),
                length,
            },
        }
    }

    /// The bytes kept (empty when the base64 is not base64).
    pub fn bytes(&self) -> Vec<u8> {
        match (&self.text, &self.base64) {
            (Some(text), _) => text.as_bytes().to_vec(),
            (None, Some(data)) => base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap_or_default(),
            (None, None) => Vec::new(),
        }
    }

    /// Whether the copy holds less than the body.
    pub fn cut(&self) -> bool {
        self.bytes().len() < self.length
    }

    fn shown(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes()).into_owned();
        let mut shown: String = text.chars().take(SHOWN_CHARS).collect();
        if shown.len() < text.len() || self.cut() {
            shown.push_str(&format!("… ({} bytes)", self.length));
        }
        shown
    }
}

/// How a response body ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Ending {
    /// The upstream finished it.
    Ended,
    /// The upstream broke it off (reset, bad chunking): why.
    Broken(String),
    /// Still open when the recording side stopped reading: the proxy stopped, or the
    /// client gave up waiting or read it badly on purpose (a bad reader).
    Open,
}

/// One exchange.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exchange {
    pub method: String,
    /// Path and query as the client asked for them (relative to the upstream's base).
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<BodyCopy>,
    /// Absent when no response came: `error` says why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<BodyCopy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ending: Option<Ending>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Exchange {
    /// The request body as JSON, when it is JSON (and was kept whole).
    pub fn request_json(&self) -> Option<serde_json::Value> {
        let copy = self.request.as_ref().filter(|c| !c.cut())?;
        serde_json::from_slice(&copy.bytes()).ok()
    }

    /// Whether either body was longer than the copy the proxy kept.
    pub fn cut(&self) -> bool {
        self.request.as_ref().is_some_and(BodyCopy::cut)
            || self.response.as_ref().is_some_and(BodyCopy::cut)
    }

    /// The response as the harness's own client reads one: JSON, text, or the events of a
    /// `text/event-stream` body (named from their data as the client names them).
    pub fn response(&self) -> Option<Response> {
        let status = self.status?;
        let mut response = Response {
            status,
            content_type: self.content_type.clone(),
            body: Body::Empty,
        };
        let bytes = self
            .response
            .as_ref()
            .map(BodyCopy::bytes)
            .unwrap_or_default();
        if response.is_media("text/event-stream") {
            let end = match &self.ending {
                Some(Ending::Broken(why)) => StreamEnd::Broken(why.clone()),
                _ => StreamEnd::Closed,
            };
            let mut read = sse::parse(&bytes, end);
            http::name_from_data(&mut read.events);
            response.body = Body::Events(read);
        } else if !bytes.is_empty() {
            response.body = match serde_json::from_slice(&bytes) {
                Ok(value) => Body::Json(value),
                Err(_) => Body::Text(String::from_utf8_lossy(&bytes).into_owned()),
            };
        }
        Some(response)
    }

    /// The exchange as transcript lines (as the runner's client records one).
    pub fn transcript(&self, conn: &str) -> Vec<ReportedFrame> {
        let line = |direction: &str, text: String| ReportedFrame {
            conn: conn.to_owned(),
            direction: direction.to_owned(),
            at_ms: 0.0,
            text,
        };
        let body = |copy: &Option<BodyCopy>| {
            copy.as_ref()
                .filter(|c| c.length > 0)
                .map(|c| format!("\n{}", c.shown()))
                .unwrap_or_default()
        };
        let mut lines = vec![line(
            "sent",
            format!("{} {}{}", self.method, self.path, body(&self.request)),
        )];
        let received = match (self.status, &self.error) {
            (Some(status), _) => format!(
                "{status}{}{}",
                self.content_type
                    .as_deref()
                    .map(|ct| format!(" ({ct})"))
                    .unwrap_or_default(),
                body(&self.response)
            ),
            (None, Some(error)) => format!("<no response: {error}>"),
            (None, None) => "<no response>".to_owned(),
        };
        lines.push(line("received", received));
        match &self.ending {
            Some(Ending::Broken(why)) => {
                lines.push(line("received", format!("<body broke off: {why}>")))
            }
            Some(Ending::Open) => lines.push(line(
                "received",
                "<body still open when the recording side stopped reading>".to_owned(),
            )),
            _ => {}
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_copies_keep_text_or_base64_and_know_when_they_were_cut() {
        let text = BodyCopy::of(b"{\"a\":1}", 7);
        assert_eq!(text.text.as_deref(), Some("{\"a\":1}"));
        assert!(!text.cut());
        let binary = BodyCopy::of(&[0xff, 0, 1], 10);
        assert!(binary.text.is_none());
        assert_eq!(binary.bytes(), vec![0xff, 0, 1]);
        assert!(binary.cut());
    }

    #[test]
    fn a_recorded_stream_reads_back_as_events() {
        let exchange = Exchange {
            method: "POST".into(),
            path: "/sessions/s/turns".into(),
            request_type: Some("application/json".into()),
            request: Some(BodyCopy::of(b"{\"stream\":\"delta\"}", 18)),
            status: Some(200),
            content_type: Some("text/event-stream".into()),
            response: Some(BodyCopy::of(b"data: {\"event\":\"turn_start\"}\n\n", 31)),
            ending: Some(Ending::Broken("reset".into())),
            error: None,
        };
        let response = exchange.response().expect("a response");
        let read = response.events().expect("events");
        assert_eq!(read.events[0].name, "turn_start");
        assert_eq!(read.end, StreamEnd::Broken("reset".into()));
        assert_eq!(
            exchange.request_json(),
            Some(serde_json::json!({"stream": "delta"}))
        );
        assert_eq!(exchange.transcript("1").len(), 3);
    }
}
