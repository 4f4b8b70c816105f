//! Cases the built-in host is rightly not applicable to: a rule about agents without a
//! capability the built-in agent advertises, with the form of it that the host is checked
//! by instead. Every other case passes against the built-in host.

/// (case ID, why it does not apply to the built-in host).
pub const NOT_APPLICABLE_TO_BUILTIN: &[(&str, &str)] = &[(
    "CHAT-FORK-001",
    "the scripted agent advertises fork and side chats (issue 29); CHAT-FORK-001/unknown-kind checks the rule against it",
)];

/// Whether `case` is one of [`NOT_APPLICABLE_TO_BUILTIN`].
pub fn not_applicable_to_builtin(case: &str) -> bool {
    NOT_APPLICABLE_TO_BUILTIN.iter().any(|(id, _)| *id == case)
}

/// Cases the scripted profile leaves not testable on purpose: (case ID, why).
pub const NOT_TESTABLE_WITH_SCRIPTED_PROFILE: &[(&str, &str)] = &[
    (
        "AUTOMATION-012",
        "a schedule fires at the next whole minute: the profile does not allow that wait (schedule_waits), which would make every catalog run last up to a minute; tests/schedules.rs runs the case with it",
    ),
    (
        "AUTOMATION-013",
        "runCount counts scheduled runs: the same wait as AUTOMATION-012's",
    ),
    (
        "AUTOMATION-021",
        "an afterRuns allowance is used up by a scheduled run: the same wait as AUTOMATION-012's",
    ),
    (
        "AUTOMATION-022",
        "a disabled automation's occurrence passes unrun: the same wait as AUTOMATION-012's",
    ),
];

/// Whether `case` is one of [`NOT_TESTABLE_WITH_SCRIPTED_PROFILE`].
#[allow(dead_code)] // not every test that includes this file asks
pub fn not_testable_with_scripted_profile(case: &str) -> bool {
    NOT_TESTABLE_WITH_SCRIPTED_PROFILE
        .iter()
        .any(|(id, _)| *id == case)
}

/// The scripted profile with `schedule_waits` on (AUTOMATION-012 testable), written to a file
/// of its own in the system's temporary directory.
#[allow(dead_code)] // not every test that includes this file asks
pub fn scripted_profile_with_schedule_waits() -> std::path::PathBuf {
    let text = ahpspec::client::profile::SCRIPTED.replacen(
        "\n[session_config]",
        "\nschedule_waits = true\n\n[session_config]",
        1,
    );
    assert!(
        text.contains("schedule_waits = true"),
        "the profile's layout changed"
    );
    let path = std::env::temp_dir().join(format!(
        "ahpspec-schedule-waits-{}.toml",
        std::process::id()
    ));
    std::fs::write(&path, text).expect("temporary profile written");
    path
}

/// The verdict the correct built-in host gets on `case` with the scripted profile.
#[allow(dead_code)] // not every test that includes this file asks
pub fn expected_verdict(case: &str) -> ahpspec::verdict::Verdict {
    use ahpspec::verdict::Verdict;
    if not_applicable_to_builtin(case) {
        Verdict::NotApplicable
    } else if not_testable_with_scripted_profile(case) {
        Verdict::NotTestable
    } else {
        Verdict::Pass
    }
}
