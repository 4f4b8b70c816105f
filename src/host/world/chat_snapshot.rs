//! A chat's snapshot state: its turns windowed as the subscriber asked (`turnsNextCursor`
//! pointing at the older ones), with the faults that break chat snapshots applied.

use serde_json::Value;

use super::{to_value, World};
use crate::host::faults::Fault;

impl World {
    /// The snapshot state of chat `uri`, the newest `view_turns` turns when given.
    pub(super) fn chat_snapshot_state(
        &mut self,
        uri: &str,
        view_turns: Option<i64>,
    ) -> Option<Value> {
        let missing_field = self.fault(Fault::SnapshotMissingField);
        let entry = self.chats.get_mut(uri)?;
        let mut state = to_value(&entry.state);
        if let (Some(limit), Some(turns)) = (
            view_turns,
            state.get_mut("turns").and_then(Value::as_array_mut),
        ) {
            let keep = usize::try_from(limit.max(0)).unwrap_or(0);
            if turns.len() > keep {
                let cut = turns.len() - keep;
                let first_kept = turns
                    .get(cut)
                    .and_then(|t| t.get("id"))
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                turns.drain(..cut);
                let cursor = match first_kept {
                    Some(id) => format!("before:{id}"),
                    None => "before-active".to_owned(),
                };
                state["turnsNextCursor"] = Value::String(cursor);
                entry.windowed = true;
            }
        }
        if missing_field {
            if let Some(object) = state.as_object_mut() {
                object.remove("modifiedAt");
            }
        }
        self.break_turns(&mut state);
        self.break_chat_snapshot(uri, &mut state);
        self.break_chat_status(&mut state);
        Some(state)
    }
}
