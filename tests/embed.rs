//! `ahpspec::embed`: the catalog as libtest-mimic trials. A faulty host fails the trial of
//! the rule it breaks; libtest's filters decide which cases run; not-applicable cases are
//! ignored with their reason; `--list` runs nothing.

use ahpspec::certify::Options;
use ahpspec::host::Fault;
use libtest_mimic::{Arguments, Conclusion};

/// Runs the trials with `args`, their output going to a log file (not into this test's
/// output, where a nested "test result: FAILED" line would mislead a reader); returns the
/// conclusion and the log.
fn run(options: Options, args: &[&str]) -> (Conclusion, String) {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let log = std::env::temp_dir().join(format!(
        "ahpspec-embed-{}-{}.log",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let log_arg = log.to_string_lossy().into_owned();
    let all = ["embedded", "--logfile", &log_arg];
    let args = Arguments::from_iter(all.iter().chain(args.iter()).copied());
    let trials = ahpspec::embed::trials(options, &args).expect("catalog loads");
    let conclusion = libtest_mimic::run(&args, trials);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    (conclusion, text)
}

#[test]
fn a_faulty_host_fails_the_trial_of_its_rule() {
    let options = Options {
        faults: Fault::CancelIdleAccepted.into(),
        ..Options::default()
    };
    let (conclusion, log) = run(options, &["CHAT-VALIDATE-"]);
    assert!(conclusion.has_failed(), "{conclusion:?}");
    // The same failure block as the CLI prints.
    assert!(log.contains("CHAT-VALIDATE-003 (MUST)"), "{log}");
    assert!(log.contains("Expected: "), "{log}");
    assert_eq!(conclusion.num_failed, 1, "{conclusion:?}");
    assert!(conclusion.num_filtered_out > 100, "{conclusion:?}");
}

#[test]
fn the_built_in_host_passes_the_trials_a_filter_keeps() {
    let (conclusion, _) = run(Options::default(), &["TOOL-"]);
    assert!(!conclusion.has_failed(), "{conclusion:?}");
    assert!(conclusion.num_passed >= 5, "{conclusion:?}");
}

#[test]
fn an_exact_always_on_trial_runs_the_catalog_for_it() {
    let (conclusion, _) = run(Options::default(), &["--exact", "INV-FOLD-1"]);
    assert_eq!(conclusion.num_passed, 1, "{conclusion:?}");
    assert_eq!(conclusion.num_failed, 0, "{conclusion:?}");
}

#[test]
fn a_case_the_server_does_not_advertise_is_ignored_not_passed() {
    // With the built-in provider that advertises no capabilities, CHAT-001 (multipleChats)
    // is not applicable.
    let profile = std::env::temp_dir().join(format!("ahpspec-embed-{}.toml", std::process::id()));
    std::fs::write(
        &profile,
        "name = \"no chats\"\nprovider = \"ahpspec-unavailable\"\n[behaviours]\n",
    )
    .expect("profile");
    let options = Options {
        profile: Some(profile.clone()),
        ..Options::default()
    };
    let (conclusion, log) = run(options, &["--exact", "CHAT-001"]);
    let _ = std::fs::remove_file(&profile);
    assert_eq!(conclusion.num_ignored, 1, "{conclusion:?}");
    assert!(log.contains("does not advertise"), "{log}");
    assert_eq!(conclusion.num_passed, 0, "{conclusion:?}");
}

#[test]
fn list_names_every_case_id_and_runs_nothing() {
    let (conclusion, log) = run(Options::default(), &["--list"]);
    assert_eq!(
        conclusion.num_passed + conclusion.num_failed,
        0,
        "{conclusion:?}"
    );
    for id in [
        "TOOL-001: test",
        "TRANSPORT-003/concurrent-pings: test",
        "INV-FOLD-1: test",
    ] {
        assert!(log.contains(id), "{id} missing from:\n{log}");
    }
}
