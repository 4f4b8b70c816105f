//! TURN-012 after an accepted truncation of a chat whose turn was active: the host drops the
//! active turn. A fresh snapshot on the observer connection shows whether it did, before
//! anything that follows (a turn start the kept turn refuses, a fold that disagrees, a
//! cancel of the kept turn accepted) is blamed on another rule. The snapshot may come after
//! a dispatch sent together with the truncation (a cancel that ended the kept turn): a turn
//! dropped is then still found nowhere, neither active nor among the chat's turns.

use serde_json::Value;

use super::{Failure, Run};
use crate::checks::Rule;

impl Run<'_> {
    /// A fresh snapshot of `chat` after the host accepted `chat/truncated` while the turn
    /// `active` was running (operation `index`): the finding when that turn is still active,
    /// or has ended among the chat's turns. No snapshot, no claim.
    pub(super) async fn truncated_turn_dropped(
        &mut self,
        index: usize,
        chat: &str,
        active: &Value,
    ) -> Option<Failure> {
        let fresh = match self.observed(index, chat).await {
            Ok(fresh) => fresh?,
            Err(failure) => return Some(failure),
        };
        let ended = fresh["turns"]
            .as_array()
            .and_then(|turns| turns.iter().find(|turn| turn["id"] == *active));
        let actual = match ended {
            _ if fresh["activeTurn"]["id"] == *active => format!("activeTurn {active}"),
            Some(turn) => format!(
                "the turn kept among the chat's turns (state {})",
                turn["state"]
            ),
            None => return None,
        };
        Some(Failure {
            rule: Rule::Turn012,
            expected: format!(
                "chat/truncated drops the active turn {active}: a fresh snapshot shows it nowhere"
            ),
            actual,
            op_index: Some(index),
        })
    }
}
