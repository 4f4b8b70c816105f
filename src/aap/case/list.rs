//! The `list` step: walks `GET /sessions` from the first page, following `next` as
//! `after`, and checks pagination on the way (AAP-SESSION-007).

use std::collections::HashSet;

use serde_json::Value;

use super::{Run as CaseRun, Stop as StepStop};
use crate::aap::expect::Miss;
use crate::aap::suite::{ListStep, LocatedStep};
use crate::checks::Rule;

/// More pages than any test server needs: a `next` that never ends is a loop.
const PAGE_CAP: usize = 200;

fn ids_of(page: &Value) -> Vec<String> {
    page.get("sessions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| match s {
            Value::String(id) => Some(id.clone()),
            other => other
                .get("sessionId")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
        .collect()
}

pub(super) async fn walk(
    run: &mut CaseRun<'_>,
    step: &ListStep,
    located: &LocatedStep,
) -> Result<(), StepStop> {
    let at = located.at.as_str();
    let mut seen = HashSet::new();
    let mut after: Option<String> = None;
    for _ in 0..PAGE_CAP {
        let path = match &after {
            Some(cursor) => format!("/sessions?after={}", encode(cursor)),
            None => "/sessions".to_owned(),
        };
        let response = run.get(path, at).await?;
        let Some(page) = response.json().filter(|_| response.status == 200) else {
            return run.fail(
                Miss::new("200 with a session list", format!("{}", response.status)),
                Some(Rule::AapSession006),
                at,
            );
        };
        for id in ids_of(page) {
            if !seen.insert(id.clone()) {
                return run.fail(
                    Miss::new("no session on two pages of one walk", format!("{id} again")),
                    Some(Rule::AapSession007),
                    at,
                );
            }
        }
        match page.get("next").and_then(Value::as_str) {
            Some(next) => after = Some(next.to_owned()),
            None => return check_members(run, step, &seen, at),
        }
    }
    run.fail(
        Miss::new(
            format!("the last page within {PAGE_CAP} pages"),
            "next never ends",
        ),
        Some(Rule::AapSession007),
        at,
    )
}

fn check_members(
    run: &mut CaseRun<'_>,
    step: &ListStep,
    seen: &HashSet<String>,
    at: &str,
) -> Result<(), StepStop> {
    for name in &step.contains {
        let id = run.var(name).cloned().unwrap_or_default();
        if !seen.contains(&id) {
            return run.fail(
                Miss::new(
                    format!("session {id} listed"),
                    format!("{} sessions, not it", seen.len()),
                ),
                None,
                at,
            );
        }
    }
    for name in &step.lacks {
        let id = run.var(name).cloned().unwrap_or_default();
        if seen.contains(&id) {
            return run.fail(
                Miss::new(format!("session {id} not listed"), "listed"),
                None,
                at,
            );
        }
    }
    Ok(())
}

/// Percent-encodes a cursor for the query string (unreserved characters pass).
fn encode(cursor: &str) -> String {
    cursor
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}
