//! One fault's run: the catalog against the built-in host with the fault, strict, and the
//! verdicts held to the fault's expectations (tests/faults/expectations.rs).

use std::collections::BTreeSet;

use ahpspec::certify::{certify, Options};
use ahpspec::host::Fault;
use ahpspec::rows::Quiet;
use ahpspec::verdict::{rule_of, Level, Verdict};

use super::builtin;
use super::expectations::{
    blocks, expected_not_applicable, expected_not_testable, expected_with_blocking, profile_for,
    Blocks,
};

pub async fn check(fault: Fault) {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let blocking = |case: &str| match blocks(fault) {
        Blocks::Nothing => None,
        Blocks::Most => Some(fault.rule()),
        Blocks::Cases(pairs) => pairs
            .iter()
            .find(|(id, _)| *id == case)
            .map(|(_, rule)| *rule),
    };
    let options = Options {
        faults: fault.into(),
        // Cases blocked by a session that never gets ready each wait one timeout.
        timeout: if matches!(blocks(fault), Blocks::Most) {
            std::time::Duration::from_secs(1)
        } else {
            Options::default().timeout
        },
        strict: true,
        profile: profile_for(fault),
        ..Options::default()
    };
    let report = certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts");
    let mut failing = BTreeSet::new();
    let mut not_testable = BTreeSet::new();
    let mut not_applicable = BTreeSet::new();
    let mut blocked = BTreeSet::new();
    let mut details = Vec::new();
    for case in report.cases.iter().filter(|c| c.verdict != Verdict::Pass) {
        let rule = rule_of(&case.info.id).to_owned();
        details.push(format!(
            "  {} [{}] {}",
            case.info.id,
            case.verdict.as_str(),
            case.summary
        ));
        match case.verdict {
            Verdict::NotTestable if builtin::not_testable_with_scripted_profile(&case.info.id) => {}
            Verdict::NotTestable
                if matches!(blocks(fault), Blocks::Most) && case.info.source == "builtin" =>
            {
                // An always-on check that saw nothing because the cases feeding it were
                // blocked: the blocked cases already fail the run.
            }
            Verdict::NotTestable => {
                not_testable.insert(rule);
            }
            // Not applicable to the built-in host with or without the fault.
            Verdict::NotApplicable if builtin::not_applicable_to_builtin(&case.info.id) => {}
            Verdict::NotApplicable => {
                not_applicable.insert(case.info.id.clone());
            }
            Verdict::Blocked => {
                assert_eq!(
                    case.blocked_by.as_deref(),
                    blocking(&case.info.id),
                    "fault {fault}: {} blocked by the wrong rule\n{}",
                    case.info.id,
                    case.summary
                );
                blocked.insert(case.info.id.clone());
            }
            _ => {
                failing.insert(rule);
            }
        }
    }
    let details = details.join("\n");
    assert_eq!(
        failing,
        expected_with_blocking(fault),
        "fault {fault} ({}):\n{details}",
        fault.description()
    );
    assert_eq!(
        not_testable,
        expected_not_testable(fault),
        "fault {fault}: not testable\n{details}"
    );
    assert_eq!(
        not_applicable,
        expected_not_applicable(fault),
        "fault {fault}: not applicable\n{details}"
    );
    match blocks(fault) {
        Blocks::Most => assert!(
            blocked.len() > 50,
            "fault {fault} blocks only {} cases:\n{details}",
            blocked.len()
        ),
        Blocks::Cases(pairs) => assert_eq!(
            blocked,
            pairs.iter().map(|(id, _)| id.to_string()).collect(),
            "fault {fault}: blocked\n{details}"
        ),
        Blocks::Nothing => assert!(blocked.is_empty(), "fault {fault}: blocked\n{details}"),
    }
    // Every fault makes a strict run fail (`ahpspec run --strict` exits 1): a failed MUST,
    // a broken SHOULD, a failed prerequisite or a blocked case is never conforming. A fault
    // that takes the other path of a MAY (steering-consumed-idle) is recorded as info only,
    // and the cases that needed the first path are not applicable: a strict run conforms.
    let may = report
        .cases
        .iter()
        .any(|case| case.info.id == fault.rule() && case.info.level == Level::May);
    assert_eq!(
        report.conforming(),
        may,
        "fault {fault}: the strict run conforms: {}",
        report.conforming()
    );
}
