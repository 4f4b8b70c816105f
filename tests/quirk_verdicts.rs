//! The whole catalog against hosts other than the built-in one, each with a quirk in front of
//! it (tests/quirky_hosts): a conforming quirk passes every case, a deviating one fails the
//! rules it breaks and nothing else (everything else passes, or is blocked by those rules).

#[path = "common/allocator.rs"]
mod allocator;

mod quirky_hosts;

#[path = "common/builtin.rs"]
mod builtin;

use std::collections::BTreeSet;
use std::time::Duration;

use ahpspec::certify::{certify, Options};
use ahpspec::engine::Quiet;
use ahpspec::host::{HostConfig, DEFAULT_SESSION_INIT};
use ahpspec::verdict::{RunReport, Verdict};
use quirky_hosts::{quirky_on, Quirk};

/// The catalog against the built-in host behind `quirk` (with the short client grace period
/// the built-in target uses, for RECONNECT-009).
async fn catalog_behind(quirk: Quirk, session_init: Duration) -> RunReport {
    let host = quirky_on(
        quirk,
        HostConfig {
            client_grace: Duration::from_millis(300),
            session_init,
            ..HostConfig::default()
        },
    )
    .await;
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let options = Options {
        url: Some(host.url.clone()),
        workspace: Some(host.workspace.clone()),
        ..Options::default()
    };
    certify(&options, &mut Quiet, interrupt)
        .await
        .expect("harness starts")
}

fn listing(report: &RunReport) -> String {
    report
        .cases
        .iter()
        .filter(|c| c.verdict != Verdict::Pass)
        .map(|c| format!("{} [{}] {}", c.info.id, c.verdict.as_str(), c.summary))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Conforming: JSON-RPC lets a server answer in any order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_passes_a_host_that_answers_out_of_order() {
    let report = catalog_behind(Quirk::ReverseAnswers, DEFAULT_SESSION_INIT).await;
    assert!(
        report.cases.iter().all(|c| c.verdict == Verdict::Pass
            || (c.verdict == Verdict::NotApplicable
                && builtin::not_applicable_to_builtin(&c.info.id))
            || (c.verdict == Verdict::NotTestable
                && builtin::not_testable_with_scripted_profile(&c.info.id))),
        "{}",
        listing(&report)
    );
}

/// A host that names sessions in a scheme of its own breaks the rules that pin the URI the
/// client chose (the snapshot's resource, the new session's summary, the envelopes'
/// channel, the owner a moveChat answer names, and — as it renames the session inside every
/// frame it sends — the echo of a client's annotation, whose origin names the session:
/// DISPATCH-001, and ANNOTATION-001 that waits for that echo); every search for the session
/// still finds it, so no other rule is blamed (an independent host did this: issue 22's
/// field trial). Its sessions stay `creating` long enough for every case to see it, so
/// every case waits for the `session/ready` that ends the creation, which comes on the
/// renamed channel: found there, it is no creation that never ends (LIFECYCLE-003).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_names_sessions_its_own_way_breaks_only_the_rules_that_pin_uris() {
    let report = catalog_behind(Quirk::OwnSessionScheme, Duration::from_millis(60)).await;
    let pinning = BTreeSet::from([
        "SUB-001",
        "ROOT-005",
        "ENV-004",
        "CHAT-MOVE-002",
        "DISPATCH-001",
        "ANNOTATION-001",
    ]);
    let mut broken = BTreeSet::new();
    for case in &report.cases {
        let rule = case.info.id.split('/').next().unwrap_or_default();
        match case.verdict {
            Verdict::Pass => {}
            Verdict::NotApplicable if builtin::not_applicable_to_builtin(&case.info.id) => {}
            Verdict::NotTestable if builtin::not_testable_with_scripted_profile(&case.info.id) => {}
            Verdict::Blocked => assert!(
                case.blocked_by
                    .as_deref()
                    .is_some_and(|by| pinning.contains(by)),
                "{} blocked by {:?}\n{}",
                case.info.id,
                case.blocked_by,
                listing(&report)
            ),
            _ => {
                broken.insert(rule.to_owned());
            }
        }
    }
    let broken: BTreeSet<&str> = broken.iter().map(String::as_str).collect();
    assert_eq!(broken, pinning, "{}", listing(&report));
}
