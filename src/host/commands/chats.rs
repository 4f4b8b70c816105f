//! Chat requests: `createChat`, `disposeChat`, `fetchTurns`, `moveChat`.

use ahp_types::commands::CreateChatParams;
use ahp_types::state::ChatState;
use serde_json::{json, Value};

use super::{
    channel_param, parse, AfterReply, Reply, RpcError, ALREADY_EXISTS, INTERNAL_ERROR,
    INVALID_PARAMS, NOT_FOUND, SESSION_NOT_FOUND,
};
use crate::host::faults::Fault;
use crate::host::world::{now_iso, to_value, ConnId, World};

impl World {
    pub(in crate::host) fn create_chat(
        &mut self,
        conn: ConnId,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let params: CreateChatParams = parse(params)?;
        let session = params.channel.clone();
        let Some(entry) = self.sessions.get(&session) else {
            if self.fault(Fault::ChatInMissingSessionOk) {
                return Ok(Value::Null);
            }
            return Err(RpcError::new(
                SESSION_NOT_FOUND,
                format!("no such session: {session}"),
            ));
        };
        let scheme_ok =
            params.chat.starts_with("ahp-chat:/") || self.fault(Fault::ForeignChatUriAccepted);
        if !scheme_ok || params.chat.len() <= "ahp-chat:/".len() {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "a chat URI must start with ahp-chat:/",
            ));
        }
        if self.chats.contains_key(&params.chat) {
            return Err(RpcError::new(
                ALREADY_EXISTS,
                format!("{} already exists", params.chat),
            ));
        }
        let checked_directories = params
            .working_directories
            .as_ref()
            .filter(|_| !self.fault(Fault::ChatOutsideDirectoryAccepted));
        if let Some(dirs) = checked_directories {
            let allowed = entry
                .state
                .working_directories
                .as_deref()
                .unwrap_or_default();
            if let Some(outside) = dirs.iter().find(|d| !allowed.contains(d)) {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("{outside} is not a working directory of the session"),
                ));
            }
        }
        let plain = || {
            new_chat(
                &params.chat,
                "Chat",
                &now_iso(),
                params.working_directories.clone(),
            )
        };
        let mut state = match &params.source {
            None => plain()?,
            // A source the agent does not support, taken as no source at all.
            Some(source)
                if !self.supports_source(&session, source)
                    && self.fault(Fault::UnsupportedSourceAccepted) =>
            {
                plain()?
            }
            Some(source) => self.sourced_chat(&session, &params, source)?,
        };
        // A chat a client creates is never the session's default: it can be moved.
        state.movable = Some(true);
        let client_id = self.conns.get(&conn).and_then(|c| c.client_id.clone());
        let first = params.initial_message.map(|message| to_value(&message));
        self.add_chat(&session, state, first, client_id);
        Ok(Value::Null)
    }

    /// Adds a new chat to `session`'s catalog (`session/chatAdded`) and, given a first
    /// message, starts its first turn with it for `client_id` (`None`: the host's own).
    pub(super) fn add_chat(
        &mut self,
        session: &str,
        state: ChatState,
        first: Option<Value>,
        client_id: Option<String>,
    ) {
        let chat = state.resource.clone();
        let summary = chat_summary(&state);
        self.insert_chat(session, state);
        self.emit_logged(
            session,
            json!({ "type": "session/chatAdded", "summary": summary }),
        );
        self.sync_projections(session);
        let Some(message) = first else {
            return;
        };
        let turn_id = self.fresh_id("turn-");
        let text = message["text"].as_str().unwrap_or_default().to_owned();
        let action = json!({ "type": "chat/turnStarted", "turnId": turn_id,
                             "startedAt": now_iso(), "message": message });
        if self.emit_chat(&chat, action).is_some() {
            self.run_message(&chat, &turn_id, &text, client_id);
        }
    }

    pub(super) fn dispose_chat(&mut self, params: &Value) -> Result<Value, RpcError> {
        let uri = channel_param(params)?;
        let Some(session) = self.chats.get(&uri).map(|c| c.session.clone()) else {
            return Err(RpcError::new(NOT_FOUND, format!("no such chat: {uri}")));
        };
        self.stop_agent(&uri);
        self.chats.remove(&uri);
        self.drop_canvases(&uri);
        self.forget_channel(&uri);
        let was_default = self.is_default_chat(&session, &uri);
        let unannounced = self.fault(Fault::NoChatRemoved) && !was_default;
        if !unannounced {
            self.emit_logged(
                &session,
                json!({ "type": "session/chatRemoved", "chat": uri }),
            );
        }
        if was_default {
            self.promote_default_chat(&session);
        }
        if self.fault(Fault::DefaultChatRestored) {
            self.restore_default_chat(&session, &uri);
        }
        self.sync_projections(&session);
        Ok(Value::Null)
    }

    pub(super) fn fetch_turns(&mut self, params: &Value) -> Reply {
        let chat = match self.existing_chat(params) {
            Ok(chat) => chat,
            Err(error) => return Reply::of(Err(error)),
        };
        let cursor = params.get("cursor").and_then(Value::as_str);
        let Some(entry) = self.chats.get(&chat) else {
            return Reply::of(Err(RpcError::new(NOT_FOUND, "no such chat")));
        };
        let turns = &entry.state.turns;
        let cut = match cursor {
            None | Some("before-active") => Some(turns.len()),
            Some(cursor) => cursor
                .strip_prefix("before:")
                .and_then(|id| turns.iter().position(|t| t.id == id)),
        };
        let Some(cut) = cut else {
            return Reply::of(Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown cursor {:?}", cursor.unwrap_or_default()),
            )));
        };
        let mut older = turns.get(..cut).unwrap_or_default().to_vec();
        if self.fault(Fault::TurnsLoadedNewestFirst) {
            older.reverse();
        }
        let older = to_value(&older);
        let action = json!({ "type": "chat/turnsLoaded", "turns": older });
        if self.fault(Fault::TurnsLoadedAfterResponse) {
            let after: AfterReply = Box::new(move |world: &mut World| {
                world.emit_logged(&chat, action);
            });
            return Reply {
                result: Ok(json!({})),
                close_after: false,
                after: Some(after),
            };
        }
        self.emit_logged(&chat, action);
        if let Some(entry) = self.chats.get_mut(&chat) {
            entry.windowed = false;
        }
        Reply::of(Ok(json!({})))
    }

    /// Makes the first chat left in `session`'s catalog its default chat after the default
    /// one went (`session/defaultChatChanged`), no longer movable first (a default chat never
    /// is: `chat/movableChanged`).
    fn promote_default_chat(&mut self, session: &str) {
        let Some(next) = self.session_chats(session).into_iter().next() else {
            return;
        };
        if !self.fault(Fault::PromotedDefaultMovable) {
            self.emit_chat(
                &next,
                json!({ "type": "chat/movableChanged", "movable": false }),
            );
            // The reducers take no `movable` from session/chatUpdated: the catalog entry is
            // upserted whole (session/chatAdded of a listed chat replaces it in place).
            if let Some(entry) = self.chats.get(&next) {
                let summary = chat_summary(&entry.state);
                self.emit_logged(
                    session,
                    json!({ "type": "session/chatAdded", "summary": summary }),
                );
            }
            self.sync_projections(session);
        }
        self.emit_logged(
            session,
            json!({ "type": "session/defaultChatChanged", "defaultChat": next }),
        );
    }

    /// The chat named by `params.channel`, which must exist.
    pub(super) fn existing_chat(&self, params: &Value) -> Result<String, RpcError> {
        let uri = channel_param(params)?;
        if self.chats.contains_key(&uri) {
            Ok(uri)
        } else {
            Err(RpcError::new(NOT_FOUND, format!("no such chat: {uri}")))
        }
    }
}

pub(super) fn new_chat(
    uri: &str,
    title: &str,
    now: &str,
    working_directories: Option<Vec<String>>,
) -> Result<ChatState, RpcError> {
    serde_json::from_value(json!({
        "resource": uri, "title": title, "status": 1, "modifiedAt": now,
        "workingDirectories": working_directories, "turns": [],
    }))
    .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("building chat state: {e}")))
}

pub(super) fn chat_summary(chat: &ChatState) -> Value {
    Value::Object(crate::host::projection::chat_summary(&to_value(chat)))
}
