//! Schedule triggers fire (issue 29): with a target profile that allows the wait of up to a
//! minute, the built-in host passes the scheduling cases; its faults that never show the next
//! occurrence or never start its run are tests/faults.rs's.

#[path = "common/allocator.rs"]
mod allocator;

use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use ahpspec::verdict::Verdict;

#[path = "common/builtin.rs"]
#[allow(dead_code)] // the list of cases not applicable to the host is not asked here
mod builtin;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schedule_trigger_starts_its_run_when_its_minute_comes_and_counts_it() {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let options = Options {
        profile: Some(builtin::scripted_profile_with_schedule_waits()),
        selection: Selection {
            filter: [
                "AUTOMATION-011",
                "AUTOMATION-012",
                "AUTOMATION-013",
                "AUTOMATION-021",
                "AUTOMATION-022",
            ]
            .map(String::from)
            .to_vec(),
            ..Selection::default()
        },
        ..Options::default()
    };
    let report = certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts");
    let verdicts: Vec<(String, Verdict, String)> = report
        .cases
        .iter()
        .filter(|case| options.selection.includes(&case.info.id, case.info.level))
        .map(|case| (case.info.id.clone(), case.verdict, case.summary.clone()))
        .collect();
    // AUTOMATION-011 and its /fields sub-case, AUTOMATION-012, -013, -021 and -022.
    assert_eq!(verdicts.len(), 6, "{verdicts:?}");
    for (id, verdict, summary) in &verdicts {
        assert_eq!(*verdict, Verdict::Pass, "{id}: {summary}");
    }
}
