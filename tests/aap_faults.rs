//! Every fault of the built-in AAP server fails the rule it names (aap/RULES.md), and breaks
//! nothing else beyond what `also_breaks` lists with its reason. Against the correct server
//! the same run passes (tests/aap_run.rs).

use std::collections::BTreeSet;

use ahpspec::aap::{certify, AapOptions};
use ahpspec::aaphost::AapFault;
use ahpspec::engine::{Quiet, Selection};
use ahpspec::verdict::Verdict;

/// Rules a fault breaks besides its own, because one bug shows in several places.
fn also_breaks(fault: AapFault) -> BTreeSet<&'static str> {
    let _ = fault;
    BTreeSet::new()
}

async fn broken_rules(fault: AapFault) -> (BTreeSet<String>, String) {
    let options = AapOptions {
        url: None,
        target_label: "builtin".into(),
        fault: Some(fault.name().to_owned()),
        token: None,
        selection: Selection::default(),
        timeout: std::time::Duration::from_secs(5),
        jobs: 8,
        strict: false,
        suites: None,
        baseline: None,
        rerun_prefix: "ahpspec run --protocol aap".into(),
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let report = certify(&options, &mut Quiet, interrupt).await.expect("run");
    let mut broken = BTreeSet::new();
    let mut detail = String::new();
    for case in &report.cases {
        if matches!(
            case.verdict,
            Verdict::Fail
                | Verdict::Warn
                | Verdict::Info
                | Verdict::Blocked
                | Verdict::HarnessError
        ) {
            let rule = case
                .info
                .id
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned();
            detail.push_str(&format!(
                "  {} {}: {}\n",
                case.info.id,
                case.verdict.as_str(),
                case.summary
            ));
            broken.insert(rule);
        }
    }
    (broken, detail)
}

#[tokio::test(flavor = "current_thread")]
async fn every_aap_fault_fails_its_rule_and_only_that() {
    assert!(!AapFault::ALL.is_empty());
    let mut problems = Vec::new();
    for &fault in AapFault::ALL {
        let (broken, detail) = broken_rules(fault).await;
        if !broken.contains(fault.rule()) {
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
        if !stray.is_empty() {
            problems.push(format!("{} also breaks {stray:?}:\n{detail}", fault.name()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
