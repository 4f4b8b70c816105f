//! `ahpspec merge`: several runs' `report.json` — usually the shards of one catalog run on
//! parallel CI jobs — combined into one report, as if one run had taken every case. Rows
//! that several runs report (the always-on checks, prerequisite rules) are combined: a
//! verdict about the server outranks "saw nothing", findings are kept, and the baseline is
//! applied to the merged whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::engine::baseline::Baseline;
use crate::engine::{reconcile, Shard};
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
        strict: reports.iter().any(|r| r.strict),
        tally: Tally::default(),
        cases: merge_rows(reports.iter().flat_map(|r| r.cases.iter())),
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

/// One row per case ID, in catalog order (the built-in suites'), then prerequisite rows,
/// then always-on rows, each group in the order first seen.
fn merge_rows<'a>(rows: impl Iterator<Item = &'a CaseResult>) -> Vec<CaseResult> {
    let mut by_id: Vec<(String, Vec<&CaseResult>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for row in rows {
        match index.get(&row.info.id) {
            Some(&at) => by_id[at].1.push(row),
            None => {
                index.insert(row.info.id.clone(), by_id.len());
                by_id.push((row.info.id.clone(), vec![row]));
            }
        }
    }
    let catalog_order: HashMap<String, usize> = Catalog::embedded()
        .map(|catalog| {
            catalog
                .cases
                .into_iter()
                .enumerate()
                .map(|(at, case)| (case.info.id, at))
                .collect()
        })
        .unwrap_or_default();
    let group = |row: &CaseResult| match row.info.source.as_str() {
        "builtin" => 2,
        "prerequisite" => 1,
        _ => 0,
    };
    let mut merged: Vec<(usize, usize, usize, CaseResult)> = by_id
        .into_iter()
        .enumerate()
        .filter_map(|(seen, (id, rows))| {
            let row = combine(&rows)?;
            let order = catalog_order.get(&id).copied().unwrap_or(usize::MAX);
            Some((group(&row), order, seen, row))
        })
        .collect();
    merged.sort_by_key(|(group, order, seen, _)| (*group, *order, *seen));
    merged.into_iter().map(|(_, _, _, row)| row).collect()
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
