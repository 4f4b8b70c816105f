//! INV-FOLD-1 without a checkpoint: behind a proxy real clients make no checkpoints, but they
//! subscribe again to channels their connection already folds (a second window, a view
//! reloaded), and each such snapshot is a checkpoint the traffic gives for free.
//!
//! `serverSeq` is one counter per host, so a snapshot's `fromSeq` is rarely the serverSeq of
//! the channel's last envelope: other channels' actions count too. The fold, at serverSeq
//! `s`, reflects the channel at the snapshot's `f ≥ s` when no action of the channel numbered
//! in `(s, f]` is still to come — and none may come after the snapshot (SUB-002: every later
//! action of the channel is numbered above `fromSeq`). So the comparison waits for the
//! channel's next accepted envelope: numbered above `f`, it confirms the fold was whole and
//! the two are compared; numbered at or below, the comparison is SUB-002's business and is
//! skipped. A connection that ends first had nothing more to deliver: compared then.

use serde_json::Value;

use super::compare::{fold_matches, Kind};
use super::mirror::Mirror;
use super::{FastMap, Rule, Skips, Violation};

/// Why a re-subscribe snapshot was not compared with the fold.
pub const LATE_ENVELOPE: &str =
    "an action of the channel numbered at or below the snapshot's fromSeq (or not numbered) came after it (SUB-002's)";
pub const SNAPSHOT_BEHIND: &str =
    "the snapshot's fromSeq is below the serverSeq the fold had reached (SUB-002's)";

/// A fresh snapshot waiting to be compared with the fold it replaced.
#[derive(Debug, Clone)]
struct Pending {
    kind: Kind,
    /// The snapshot's `fromSeq` and the fold's serverSeq when it came.
    from: u64,
    folded_at: u64,
    folded: Value,
    fresh: Value,
}

/// One connection's re-subscribe comparisons (INV-FOLD-1), in observed traffic.
#[derive(Debug, Default, Clone)]
pub struct Resnapshots {
    pending: FastMap<String, Pending>,
    /// Comparisons made.
    pub compared: usize,
    pub skips: Skips,
}

impl Resnapshots {
    /// A snapshot of `channel` (`state`, at `from`) came, before `mirror` loads it: when the
    /// connection folds the channel, the comparison is made now if the fold is at `from`,
    /// else once the channel's next envelope shows nothing was still to come.
    pub fn snapshot(
        &mut self,
        mirror: &Mirror,
        channel: &str,
        state: &Value,
        from: Option<u64>,
    ) -> Vec<Violation> {
        // A snapshot that comes before the earlier one's confirmation: nothing of the channel
        // came in between, so the earlier comparison stands.
        let mut found: Vec<Violation> = self.judge(channel).into_iter().collect();
        let (Some(from), Some(folded_at)) = (from, mirror.seq(channel)) else {
            return found;
        };
        if mirror.lost(channel).is_some() {
            return found;
        }
        let (Some(folded), Some(kind)) = (mirror.state(channel), Kind::infer(channel, state))
        else {
            return found;
        };
        if folded_at > from {
            self.skips.add(Rule::InvFold1, SNAPSHOT_BEHIND, 1);
            return found;
        }
        let pending = Pending {
            kind,
            from,
            folded_at,
            folded,
            fresh: state.clone(),
        };
        if folded_at == from {
            self.compared += 1;
            found.extend(compare(channel, &pending));
        } else {
            self.pending.insert(channel.to_owned(), pending);
        }
        found
    }

    /// An accepted envelope of `channel` numbered `seq` came: it settles the channel's
    /// waiting comparison, if any.
    pub fn envelope(&mut self, channel: &str, seq: Option<u64>) -> Option<Violation> {
        let from = self.pending.get(channel)?.from;
        match seq {
            Some(seq) if seq > from => self.judge(channel),
            _ => {
                self.pending.remove(channel);
                self.skips.add(Rule::InvFold1, LATE_ENVELOPE, 1);
                None
            }
        }
    }

    /// The connection ended: nothing more of any channel was to come.
    pub fn ended(&mut self) -> Vec<Violation> {
        let mut channels: Vec<String> = self.pending.keys().cloned().collect();
        channels.sort();
        channels
            .iter()
            .filter_map(|channel| self.judge(channel))
            .collect()
    }

    fn judge(&mut self, channel: &str) -> Option<Violation> {
        let pending = self.pending.remove(channel)?;
        self.compared += 1;
        compare(channel, &pending)
    }
}

fn compare(channel: &str, pending: &Pending) -> Option<Violation> {
    let mut found = fold_matches(channel, pending.kind, &pending.folded, &pending.fresh)?;
    found.actual.push_str(&format!(
        " (the fold at serverSeq {}, the client's fresh snapshot at fromSeq {})",
        pending.folded_at, pending.from
    ));
    Some(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    const C: &str = "ahp-changeset:/ahp-session/s";
    const SNAPSHOT: &str = r#"{"resource":"ahp-changeset:/ahp-session/s","fromSeq":2,"state":{"status":"computing","files":[]}}"#;

    fn mirror(snapshot: &str) -> Mirror {
        let mut mirror = Mirror::default();
        let mut tape = Tape::default();
        mirror.load_snapshot(tape.parse(snapshot).expect("JSON"));
        mirror
    }

    fn renamed(mirror: &Mirror) -> Value {
        let mut state = mirror.state(C).expect("the changeset decodes");
        state["status"] = "ready".into();
        state
    }

    #[test]
    fn a_snapshot_at_the_folds_serverseq_is_compared_at_once() {
        let mirror = mirror(SNAPSHOT);
        let state = mirror.state(C).expect("the changeset decodes");
        let mut checks = Resnapshots::default();
        assert_eq!(checks.snapshot(&mirror, C, &state, Some(2)), vec![]);
        let found = checks
            .snapshot(&mirror, C, &renamed(&mirror), Some(2))
            .pop()
            .expect("a difference");
        assert_eq!(found.rule, Rule::InvFold1);
        assert!(found.actual.contains("/status"), "{}", found.actual);
        assert_eq!(checks.compared, 2);
    }

    #[test]
    fn a_snapshot_past_the_fold_waits_for_the_channels_next_envelope() {
        let mirror = mirror(SNAPSHOT);
        let mut checks = Resnapshots::default();
        assert_eq!(
            checks.snapshot(&mirror, C, &renamed(&mirror), Some(9)),
            vec![]
        );
        assert_eq!(checks.compared, 0);
        // Another channel's envelope settles nothing; the channel's next one, above 9, does.
        assert_eq!(checks.envelope("ahp-root://", Some(10)), None);
        let found = checks.envelope(C, Some(10)).expect("a difference");
        assert!(found.actual.contains("fromSeq 9"), "{}", found.actual);
        assert_eq!(checks.compared, 1);
        // One at or below 9 after the snapshot: SUB-002's, not compared.
        checks.snapshot(&mirror, C, &renamed(&mirror), Some(9));
        assert_eq!(checks.envelope(C, Some(9)), None);
        assert_eq!(checks.skips.of(Rule::InvFold1), vec![(LATE_ENVELOPE, 1)]);
        assert_eq!(checks.ended(), vec![]);
        // A second snapshot settles the first; the connection ending settles what waits.
        checks.snapshot(&mirror, C, &renamed(&mirror), Some(9));
        assert_eq!(
            checks
                .snapshot(&mirror, C, &renamed(&mirror), Some(11))
                .len(),
            1
        );
        assert_eq!(checks.ended().len(), 1);
        assert_eq!(checks.compared, 3);
    }

    #[test]
    fn channels_not_folded_and_snapshots_behind_the_fold_are_not_compared() {
        let mirror = mirror(SNAPSHOT);
        let mut checks = Resnapshots::default();
        let other = "ahp-changeset:/ahp-session/t";
        assert!(checks
            .snapshot(&mirror, other, &renamed(&mirror), Some(2))
            .is_empty());
        assert!(checks
            .snapshot(&mirror, C, &renamed(&mirror), None)
            .is_empty());
        assert!(checks
            .snapshot(&mirror, C, &renamed(&mirror), Some(1))
            .is_empty());
        assert_eq!(checks.skips.of(Rule::InvFold1), vec![(SNAPSHOT_BEHIND, 1)]);
        assert!(checks.ended().is_empty());
        assert_eq!(checks.compared, 0);
    }
}
