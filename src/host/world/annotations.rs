//! Annotations (issue 29): each session of this host has an annotations channel
//! (`<session>/annotations`, advertised in `SessionState.annotations` with its counts, which
//! follow the channel out of band). Every annotation action is a client's; the host folds
//! them through the official reducer, refusing what would leave an annotation without
//! entries (an `annotations/set` without any, the removal of an annotation's last entry:
//! that is `annotations/removed`'s job).

use std::collections::BTreeMap;

use ahp::reducers::apply_action_to_annotations;
use ahp_types::actions::StateAction;
use ahp_types::state::{AnnotationsState, AnnotationsSummary};
use serde_json::Value;

use super::{to_value, World};
use crate::host::faults::Fault;

/// One session's annotations channel.
#[derive(Debug)]
pub struct AnnotationsEntry {
    pub session: String,
    pub state: AnnotationsState,
}

/// Annotations channels by URI.
pub type Annotations = BTreeMap<String, AnnotationsEntry>;

/// The annotations channel of a session.
pub fn annotations_uri(session: &str) -> String {
    format!("{}/annotations", session.trim_end_matches('/'))
}

impl World {
    /// Opens a new session's annotations channel and advertises it in the session's state.
    pub(in crate::host) fn open_annotations(&mut self, session: &str) {
        let uri = annotations_uri(session);
        if self.sessions.contains_key(&uri) {
            // A client named a session like this channel: the session keeps the URI.
            return;
        }
        let state = AnnotationsState {
            annotations: Vec::new(),
        };
        self.annotations.insert(
            uri.clone(),
            AnnotationsEntry {
                session: session.to_owned(),
                state,
            },
        );
        self.count_annotations(&uri);
    }

    /// The snapshot state of an annotations channel.
    pub(in crate::host) fn annotations_state(&self, uri: &str) -> Option<Value> {
        Some(to_value(&self.annotations.get(uri)?.state))
    }

    /// Folds an action into an annotations channel; the session's counts follow.
    pub(in crate::host) fn apply_annotations(&mut self, uri: &str, action: &StateAction) {
        if let Some(entry) = self.annotations.get_mut(uri) {
            apply_action_to_annotations(&mut entry.state, action);
        }
        self.count_annotations(uri);
    }

    /// Writes the channel's counts into its session's `annotations` summary.
    fn count_annotations(&mut self, uri: &str) {
        let Some(entry) = self.annotations.get(uri) else {
            return;
        };
        let summary = AnnotationsSummary {
            resource: uri.to_owned(),
            annotation_count: entry.state.annotations.len() as i64,
            entry_count: entry
                .state
                .annotations
                .iter()
                .map(|a| a.entries.len() as i64)
                .sum(),
        };
        if let Some(session) = self.sessions.get_mut(&entry.session) {
            session.state.annotations = Some(summary);
        }
    }

    /// Drops the annotations channel of a disposed session.
    pub(in crate::host) fn drop_annotations(&mut self, session: &str) {
        if self.fault(Fault::DisposedAnnotationsKept) {
            return;
        }
        let uri = annotations_uri(session);
        if self.annotations.remove(&uri).is_some() {
            for conn in self.conns.values_mut() {
                conn.subscriptions.remove(&uri);
            }
        }
    }

    /// Why a client's annotation action is refused: it would leave an annotation without
    /// entries (ANNOTATION-002), or the entry fault refuses entries (ANNOTATION-001).
    pub(in crate::host) fn check_annotation(
        &self,
        uri: &str,
        action: &StateAction,
    ) -> Result<(), String> {
        let state = self.annotations.get(uri).map(|entry| &entry.state);
        match action {
            StateAction::AnnotationsSet(set)
                if set.annotation.entries.is_empty()
                    && !self.fault(Fault::EmptyAnnotationAccepted) =>
            {
                Err("an annotation has at least one entry".into())
            }
            StateAction::AnnotationsEntrySet(_) if self.fault(Fault::AnnotationEntryRefused) => {
                Err("this host takes no further entries".into())
            }
            StateAction::AnnotationsEntryRemoved(removal)
                if !self.fault(Fault::AnnotationEmptied) =>
            {
                let last = state
                    .and_then(|s| s.annotations.iter().find(|a| a.id == removal.annotation_id))
                    .is_some_and(|a| a.entries.len() == 1 && a.entries[0].id == removal.entry_id);
                if last {
                    Err(
                        "the annotation's last entry: remove the annotation (annotations/removed)"
                            .into(),
                    )
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}
