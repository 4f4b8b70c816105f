//! Sharded runs: `run --shard I/N` takes a deterministic slice of the catalog, and
//! `ahpspec merge` of all the shards' reports gives the verdicts of one unsharded run.

#[path = "common/allocator.rs"]
mod allocator;

mod run_support;

use std::collections::BTreeMap;
use std::path::Path;

use run_support::{ahpspec, report_json, show, TempDir};

/// Every row's verdict in the report a run wrote into `dir`.
fn verdicts(dir: &str) -> BTreeMap<String, String> {
    run_support::verdicts(&report_json(Path::new(dir)))
}

/// Runs the catalog whole and in four shards (with `extra` arguments), merges the shards,
/// and checks that both give the same verdict for every row and the same exit code.
fn same_verdicts_sharded_and_whole(label: &str, extra: &[&str], exit: i32) {
    let dir = TempDir::new(label);
    let whole = dir.sub("whole");
    let mut args = vec!["run", "--report-dir", &whole];
    args.extend_from_slice(extra);
    let out = ahpspec(&args);
    assert_eq!(out.status.code(), Some(exit), "whole run\n{}", show(&out));
    let mut shard_dirs = Vec::new();
    let mut scripted_rows = 0;
    for index in 1..=4 {
        let shard_dir = dir.sub(&format!("shard-{index}"));
        let shard = format!("{index}/4");
        let mut args = vec!["run", "--shard", &shard, "--report-dir", &shard_dir];
        args.extend_from_slice(extra);
        let out = ahpspec(&args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "shard {shard}\n{}",
            show(&out)
        );
        scripted_rows += verdicts(&shard_dir)
            .keys()
            .filter(|id| ahpspec::checks::always_on(id).is_none())
            .count();
        shard_dirs.push(shard_dir);
    }
    let merged = dir.sub("merged");
    let mut args = vec!["merge", "--report-dir", &merged];
    args.extend(shard_dirs.iter().map(String::as_str));
    let out = ahpspec(&args);
    assert_eq!(out.status.code(), Some(exit), "merge\n{}", show(&out));
    let whole = verdicts(&whole);
    assert_eq!(verdicts(&merged), whole);
    // Every scripted case ran in exactly one shard.
    let scripted = whole
        .keys()
        .filter(|id| ahpspec::checks::always_on(id).is_none())
        .count();
    assert_eq!(scripted_rows, scripted);
}

#[test]
fn four_merged_shards_give_the_verdicts_of_one_run() {
    same_verdicts_sharded_and_whole("clean", &[], 0);
}

#[test]
fn four_merged_shards_of_a_faulty_host_fail_the_same_rules() {
    same_verdicts_sharded_and_whole("faulty", &["--fault", "queue-lifo,cancel-idle-accepted"], 1);
}

/// Every row of the report a run wrote into `dir`, in report order.
fn rows(dir: &str) -> Vec<(String, String)> {
    run_support::rows(&report_json(Path::new(dir)))
}

/// Runs the catalog (with `extra` arguments) whole and as two shards, merges the shards,
/// and checks that the merged report equals the whole run row by row: the same rows in the
/// same order with the same verdicts, the same header and the same unexpected failures.
/// Returns the rows.
fn two_shards_equal_whole(label: &str, extra: &[&str], exit: i32) -> Vec<(String, String)> {
    let dir = TempDir::new(label);
    let whole = dir.sub("whole");
    let mut args = vec!["run", "--report-dir", &whole];
    args.extend_from_slice(extra);
    let out = ahpspec(&args);
    assert_eq!(out.status.code(), Some(exit), "whole run\n{}", show(&out));
    let shards: Vec<String> = (1..=2).map(|i| dir.sub(&format!("shard-{i}"))).collect();
    for (index, shard_dir) in shards.iter().enumerate() {
        let shard = format!("{}/2", index + 1);
        let mut args = vec!["run", "--shard", &shard, "--report-dir", shard_dir];
        args.extend_from_slice(extra);
        let out = ahpspec(&args);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "shard {shard}\n{}",
            show(&out)
        );
    }
    let merged = dir.sub("merged");
    let out = ahpspec(&["merge", &shards[0], &shards[1], "--report-dir", &merged]);
    assert_eq!(out.status.code(), Some(exit), "merge\n{}", show(&out));
    let (whole_rows, merged_rows) = (rows(&whole), rows(&merged));
    assert_eq!(merged_rows.len(), whole_rows.len(), "row count");
    for (at, (merged_row, whole_row)) in merged_rows.iter().zip(&whole_rows).enumerate() {
        assert_eq!(merged_row, whole_row, "row {at}");
    }
    let (whole, merged) = (
        report_json(Path::new(&whole)),
        report_json(Path::new(&merged)),
    );
    for field in ["protocolVersion", "unexpectedFailures", "tally", "fault"] {
        assert_eq!(merged[field], whole[field], "{field}");
    }
    whole_rows
}

/// Two protocol versions (and `fault`, if any): every case has a row per version.
fn two_versions_sharded_equal_whole(label: &str, fault: Option<&str>, exit: i32) {
    let mut extra = vec!["--protocol-version", "1.0.0,0.9.0"];
    if let Some(fault) = fault {
        extra.extend(["--fault", fault]);
    }
    let rows = two_shards_equal_whole(label, &extra, exit);
    for version in ["1.0.0", "0.9.0"] {
        assert!(
            rows.iter()
                .any(|(k, _)| k.ends_with(&format!("@{version}"))),
            "the whole run has rows of {version}"
        );
    }
}

#[test]
fn two_merged_shards_of_two_versions_equal_the_whole_run() {
    two_versions_sharded_equal_whole("versions-clean", None, 0);
}

#[test]
fn two_merged_shards_of_two_versions_of_a_faulty_host_fail_both_versions() {
    two_versions_sharded_equal_whole(
        "versions-faulty",
        Some("cancel-idle-accepted,binary-frame"),
        1,
    );
}

/// AAP: a case may share its ID with its rule's always-on check (AAP-OPTION-003); the
/// merge keeps both rows, as the whole run has them.
#[test]
fn two_merged_aap_shards_equal_the_whole_run() {
    let rows = two_shards_equal_whole("aap", &["--protocol", "aap"], 0);
    let shared = rows.iter().filter(|(k, _)| k == "AAP-OPTION-003").count();
    assert_eq!(shared, 2, "the case and the always-on check");
}

#[test]
fn a_merge_missing_a_shard_or_of_other_runs_is_refused() {
    let dir = TempDir::new("refused");
    let one = dir.sub("one");
    let two = dir.sub("two");
    for (shard, out_dir) in [("1/2", &one), ("2/3", &two)] {
        let out = ahpspec(&[
            "run",
            "--shard",
            shard,
            "--filter",
            "TRANSPORT-*",
            "--report-dir",
            out_dir,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    }
    let out = ahpspec(&["merge", &one, "--report-dir", &dir.sub("m1")]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("shard 2/2 is missing"));
    let out = ahpspec(&["merge", &one, &two, "--report-dir", &dir.sub("m2")]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    for bad in ["0/4", "5/4", "x"] {
        let out = ahpspec(&["run", "--shard", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}\n{}", show(&out));
    }
}

/// Shards of different selections or protocol versions are not halves of one run: merging
/// them is a usage error that names what differs, and writes no report.
#[test]
fn a_merge_of_shards_of_different_selections_or_versions_is_refused() {
    let dir = TempDir::new("refused-selection");
    let runs: [(&str, &[&str]); 4] = [
        ("1/2", &["--filter", "TRANSPORT-*"]),
        ("2/2", &["--filter", "TRANSPORT-*", "--level", "MUST"]),
        (
            "2/2",
            &["--filter", "TRANSPORT-*", "--exclude", "TRANSPORT-001"],
        ),
        (
            "2/2",
            &["--filter", "TRANSPORT-*", "--protocol-version", "0.9.0"],
        ),
    ];
    let mut dirs = Vec::new();
    for (at, (shard, extra)) in runs.iter().enumerate() {
        let out_dir = dir.sub(&format!("run-{at}"));
        let mut args = vec!["run", "--shard", shard, "--report-dir", &out_dir];
        args.extend_from_slice(extra);
        let out = ahpspec(&args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        dirs.push(out_dir);
    }
    for (other, what) in [(1, "selection"), (2, "selection"), (3, "protocol version")] {
        let merged = dir.sub(&format!("merged-{other}"));
        let out = ahpspec(&["merge", &dirs[0], &dirs[other], "--report-dir", &merged]);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(what), "{what}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(!Path::new(&merged).join("report.json").exists());
    }
}

/// Two fuzz shards of one seeded campaign run distinct seeds, split `--cases`, and merge
/// into one report that names the rule a fault breaks.
#[test]
fn fuzz_shards_run_distinct_seeds_and_merge() {
    let dir = TempDir::new("fuzz");
    let mut seeds = Vec::new();
    let mut shard_dirs = Vec::new();
    for index in 1..=2 {
        let shard_dir = dir.sub(&format!("fuzz-{index}"));
        let shard = format!("{index}/2");
        let out = ahpspec(&[
            "fuzz",
            "--fault",
            "cancel-idle-accepted",
            "--seed",
            "7",
            "--shard",
            &shard,
            "--cases",
            "200",
            "--shrink-time",
            "2s",
            "--report-dir",
            &shard_dir,
        ]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let seed = stdout
            .lines()
            .find_map(|l| l.split("campaign seed ").nth(1))
            .map(str::to_owned);
        assert!(seed.is_some(), "{}", show(&out));
        seeds.push(seed);
        shard_dirs.push(format!("{shard_dir}/fuzz"));
    }
    assert_ne!(seeds[0], seeds[1]);
    let merged = dir.sub("merged");
    let out = ahpspec(&[
        "merge",
        &shard_dirs[0],
        &shard_dirs[1],
        "--report-dir",
        &merged,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let verdicts = verdicts(&merged);
    assert_eq!(
        verdicts.get("CHAT-VALIDATE-003").map(String::as_str),
        Some("fail"),
        "{verdicts:?}"
    );
    let out = ahpspec(&["fuzz", "--shard", "3/4", "--cases", "2"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}
