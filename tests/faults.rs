//! Every faulty variant of the built-in host breaks exactly the rules it declares: the
//! cases for those rules fail and every other case still passes.
//!
//! One trial per fault of [`Fault::ALL`] (named as the fault, `-` written `_`), run by
//! libtest-mimic so that more catalogs run at once than there are cores: a catalog run waits
//! about a third of its time (AUTH-006's 2.5 s of silence is the longest wait, about 1.8 s of
//! CPU the rest), and with one per core the cores sat idle that third. `--test-threads` and
//! `RUST_TEST_THREADS` still choose.
//!
//! Beside them, the correct host passes the schedule cases when the profile allows their wait
//! (`schedule_cases_pass_on_the_correct_host`): the control of the faults that break them. A
//! minute's wait and almost no CPU, it runs here, beside the catalogs, rather than alone in a
//! binary of its own, where its minute was a minute of idle cores in `cargo test`.

#[path = "common/allocator.rs"]
mod allocator;

use std::collections::BTreeSet;

#[path = "common/builtin.rs"]
mod builtin;

#[path = "common/trials.rs"]
mod trials;

use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, Options};
use ahpspec::host::Fault;
use ahpspec::rows::Quiet;
use ahpspec::verdict::Verdict;
use libtest_mimic::{Failed, Trial};

#[path = "faults/expectations.rs"]
mod expectations;
use expectations::{expected, profile_for};

#[path = "faults/check.rs"]
mod check;
use check::check;

/// How long after one another the faults that wait for schedules start: more than a catalog
/// run's busy part (2–3 s of CPU), far less than its wait for the next minute.
const STAGGER: std::time::Duration = std::time::Duration::from_secs(8);

fn main() -> std::process::ExitCode {
    let args = trials::arguments();
    let (waiting, others): (Vec<Fault>, Vec<Fault>) = Fault::ALL
        .iter()
        .copied()
        .partition(|fault| profile_for(*fault).is_some());
    // The longest first: the faults that wait for schedules hold their thread for minutes.
    let mut trials = vec![
        Trial::test("faults_that_wait_for_schedules", move || {
            on_runtime(side_by_side(waiting))
        }),
        Trial::test("schedule_cases_pass_on_the_correct_host", || {
            on_runtime(schedule_cases_pass_on_the_correct_host())
        }),
    ];
    trials.extend(others.into_iter().map(|fault| {
        Trial::test(fault.to_string().replace('-', "_"), move || {
            on_runtime(check(fault))
        })
    }));
    trials.push(Trial::test(
        "every_always_on_check_has_a_fault",
        every_always_on_check_has_a_fault,
    ));
    trials.push(Trial::test(
        "every_case_has_a_fault",
        every_case_has_a_fault,
    ));
    libtest_mimic::run(&args, trials).exit_code()
}

/// Runs `work` to its end on a runtime of its own (one thread, as `#[tokio::test]`'s).
fn on_runtime(work: impl std::future::Future<Output = ()>) -> Result<(), Failed> {
    trials::on_runtime(tokio::runtime::Builder::new_current_thread(), work)
}

/// The faults whose cases wait for scheduled runs (up to two minutes each), run side by side
/// in one trial: one after another, their waits held a test thread for some 13 minutes. Each
/// starts [`STAGGER`] after the one before, so that only their waits overlap: six catalogs
/// busy at once beside the other trials' made the built-in host (a 300 ms grace period) too
/// slow for RECONNECT-009/came-back's reconnect "at once". A failure names its fault.
async fn side_by_side(waiting: Vec<Fault>) {
    futures_util::future::join_all(waiting.iter().enumerate().map(|(i, fault)| async move {
        tokio::time::sleep(STAGGER * i as u32).await;
        check(*fault).await;
    }))
    .await;
}

/// With a target profile that allows the wait of up to a minute, the built-in host passes the
/// scheduling cases: a schedule trigger starts its run when its minute comes, and the run is
/// counted (issue 29). The faults that never show the next occurrence or never start the run
/// are in `faults_that_wait_for_schedules`.
async fn schedule_cases_pass_on_the_correct_host() {
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

/// Every always-on check is proven by at least one fault that breaks it.
fn every_always_on_check_has_a_fault() -> Result<(), Failed> {
    for rule in ahpspec::checks::ALWAYS_ON {
        let proven = Fault::ALL
            .iter()
            .any(|fault| expected(*fault).contains(rule.id));
        assert!(
            proven,
            "always-on check {} has no faulty host variant",
            rule.id
        );
    }
    Ok(())
}

/// Every case's rule has a broken twin: a fault under which that rule fails (the fault's
/// own rule, or a side effect `expected` names), unless coverage.toml lists it under
/// `[no_fault_yet]` — the ledger of cases only ever seen passing, which shrinks as faults
/// are written. A ledger entry whose rule has a fault is stale and fails this test too.
fn every_case_has_a_fault() -> Result<(), Failed> {
    let catalog = ahpspec::suite::Catalog::embedded().expect("suites parse");
    let rules: BTreeSet<String> = catalog
        .cases
        .iter()
        .map(|case| ahpspec::verdict::rule_of(&case.info.id).to_owned())
        .collect();
    let broken: BTreeSet<String> = Fault::ALL.iter().flat_map(|f| expected(*f)).collect();
    let ledger: toml::Table =
        toml::from_str(include_str!("../coverage.toml")).expect("coverage.toml parses");
    let unproven: BTreeSet<String> = ledger
        .get("no_fault_yet")
        .and_then(|v| v.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    let missing: Vec<&String> = rules
        .iter()
        .filter(|r| !broken.contains(*r) && !unproven.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "cases with no fault that breaks them (write one, or list the rule in coverage.toml [no_fault_yet] with why): {missing:?}"
    );
    let stale: Vec<&String> = unproven.iter().filter(|r| broken.contains(*r)).collect();
    assert!(
        stale.is_empty(),
        "coverage.toml [no_fault_yet] lists rules a fault now breaks: remove {stale:?}"
    );
    let unknown: Vec<&String> = unproven.iter().filter(|r| !rules.contains(*r)).collect();
    assert!(
        unknown.is_empty(),
        "coverage.toml [no_fault_yet] lists rules no case proves: {unknown:?}"
    );
    Ok(())
}
