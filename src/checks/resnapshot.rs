//! INV-FOLD-1 without a checkpoint: a snapshot of a channel the connection already folds,
//! taken at the very serverSeq its fold has reached, is a checkpoint the traffic gives for
//! free. Behind a proxy real clients make no checkpoints, but they subscribe again (a second
//! window, a view reloaded): each such snapshot is compared with the connection's fold.

use serde_json::Value;

use super::compare::{fold_matches, Kind};
use super::mirror::Mirror;
use super::Violation;

/// The comparison of `mirror`'s fold of `channel` with its fresh `state`, taken at serverSeq
/// `from`: `None` when there is nothing to compare (the channel not folded, or no longer
/// followed, or the fold at another serverSeq than the snapshot), else the violation if any.
pub fn fold_at_snapshot(
    mirror: &Mirror,
    channel: &str,
    state: &Value,
    from: Option<u64>,
) -> Option<Option<Violation>> {
    if mirror.lost(channel).is_some() || mirror.seq(channel) != Some(from?) {
        return None;
    }
    let folded = mirror.state(channel)?;
    let kind = Kind::infer(channel, state)?;
    Some(fold_matches(channel, kind, &folded, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Rule;
    use crate::tape::Tape;

    const C: &str = "ahp-changeset:/ahp-session/s";
    const SNAPSHOT: &str = r#"{"resource":"ahp-changeset:/ahp-session/s","fromSeq":2,"state":{"status":"computing","files":[]}}"#;

    fn mirror(snapshot: &str) -> Mirror {
        let mut mirror = Mirror::default();
        let mut tape = Tape::default();
        mirror.load_snapshot(tape.parse(snapshot).expect("JSON"));
        mirror
    }

    #[test]
    fn a_snapshot_at_the_folds_serverseq_is_compared_and_others_are_not() {
        let mirror = mirror(SNAPSHOT);
        let state = mirror.state(C).expect("the changeset decodes");
        assert_eq!(fold_at_snapshot(&mirror, C, &state, Some(2)), Some(None));
        let mut renamed = state.clone();
        renamed["status"] = "ready".into();
        let found = fold_at_snapshot(&mirror, C, &renamed, Some(2))
            .flatten()
            .expect("a difference");
        assert_eq!(found.rule, Rule::InvFold1);
        assert!(found.actual.contains("/status"), "{}", found.actual);
        // Another serverSeq, or a channel not folded: nothing to compare.
        assert_eq!(fold_at_snapshot(&mirror, C, &renamed, Some(3)), None);
        assert_eq!(fold_at_snapshot(&mirror, C, &renamed, None), None);
        assert_eq!(
            fold_at_snapshot(&mirror, "ahp-changeset:/ahp-session/t", &renamed, Some(2)),
            None
        );
    }
}
