//! DISPATCH-003 after each rejected dispatch: the host's state does not hold what it
//! rejected. A fresh snapshot on the observer connection, with the dispatching client read
//! up to a ping answered after it, is judged by [`crate::checks::rejected`].

use serde_json::Value;

use super::{Failure, Run};
use crate::checks::rejected::applied_anyway;
use crate::client::checkpoint;

impl Run<'_> {
    /// A fresh snapshot of `channel` on the observer connection, for a judge of operation
    /// `index`: `Err` when the observer could not be had, `Ok(None)` when no snapshot came.
    pub(super) async fn observed(
        &mut self,
        index: usize,
        channel: &str,
    ) -> Result<Option<Value>, Failure> {
        Ok(self
            .observed_at(index, channel)
            .await?
            .map(|(state, _)| state))
    }

    /// [`Run::observed`] with the snapshot's `fromSeq`.
    async fn observed_at(
        &mut self,
        index: usize,
        channel: &str,
    ) -> Result<Option<(Value, Option<u64>)>, Failure> {
        if let Some(failure) = self.observer_ready(Some(index)).await {
            return Err(failure);
        }
        let timeout = self.cfg.timeout;
        let Some(observer) = self.observer.as_mut() else {
            return Ok(None);
        };
        Ok(checkpoint::fresh_snapshot(observer, channel, timeout).await)
    }

    /// A fresh snapshot of `channel` after `client`'s dispatch of `action` was rejected
    /// (operation `index`): the finding when it shows the action's effect, which no
    /// envelope brought to the client. No snapshot, no claim; nor when the client's fold is
    /// past the snapshot: a host that moved on meanwhile (an agent's turn on another thread)
    /// shows what it did since, which can be where the rejected action would have written.
    pub(super) async fn rejected_left_alone(
        &mut self,
        index: usize,
        client: usize,
        channel: &str,
        action: &Value,
    ) -> Option<Failure> {
        let (fresh, from) = match self.observed_at(index, channel).await {
            Ok(fresh) => fresh?,
            Err(failure) => return Some(failure),
        };
        // Whatever the host sent the client before it took the snapshot is read and folded
        // (and checked) before the fold is compared.
        let schemas = self.cfg.schemas.clone();
        let conn = &mut self.conns[client];
        conn.ping(self.cfg.timeout).await.ok()?;
        let found = conn.process(&schemas);
        self.pending.extend(found);
        let mirror = self.conns[client].mirror();
        let lost = mirror.lost(channel).is_some();
        if checkpoint::fold_comparable(lost, mirror.seq(channel), from) != Ok(true) {
            return None;
        }
        let folded = mirror.state(channel)?;
        let violation = applied_anyway(channel, &folded, &fresh, action)?;
        Some(Failure::after(index, violation))
    }
}
