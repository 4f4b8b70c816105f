//! `ahpspec merge`: several runs' `report.json` — usually the shards of one catalog run on
//! parallel CI jobs — combined into one report, as if one run had taken every case. Rows
//! that several runs report (the always-on checks, prerequisite rules) are combined: a
//! verdict about the server outranks "saw nothing", findings are kept, and the baseline is
//! applied to the merged whole. A row is a case at a protocol version: a run of several
//! versions has one row per case and version, and so has the merge of its shards. Reports of
//! different targets, faults, versions or selections are refused, never mixed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::catalog::Shard;
use crate::rows::baseline::Baseline;
use crate::rows::reconcile;
use crate::suite::Catalog;
use crate::verdict::{CaseResult, RunReport, Tally, Verdict};

/// Why reports could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not an ahpspec report.json: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("nothing to merge: name at least one report directory or report.json")]
    Nothing,
    #[error("the reports are of different runs: {what} {first:?} and {other:?}")]
    Mismatch {
        what: &'static str,
        first: String,
        other: String,
    },
    #[error("shard {0} is merged twice")]
    DuplicateShard(String),
    #[error("shard {missing} is missing: a merge of some shards would certify only their cases")]
    MissingShard { missing: String },
    #[error("cannot merge a sharded report ({0}) with an unsharded one")]
    MixedShards(String),
}

/// Reads a run's report: a `report.json`, or a directory holding one.
pub fn load(path: &Path) -> Result<RunReport, MergeError> {
    let file = if path.is_dir() {
        path.join(crate::report::JSON_FILE)
    } else {
        path.to_owned()
    };
    let text = std::fs::read_to_string(&file).map_err(|source| MergeError::Read {
        path: file.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|e| MergeError::Parse {
        path: file,
        message: e.to_string(),
    })
}

/// Merges runs of the same target into one report, with the tally, unexpected failures
/// and stale baseline entries computed anew over the whole.
pub fn merge(
    reports: Vec<RunReport>,
    baseline: Option<&Baseline>,
) -> Result<RunReport, MergeError> {
    let first = reports.first().ok_or(MergeError::Nothing)?;
    for other in &reports[1..] {
        same("target", &first.target, &other.target)?;
        same(
            "protocol version",
            &first.protocol_version,
            &other.protocol_version,
        )?;
        same(
            "fault",
            &format!("{:?}", first.fault),
            &format!("{:?}", other.fault),
        )?;
        same(
            "selection",
            first.selection.as_deref().unwrap_or("the whole catalog"),
            other.selection.as_deref().unwrap_or("the whole catalog"),
        )?;
    }
    check_shards(&reports)?;
    let mut merged = RunReport {
        format: first.format,
        tool: first.tool.clone(),
        tool_version: first.tool_version.clone(),
        target: first.target.clone(),
        fault: first.fault.clone(),
        protocol_version: first.protocol_version.clone(),
        started_at: reports
            .iter()
            .map(|r| r.started_at.clone())
            .min()
            .unwrap_or_default(),
        // The shards ran side by side: the merged run took as long as the longest.
        duration_ms: reports.iter().map(|r| r.duration_ms).fold(0.0, f64::max),
        interrupted: reports.iter().any(|r| r.interrupted),
        shard: None,
        selection: first.selection.clone(),
        strict: reports.iter().any(|r| r.strict),
        tally: Tally::default(),
        cases: merge_rows(
            reports.iter().flat_map(|r| r.cases.iter()),
            &first.protocol_version,
        ),
        stale_baseline: Vec::new(),
        unexpected_failures: Vec::new(),
    };
    reconcile(&mut merged, baseline);
    Ok(merged)
}

fn same(what: &'static str, first: &str, other: &str) -> Result<(), MergeError> {
    if first == other {
        Ok(())
    } else {
        Err(MergeError::Mismatch {
            what,
            first: first.to_owned(),
            other: other.to_owned(),
        })
    }
}

/// Sharded reports must be all the shards of one split, each once.
fn check_shards(reports: &[RunReport]) -> Result<(), MergeError> {
    let shards: Vec<Option<Shard>> = reports
        .iter()
        .map(|r| r.shard.as_deref().and_then(|s| s.parse().ok()))
        .collect();
    let Some(Some(first)) = shards.iter().find(|s| s.is_some()).copied() else {
        return Ok(());
    };
    let mut seen = vec![false; first.count];
    for shard in &shards {
        let Some(shard) = shard else {
            return Err(MergeError::MixedShards(first.to_string()));
        };
        if shard.count != first.count {
            return Err(MergeError::Mismatch {
                what: "shard split",
                first: first.to_string(),
                other: shard.to_string(),
            });
        }
        if std::mem::replace(&mut seen[shard.index - 1], true) {
            return Err(MergeError::DuplicateShard(shard.to_string()));
        }
    }
    match seen.iter().position(|s| !s) {
        Some(missing) => Err(MergeError::MissingShard {
            missing: format!("{}/{}", missing + 1, first.count),
        }),
        None => Ok(()),
    }
}

/// A row's identity across runs: its case ID, in a run of several protocol versions the
/// version it ran at (the same case at 1.0.0 and at 0.9.0 are two rows), and whether it is
/// an always-on check's row (an AAP case may share its ID with the always-on check of its
/// rule: two rows).
type RowKey = (String, Option<String>, bool);

/// One row per case ID and protocol version, in the order a single run writes them: version
/// by version (as `versions`, the report's comma-separated header, lists them), and within
/// a version the cases in catalog order (the built-in suites'), then prerequisite rows, then
/// always-on rows, the rows the catalog does not order in the order first seen.
fn merge_rows<'a>(rows: impl Iterator<Item = &'a CaseResult>, versions: &str) -> Vec<CaseResult> {
    let mut by_key: Vec<(RowKey, Vec<&CaseResult>)> = Vec::new();
    let mut index: HashMap<RowKey, usize> = HashMap::new();
    for row in rows {
        let always_on = row.info.source == "builtin";
        let key = (row.info.id.clone(), row.protocol_version.clone(), always_on);
        match index.get(&key) {
            Some(&at) => by_key[at].1.push(row),
            None => {
                index.insert(key.clone(), by_key.len());
                by_key.push((key, vec![row]));
            }
        }
    }
    let catalog_order = catalog_order();
    let version_order: Vec<&str> = versions.split(',').collect();
    let group = |row: &CaseResult| match row.info.source.as_str() {
        "builtin" => 2,
        "prerequisite" => 1,
        _ => 0,
    };
    let mut merged: Vec<((usize, usize, usize, usize), CaseResult)> = by_key
        .into_iter()
        .enumerate()
        .filter_map(|(seen, ((id, version, _), rows))| {
            let row = combine(&rows)?;
            let version = version
                .and_then(|v| version_order.iter().position(|x| *x == v))
                .unwrap_or(0);
            // Always-on rows keep the order every run writes them in (first seen).
            let group = group(&row);
            let order = match group {
                2 => usize::MAX,
                _ => catalog_order.get(&id).copied().unwrap_or(usize::MAX),
            };
            Some(((version, group, order, seen), row))
        })
        .collect();
    merged.sort_by_key(|(order, _)| *order);
    merged.into_iter().map(|(_, row)| row).collect()
}

/// Each case ID of the built-in suites (AHP's, then AAP's) with its place in the catalog.
fn catalog_order() -> HashMap<String, usize> {
    let ahp = Catalog::embedded()
        .map(|catalog| catalog.cases.into_iter().map(|case| case.info.id).collect())
        .unwrap_or_else(|_| Vec::new());
    let aap = crate::aap::suite::AapCatalog::embedded()
        .map(|catalog| catalog.cases.into_iter().map(|case| case.info.id).collect())
        .unwrap_or_else(|_| Vec::new());
    ahp.into_iter()
        .chain(aap)
        .enumerate()
        .map(|(at, id)| (id, at))
        .collect()
}

/// One row from the reports of the same case or check. A verdict about the server
/// (pass, fail, warn, info, blocked, harness error) outranks "not testable" and "not
/// applicable", which only say that run's cases did not get there.
fn combine(rows: &[&CaseResult]) -> Option<CaseResult> {
    let judged = |v: Verdict| !matches!(v, Verdict::NotTestable | Verdict::NotApplicable);
    let verdict = if rows.iter().any(|r| judged(r.verdict)) {
        rows.iter()
            .map(|r| r.verdict)
            .filter(|v| judged(*v))
            .fold(Verdict::Pass, Verdict::worst)
    } else if rows.iter().any(|r| r.verdict == Verdict::NotTestable) {
        Verdict::NotTestable
    } else {
        Verdict::NotApplicable
    };
    let first = *rows
        .iter()
        .find(|r| r.verdict == verdict)
        .or(rows.first())?;
    let mut row = first.clone();
    if rows.len() > 1 {
        row.verdict = verdict;
        row.summary = if rows.iter().all(|r| r.summary == first.summary) {
            first.summary.clone()
        } else {
            format!("{} (merged from {} runs)", first.summary, rows.len())
        };
        row.findings = rows.iter().flat_map(|r| r.findings.clone()).collect();
        row.findings.truncate(20);
        row.transcript = rows.iter().flat_map(|r| r.transcript.clone()).collect();
        row.duration_ms = rows.iter().map(|r| r.duration_ms).sum();
        row.blocked_by = rows
            .iter()
            .filter(|r| r.verdict == Verdict::Blocked)
            .find_map(|r| r.blocked_by.clone())
            .filter(|_| verdict == Verdict::Blocked);
    }
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{CaseInfo, Level};

    fn row(id: &str, version: &str, verdict: Verdict) -> CaseResult {
        CaseResult {
            info: CaseInfo {
                id: id.to_owned(),
                level: Level::Must,
                area: "cancel".to_owned(),
                spec: String::new(),
                requirement: String::new(),
                does: String::new(),
                source: "suites/cancel.toml:1".to_owned(),
            },
            verdict,
            summary: verdict.as_str().to_owned(),
            findings: Vec::new(),
            blocked_by: None,
            protocol_version: Some(version.to_owned()),
            transcript: Vec::new(),
            duration_ms: 1.0,
            rerun: String::new(),
        }
    }

    fn shard(index: usize, cases: Vec<CaseResult>) -> RunReport {
        RunReport {
            shard: Some(format!("{index}/2")),
            ..RunReport::of("builtin".into(), "1.0.0,0.9.0".into(), cases)
        }
    }

    #[test]
    fn each_version_of_a_case_stays_a_row_of_its_own() {
        let one = shard(
            1,
            vec![
                row("CANCEL-001", "1.0.0", Verdict::Pass),
                row("CANCEL-001", "0.9.0", Verdict::Fail),
            ],
        );
        let two = shard(
            2,
            vec![
                row("CANCEL-002", "1.0.0", Verdict::Fail),
                row("CANCEL-002", "0.9.0", Verdict::Pass),
            ],
        );
        let merged = merge(vec![one, two], None).expect("merges");
        let keys: Vec<(String, Verdict)> =
            merged.cases.iter().map(|c| (c.key(), c.verdict)).collect();
        assert_eq!(
            keys,
            [
                ("CANCEL-001@1.0.0".to_owned(), Verdict::Pass),
                ("CANCEL-002@1.0.0".to_owned(), Verdict::Fail),
                ("CANCEL-001@0.9.0".to_owned(), Verdict::Fail),
                ("CANCEL-002@0.9.0".to_owned(), Verdict::Pass),
            ]
        );
        assert_eq!(
            merged.unexpected_failures,
            ["CANCEL-002@1.0.0", "CANCEL-001@0.9.0"]
        );
    }

    #[test]
    fn reports_of_other_targets_faults_versions_or_selections_are_refused() {
        let base = || shard(1, vec![row("CANCEL-001", "1.0.0", Verdict::Pass)]);
        let others: [(&str, RunReport); 4] = [
            (
                "target",
                RunReport {
                    target: "ws://127.0.0.1:1".into(),
                    ..shard(2, Vec::new())
                },
            ),
            (
                "fault",
                RunReport {
                    fault: Some("queue-lifo".into()),
                    ..shard(2, Vec::new())
                },
            ),
            (
                "protocol version",
                RunReport {
                    protocol_version: "1.0.0".into(),
                    ..shard(2, Vec::new())
                },
            ),
            (
                "selection",
                RunReport {
                    selection: Some("--level MUST".into()),
                    ..shard(2, Vec::new())
                },
            ),
        ];
        for (what, other) in others {
            match merge(vec![base(), other], None) {
                Err(MergeError::Mismatch { what: found, .. }) => assert_eq!(found, what),
                other => panic!("{what}: {other:?}"),
            }
        }
        assert!(merge(vec![base(), shard(2, Vec::new())], None).is_ok());
    }
}
