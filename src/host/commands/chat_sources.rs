//! Forked and side chats: `createChat` with a `source` (issue 29). A fork copies the source
//! chat's visible history through a completed turn and inherits its working directories; a
//! side chat starts empty, with the source turn (ended or active) as context only and an
//! optional selected text kept verbatim. Both record where they came from in `origin`, which
//! never changes afterwards.

use ahp_types::commands::{ChatSource, CreateChatParams};
use ahp_types::state::{ChatOrigin, ChatState};

use super::chats::new_chat;
use super::{RpcError, INVALID_PARAMS};
use crate::host::faults::Fault;
use crate::host::world::{now_iso, World};

/// Which kinds of source the agent behind a session advertises (`multipleChats.fork`,
/// `multipleChats.sideChat` in the root state).
struct SourceKinds {
    fork: bool,
    side_chat: bool,
}

impl World {
    /// The state of a chat created from `source` in `session`, or why it is refused: a kind
    /// the session's agent does not advertise, a source chat that is not one of the
    /// session's (unknown, in another session, the new chat itself), a turn the source
    /// chat does not have, or (forks) a turn that has not ended.
    pub(super) fn sourced_chat(
        &self,
        session: &str,
        params: &CreateChatParams,
        source: &ChatSource,
    ) -> Result<ChatState, RpcError> {
        let kinds = self.source_kinds(session);
        let unsupported = || {
            RpcError::new(
                INVALID_PARAMS,
                "the session's agent does not support this kind of chat source",
            )
        };
        match source {
            ChatSource::Fork(fork) if kinds.fork => {
                let source_chat = self.source_chat(session, &params.chat, &fork.chat)?;
                let Some(through) = source_chat.turns.iter().position(|t| t.id == fork.turn_id)
                else {
                    return Err(unknown_turn(&fork.chat, &fork.turn_id, source_chat));
                };
                let copied = if self.fault(Fault::ForkCopiesAllTurns) {
                    source_chat.turns.clone()
                } else {
                    source_chat.turns[..=through].to_vec()
                };
                let mut state = new_chat(
                    &params.chat,
                    "Fork",
                    &now_iso(),
                    source_chat.working_directories.clone(),
                )?;
                state.turns = copied;
                state.origin = Some(ChatOrigin::Fork {
                    chat: fork.chat.clone(),
                    turn_id: fork.turn_id.clone(),
                });
                Ok(state)
            }
            ChatSource::SideChat(side) if kinds.side_chat => {
                let source_chat = self.source_chat(session, &params.chat, &side.chat)?;
                let known = source_chat.turns.iter().any(|t| t.id == side.turn_id)
                    || (source_chat
                        .active_turn
                        .as_ref()
                        .is_some_and(|t| t.id == side.turn_id)
                        && !self.fault(Fault::ActiveTurnSideChatRefused));
                if !known && !self.fault(Fault::SideChatAnyTurn) {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        format!("{} has no turn {:?}", side.chat, side.turn_id),
                    ));
                }
                let mut state = new_chat(
                    &params.chat,
                    "Side chat",
                    &now_iso(),
                    params.working_directories.clone(),
                )?;
                if self.fault(Fault::SideChatCopiesHistory) {
                    state.turns = source_chat.turns.clone();
                }
                state.origin = Some(ChatOrigin::SideChat {
                    chat: side.chat.clone(),
                    turn_id: side.turn_id.clone(),
                    selection: side.selection.clone(),
                });
                Ok(state)
            }
            _ => Err(unsupported()),
        }
    }

    /// Makes a forked or side chat look user-created, behind the reducers' back (fault
    /// injection only); the session catalog follows.
    pub(in crate::host) fn forget_origin(&mut self, chat: &str) {
        let Some(entry) = self.chats.get_mut(chat) else {
            return;
        };
        if matches!(
            entry.state.origin,
            Some(ChatOrigin::Fork { .. } | ChatOrigin::SideChat { .. })
        ) {
            entry.state.origin = Some(ChatOrigin::User);
            let session = entry.session.clone();
            self.sync_projections(&session);
        }
    }

    /// Whether the agent behind `session` advertises this kind of source.
    pub(super) fn supports_source(&self, session: &str, source: &ChatSource) -> bool {
        let kinds = self.source_kinds(session);
        match source {
            ChatSource::Fork(_) => kinds.fork,
            ChatSource::SideChat(_) => kinds.side_chat,
            ChatSource::Unknown(_) => false,
        }
    }

    fn source_kinds(&self, session: &str) -> SourceKinds {
        let chats = self
            .session_agent_capabilities(session)
            .and_then(|caps| caps.multiple_chats.as_ref());
        SourceKinds {
            fork: chats.and_then(|c| c.fork).unwrap_or(false),
            side_chat: chats.and_then(|c| c.side_chat).unwrap_or(false),
        }
    }

    /// The source chat, which must be another chat of `session` than the one being created.
    fn source_chat(&self, session: &str, new: &str, source: &str) -> Result<&ChatState, RpcError> {
        if source == new {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "a chat cannot be its own source",
            ));
        }
        let Some(entry) = self.chats.get(source) else {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("no such source chat: {source}"),
            ));
        };
        if entry.session != session && !self.fault(Fault::ForkForeignSourceAccepted) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{source} belongs to another session"),
            ));
        }
        Ok(&entry.state)
    }
}

/// Why a fork from `turn` is refused: the chat has no such turn, or it is still running.
fn unknown_turn(chat: &str, turn: &str, state: &ChatState) -> RpcError {
    let active = state.active_turn.as_ref().is_some_and(|t| t.id == turn);
    let why = if active {
        format!("turn {turn:?} of {chat} has not ended: a fork is taken from a completed turn")
    } else {
        format!("{chat} has no turn {turn:?}")
    };
    RpcError::new(INVALID_PARAMS, why)
}
