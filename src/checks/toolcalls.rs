//! The tool-call lifecycle tracker of one connection: per tool call (chat, turn,
//! toolCallId), the status last seen in a snapshot or an accepted envelope, read from the
//! raw JSON (an `auth-required` call decodes as `Unknown` in the 1.0.0 crate, PROTOCOL
//! §12.7, so the reducer mirror cannot be asked).
//!
//! - INV-TOOL-1: every status change a host action claims, or a later snapshot shows, is
//!   reachable in the §12.7 graph (consecutive snapshots skip intermediate states), and
//!   nothing follows a terminal status.
//! - INV-TOOL-2 (actions): `confirmed` and `reason` values the host sends are from their
//!   closed sets, and `chat/toolCallAuthRequired` targets only an MCP-contributed call.
//! - TOOL-007: a call its turn's end left non-terminal shows as cancelled with reason
//!   `skipped` in every later snapshot.
//!
//! Client echoes move a call only as the reducers would (their validation is the
//! CHAT-VALIDATE rules' business); host actions are claims the host makes and are judged.

use serde_json::Value;

use super::frame::Counts;
use super::{FastMap, Rule, Violation};
use crate::tape::Node;

/// `confirmed` values (ToolCallConfirmationReason; the schema leaves this enum open).
pub const CONFIRMED_VALUES: &[&str] = &["not-needed", "user-action", "setting"];
/// `reason` values of a cancelled call (ToolCallCancellationReason).
pub const CANCEL_REASONS: &[&str] = &["denied", "skipped", "result-denied"];

/// A tool call's status (PROTOCOL §12.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Streaming,
    PendingConfirmation,
    Running,
    AuthRequired,
    PendingResultConfirmation,
    Completed,
    Cancelled,
}

impl Status {
    const ALL: [Status; 7] = [
        Status::Streaming,
        Status::PendingConfirmation,
        Status::Running,
        Status::AuthRequired,
        Status::PendingResultConfirmation,
        Status::Completed,
        Status::Cancelled,
    ];

    /// The status a wire value names; `None` for anything outside the seven.
    pub fn parse(name: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|status| status.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Status::Streaming => "streaming",
            Status::PendingConfirmation => "pending-confirmation",
            Status::Running => "running",
            Status::AuthRequired => "auth-required",
            Status::PendingResultConfirmation => "pending-result-confirmation",
            Status::Completed => "completed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Cancelled)
    }

    fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The statuses one row of the §12.7 table leads to (a turn's end cancels any
    /// non-terminal call).
    fn steps(self) -> u8 {
        use Status::*;
        let to: &[Status] = match self {
            Streaming => &[Running, PendingConfirmation, Cancelled],
            PendingConfirmation => &[Running, Cancelled, Completed, PendingResultConfirmation],
            Running => &[
                PendingConfirmation,
                Completed,
                PendingResultConfirmation,
                AuthRequired,
                Cancelled,
            ],
            AuthRequired => &[Running, Completed, Cancelled],
            PendingResultConfirmation => &[Completed, Cancelled],
            Completed | Cancelled => &[],
        };
        to.iter().fold(0, |bits, status| bits | status.bit())
    }

    /// Whether `to` can follow `self` over one or more rows of the table.
    pub fn reaches(self, to: Status) -> bool {
        let mut reached = self.steps();
        loop {
            let next = Status::ALL
                .into_iter()
                .filter(|status| reached & status.bit() != 0)
                .fold(reached, |bits, status| bits | status.steps());
            if next == reached {
                return reached & to.bit() != 0;
            }
            reached = next;
        }
    }
}

/// What the tracker knows of one tool call.
#[derive(Debug, Clone, Copy)]
struct Call {
    status: Status,
    /// Contributed by an MCP server (the only calls that may need authentication).
    mcp: bool,
    /// The call was not terminal when its turn ended (TOOL-007 judges it from then on).
    ended_open: bool,
}

/// The tool calls of one turn.
#[derive(Debug, Default, Clone)]
struct TurnCalls {
    /// The turn's `startedAt`: a turn id seen again with another start is another turn
    /// (ids are client-chosen and may come back after a truncation).
    started_at: Option<String>,
    calls: FastMap<String, Call>,
}

impl TurnCalls {
    /// Starts over when `started_at` names another turn than the one followed so far.
    fn same_turn(&mut self, started_at: Option<&str>) {
        let other = match (self.started_at.as_deref(), started_at) {
            (Some(known), Some(seen)) => !same_instant(known, seen),
            _ => false,
        };
        if other {
            self.calls.clear();
        }
        if other || self.started_at.is_none() {
            self.started_at = started_at.map(str::to_owned);
        }
    }
}

/// Whether two timestamps name the same instant (or are the same text).
fn same_instant(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (a.parse::<jiff::Timestamp>(), b.parse::<jiff::Timestamp>()),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Tool calls of one chat, by turn id.
type Turns = FastMap<String, TurnCalls>;

/// One connection's tool calls, by chat.
#[derive(Debug, Default, Clone)]
pub struct ToolCalls {
    chats: FastMap<String, Turns>,
}

fn count(counts: &mut Counts, rule: Rule) {
    *counts.entry(rule).or_insert(0) += 1;
}

impl ToolCalls {
    /// Stops following a chat (unsubscribed, or truncated: its turns may come back with
    /// the same ids).
    pub fn forget(&mut self, chat: &str) {
        self.chats.remove(chat);
    }

    /// Every tool call of a chat state: its ended turns and its active turn.
    pub fn snapshot(
        &mut self,
        chat: &str,
        state: &Value,
        counts: &mut Counts,
        found: &mut Vec<Violation>,
    ) {
        let active = state.get("activeTurn").filter(|turn| !turn.is_null());
        let turns = state["turns"].as_array().into_iter().flatten();
        for turn in turns.chain(active) {
            self.turn(chat, turn, counts, found);
        }
    }

    /// The tool calls of one turn as a snapshot (or `chat/turnsLoaded`) shows them.
    pub fn turn(
        &mut self,
        chat: &str,
        turn: &Value,
        counts: &mut Counts,
        found: &mut Vec<Violation>,
    ) {
        let Some(turn_id) = turn["id"].as_str() else {
            return;
        };
        let parts = turn["responseParts"].as_array().into_iter().flatten();
        for call in parts.filter(|part| part["kind"] == "toolCall") {
            let call = &call["toolCall"];
            let (Some(id), Some(status)) = (
                call["toolCallId"].as_str(),
                call["status"].as_str().and_then(Status::parse),
            ) else {
                // A status outside the seven is INV-CHAT-2's finding.
                continue;
            };
            let mcp = call["contributor"]["kind"] == "mcp";
            let turn_calls = self
                .chats
                .entry(chat.to_owned())
                .or_default()
                .entry(turn_id.to_owned())
                .or_default();
            turn_calls.same_turn(turn["startedAt"].as_str());
            let calls = &mut turn_calls.calls;
            let Some(known) = calls.get_mut(id) else {
                calls.insert(
                    id.to_owned(),
                    Call {
                        status,
                        mcp,
                        ended_open: false,
                    },
                );
                continue;
            };
            known.mcp = mcp;
            if known.ended_open {
                count(counts, Rule::Tool007);
                let reason = call["reason"].as_str();
                if status != Status::Cancelled || reason != Some("skipped") {
                    found.push(Violation::new(
                        Rule::Tool007,
                        format!(
                            "tool call {id:?} of turn {turn_id:?}, not terminal when the turn ended, is cancelled with reason skipped"
                        ),
                        format!("status {} with reason {}", status.name(), call["reason"]),
                    ));
                }
                continue;
            }
            count(counts, Rule::InvTool1);
            if let Some(violation) = transition(id, known.status, status, "a later snapshot") {
                found.push(violation);
            }
            known.status = status;
        }
    }

    /// An accepted envelope's action on a chat channel; `host` when it carries no origin.
    // Kept whole (over the ~80-line aim): one match arm per chat action that moves a tool call.
    pub fn action(
        &mut self,
        chat: &str,
        action: Node<'_>,
        host: bool,
        counts: &mut Counts,
        found: &mut Vec<Violation>,
    ) {
        let kind = action.member("type").as_str().unwrap_or_default();
        let turn_id = action.member("turnId").as_str();
        match kind {
            "chat/turnStarted" => {
                // A turn id may be reused once its turn is gone: a new turn starts empty.
                if let (Some(turns), Some(turn_id)) = (self.chats.get_mut(chat), turn_id) {
                    turns.remove(turn_id);
                    let started_at = action.member("startedAt").as_str().map(str::to_owned);
                    let fresh = TurnCalls {
                        started_at,
                        calls: FastMap::default(),
                    };
                    turns.insert(turn_id.to_owned(), fresh);
                }
                return;
            }
            "chat/turnComplete" | "chat/turnCancelled" | "chat/error" => {
                let turn = turn_id.and_then(|turn_id| self.chats.get_mut(chat)?.get_mut(turn_id));
                for call in turn.into_iter().flat_map(|turn| turn.calls.values_mut()) {
                    if !call.status.is_terminal() {
                        call.status = Status::Cancelled;
                        call.ended_open = true;
                    }
                }
                return;
            }
            "chat/truncated" => {
                self.forget(chat);
                return;
            }
            "chat/turnsLoaded" => {
                for turn in action.member("turns").elements() {
                    self.turn(chat, &turn.to_value(), counts, found);
                }
                return;
            }
            _ if !kind.starts_with("chat/toolCall") => return,
            _ => {}
        }
        let (Some(turn_id), Some(id)) = (turn_id, action.member("toolCallId").as_str()) else {
            return;
        };
        if host {
            values(kind, id, action, counts, found);
        }
        let turn = match self.chats.get_mut(chat).and_then(|t| t.get_mut(turn_id)) {
            Some(turn) => turn,
            None if kind == "chat/toolCallStart" => self
                .chats
                .entry(chat.to_owned())
                .or_default()
                .entry(turn_id.to_owned())
                .or_default(),
            None => return,
        };
        let calls = &mut turn.calls;
        let Some(known) = calls.get_mut(id) else {
            if kind == "chat/toolCallStart" {
                let mcp = action.member("contributor").member("kind").as_str() == Some("mcp");
                calls.insert(
                    id.to_owned(),
                    Call {
                        status: Status::Streaming,
                        mcp,
                        ended_open: false,
                    },
                );
            }
            return;
        };
        if !host {
            if let Some(to) = reduced(kind, known.status, action) {
                known.status = to;
            }
            return;
        }
        count(counts, Rule::InvTool1);
        if known.status.is_terminal() {
            found.push(Violation::new(
                Rule::InvTool1,
                format!(
                    "nothing after tool call {id:?} reached {}",
                    known.status.name()
                ),
                format!("the host sent {kind} for it"),
            ));
            return;
        }
        if kind == "chat/toolCallAuthRequired" && !known.mcp {
            found.push(Violation::new(
                Rule::InvTool2,
                "chat/toolCallAuthRequired only for a call an MCP server contributed",
                format!("it targets tool call {id:?}, which no MCP server contributed"),
            ));
            return;
        }
        let Some(to) = claimed(kind, known.status, action) else {
            return;
        };
        match transition(id, known.status, to, kind) {
            Some(violation) => found.push(violation),
            None => known.status = to,
        }
    }
}

/// INV-TOOL-1 for one observed change.
fn transition(id: &str, from: Status, to: Status, seen_in: &str) -> Option<Violation> {
    if from == to {
        return None;
    }
    let expected = if from.is_terminal() {
        format!("nothing after tool call {id:?} reached {}", from.name())
    } else if from.reaches(to) {
        return None;
    } else {
        format!(
            "tool call {id:?} moves from {} only along the lifecycle table",
            from.name()
        )
    };
    Some(Violation::new(
        Rule::InvTool1,
        expected,
        format!("{seen_in} shows it {} after {}", to.name(), from.name()),
    ))
}

/// The status a host action claims for a call in `from`. Content updates (`toolCallDelta`
/// on a call past streaming, `toolCallContentChanged`) claim no status change, and a
/// successful `toolCallComplete` on an `auth-required` call is ignored by the table.
fn claimed(kind: &str, from: Status, action: Node<'_>) -> Option<Status> {
    let approved = action.member("approved").as_bool() == Some(true);
    Some(match kind {
        "chat/toolCallStart" => Status::Streaming,
        "chat/toolCallReady" if action.member("confirmed").is_null() => Status::PendingConfirmation,
        "chat/toolCallReady" | "chat/toolCallAuthResolved" => Status::Running,
        "chat/toolCallConfirmed" if approved => Status::Running,
        "chat/toolCallConfirmed" => Status::Cancelled,
        "chat/toolCallComplete" if from == Status::AuthRequired => {
            let success = action.member("result").member("success").as_bool();
            (success == Some(false)).then_some(Status::Completed)?
        }
        "chat/toolCallComplete"
            if action.member("requiresResultConfirmation").as_bool() == Some(true) =>
        {
            Status::PendingResultConfirmation
        }
        "chat/toolCallComplete" => Status::Completed,
        "chat/toolCallAuthRequired" => Status::AuthRequired,
        "chat/toolCallResultConfirmed" if approved => Status::Completed,
        "chat/toolCallResultConfirmed" => Status::Cancelled,
        _ => return None,
    })
}

/// What the reducers make of an accepted client action: the claimed status, only from the
/// statuses its row of the table starts at.
fn reduced(kind: &str, from: Status, action: Node<'_>) -> Option<Status> {
    let starts: &[Status] = match kind {
        "chat/toolCallConfirmed" => &[Status::PendingConfirmation],
        "chat/toolCallComplete" => &[
            Status::Running,
            Status::PendingConfirmation,
            Status::AuthRequired,
        ],
        "chat/toolCallResultConfirmed" => &[Status::PendingResultConfirmation],
        _ => &[],
    };
    if starts.contains(&from) {
        claimed(kind, from, action)
    } else {
        None
    }
}

/// INV-TOOL-2 on the values a host tool-call action carries.
fn values(kind: &str, id: &str, action: Node<'_>, counts: &mut Counts, found: &mut Vec<Violation>) {
    for (member, allowed) in [("confirmed", CONFIRMED_VALUES), ("reason", CANCEL_REASONS)] {
        let value = action.member(member);
        if value.is_null() || !matches!(kind, "chat/toolCallReady" | "chat/toolCallConfirmed") {
            continue;
        }
        count(counts, Rule::InvTool2);
        if !value.as_str().is_some_and(|v| allowed.contains(&v)) {
            found.push(Violation::new(
                Rule::InvTool2,
                format!("{kind}.{member} one of {allowed:?}"),
                format!("{member} {} on tool call {id:?}", value.to_value()),
            ));
        }
    }
}
