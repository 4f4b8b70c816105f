//! The authentication cases (issue 25, i25c) are gated as the issue asks: a server whose
//! agents advertise no protected resource finds them not applicable, a target profile without
//! `[auth]` leaves them not testable; and the profile's token is a secret that no report or
//! capture of a run shows.

use std::path::PathBuf;

use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, Options};
use ahpspec::host::variants::Variants;
use ahpspec::host::{self, HostConfig};
use ahpspec::rows::Quiet;
use ahpspec::verdict::{RunReport, Verdict};

mod run_support;
use run_support::{ahpspec, show, TempDir};

/// The cases of suites/auth.toml, read from the suite itself.
fn auth_cases() -> Vec<String> {
    let text = std::fs::read_to_string(crate_root().join("suites/auth.toml")).expect("suite");
    let cases = ahpspec::suite::Catalog::parse_suite("auth.toml", &text).expect("auth.toml parses");
    assert!(cases.len() >= 7, "only {} auth cases", cases.len());
    cases.into_iter().map(|case| case.info.id).collect()
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

async fn run(options: Options) -> RunReport {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts")
}

fn only(ids: &[String]) -> Selection {
    Selection {
        filter: ids.to_vec(),
        ..Selection::default()
    }
}

/// Every one of `ids` ran with verdict `want`; otherwise the others, named.
fn assert_all(report: &RunReport, ids: &[String], want: Verdict, context: &str) {
    let wrong: Vec<(&String, Option<Verdict>)> = ids
        .iter()
        .map(|id| {
            let case = report.cases.iter().find(|case| &case.info.id == id);
            (id, case.map(|case| case.verdict))
        })
        .filter(|(_, verdict)| *verdict != Some(want))
        .collect();
    assert!(
        wrong.is_empty(),
        "{context}: auth cases not {want:?}: {wrong:?}"
    );
}

/// The scripted profile without its `[auth]` table, or with another token.
fn scripted_profile(auth: Option<&str>) -> String {
    let text = std::fs::read_to_string(crate_root().join("profiles/ahpspec-scripted.toml"))
        .expect("profile");
    let start = text
        .find("[auth]")
        .expect("the scripted profile has [auth]");
    let end = start
        + text[start..]
            .find("\n\n")
            .expect("a blank line after [auth]");
    let replacement = auth.unwrap_or_default();
    format!("{}{}{}", &text[..start], replacement, &text[end..])
}

#[tokio::test]
async fn the_auth_cases_pass_against_the_built_in_host() {
    let ids = auth_cases();
    let report = run(Options {
        selection: only(&ids),
        ..Options::default()
    })
    .await;
    assert_all(&report, &ids, Verdict::Pass, "the built-in host");
}

#[tokio::test]
async fn a_host_whose_agents_protect_nothing_finds_them_not_applicable() {
    let host = host::spawn(HostConfig {
        variants: Variants {
            no_protected_agent: true,
            ..Variants::default()
        },
        ..HostConfig::default()
    })
    .await
    .expect("host starts");
    let ids = auth_cases();
    // Without [auth] too: a server that protects nothing is not applicable whatever the
    // profile says, never "add a token to your profile".
    let dir = TempDir::new("auth-na");
    let profile = dir.path().join("profile.toml");
    std::fs::write(&profile, scripted_profile(None)).expect("profile written");
    for profile in [None, Some(profile)] {
        let report = run(Options {
            url: Some(host.url().to_owned()),
            selection: only(&ids),
            profile: profile.clone(),
            ..Options::default()
        })
        .await;
        let context = format!("no protected agent, profile {profile:?}");
        assert_all(&report, &ids, Verdict::NotApplicable, &context);
    }
    host.shutdown().await;
}

/// A host may let a pushed token resume every call waiting for its resource, whoever pushed
/// it: no rule says whose calls a token is for. The tool-auth cases each push the token and
/// wait for their own call, so run side by side against such a host one case's token would
/// resolve another's call (TOOL-010/other-resource saw it in its silence, TOOL-010/decline
/// found its call running again): their `exclusive` group keeps them apart, and they pass.
#[tokio::test]
async fn tool_auth_cases_pass_against_a_host_whose_tokens_resume_every_call() {
    let host = host::spawn(HostConfig {
        variants: Variants {
            host_wide_tool_tokens: true,
            ..Variants::default()
        },
        ..HostConfig::default()
    })
    .await
    .expect("host starts");
    let mut ids: Vec<String> = auth_cases()
        .into_iter()
        .filter(|id| id.starts_with("TOOL-"))
        .collect();
    assert!(ids.len() >= 5, "the tool-auth cases of auth.toml: {ids:?}");
    ids.push("TOOL-011/auth".to_owned());
    let report = run(Options {
        url: Some(host.url().to_owned()),
        selection: only(&ids),
        ..Options::default()
    })
    .await;
    assert_all(&report, &ids, Verdict::Pass, "host-wide tool tokens");
    host.shutdown().await;
}

#[tokio::test]
async fn a_profile_without_auth_leaves_them_not_testable() {
    let dir = TempDir::new("auth-nt");
    let profile = dir.path().join("profile.toml");
    std::fs::write(&profile, scripted_profile(None)).expect("profile written");
    let ids = auth_cases();
    let report = run(Options {
        selection: only(&ids),
        profile: Some(profile),
        ..Options::default()
    })
    .await;
    assert_all(
        &report,
        &ids,
        Verdict::NotTestable,
        "a profile without [auth]",
    );
}

/// A profile token the built-in host does not accept: the cases that push it fail, and
/// neither their failure blocks, the reports nor the capture show it.
#[test]
fn the_profiles_token_reaches_no_report_or_capture() {
    let token = "zq-profile-token-4711";
    let dir = TempDir::new("auth-secret");
    let profile = dir.sub("profile.toml");
    let auth = format!(
        "[auth]\nprovider = \"ahpspec-protected\"\nresource = \"https://agent.ahpspec.test/\"\ntoken = \"{token}\""
    );
    std::fs::write(&profile, scripted_profile(Some(&auth))).expect("profile written");
    let reports = dir.sub("reports");
    let capture = dir.sub("capture.jsonl");
    let filter = auth_cases().join(",");
    let out = ahpspec(&[
        "run",
        "--target-profile",
        &profile,
        "--filter",
        &filter,
        "--timeout",
        "2s",
        "--record",
        &capture,
        "--report-dir",
        &reports,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let mut looked = 0;
    let mut shown = vec![String::from_utf8_lossy(&out.stdout).into_owned()];
    shown.push(String::from_utf8_lossy(&out.stderr).into_owned());
    for entry in std::fs::read_dir(&reports).expect("reports") {
        let path = entry.expect("entry").path();
        shown.push(std::fs::read_to_string(&path).expect("report text"));
    }
    shown.push(std::fs::read_to_string(&capture).expect("capture"));
    for text in &shown {
        looked += text.len();
        assert!(!text.contains(token), "the token shows in:\n{text}");
    }
    assert!(looked > 10_000, "only {looked} bytes looked at");
    // The token did go out, and the host refused it (the case of AUTH-004 fails).
    assert!(
        shown.iter().any(|text| text.contains("AUTH-004")),
        "no report names AUTH-004"
    );
}

/// A server may echo the token anywhere (an error message, a log line): once a profile is
/// loaded, its token is redacted from any text the harness writes, not only from the
/// `token` member of `authenticate`.
#[test]
fn a_loaded_profiles_token_is_redacted_wherever_it_appears() {
    let token = "zq-echoed-token-0815";
    let dir = TempDir::new("auth-learned");
    let path = dir.path().join("profile.toml");
    let auth =
        format!("[auth]\nprovider = \"p\"\nresource = \"https://r.example/\"\ntoken = \"{token}\"");
    std::fs::write(&path, scripted_profile(Some(&auth))).expect("profile written");
    let said = format!("{{\"error\":{{\"message\":\"the token {token} has expired\"}}}}");
    assert!(
        ahpspec::redact::text(&said).contains(token),
        "redacted before the profile loads"
    );
    ahpspec::client::Profile::load(&path).expect("profile loads");
    let shown = ahpspec::redact::text(&said).into_owned();
    assert!(
        !shown.contains(token) && shown.contains("has expired"),
        "{shown}"
    );
}

#[test]
fn a_profiles_debug_form_hides_the_token() {
    let text = scripted_profile(Some(
        "[auth]\nprovider = \"p\"\nresource = \"https://r.example/\"\ntoken = \"zq-debug-token-1\"",
    ));
    let profile = ahpspec::client::Profile::parse("p.toml", &text).expect("profile parses");
    let shown = format!("{profile:?}");
    assert!(
        shown.contains("https://r.example/") && !shown.contains("zq-debug-token-1"),
        "{shown}"
    );
}
