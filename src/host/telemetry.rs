//! The host's stateless telemetry channel (PROTOCOL §4.4, issue 25, i25b): its log records,
//! advertised as `InitializeResult.telemetry.logs`, a literal `ahp-otlp:` URI (no `{level}`
//! template: every severity is delivered). `subscribe` answers it without a snapshot, and
//! each record goes as `otlp/exportLogs` (an OTLP/JSON `ExportLogsServiceRequest`) to the
//! connections subscribed to it, and to no other.

use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{notification, World};

/// The logs channel.
pub const LOGS: &str = "ahp-otlp:logs";

/// OTLP severity numbers (`SeverityNumber`) the host logs with.
#[derive(Debug, Clone, Copy)]
pub enum Severity {
    Info,
    Warn,
}

impl Severity {
    fn number_and_text(self) -> (u8, &'static str) {
        match self {
            Severity::Info => (9, "INFO"),
            Severity::Warn => (13, "WARN"),
        }
    }
}

/// What `initialize` advertises.
pub fn capabilities() -> Value {
    json!({ "logs": LOGS })
}

/// Whether `uri` is a stateless channel of this host.
pub fn is_stateless(uri: &str) -> bool {
    uri == LOGS
}

impl World {
    /// Sends one log record to the subscribers of the logs channel.
    pub fn log(&self, severity: Severity, body: &str) {
        let (number, text) = severity.number_and_text();
        let nanos = jiff::Timestamp::now().as_nanosecond().to_string();
        let payload = json!({ "resourceLogs": [{
            "resource": { "attributes": [
                { "key": "service.name", "value": { "stringValue": "ahpspec-reference-host" } },
            ] },
            "scopeLogs": [{
                "scope": { "name": "ahpspec.host" },
                "logRecords": [{ "timeUnixNano": nanos, "severityNumber": number,
                                  "severityText": text, "body": { "stringValue": body } }],
            }],
        }] });
        let params = json!({ "channel": LOGS, "payload": payload });
        if self.fault(Fault::LogsToEveryone) {
            let frame = notification("otlp/exportLogs", params);
            for conn in self.conns.values().filter(|c| c.client_id.is_some()) {
                conn.send_json(&frame);
            }
            return;
        }
        self.notify_subscribers(LOGS, "otlp/exportLogs", params);
    }
}
