//! Movable chats and `moveChat` (issue 29). Every chat a client creates with `createChat`
//! is movable; a session's default chat never is. A move within the owning session only
//! repositions the chat (`session/chatsReordered`); a move to another session transfers it
//! (`session/chatRemoved` there, `session/chatAdded` and, for a position other than the
//! end, `session/chatsReordered` here); a move to a new session allocates one whose
//! non-movable default chat it becomes (`chat/movableChanged`, then `session/chatRemoved`
//! and `root/sessionAdded`). The chat keeps its URI, state and origin throughout. The host
//! has no host-managed descendant chats (tool-spawned workers), so a move transfers one chat.

use ahp_types::commands::{ChatMoveDestination, CreateSessionParams, MoveChatParams};
use serde_json::{json, Value};

use super::chats::chat_summary;
use super::{parse, RpcError, INVALID_PARAMS, SESSION_NOT_FOUND};
use crate::host::agents::agent_for;
use crate::host::faults::Fault;
use crate::host::world::World;

impl World {
    pub(super) fn move_chat(&mut self, params: &Value) -> Result<Value, RpcError> {
        let chat = self.existing_chat(params)?;
        let params: MoveChatParams = parse(params)?;
        let Some((owner, movable)) = self
            .chats
            .get(&chat)
            .map(|entry| (entry.session.clone(), entry.state.movable == Some(true)))
        else {
            return Err(RpcError::new(INVALID_PARAMS, "no such chat"));
        };
        if !movable {
            if self.fault(Fault::MoveNonMovableAccepted) {
                return Ok(json!({ "session": owner }));
            }
            return Err(RpcError::new(INVALID_PARAMS, "the chat is not movable"));
        }
        let moved_to = match &params.destination {
            ChatMoveDestination::Session(to) => {
                self.check_destination(&chat, &to.session, to.after.as_deref())?;
                if to.session == owner {
                    self.reposition(&owner, &chat, to.after.as_deref());
                } else {
                    self.transfer(&owner, &chat, &to.session, to.after.as_deref());
                }
                to.session.clone()
            }
            ChatMoveDestination::NewSession(_) => self.move_to_new_session(&owner, &chat)?,
            ChatMoveDestination::Unknown(_) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "unknown kind of move destination",
                ))
            }
        };
        let answered = if self.fault(Fault::MoveAnswersOldOwner) {
            owner
        } else {
            moved_to
        };
        Ok(json!({ "session": answered }))
    }

    /// Refuses a destination session that does not exist, an anchor that is the chat
    /// itself or not a chat of the destination, and a destination whose working
    /// directories do not hold the chat's.
    fn check_destination(
        &self,
        chat: &str,
        session: &str,
        after: Option<&str>,
    ) -> Result<(), RpcError> {
        let Some(destination) = self.sessions.get(session) else {
            return Err(RpcError::new(
                SESSION_NOT_FOUND,
                format!("no such session: {session}"),
            ));
        };
        if let Some(anchor) = after {
            if anchor == chat {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "a chat cannot be placed after itself",
                ));
            }
            if !destination.state.chats.iter().any(|c| c.resource == anchor)
                && !self.fault(Fault::MoveAnchorUnchecked)
            {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("{anchor} is not a chat of {session}"),
                ));
            }
        }
        let allowed = destination
            .state
            .working_directories
            .as_deref()
            .unwrap_or_default();
        let wanted = self
            .chats
            .get(chat)
            .and_then(|entry| entry.state.working_directories.as_deref())
            .unwrap_or_default();
        let refused =
            |d: &&String| !allowed.contains(d) || self.fault(Fault::MoveWithDirectoriesRefused);
        if let Some(outside) = wanted.iter().find(refused) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{outside} is not a working directory of {session}"),
            ));
        }
        Ok(())
    }

    /// Places `chat` after `after` (first when `None`) in `session`'s catalog.
    fn reposition(&mut self, session: &str, chat: &str, after: Option<&str>) {
        let Some(entry) = self.sessions.get(session) else {
            return;
        };
        let mut order: Vec<String> = entry
            .state
            .chats
            .iter()
            .map(|c| c.resource.clone())
            .filter(|c| c != chat)
            .collect();
        let at = after
            .and_then(|anchor| order.iter().position(|c| c == anchor))
            .map_or(0, |i| i + 1);
        order.insert(at, chat.to_owned());
        let unchanged = entry
            .state
            .chats
            .iter()
            .map(|c| c.resource.as_str())
            .eq(order.iter().map(String::as_str));
        if unchanged {
            return;
        }
        if self.fault(Fault::ReorderLeavesOneOut) {
            order.retain(|c| c != chat);
        }
        self.emit_logged(
            session,
            json!({ "type": "session/chatsReordered", "chats": order }),
        );
        self.sync_projections(session);
    }

    /// Moves `chat` from `owner` into the existing session `to`.
    fn transfer(&mut self, owner: &str, chat: &str, to: &str, after: Option<&str>) {
        self.emit_logged(
            owner,
            json!({ "type": "session/chatRemoved", "chat": chat }),
        );
        let Some(entry) = self.chats.get_mut(chat) else {
            return;
        };
        entry.session = to.to_owned();
        let summary = chat_summary(&entry.state);
        self.emit_logged(
            to,
            json!({ "type": "session/chatAdded", "summary": summary }),
        );
        self.reposition(to, chat, after);
        self.sync_projections(owner);
        self.sync_projections(to);
    }

    /// Moves `chat` from `owner` into a new session of the same agent and working
    /// directories, as its default chat (no longer movable). Returns the new session.
    fn move_to_new_session(&mut self, owner: &str, chat: &str) -> Result<String, RpcError> {
        let Some(from) = self.sessions.get(owner).map(|s| s.state.clone()) else {
            return Err(RpcError::new(
                SESSION_NOT_FOUND,
                "the owning session is gone",
            ));
        };
        let Some(agent) = agent_for(Some(&from.provider)) else {
            return Err(RpcError::new(INVALID_PARAMS, "the session's agent is gone"));
        };
        let uri = self.fresh_id("ahp-session:/moved-");
        let params: CreateSessionParams = parse(&json!({
            "channel": uri,
            "provider": from.provider,
            "workingDirectories": from.working_directories,
        }))?;
        self.emit_chat(
            chat,
            json!({ "type": "chat/movableChanged", "movable": false }),
        );
        self.sync_projections(owner);
        self.emit_logged(
            owner,
            json!({ "type": "session/chatRemoved", "chat": chat }),
        );
        self.sync_projections(owner);
        self.insert_new_session(&uri, agent, &params, Some(chat))?;
        self.announce_session(uri.clone(), agent, None);
        Ok(uri)
    }
}
