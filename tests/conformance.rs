//! The whole catalog against the built-in reference host: every case must pass.

use ahpspec::certify::{certify, Options};
use ahpspec::engine::Quiet;
use ahpspec::verdict::Verdict;

#[tokio::test]
async fn every_case_passes_against_the_reference_host() {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let report = certify(&Options::default(), &mut Quiet, rx)
        .await
        .expect("harness starts");
    let mut problems = Vec::new();
    for case in &report.cases {
        if case.verdict != Verdict::Pass {
            let finding = case
                .findings
                .first()
                .map(|f| {
                    format!(
                        "\n      expected: {}\n      actual:   {}\n      at {:?}",
                        f.expected, f.actual, f.step
                    )
                })
                .unwrap_or_default();
            problems.push(format!(
                "{} [{}] {}{}",
                case.info.id,
                case.verdict.as_str(),
                case.summary,
                finding
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} cases did not pass:\n{}",
        problems.len(),
        report.cases.len(),
        problems.join("\n")
    );
    assert!(report.cases.len() >= 10);
}
