//! `ahpspec fuzz --protocol aap` end to end: clean on the correct built-in server, finds a
//! fault's rule, shrinks it, and writes a trace that `run --protocol aap --suites DIR`
//! replays (failing against the fault, passing against the correct server).

mod run_support;

use run_support::{ahpspec, report_json, show, TempDir};

#[test]
fn the_correct_server_is_clean() {
    let dir = TempDir::new("aap-fuzz-clean");
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--seed",
        "5",
        "--cases",
        "40",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("40 sequences"), "{stdout}");
    assert!(stdout.contains("0 rule(s) failing"), "{stdout}");
}

#[test]
fn a_dropped_turn_stop_is_found_shrunk_and_replayable() {
    let dir = TempDir::new("aap-fuzz-fault");
    let fault = "delta-drops-turn-stop";
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--fault",
        fault,
        "--seed",
        "5",
        "--cases",
        "40",
        "--shrink-time",
        "20s",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let report = report_json(&dir.path().join("fuzz"));
    let rows: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["info"]["id"].as_str())
        .collect();
    assert!(rows.contains(&"AAP-SSE-003"), "{rows:?}\n{}", show(&out));
    let trace = dir.path().join("fuzz").join("aap-5-AAP-SSE-003");
    let text = std::fs::read_to_string(trace.join("trace.toml")).expect("trace written");
    assert!(text.contains("stream = \"delta\""), "{text}");
    let trace = trace.to_str().expect("utf-8 path");
    let replay = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--fault",
        fault,
        "--suites",
        trace,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(replay.status.code(), Some(1), "{}", show(&replay));
    let fixed = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--suites",
        trace,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(fixed.status.code(), Some(0), "{}", show(&fixed));
}

/// `--baseline`: a listed rule is seen (said so), not shrunk, and fails nothing; the same
/// campaign without it exits 1 (the test above).
#[test]
fn a_baselined_rule_is_seen_but_fails_nothing() {
    let dir = TempDir::new("aap-fuzz-baseline");
    let baseline = dir.path().join("baseline.txt");
    std::fs::write(&baseline, "AAP-SSE-003  # the known stream cut\n").expect("baseline");
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--fault",
        "delta-drops-turn-stop",
        "--seed",
        "5",
        "--cases",
        "40",
        "--baseline",
        baseline.to_str().expect("utf-8 path"),
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("seen and baselined: AAP-SSE-003"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 rule(s) failing besides baselined rules"),
        "{stdout}"
    );
    assert!(
        !dir.path().join("fuzz/aap-5-AAP-SSE-003").exists(),
        "not shrunk into a trace"
    );
}

/// The rule IDs of a fuzz report's rows, sorted.
fn rule_rows(dir: &std::path::Path) -> Vec<String> {
    let report = report_json(dir);
    let mut rows: Vec<String> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["info"]["id"].as_str().map(str::to_owned))
        .collect();
    rows.sort();
    rows
}

/// `--shard I/N`: the shards deal the campaign's sequences round-robin, so two shards
/// together run exactly the whole campaign's sequences, find the same rules with the same
/// shrunk traces, and `ahpspec merge` of their reports fails the same rows.
#[test]
fn two_shards_find_what_the_whole_campaign_finds() {
    let dir = TempDir::new("aap-fuzz-shards");
    let campaign = |report_dir: &str, shard: Option<&str>| {
        let mut args = vec![
            "fuzz",
            "--protocol",
            "aap",
            "--fault",
            "delta-drops-turn-stop,unknown-stream-as-none",
            "--seed",
            "9",
            "--cases",
            "24",
            "--shrink-time",
            "20s",
            "--report-dir",
            report_dir,
        ];
        if let Some(shard) = shard {
            args.extend(["--shard", shard]);
        }
        let out = ahpspec(&args);
        assert_eq!(out.status.code(), Some(1), "{}", show(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let whole = dir.sub("whole");
    let stdout = campaign(&whole, None);
    assert!(stdout.contains("24 sequences"), "{stdout}");
    let shards: Vec<String> = (1..=2).map(|i| dir.sub(&format!("shard-{i}"))).collect();
    for (index, shard_dir) in shards.iter().enumerate() {
        let stdout = campaign(shard_dir, Some(&format!("{}/2", index + 1)));
        assert!(stdout.contains("12 sequences"), "{stdout}");
    }
    let whole_rules = rule_rows(&std::path::Path::new(&whole).join("fuzz"));
    assert!(
        whole_rules.contains(&"AAP-SSE-003".to_owned())
            && whole_rules.contains(&"AAP-HTTP-004".to_owned()),
        "{whole_rules:?}"
    );
    let mut found_by_shards: Vec<String> = shards
        .iter()
        .flat_map(|s| rule_rows(&std::path::Path::new(s).join("fuzz")))
        .collect();
    found_by_shards.sort();
    found_by_shards.dedup();
    assert_eq!(found_by_shards, whole_rules);
    // The whole campaign's first failing sequence of each rule ran in one of the shards,
    // shrunk the same way (the other shard may find the rule in a later sequence of its own).
    for rule in &whole_rules {
        let name = format!("fuzz/aap-9-{rule}/trace.toml");
        let whole_trace =
            std::fs::read_to_string(std::path::Path::new(&whole).join(&name)).expect("trace");
        let in_shards: Vec<String> = shards
            .iter()
            .filter_map(|s| std::fs::read_to_string(std::path::Path::new(s).join(&name)).ok())
            .collect();
        assert!(in_shards.contains(&whole_trace), "{rule}: {in_shards:?}");
    }
    let merged = dir.sub("merged");
    let shard_reports: Vec<String> = shards.iter().map(|s| format!("{s}/fuzz")).collect();
    let out = ahpspec(&[
        "merge",
        &shard_reports[0],
        &shard_reports[1],
        "--report-dir",
        &merged,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rule_rows(std::path::Path::new(&merged)), whole_rules);
}

/// `--record FILE`: every exchange of the campaign lands in the capture format the AAP
/// proxy writes (one `http` record per exchange, each line of schemas/capture.schema.json),
/// and `ahpspec check` re-checks it offline through the proxy's checks: the fault's rule
/// fails there as in the campaign; the capture of a clean campaign checks clean.
#[test]
fn a_recorded_campaign_rechecked_offline_fails_the_same_rule() {
    let dir = TempDir::new("aap-fuzz-record");
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../schemas/capture.schema.json")).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    for (fault, exit) in [(Some("delta-drops-turn-stop"), 1), (None, 0)] {
        let capture = dir
            .path()
            .join(format!("{}.jsonl", fault.unwrap_or("clean")));
        let capture = capture.to_str().expect("utf-8 path");
        let mut args = vec![
            "fuzz",
            "--protocol",
            "aap",
            "--seed",
            "5",
            "--cases",
            "15",
            "--shrink-time",
            "5s",
            "--record",
            capture,
            "--report-dir",
            dir.str(),
        ];
        if let Some(fault) = fault {
            args.extend(["--fault", fault]);
        }
        let out = ahpspec(&args);
        assert_eq!(out.status.code(), Some(exit), "{}", show(&out));
        let text = std::fs::read_to_string(capture).expect("capture written");
        let (mut conns, mut media) = (std::collections::BTreeSet::new(), Vec::new());
        for line in text.lines() {
            let record: serde_json::Value = serde_json::from_str(line).expect("JSON line");
            assert!(validator.is_valid(&record), "off the schema: {line}");
            let http = record
                .get("http")
                .unwrap_or_else(|| panic!("not an exchange: {line}"));
            assert!(
                conns.insert(record["conn"].to_string()),
                "two records of one exchange: {line}"
            );
            if let Some(ct) = http["contentType"].as_str() {
                media.push(ct.split(';').next().unwrap_or(ct).trim().to_owned());
            }
            assert!(!line.contains("Bearer"), "a credential recorded: {line}");
        }
        for kind in ["application/json", "text/event-stream"] {
            assert!(
                media.iter().any(|m| m == kind),
                "no {kind} exchange: {media:?}"
            );
        }
        let checked = dir.sub(&format!("check-{}", fault.unwrap_or("clean")));
        let out = ahpspec(&["check", capture, "--report-dir", &checked]);
        assert_eq!(out.status.code(), Some(exit), "{}", show(&out));
        let report = report_json(std::path::Path::new(&checked));
        let failing: Vec<&str> = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["verdict"] == "fail")
            .filter_map(|c| c["info"]["id"].as_str())
            .collect();
        match fault {
            Some(_) => assert_eq!(failing, ["AAP-SSE-003"], "{}", show(&out)),
            None => assert!(failing.is_empty(), "{failing:?}\n{}", show(&out)),
        }
        let passing = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["verdict"] == "pass")
            .count();
        assert!(passing > 0, "nothing was judged offline: {}", show(&out));
    }
}
