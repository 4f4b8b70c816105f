//! Declarative scenarios: the suite file format (TOML, one file per spec area), its typed
//! steps, and discovery. Parsing rejects unknown fields and reports `file:line`. Nothing
//! here executes anything.

mod charge;
mod steps;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

pub use charge::{acceptance_rule, command_rule, Names};
pub use steps::*;

use crate::verdict::{CaseInfo, Level};

/// Suites compiled into the binary, so an installed `ahpspec` works from any directory.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "transport.toml",
        include_str!("../../suites/transport.toml"),
    ),
    (
        "lifecycle.toml",
        include_str!("../../suites/lifecycle.toml"),
    ),
    (
        "subscriptions.toml",
        include_str!("../../suites/subscriptions.toml"),
    ),
    ("actions.toml", include_str!("../../suites/actions.toml")),
    (
        "reconnect.toml",
        include_str!("../../suites/reconnect.toml"),
    ),
    (
        "root-channel.toml",
        include_str!("../../suites/root-channel.toml"),
    ),
    (
        "session-channel.toml",
        include_str!("../../suites/session-channel.toml"),
    ),
    (
        "chat-channel.toml",
        include_str!("../../suites/chat-channel.toml"),
    ),
    (
        "pending-messages.toml",
        include_str!("../../suites/pending-messages.toml"),
    ),
    (
        "tool-calls.toml",
        include_str!("../../suites/tool-calls.toml"),
    ),
    (
        "input-requests.toml",
        include_str!("../../suites/input-requests.toml"),
    ),
    ("status.toml", include_str!("../../suites/status.toml")),
    ("errors.toml", include_str!("../../suites/errors.toml")),
    (
        "robustness.toml",
        include_str!("../../suites/robustness.toml"),
    ),
];

/// The `relies_on` value of an expectation that rests on what the target profile promises
/// a behaviour does (not on a rule): a miss means the server does not do what its profile
/// says, and the case is not testable.
pub const PROFILE_PROMISE: &str = "profile";

/// Why suites could not be loaded. No verdict is possible until they are fixed.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}: {message}")]
    Parse {
        file: String,
        line: usize,
        message: String,
    },
    #[error("{file}:{line}: duplicate case id {id}")]
    DuplicateId {
        file: String,
        line: usize,
        id: String,
    },
    #[error("{at}: relies_on names {rule}, which no case or always-on check proves")]
    UnknownRule { at: String, rule: String },
    #[error("{at}: case {id} claims nothing of its own rule: every step exercises another rule (mark the step that proves it with claim = true)")]
    ClaimsNothing { at: String, id: String },
    #[error("no suite files (*.toml) in {0}")]
    Empty(PathBuf),
}

/// One suite file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    /// Spec area this file covers (defaults to the file name).
    area: Option<String>,
    /// The spec page, e.g. `docs/specification/lifecycle.md`.
    page: String,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<CaseFile>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    id: String,
    level: LevelText,
    spec: String,
    requirement: String,
    does: String,
    /// Agent behaviours (target-profile keys) the case needs.
    #[serde(default)]
    needs: Vec<String>,
    /// Agent capabilities the case needs (`multipleChats`, …); absent ⇒ not applicable.
    #[serde(default)]
    capabilities: Vec<String>,
    /// A registered Rust probe instead of steps.
    #[serde(default)]
    probe: Option<String>,
    /// The first protocol version the case's rule exists in: a run offering an older one
    /// finds it not applicable.
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    steps: Vec<Spanned<Step>>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
enum LevelText {
    #[serde(rename = "MUST", alias = "MUST*")]
    Must,
    #[serde(rename = "SHOULD")]
    Should,
    #[serde(rename = "MAY")]
    May,
}

impl From<LevelText> for Level {
    fn from(level: LevelText) -> Self {
        match level {
            LevelText::Must => Level::Must,
            LevelText::Should => Level::Should,
            LevelText::May => Level::May,
        }
    }
}

/// A step with where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct LocatedStep {
    pub step: Step,
    /// `file:line`
    pub at: String,
}

/// A parsed case, ready to run.
#[derive(Debug, Clone)]
pub struct Case {
    pub info: CaseInfo,
    pub needs: Vec<String>,
    pub capabilities: Vec<String>,
    pub probe: Option<String>,
    /// The first protocol version the rule exists in (`since` in the suite file).
    pub since: Option<String>,
    pub steps: Vec<LocatedStep>,
}

/// Every loaded case, in file order.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    pub cases: Vec<Case>,
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |head| head.matches('\n').count() + 1)
}

/// Parses one suite file's text.
pub fn parse_suite(file: &str, text: &str) -> Result<Vec<Case>, SuiteError> {
    let parsed: SuiteFile = toml::from_str(text).map_err(|error| SuiteError::Parse {
        file: file.to_owned(),
        line: error.span().map_or(1, |span| line_of(text, span.start)),
        message: error.message().to_owned(),
    })?;
    let area = parsed.area.clone().unwrap_or_else(|| {
        Path::new(file).file_stem().map_or_else(
            || file.to_owned(),
            |stem| stem.to_string_lossy().into_owned(),
        )
    });
    let mut cases = Vec::new();
    for spanned in parsed.cases {
        let line = line_of(text, spanned.span().start);
        let case = spanned.into_inner();
        if case.steps.is_empty() && case.probe.is_none() {
            return Err(SuiteError::Parse {
                file: file.to_owned(),
                line,
                message: format!("case {} has neither steps nor a probe", case.id),
            });
        }
        if let Some(since) = &case.since {
            if crate::checks::frame::parse_version(since).is_none() {
                return Err(SuiteError::Parse {
                    file: file.to_owned(),
                    line,
                    message: format!("case {}: since {since:?} is not MAJOR.MINOR.PATCH", case.id),
                });
            }
        }
        let steps = case
            .steps
            .into_iter()
            .map(|step| LocatedStep {
                at: format!("{file}:{}", line_of(text, step.span().start)),
                step: step.into_inner(),
            })
            .collect();
        cases.push(Case {
            info: CaseInfo {
                id: case.id,
                level: case.level.into(),
                area: area.clone(),
                spec: if case.spec.contains(".md") {
                    case.spec
                } else {
                    format!("{} {}", parsed.page, case.spec)
                },
                requirement: case.requirement,
                does: case.does,
                source: format!("{file}:{line}"),
            },
            needs: case.needs,
            capabilities: case.capabilities,
            probe: case.probe,
            since: case.since,
            steps,
        });
    }
    Ok(cases)
}

impl Catalog {
    /// The suites compiled into the binary.
    pub fn embedded() -> Result<Catalog, SuiteError> {
        Catalog::from_texts(
            EMBEDDED
                .iter()
                .map(|(name, text)| (name.to_string(), text.to_string())),
        )
    }

    /// Every `*.toml` in `dir` (sorted by name).
    pub fn from_dir(dir: &Path) -> Result<Catalog, SuiteError> {
        let entries = std::fs::read_dir(dir).map_err(|source| SuiteError::Io {
            path: dir.to_owned(),
            source,
        })?;
        let mut paths: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(SuiteError::Empty(dir.to_owned()));
        }
        let mut texts = Vec::new();
        for path in paths {
            let text = std::fs::read_to_string(&path).map_err(|source| SuiteError::Io {
                path: path.clone(),
                source,
            })?;
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            texts.push((name, text));
        }
        Catalog::from_texts(texts)
    }

    fn from_texts(
        texts: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Catalog, SuiteError> {
        let mut catalog = Catalog::default();
        let mut seen = HashSet::new();
        for (name, text) in texts {
            for case in parse_suite(&name, &text)? {
                if !seen.insert(case.info.id.clone()) {
                    let (file, line) = split_source(&case.info.source);
                    return Err(SuiteError::DuplicateId {
                        file,
                        line,
                        id: case.info.id,
                    });
                }
                catalog.cases.push(case);
            }
        }
        catalog.check_relied_on_rules()?;
        catalog.check_claims()?;
        Ok(catalog)
    }

    /// Every `relies_on` must name a rule the run can report on: a case's rule or an
    /// always-on check's, of these suites or of the built-in ones (a directory of some suite
    /// files may rely on a rule another built-in file proves).
    fn check_relied_on_rules(&self) -> Result<(), SuiteError> {
        let builtin = |rule: &str| {
            EMBEDDED.iter().any(|(name, text)| {
                parse_suite(name, text)
                    .is_ok_and(|cases| cases.iter().any(|case| rule_of(&case.info.id) == rule))
            })
        };
        for case in &self.cases {
            for located in &case.steps {
                if let Some(rule) = located.step.relies_on() {
                    if rule != PROFILE_PROMISE && self.rule(rule).is_none() && !builtin(rule) {
                        return Err(SuiteError::UnknownRule {
                            at: located.at.clone(),
                            rule: rule.to_owned(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Every case asserts something of its own rule (`Case::claims_own_rule`).
    fn check_claims(&self) -> Result<(), SuiteError> {
        match self.cases.iter().find(|case| !case.claims_own_rule()) {
            Some(case) => Err(SuiteError::ClaimsNothing {
                at: case.info.source.clone(),
                id: case.info.id.clone(),
            }),
            None => Ok(()),
        }
    }

    /// What the run says about a rule that is not (or not only) a case of its own, e.g.
    /// one a step relies on: the case proving it (`RULE` or `RULE/slug`), or the always-on
    /// check under that ID. `None` when neither exists.
    pub fn rule(&self, rule: &str) -> Option<CaseInfo> {
        let of_case = self
            .cases
            .iter()
            .find(|case| case.info.id == rule)
            .or_else(|| {
                self.cases
                    .iter()
                    .find(|case| rule_of(&case.info.id) == rule)
            });
        if let Some(case) = of_case {
            return Some(CaseInfo {
                id: rule.to_owned(),
                ..case.info.clone()
            });
        }
        crate::checks::always_on(rule).map(|check| CaseInfo {
            id: check.id.to_owned(),
            level: check.level,
            area: check.area.to_owned(),
            spec: check.spec.to_owned(),
            requirement: check.requirement.to_owned(),
            does: format!("Checked on every frame of every case ({})", check.unit),
            source: "builtin".to_owned(),
        })
    }
}

/// The rule ID of a case ID (`TOOL-007/denied` → `TOOL-007`).
pub fn rule_of(case_id: &str) -> &str {
    case_id.split('/').next().unwrap_or(case_id)
}

fn split_source(source: &str) -> (String, usize) {
    match source.rsplit_once(':') {
        Some((file, line)) => (file.to_owned(), line.parse().unwrap_or(1)),
        None => (source.to_owned(), 1),
    }
}
