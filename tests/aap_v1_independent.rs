//! A version 1 server written from the `v1` pages alone (tests/aap_v1_server, sharing no
//! code with the built-in server) is certified clean at the version its `GET /meta` names,
//! and each broken variant of it fails the rule it breaks.

mod aap_v1_server;
mod run_support;

use std::collections::BTreeSet;

use aap_v1_server::{start, Break};
use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use ahpspec::target::Protocol;
use ahpspec::verdict::{RunReport, Verdict};
use run_support::rules_not_passing;

async fn certify_url(url: String) -> RunReport {
    let options = Options {
        protocol: Protocol::Aap,
        url: Some(url),
        timeout: std::time::Duration::from_secs(5),
        jobs: 1,
        ..Options::default()
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    certify(&options, &mut Quiet, interrupt).await.expect("run")
}

#[tokio::test(flavor = "current_thread")]
async fn the_independent_version_1_server_is_certified_clean() {
    let report = certify_url(start(None).await).await;
    assert_eq!(report.protocol_version, "AAP 1");
    let (rules, detail) = rules_not_passing(&report, None);
    assert!(detail.is_empty(), "{rules:?}\n{detail}");
    let verdict = |id: &str| {
        report
            .cases
            .iter()
            .find(|c| c.info.id == id)
            .map(|c| c.verdict)
    };
    // The version 1 rules and the always-on history check judged something of it.
    for id in [
        "AAP-META-001/v1",
        "AAP-SESSION-010/delta",
        "AAP-SSE-009",
        "AAP-HISTORY-001/full",
        "AAP-HISTORY-004",
        "AAP-HISTORY-007/compacted",
        "AAP-SESSION-007",
        "AAP-SSE-007",
    ] {
        assert_eq!(verdict(id), Some(Verdict::Pass), "{id}\n{detail}");
    }
    assert_eq!(verdict("AAP-SESSION-001"), Some(Verdict::NotApplicable));
}

#[tokio::test(flavor = "current_thread")]
async fn each_broken_variant_fails_the_rule_it_breaks() {
    let mut problems = Vec::new();
    for (broken, rule) in [
        (Break::NoSessionStart, "AAP-SSE-009"),
        (Break::ListObjects, "AAP-HTTP-001"),
        (Break::ServesCompacted, "AAP-HISTORY-007"),
        (Break::HistoryWithoutReplies, "AAP-HISTORY-004"),
    ] {
        let report = certify_url(start(Some(broken)).await).await;
        // A row blocked by the broken rule is that rule failing on its way.
        let (rules, detail) = rules_not_passing(&report, Some(rule));
        if rules != BTreeSet::from([rule.to_owned()]) {
            problems.push(format!(
                "{broken:?}: want only {rule}, got {rules:?}\n{detail}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
