//! TURN-012 after an accepted truncation of a chat whose turn was active: the host drops the
//! active turn. A fresh snapshot on the observer connection shows whether it did, before
//! anything that follows (a turn start the kept turn refuses, a fold that disagrees) is
//! blamed on another rule.

use serde_json::Value;

use super::{Failure, Run};
use crate::checks::Rule;

impl Run<'_> {
    /// A fresh snapshot of `chat` after the host accepted `chat/truncated` while the turn
    /// `active` was running (operation `index`): the finding when that turn is still active.
    /// No snapshot, no claim.
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
        let kept = fresh["activeTurn"]["id"] == *active;
        kept.then(|| Failure {
            rule: Rule::Turn012,
            expected: format!(
                "chat/truncated drops the active turn {active}: a fresh snapshot shows it no longer active"
            ),
            actual: format!("activeTurn {}", fresh["activeTurn"]["id"]),
            op_index: Some(index),
        })
    }
}
