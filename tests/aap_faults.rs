//! Every fault of the built-in AAP server fails the rule it names (aap/RULES.md), and breaks
//! nothing else beyond what `also_breaks` lists with its reason. Against the correct server
//! the same run passes (tests/aap_run.rs).

#[path = "common/allocator.rs"]
mod allocator;

use std::collections::BTreeSet;

use ahpspec::aaphost::AapFault;
use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use ahpspec::target::Protocol;
use ahpspec::verdict::Verdict;
use futures_util::stream::{self, StreamExt};

/// Fault runs at once: a run uses a few milliseconds of CPU per case and waits the rest.
const RUNS_AT_ONCE: usize = 8;

/// Rules a fault breaks besides its own, because one bug shows in several places (a row
/// failing, or a case blocked by another rule than the fault's).
fn also_breaks(fault: AapFault) -> BTreeSet<&'static str> {
    let rules: &[&str] = match fault.name() {
        // The agent ran at creation: the full history holds its output.
        "create-runs-agent" => &["AAP-HISTORY-004"],
        // AAP-OPTION-006 reads the client tools back from GET /sessions/:id.
        "get-drops-client-tools" => &["AAP-OPTION-006"],
        // The echoed user message is none-mode output: history, the cross-mode comparison,
        // and every case reading none-mode messages by position see it.
        "none-echoes-request" => &[
            "AAP-HISTORY-004",
            "AAP-SSE-007",
            "AAP-TOOL-001",
            "AAP-TOOL-003",
            "AAP-TURN-006",
        ],
        // The inline run leaves no pending call for the mixed case's permission: refused.
        "untrusted-runs-inline" => &["AAP-TOOL-008"],
        // The unexecuted grant is stored as a denial in history.
        "grant-not-run" => &["AAP-HISTORY-004"],
        // A tool_result for a denied call is also a result nobody granted.
        "denial-runs-tool" => &["AAP-TOOL-008"],
        // The echoed client result is a tool event AAP-TOOL-002's continuation must not have.
        "client-result-echoed" => &["AAP-TOOL-002"],
        // AAP-TOOL-003's trusted-only turn must end end_turn.
        "trusted-stops-tool-use" => &["AAP-TOOL-003"],
        // AAP-SESSION-002 reads the seed, the last message, from history.
        "history-drops-last" => &["AAP-SESSION-002"],
        // A tool_permission message is no history message (schema), and shifts positions.
        "history-keeps-permission" => &["AAP-HTTP-001", "AAP-TOOL-006"],
        // AAP-SESSION-005 expects the second delete refused with 404, and judges that first:
        // a 500 is not the 404 it wants (its AAP-HTTP-007 row fails too).
        "redelete-500" => &["AAP-SESSION-005"],
        _ => &[],
    };
    rules.iter().copied().collect()
}

/// The rules whose rows failed, the rules of the rows that did not pass, and a listing (see
/// [`broken_rules`]).
type Broken = (BTreeSet<String>, BTreeSet<String>, String);

/// The rules whose rows failed (fail, warn or info), and those of the other rows that did
/// not pass (blocked by another rule than the fault's, harness errors), with a listing.
async fn broken_rules(fault: AapFault) -> Broken {
    let options = Options {
        protocol: Protocol::Aap,
        faults: fault.into(),
        selection: Selection::default(),
        timeout: std::time::Duration::from_secs(5),
        // Version 3 whatever GET /meta says (meta-version-2 must fail AAP-META-001, not
        // pick another catalog); the faults of versions 1 and 2: tests/aap_versions.rs.
        protocol_versions: vec!["3".to_owned()],
        // One case at a time: a fault that hides the newest session is only visible when no
        // other case creates one between a case's create and its list.
        jobs: 1,
        ..Options::default()
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let report = certify(&options, &mut Quiet, interrupt).await.expect("run");
    let mut failed = BTreeSet::new();
    let mut broken = BTreeSet::new();
    let mut detail = String::new();
    for case in &report.cases {
        // A case blocked by the fault's own rule shows that rule failing on its way.
        if case.verdict == Verdict::Blocked && case.blocked_by.as_deref() == Some(fault.rule()) {
            continue;
        }
        if matches!(
            case.verdict,
            Verdict::Fail
                | Verdict::Warn
                | Verdict::Info
                | Verdict::Blocked
                | Verdict::HarnessError
        ) {
            let rule = ahpspec::verdict::rule_of(&case.info.id).to_owned();
            detail.push_str(&format!(
                "  {} {}: {}\n",
                case.info.id,
                case.verdict.as_str(),
                case.summary
            ));
            if matches!(case.verdict, Verdict::Fail | Verdict::Warn | Verdict::Info) {
                failed.insert(rule.clone());
            }
            broken.insert(rule);
        }
    }
    (failed, broken, detail)
}

#[tokio::test(flavor = "current_thread")]
async fn every_aap_fault_fails_its_rule_and_only_that() {
    assert!(!AapFault::ALL.is_empty());
    // Each run has a server of its own and mostly waits (one case at a time, below):
    // several at once.
    let runs: Vec<(AapFault, Broken)> =
        stream::iter(AapFault::ALL.iter().copied().filter(|f| f.acts_at(3)))
            .map(|fault| async move { (fault, broken_rules(fault).await) })
            .buffered(RUNS_AT_ONCE)
            .collect()
            .await;
    let mut problems = Vec::new();
    for (fault, (failed, broken, detail)) in runs {
        if !failed.contains(fault.rule()) {
            problems.push(format!(
                "{} does not fail {}:\n{detail}",
                fault.name(),
                fault.rule()
            ));
        }
        let allowed = also_breaks(fault);
        let stray: Vec<&String> = broken
            .iter()
            .filter(|r| r.as_str() != fault.rule() && !allowed.contains(r.as_str()))
            .collect();
        let stale: Vec<&&str> = allowed.iter().filter(|r| !broken.contains(**r)).collect();
        if !stale.is_empty() {
            problems.push(format!(
                "{} no longer breaks {stale:?} (remove it from also_breaks)",
                fault.name()
            ));
        }
        if !stray.is_empty() {
            problems.push(format!("{} also breaks {stray:?}:\n{detail}", fault.name()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
