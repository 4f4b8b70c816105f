//! `ahpspec fuzz --protocol aap`: seeded random request sequences ([`generate`]) run as
//! AAP cases against the server (a fresh built-in server per sequence when no URL is
//! given) with every always-on check; each rule's first failing sequence is shrunk (whole
//! operations removed while the rule still fails) and written as a suite file that
//! `ahpspec run --protocol aap --suites DIR` replays.

pub mod generate;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::case::{run_case, CaseContext};
use super::checks::{Observer, AAP_ALWAYS_ON, SECRET_PREFIX};
use super::http::{Client, Target};
use super::runner::{AapError, BUILTIN_TOKEN};
use super::suite::{AapCase, LocatedStep, Step};
use super::Agent;
use crate::engine::glob;
use crate::schema::SchemaSet;
use crate::verdict::{CaseInfo, CaseResult, Level, Verdict};
use generate::{Generator, Op, Rng};

/// What to fuzz and for how long.
#[derive(Debug, Clone)]
pub struct AapFuzzOptions {
    /// `None`: a fresh built-in server per sequence, with `fault`.
    pub url: Option<String>,
    pub fault: Option<String>,
    pub token: Option<String>,
    pub seed: u64,
    pub cases: Option<u64>,
    pub duration: Duration,
    pub shrink_time: Duration,
    pub max_len: usize,
    pub timeout: Duration,
    /// Rules not judged (globs).
    pub exclude: Vec<String>,
}

/// One rule found failing, with its shrunk sequence.
#[derive(Debug, Clone)]
pub struct AapFound {
    pub rule: String,
    /// Which generated sequence failed first (0-based).
    pub sequence: u64,
    pub original_len: usize,
    pub ops: Vec<Op>,
    /// The run of the shrunk sequence.
    pub result: CaseResult,
    pub expected: String,
    pub actual: String,
}

/// What a campaign did.
#[derive(Debug, Clone)]
pub struct AapFuzzOutcome {
    pub seed: u64,
    pub sequences: u64,
    pub operations: usize,
    pub found: Vec<AapFound>,
}

/// Where sequences run: the URL, or built-in servers.
struct Runner {
    options: AapFuzzOptions,
    schemas: Arc<SchemaSet>,
}

/// The rules one run broke, with the first miss of each.
type Broken = BTreeMap<String, (String, String)>;

impl Runner {
    async fn with_target<T>(
        &self,
        work: impl AsyncFnOnce(Target, Option<String>) -> Result<T, AapError>,
    ) -> Result<T, AapError> {
        if let Some(url) = &self.options.url {
            let target = Target::parse(url).map_err(|e| AapError::Usage(e.to_string()))?;
            return work(target, self.options.token.clone()).await;
        }
        let faults = match self.options.fault.as_deref() {
            Some(names) => names
                .parse::<crate::aaphost::AapFaultSet>()
                .map_err(|e| AapError::Usage(e.to_string()))?,
            None => crate::aaphost::AapFaultSet::default(),
        };
        let server = crate::aaphost::spawn(crate::aaphost::AapHostConfig {
            faults,
            token: Some(BUILTIN_TOKEN.to_owned()),
            ..Default::default()
        })
        .await
        .map_err(AapError::Host)?;
        let target =
            Target::parse(&server.base_url()).map_err(|e| AapError::Usage(e.to_string()))?;
        let out = work(target, Some(BUILTIN_TOKEN.to_owned())).await;
        server.shutdown().await;
        out
    }

    async fn agent(&self) -> Result<Agent, AapError> {
        self.with_target(async |target, token| {
            let mut client = Client::new(target, token, self.options.timeout);
            let request = super::http::Request {
                method: "GET".into(),
                path: "/meta".into(),
                ..Default::default()
            };
            let response = client
                .send(&request)
                .await
                .map_err(|e| AapError::Unreachable(e.to_string()))?;
            response.json().and_then(Agent::choose).ok_or_else(|| {
                AapError::Unreachable(format!(
                    "GET /meta answered {} without an agent",
                    response.status
                ))
            })
        })
        .await
    }

    /// Runs `ops` as one case; the rules it broke (excluded ones left out).
    async fn execute(
        &self,
        agent: &Agent,
        ops: &[Op],
        seed: u64,
    ) -> Result<(Broken, CaseResult), AapError> {
        let case = as_case(ops, "AAP-SESSION-006/fuzz", Level::Must);
        self.with_target(async |target, token| {
            let mut vars: HashMap<String, String> = agent.vars().into_iter().collect();
            vars.insert("run".into(), format!("fz{seed}"));
            vars.insert("secret".into(), format!("{SECRET_PREFIX}fz{seed}"));
            let ctx = CaseContext {
                client: Client::new(target, token, self.options.timeout),
                agent: Arc::new(agent.clone()),
                vars,
                observer: Observer::new(Arc::clone(&self.schemas)),
                rerun: String::new(),
            };
            let outcome = run_case(&case, ctx).await;
            let mut broken = Broken::new();
            // The always-on rows' own words first: they say more than "blocked by".
            for violation in &outcome.observer.violations {
                broken
                    .entry(violation.rule.id().to_owned())
                    .or_insert((violation.expected.clone(), violation.actual.clone()));
            }
            for finding in &outcome.result.findings {
                // A miss of the sequence's own (placeholder) case is its rule's, slug dropped.
                let rule = finding.rule.split('/').next().unwrap_or_default();
                broken
                    .entry(rule.to_owned())
                    .or_insert((finding.expected.clone(), finding.actual.clone()));
            }
            if outcome.result.verdict == Verdict::HarnessError {
                return Err(AapError::Usage(outcome.result.summary.clone()));
            }
            broken.retain(|rule, _| !self.options.exclude.iter().any(|g| glob(g, rule)));
            Ok((broken, outcome.result))
        })
        .await
    }

    /// Removes whole operations while `rule` still fails, until nothing more goes or the
    /// time is up.
    async fn shrink(
        &self,
        agent: &Agent,
        mut ops: Vec<Op>,
        rule: &str,
        seed: u64,
    ) -> Result<Vec<Op>, AapError> {
        let started = Instant::now();
        let mut changed = true;
        while changed && started.elapsed() < self.options.shrink_time {
            changed = false;
            for index in (0..ops.len()).rev() {
                if started.elapsed() >= self.options.shrink_time || ops.len() == 1 {
                    break;
                }
                let mut candidate = ops.clone();
                candidate.remove(index);
                if let Ok((broken, _)) = self.execute(agent, &candidate, seed).await {
                    if broken.contains_key(rule) {
                        ops = candidate;
                        changed = true;
                    }
                }
            }
        }
        Ok(ops)
    }
}

/// The steps of `ops` as one case (`at` = the operation's number).
pub fn as_case(ops: &[Op], id: &str, level: Level) -> AapCase {
    let steps = ops
        .iter()
        .enumerate()
        .flat_map(|(n, op)| {
            op.iter().map(move |step| LocatedStep {
                step: step.clone(),
                at: format!("operation {}", n + 1),
            })
        })
        .collect();
    AapCase {
        info: CaseInfo {
            id: id.to_owned(),
            level,
            area: "aap/fuzz".into(),
            spec: "aap/RULES.md".into(),
            requirement: "A random request sequence breaks no rule.".into(),
            does: "Runs a generated request sequence.".into(),
            source: "fuzz".into(),
        },
        needs: Vec::new(),
        capabilities: Vec::new(),
        steps,
    }
}

fn levels() -> Result<HashMap<String, Level>, AapError> {
    let mut levels: HashMap<String, Level> = super::suite::embedded()?
        .into_iter()
        .map(|c| {
            (
                c.info.id.split('/').next().unwrap_or_default().to_owned(),
                c.info.level,
            )
        })
        .collect();
    levels.extend(AAP_ALWAYS_ON.iter().map(|r| (r.id.to_owned(), r.level)));
    Ok(levels)
}

/// Runs a campaign.
pub async fn campaign(options: &AapFuzzOptions) -> Result<AapFuzzOutcome, AapError> {
    let runner = Runner {
        options: options.clone(),
        schemas: Arc::new(super::runner::schemas()?),
    };
    let agent = runner.agent().await?;
    let started = Instant::now();
    let mut rng = Rng::new(options.seed);
    let mut outcome = AapFuzzOutcome {
        seed: options.seed,
        sequences: 0,
        operations: 0,
        found: Vec::new(),
    };
    let mut seen = BTreeSet::new();
    while options.cases.is_none_or(|n| outcome.sequences < n)
        && started.elapsed() < options.duration
    {
        let ops = Generator::new(&agent).sequence(&mut rng, options.max_len);
        let sequence = outcome.sequences;
        outcome.sequences += 1;
        outcome.operations += ops.len();
        let (broken, _) = runner
            .execute(&agent, &ops, options.seed ^ sequence)
            .await?;
        for rule in broken
            .keys()
            .filter(|r| !seen.contains(*r))
            .cloned()
            .collect::<Vec<_>>()
        {
            seen.insert(rule.clone());
            let shrunk = runner
                .shrink(&agent, ops.clone(), &rule, options.seed ^ sequence)
                .await?;
            let (again, result) = runner
                .execute(&agent, &shrunk, options.seed ^ sequence)
                .await?;
            let (expected, actual) = again
                .get(&rule)
                .or_else(|| broken.get(&rule))
                .cloned()
                .unwrap_or_default();
            outcome.found.push(AapFound {
                rule,
                sequence,
                original_len: ops.len(),
                ops: shrunk,
                result,
                expected,
                actual,
            });
        }
    }
    Ok(outcome)
}

#[derive(Serialize)]
struct TraceFile<'a> {
    page: &'a str,
    case: Vec<TraceCase<'a>>,
}

#[derive(Serialize)]
struct TraceCase<'a> {
    id: String,
    level: &'a str,
    spec: &'a str,
    requirement: &'a str,
    does: String,
    steps: Vec<&'a Step>,
}

/// The shrunk sequence of `found` as a suite file: `ahpspec run --protocol aap --suites DIR`
/// replays it (exit 1 while the rule still fails).
pub fn trace_toml(found: &AapFound, seed: u64) -> Result<String, toml::ser::Error> {
    let level = levels()
        .ok()
        .and_then(|l| l.get(&found.rule).copied())
        .unwrap_or(Level::Must);
    let file = TraceFile {
        page: "aap/RULES.md",
        case: vec![TraceCase {
            id: format!("{}/fuzz-{seed}-{}", found.rule, found.sequence),
            level: level.as_str(),
            spec: "§ (fuzz trace)",
            requirement: "The shrunk fuzz sequence breaks no rule.",
            does: format!(
                "Replays sequence {} of seed {seed}, shrunk from {} to {} operations.",
                found.sequence,
                found.original_len,
                found.ops.len()
            ),
            steps: found.ops.iter().flatten().collect(),
        }],
    };
    toml::to_string(&file)
}

/// The campaign as a report: one row per rule found failing (its shrunk run), at the rule's
/// level.
pub fn rows(outcome: &AapFuzzOutcome, rerun: impl Fn(&AapFound) -> String) -> Vec<CaseResult> {
    let levels = levels().unwrap_or_default();
    outcome
        .found
        .iter()
        .map(|found| {
            let level = levels.get(&found.rule).copied().unwrap_or(Level::Must);
            let mut result = found.result.clone();
            result.info.id = found.rule.clone();
            result.info.level = level;
            result.info.does = format!(
                "Fuzz sequence {} of seed {}, shrunk to {} operations",
                found.sequence,
                outcome.seed,
                found.ops.len()
            );
            result.verdict = level.broken();
            result.summary = format!("expected {}; got {}", found.expected, found.actual);
            result.blocked_by = None;
            result.rerun = rerun(found);
            result
        })
        .collect()
}

/// Writes each finding's trace to `dir/aap-<seed>-<rule>/trace.toml`; the directories, in
/// finding order.
pub fn write_traces(
    outcome: &AapFuzzOutcome,
    dir: &std::path::Path,
) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut written = Vec::new();
    for found in &outcome.found {
        let folder = dir.join(format!("aap-{}-{}", outcome.seed, found.rule));
        std::fs::create_dir_all(&folder)?;
        let text = trace_toml(found, outcome.seed).map_err(std::io::Error::other)?;
        std::fs::write(folder.join("trace.toml"), text)?;
        written.push(folder);
    }
    Ok(written)
}

/// The campaign as a run report (the same four reports as `run`).
pub fn report(
    outcome: &AapFuzzOutcome,
    options: &AapFuzzOptions,
    traces: &[std::path::PathBuf],
    elapsed: Duration,
) -> crate::verdict::RunReport {
    let replay = |found: &AapFound| {
        let index = outcome
            .found
            .iter()
            .position(|f| f.rule == found.rule)
            .unwrap_or(0);
        let dir = traces
            .get(index)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        super::rerun_prefix(options.url.as_deref(), options.fault.as_deref())
            + &format!(" --suites {dir}")
    };
    let target = options.url.clone().unwrap_or_else(|| "builtin".into());
    let mut report = super::runner::new_report(
        target,
        options.fault.clone(),
        elapsed,
        rows(outcome, replay),
    );
    crate::engine::reconcile(&mut report, None);
    report
}
