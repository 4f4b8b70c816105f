//! Terminals (PROTOCOL §8.2, §10.4, §12.12): `createTerminal` starts a real shell on a real
//! pseudo-terminal ([`pty`]); what it prints becomes `terminal/data`, with the shell
//! integration read out of the stream ([`integration`]) as the command actions; the client
//! actions reach the process (`terminal/input`, `terminal/resized`). Bounded: at most
//! [`MAX_TERMINALS`] at once, each killed after [`LIFETIME`] or once it printed
//! [`MAX_OUTPUT_BYTES`].

use std::io::Read;
use std::path::PathBuf;
use std::sync::Weak;
use std::time::{Duration, Instant};

use ahp_types::commands::CreateTerminalParams;
use ahp_types::state::{TerminalClaim, TerminalLifecycleState, TerminalState};
use serde_json::{json, Value};

use super::faults::Fault;
use super::telemetry::Severity;
use super::world::{to_value, World, ROOT};
use super::Shared;

pub mod entry;
mod integration;
mod pty;

use entry::TerminalEntry;
use integration::{Event, Scanner, Stripping};
use pty::{Output, Pty, Utf8Stream};

/// Terminals one host runs at once.
pub const MAX_TERMINALS: usize = 16;
/// How long a terminal's shell may run before the host ends it.
pub const LIFETIME: Duration = Duration::from_secs(600);
/// Output one terminal may produce before the host ends its shell.
pub const MAX_OUTPUT_BYTES: usize = 1 << 20;

/// Why a terminal command was refused: a JSON-RPC error code and message (the command
/// layer answers with it).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
        }
    }
}

const INVALID_PARAMS: i64 = -32602;
const NOT_FOUND: i64 = -32008;
const PERMISSION_DENIED: i64 = -32009;
const ALREADY_EXISTS: i64 = -32010;

/// A directory from a `file:` URI.
fn directory_of(uri: &str) -> Option<PathBuf> {
    let path = uri.strip_prefix("file://")?;
    let path = PathBuf::from(percent_decode(path));
    path.is_dir().then_some(path)
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `file:` URI of a directory the shell reported.
fn file_uri(path: &str) -> String {
    let mut uri = String::from("file://");
    for byte in path.bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            uri.push(char::from(byte));
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl World {
    /// `createTerminal`: a shell on a new pty, announced with `root/terminalsChanged`.
    pub(super) fn create_terminal(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: CreateTerminalParams = serde_json::from_value(params.clone())
            .map_err(|e| RpcError::new(INVALID_PARAMS, format!("invalid params: {e}")))?;
        let uri = params.channel.clone();
        if !uri.starts_with("ahp-terminal:/") {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "a terminal's URI is an ahp-terminal:/ URI",
            ));
        }
        if !self.config.terminals {
            // Anyone who reaches the host would get a shell of the user running it.
            return Err(RpcError::new(
                PERMISSION_DENIED,
                "this host starts terminals only when it listens on a loopback address",
            ));
        }
        if self.terminals.contains_key(&uri) && !self.fault(Fault::TerminalRecreated) {
            return Err(RpcError::new(
                ALREADY_EXISTS,
                format!("terminal {uri} exists"),
            ));
        }
        let running = self.terminals.values().filter(|t| t.pty.is_some()).count();
        if running >= MAX_TERMINALS {
            return Err(RpcError::new(
                PERMISSION_DENIED,
                format!("this host runs at most {MAX_TERMINALS} terminals at once"),
            ));
        }
        let cwd = match params.cwd.as_deref() {
            Some(_) if self.fault(Fault::TerminalCwdIgnored) => std::env::temp_dir(),
            Some(cwd) => directory_of(cwd).ok_or_else(|| {
                RpcError::new(INVALID_PARAMS, format!("cwd {cwd} is no directory here"))
            })?,
            None => std::env::temp_dir(),
        };
        let size = |value: Option<i64>, default: u16| {
            value.map_or(Ok(default), |v| {
                u16::try_from(v)
                    .ok()
                    .filter(|v| (1..=1000).contains(v))
                    .ok_or_else(|| RpcError::new(INVALID_PARAMS, "cols and rows are 1 to 1000"))
            })
        };
        let cols = size(params.cols, 80)?;
        let rows = size(params.rows, 24)?;
        let (pty, output) = Pty::spawn(&cwd, cols, rows)
            .map_err(|e| RpcError::new(-32603, format!("the terminal did not start: {e}")))?;
        let title = params.name.clone().unwrap_or_else(|| "shell".to_owned());
        let state = TerminalState {
            title,
            cwd: Some(file_uri(&cwd.to_string_lossy())),
            cols: Some(i64::from(cols)),
            rows: Some(i64::from(rows)),
            content: Vec::new(),
            lifecycle: TerminalLifecycleState::Running(
                ahp_types::state::TerminalRunningLifecycleState {},
            ),
            claim: params.claim,
            supports_command_detection: None,
            is_pty: Some(true),
        };
        self.terminals.insert(
            uri.clone(),
            TerminalEntry {
                state,
                pty: Some(pty),
                output_bytes: 0,
                commands: 0,
                command_line: None,
                running: None,
            },
        );
        start_output(self.shared.clone(), uri.clone(), output);
        end_after_lifetime(self.shared.clone(), uri.clone());
        self.log(
            Severity::Info,
            &format!("terminal {uri} started in {}", cwd.display()),
        );
        self.publish_terminals(Some(&uri));
        Ok(Value::Null)
    }

    /// `disposeTerminal`: kills the process and drops the terminal from the root state.
    pub(super) fn dispose_terminal(&mut self, params: &Value) -> Result<Value, RpcError> {
        let uri = params
            .get("channel")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::new(INVALID_PARAMS, "channel is required"))?;
        if self.terminals.remove(uri).is_none() {
            return Err(RpcError::new(NOT_FOUND, format!("no such terminal: {uri}")));
        }
        for conn in self.conns.values_mut() {
            conn.subscriptions.remove(uri);
        }
        self.publish_terminals(None);
        Ok(Value::Null)
    }

    /// Dispatches `root/terminalsChanged` with the full list (`created` names a terminal
    /// just created, for the fault that lists only it).
    fn publish_terminals(&mut self, created: Option<&str>) {
        let only_new = created.filter(|_| self.fault(Fault::TerminalsChangedOnlyNew));
        let running = json!({ "status": "running" });
        let exits_unlisted = self.fault(Fault::ExitUnlisted);
        let terminals: Vec<Value> = self
            .terminals
            .iter()
            .filter(|(uri, _)| only_new.is_none_or(|new| new == uri.as_str()))
            .map(|(uri, entry)| {
                json!({ "resource": uri, "title": entry.state.title,
                        "claim": to_value(&entry.state.claim),
                        "lifecycle": if exits_unlisted { running.clone() }
                                     else { to_value(&entry.state.lifecycle) } })
            })
            .collect();
        self.emit_logged(
            ROOT,
            json!({ "type": "root/terminalsChanged", "terminals": terminals }),
        );
    }

    /// A terminal's snapshot state.
    pub(super) fn terminal_snapshot(&self, uri: &str) -> Option<Value> {
        let entry = self.terminals.get(uri)?;
        let mut state = to_value(&entry.state);
        let exited = matches!(entry.state.lifecycle, TerminalLifecycleState::Exited(_));
        if exited && self.fault(Fault::ExitedShownRunning) {
            state["lifecycle"] = json!({ "status": "running" });
        }
        Some(state)
    }

    /// Whether `client_id` holds the terminal's claim (TERM-003): a client claim names it.
    pub(super) fn holds_terminal_claim(&self, uri: &str, client_id: &str) -> bool {
        self.fault(Fault::ClaimFromAnyone)
            || self.terminals.get(uri).is_some_and(|entry| {
                matches!(&entry.state.claim, TerminalClaim::Client(c) if c.client_id == client_id)
            })
    }

    /// The side effects of an accepted client terminal action.
    pub(super) fn after_terminal_accept(&mut self, uri: &str, action: &Value) {
        let input_shown = self.fault(Fault::InputShownAsOutput);
        let Some(entry) = self.terminals.get_mut(uri) else {
            return;
        };
        match action["type"].as_str() {
            Some("terminal/input") => {
                let data = action["data"].as_str().unwrap_or_default();
                if let Some(pty) = &entry.pty {
                    pty.write(data);
                }
                if input_shown {
                    // Behind the reducers' back: the input lands in the content.
                    let part = json!({ "type": "unclassified", "value": data });
                    if let Ok(part) = serde_json::from_value(part) {
                        entry.state.content.push(part);
                    }
                }
            }
            Some("terminal/resized") => {
                let size = |key: &str| {
                    action[key]
                        .as_i64()
                        .and_then(|v| u16::try_from(v).ok())
                        .unwrap_or(1)
                };
                if let Some(pty) = &entry.pty {
                    pty.resize(size("cols").max(1), size("rows").max(1));
                }
            }
            _ => {}
        }
    }

    /// What the shell printed, turned into the terminal channel's actions.
    fn terminal_output(&mut self, uri: &str, events: Vec<Event>, bytes: usize) {
        let Some(entry) = self.terminals.get_mut(uri) else {
            return;
        };
        entry.output_bytes += bytes;
        let crossed =
            entry.output_bytes > MAX_OUTPUT_BYTES && entry.output_bytes - bytes <= MAX_OUTPUT_BYTES;
        if crossed {
            if let Some(pty) = entry.pty.as_mut() {
                pty.kill();
            }
            let why = format!("terminal {uri} ended: over {MAX_OUTPUT_BYTES} bytes of output");
            self.log(Severity::Warn, &why);
        }
        for event in events {
            let announce = matches!(event, Event::CommandStarted)
                && self
                    .terminals
                    .get(uri)
                    .is_some_and(|e| e.state.supports_command_detection != Some(true));
            if announce {
                // Detection is announced once the shell bracketed a command: its prompt
                // markers alone (PROMPT_COMMAND) do not show that the command markers
                // (PS0, bash 4.4 and later) come too.
                let available = json!({ "type": "terminal/commandDetectionAvailable" });
                self.emit_logged(uri, available);
            }
            let Some(action) = self.terminal_action(uri, event) else {
                continue;
            };
            self.emit_logged(uri, action);
        }
    }

    /// The action one event of the output stream becomes, if any.
    fn terminal_action(&mut self, uri: &str, event: Event) -> Option<Value> {
        let output_dropped = self.fault(Fault::TerminalOutputDropped);
        let entry = self.terminals.get_mut(uri)?;
        Some(match event {
            Event::Data(_) if output_dropped => return None,
            Event::Data(data) => json!({ "type": "terminal/data", "data": data }),
            // See `terminal_output`: announced at the first command.
            Event::IntegrationSeen => return None,
            Event::CommandLine(line) => {
                entry.command_line = Some(line);
                return None;
            }
            Event::CommandStarted => {
                entry.commands += 1;
                let id = format!("cmd{}", entry.commands);
                let line = entry.command_line.take().unwrap_or_default();
                entry.running = Some((id.clone(), Instant::now()));
                json!({ "type": "terminal/commandExecuted", "commandId": id,
                        "commandLine": line, "timestamp": now_ms() })
            }
            Event::CommandFinished(code) => {
                let (mut id, started) = entry.running.take()?;
                if self.config.faults.contains(Fault::CommandFinishedWrongId) {
                    id.push_str("-finished");
                }
                let duration = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
                let mut action = json!({ "type": "terminal/commandFinished", "commandId": id,
                                         "durationMs": duration });
                if let Some(code) = code {
                    action["exitCode"] = json!(code);
                }
                action
            }
            Event::Cwd(path) => {
                let cwd = file_uri(&path);
                if entry.state.cwd.as_deref() == Some(cwd.as_str())
                    || self.config.faults.contains(Fault::CwdUnreported)
                {
                    return None;
                }
                json!({ "type": "terminal/cwdChanged", "cwd": cwd })
            }
            Event::Title(title) => json!({ "type": "terminal/titleChanged", "title": title }),
        })
    }

    /// The shell ended (`code` when it had one): `terminal/exited`, then the root list.
    fn terminal_exited(&mut self, uri: &str, code: Option<i64>) {
        let Some(entry) = self.terminals.get_mut(uri) else {
            return;
        };
        entry.pty = None;
        let mut action = json!({ "type": "terminal/exited" });
        if let Some(code) = code {
            action["exitCode"] = json!(code);
        }
        self.emit_logged(uri, action);
        let code = code.map_or_else(|| "no exit code".to_owned(), |c| format!("exit code {c}"));
        self.log(Severity::Info, &format!("terminal {uri} exited ({code})"));
        if !self.fault(Fault::ExitUnlisted) {
            self.publish_terminals(None);
        }
    }

    /// Kills the terminal's shell (its exit follows from the output thread).
    fn end_terminal(&mut self, uri: &str) {
        if let Some(pty) = self.terminals.get_mut(uri).and_then(|e| e.pty.as_mut()) {
            pty.kill();
        }
    }
}

/// Reads the terminal's output on a thread of its own until the shell's end, handing it to
/// the world as it comes.
fn start_output(shared: Weak<Shared>, uri: String, output: Output) {
    let spawned = std::thread::Builder::new()
        .name("ahpspec-pty-output".into())
        .spawn(move || pump(&shared, &uri, output));
    // Without the thread the terminal shows no output; its lifetime still ends it.
    drop(spawned);
}

fn pump(shared: &Weak<Shared>, uri: &str, mut output: Output) {
    let mut scanner = Scanner::default();
    let mut text = Utf8Stream::default();
    let mut buffer = [0u8; 8192];
    loop {
        let read = match output.reader.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut world = shared.lock();
        let stripping = if world.fault(Fault::LeaksShellIntegration) {
            Stripping::Nothing
        } else if world.fault(Fault::IntegrationRemnantLeft) {
            Stripping::AllButTail
        } else {
            Stripping::Whole
        };
        let events = scanner.feed(&text.push(&buffer[..read]), stripping);
        world.terminal_output(uri, events, read);
    }
    let code = pty::exit_code(&mut output.child);
    if let Some(shared) = shared.upgrade() {
        shared.lock().terminal_exited(uri, code);
    }
}

/// Ends the terminal's shell once its lifetime is over.
fn end_after_lifetime(shared: Weak<Shared>, uri: String) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        tokio::time::sleep(LIFETIME).await;
        if let Some(shared) = shared.upgrade() {
            shared.lock().end_terminal(&uri);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_round_trip_through_file_uris() {
        assert_eq!(file_uri("/tmp/a b"), "file:///tmp/a%20b");
        assert_eq!(percent_decode("/tmp/a%20b"), "/tmp/a b");
        assert!(directory_of("file:///").is_some());
        assert!(directory_of("file:///definitely/missing").is_none());
        assert!(directory_of("https://example.com/").is_none());
    }
}
