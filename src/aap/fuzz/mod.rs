//! `ahpspec fuzz --protocol aap`: seeded random request sequences ([`generate`]) run as
//! AAP cases against the target composition hands over (a fresh built-in server per
//! sequence when no URL is given) with every always-on check; each rule's first failing
//! sequence is shrunk (whole operations removed while the rule still fails) and written as
//! a suite file that `ahpspec run --protocol aap --suites DIR` replays.

pub mod generate;
pub mod malformed;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::agent::{read_meta_version, Agent};
use super::case::{run_case, CaseContext};
use super::checks::{Observer, AAP_ALWAYS_ON, SECRET_PREFIX};
use super::http::{Client, Target};
use super::suite::{AapCase, AapCatalog, LocatedStep, Step};
use super::version::AapVersion;
use crate::aap::http::ExchangeSink;
use crate::catalog::{derive_seed, glob, Shard, SuiteError};
use crate::checks::Rule;
use crate::rows::baseline::Baseline;
use crate::rows::{RunPlan, Started};
use crate::schema::{SchemaError, SchemaSet};
use crate::server;
use crate::verdict::{rule_of, CaseInfo, CaseResult, Level, Verdict};
use generate::{Generator, Op, Rng};

/// The rule a generated sequence is a case of: every session it makes is listed and read
/// back as it was made. An expectation that exercises another rule names it (`relies_on`).
pub const OWN_RULE: Rule = Rule::AapSession006;

/// What to fuzz and for how long.
#[derive(Debug, Clone)]
pub struct AapFuzzOptions {
    /// Where sequences run (composition's: a URL, or a fresh built-in server each).
    pub target: server::Target,
    /// API key sent as `Authorization: Bearer` (the built-in server's, for it).
    pub token: Option<String>,
    pub seed: u64,
    pub cases: Option<u64>,
    pub duration: Duration,
    pub shrink_time: Duration,
    pub max_len: usize,
    pub timeout: Duration,
    /// Rules not judged (globs).
    pub exclude: Vec<String>,
    /// Known failures (`--baseline`): a rule it lists is seen, not shrunk, and fails
    /// nothing.
    pub baseline: Baseline,
    /// `--shard I/N`: only sequences I-1, I-1+N, I-1+2N, … of the campaign (each sequence
    /// is generated from its own seed, so the shards together run the whole campaign's
    /// sequences, and `cases` is the total over all shards).
    pub shard: Option<Shard>,
    /// `--record`: every exchange of the campaign (shrinking included) goes into this AAP
    /// capture, which `ahpspec check` re-checks offline.
    pub record: Option<ExchangeSink>,
    /// `--mode malformed`: sequences of requests a server has to cope with
    /// ([`malformed`]) instead of the model's.
    pub malformed: bool,
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
    /// The AAP version the campaign spoke (the one `GET /meta` names).
    pub version: AapVersion,
    pub sequences: u64,
    pub operations: usize,
    pub found: Vec<AapFound>,
    /// Rules that failed but the baseline lists, each with the first sequence it failed in.
    pub baselined: Vec<(String, u64)>,
}

/// Why a campaign could not go on: no verdict is possible.
#[derive(Debug, thiserror::Error)]
pub enum AapFuzzError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("cannot start the built-in AAP server: {0}")]
    Start(#[source] std::io::Error),
    /// Not an AAP base URL, or no usable answer to `GET /meta`.
    #[error("{0}")]
    Unreachable(String),
    /// The harness could not run a sequence.
    #[error("{0}")]
    Harness(String),
}

/// Runs sequences on the target.
struct Runner {
    options: AapFuzzOptions,
    schemas: Arc<SchemaSet>,
    /// The version `GET /meta` names: sequences go to its endpoints, checked against its
    /// schemas.
    version: AapVersion,
}

/// The rules one run broke, with the first miss of each.
type Broken = BTreeMap<String, (String, String)>;

impl Runner {
    /// Runs `work` against the server of one sequence (started fresh when built in).
    async fn with_target<T>(
        &self,
        work: impl AsyncFnOnce(Target) -> Result<T, AapFuzzError>,
    ) -> Result<T, AapFuzzError> {
        let server = self
            .options
            .target
            .for_sequence()
            .await
            .map_err(AapFuzzError::Start)?;
        let out = match Target::parse(&server.url) {
            Ok(target) => work(target).await,
            Err(error) => Err(AapFuzzError::Unreachable(error.to_string())),
        };
        server.stop().await;
        out
    }

    /// A client of `target`, recording when the campaign records.
    fn client(&self, target: Target) -> Client {
        Client::new(target, self.options.token.clone(), self.options.timeout)
            .recording(self.options.record.clone())
    }

    /// The agent `GET /meta` names, and the version it says (a version ahpspec does not
    /// know ends the campaign before any sequence).
    async fn agent(&self) -> Result<(Agent, AapVersion), AapFuzzError> {
        self.with_target(async |target| {
            let mut client = self.client(target);
            let (agent, said) = read_meta_version(&mut client)
                .await
                .map_err(|e| AapFuzzError::Unreachable(e.to_string()))?;
            let agent = agent.map_err(AapFuzzError::Unreachable)?;
            let version = AapVersion::choose(None, said.as_ref()).map_err(|said| {
                AapFuzzError::Unreachable(format!(
                    "GET /meta says AAP version {said}, which ahpspec does not know (it knows 1, 2 and 3)"
                ))
            })?;
            Ok((agent, version))
        })
        .await
    }

    /// Runs `ops` as one case; the rules it broke (excluded ones left out).
    async fn execute(
        &self,
        agent: &Agent,
        ops: &[Op],
        seed: u64,
    ) -> Result<(Broken, CaseResult), AapFuzzError> {
        let case = as_case(ops, &format!("{OWN_RULE}/fuzz"), Level::Must);
        self.with_target(async |target| {
            let mut vars: HashMap<String, String> = agent.vars().into_iter().collect();
            vars.insert("run".into(), format!("fz{seed}"));
            vars.insert("secret".into(), format!("{SECRET_PREFIX}fz{seed}"));
            let ctx = CaseContext {
                client: self.client(target),
                agent: Arc::new(agent.clone()),
                vars,
                observer: Observer::at(Arc::clone(&self.schemas), self.version),
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
                broken
                    .entry(rule_of(&finding.rule).to_owned())
                    .or_insert((finding.expected.clone(), finding.actual.clone()));
            }
            if outcome.result.verdict == Verdict::HarnessError {
                return Err(AapFuzzError::Harness(outcome.result.summary.clone()));
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
    ) -> Result<Vec<Op>, AapFuzzError> {
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
    AapCase::of_steps(
        CaseInfo {
            id: id.to_owned(),
            level,
            area: "aap/fuzz".into(),
            spec: "aap/RULES.md".into(),
            requirement: "A random request sequence breaks no rule.".into(),
            does: "Runs a generated request sequence.".into(),
            source: "fuzz".into(),
        },
        steps,
    )
}

fn levels() -> Result<HashMap<String, Level>, SuiteError> {
    let mut levels: HashMap<String, Level> = AapCatalog::embedded()?
        .cases
        .into_iter()
        .map(|c| (rule_of(&c.info.id).to_owned(), c.info.level))
        .collect();
    levels.extend(AAP_ALWAYS_ON.iter().map(|r| (r.id.to_owned(), r.level)));
    Ok(levels)
}

/// Runs a campaign.
pub async fn campaign(options: &AapFuzzOptions) -> Result<AapFuzzOutcome, AapFuzzError> {
    let mut runner = Runner {
        options: options.clone(),
        schemas: Arc::new(super::checks::schemas()?),
        version: AapVersion::LATEST,
    };
    let (agent, version) = runner.agent().await?;
    runner.version = version;
    runner.schemas = Arc::new(super::checks::schemas_for(version)?);
    let started = Instant::now();
    let shard = options.shard.unwrap_or(Shard::WHOLE);
    let share = options.cases.map(|total| shard.share(total));
    let mut outcome = AapFuzzOutcome {
        seed: options.seed,
        version,
        sequences: 0,
        operations: 0,
        found: Vec::new(),
        baselined: Vec::new(),
    };
    let mut seen = BTreeSet::new();
    while share.is_none_or(|n| outcome.sequences < n) && started.elapsed() < options.duration {
        let sequence = shard.nth(outcome.sequences);
        let ops = sequence_ops(&agent, options, sequence);
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
            if options.baseline.lists(&rule) {
                outcome.baselined.push((rule, sequence));
                continue;
            }
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

/// Sequence `sequence` of the campaign: generated from its own seed (derived from the
/// campaign's), so it is the same whichever shard runs it.
pub fn sequence_ops(agent: &Agent, options: &AapFuzzOptions, sequence: u64) -> Vec<Op> {
    let mut rng = Rng::new(derive_seed(options.seed, sequence));
    match options.malformed {
        true => malformed::Malformed::new(agent).sequence(&mut rng, options.max_len),
        false => Generator::new(agent).sequence(&mut rng, options.max_len),
    }
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

/// The campaign as a run report (the same four reports as `run`): `plan` says what the
/// target was and how `run` replays a trace (its `--suites DIR` appended).
pub fn report(
    outcome: &AapFuzzOutcome,
    plan: &RunPlan,
    started: &Started,
    traces: &[std::path::PathBuf],
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
        format!("{} --suites {dir}", plan.rerun_prefix)
    };
    let version = format!("AAP {}", outcome.version);
    let mut report = plan.report(version, started, false, rows(outcome, replay));
    crate::rows::reconcile(&mut report, None);
    report
}
