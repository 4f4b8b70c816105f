//! Suite files to cases, for both protocols: the case header (id, level, spec, requirement,
//! what it does, the behaviours and capabilities it needs), where each case and step stands
//! (`file:line`), the area from the file's name, unique IDs across files, and which cases a
//! run takes ([`Selection`]). Each protocol supplies only its step type ([`SuiteFormat`]):
//! what a step is, and which suites are compiled in. Nothing here runs anything.

mod queue;
mod selection;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use toml::Spanned;

pub use queue::CaseQueue;
pub use selection::{derive_seed, glob, Selection, Shard, ShardError};

use crate::checks::AlwaysOnRule;
use crate::verdict::{CaseInfo, Level};

/// What a protocol's suites bring to the shared loader: their step type (the implementor),
/// the suite files compiled into the binary, and the always-on rules listed beside the
/// cases.
pub trait SuiteFormat: DeserializeOwned + Sized + Clone + Send + Sync + 'static {
    /// The suite files compiled into the binary: (name, text).
    const EMBEDDED: &'static [(&'static str, &'static str)];
    /// What every case's area starts with (the area is the file's name after it).
    const AREA_PREFIX: &'static str;
    /// Whether a case may name a Rust probe instead of steps, and the protocol version its
    /// rule exists since (AHP's cases may; AAP has one version and no probes).
    const PROBES_AND_VERSIONS: bool;
    /// The protocol's always-on rules, listed and selected like cases.
    const ALWAYS_ON: &'static [AlwaysOnRule];
    /// What the always-on rules are checked on, after "Checked on every".
    const ALWAYS_ON_OVER: &'static str;

    /// The protocol's own checks of a whole catalog, after every file loaded.
    fn check(catalog: &Catalog<Self>) -> Result<(), SuiteError> {
        let _ = catalog;
        Ok(())
    }

    /// Where [`Catalog::embedded`] keeps the built-in suites once parsed: a process that runs
    /// the catalog many times (the tests run it once per fault) parses them once.
    fn embedded_once() -> &'static OnceLock<Catalog<Self>>;
}

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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, bound = "S: DeserializeOwned")]
struct SuiteFile<S> {
    /// Spec area this file covers (defaults to the file name).
    area: Option<String>,
    /// The spec page, e.g. `docs/specification/lifecycle.md`.
    page: String,
    #[serde(default, rename = "case")]
    cases: Vec<Spanned<CaseFile<S>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, bound = "S: DeserializeOwned")]
struct CaseFile<S> {
    id: String,
    level: Level,
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
    /// The protocol versions the case's rule holds in (AAP only: `[1, 2]`); empty: all.
    #[serde(default)]
    versions: Vec<u64>,
    /// How long the case waits by its nature (a token's expiry, a timer the rule sets).
    #[serde(default)]
    waits_ms: u64,
    /// Cases naming the same group never run at the same time.
    #[serde(default)]
    exclusive: Option<String>,
    #[serde(default)]
    steps: Vec<Spanned<S>>,
}

/// A step with where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct Located<S> {
    pub step: S,
    /// `file:line`
    pub at: String,
}

/// A parsed case, ready to run.
#[derive(Debug, Clone)]
pub struct Case<S> {
    pub info: CaseInfo,
    pub needs: Vec<String>,
    pub capabilities: Vec<String>,
    /// A registered probe instead of steps (AHP only).
    pub probe: Option<String>,
    /// The first protocol version the rule exists in (`since` in the suite file; AHP only).
    pub since: Option<String>,
    /// The protocol versions the rule holds in (`versions` in the suite file; AAP only;
    /// empty: every version).
    pub versions: Vec<u64>,
    /// How long the case waits by its nature (`waits_ms` in the suite file; 0 when it does
    /// not say): a run starts the longest waiters first, so their waits overlap the rest of
    /// the catalog instead of ending it.
    pub waits_ms: u64,
    /// The group of cases this one never runs beside (`exclusive` in the suite file): they
    /// share state the protocol lets a host keep for everyone, such as a pushed token that
    /// may resume every call waiting for its resource, so one case could see another's
    /// effect and take it for the server's.
    pub exclusive: Option<String>,
    pub steps: Vec<Located<S>>,
}

impl<S> Case<S> {
    /// A case that is only `info` and `steps`: no needs, capabilities, versions, waits or
    /// group (a fuzzer's generated sequence, a protocol probe).
    pub fn of_steps(info: CaseInfo, steps: Vec<Located<S>>) -> Self {
        Case {
            info,
            needs: Vec::new(),
            capabilities: Vec::new(),
            probe: None,
            since: None,
            versions: Vec::new(),
            waits_ms: 0,
            exclusive: None,
            steps,
        }
    }
}

/// Every loaded case, in file order.
#[derive(Debug, Clone)]
pub struct Catalog<S> {
    pub cases: Vec<Case<S>>,
}

impl<S> Default for Catalog<S> {
    fn default() -> Self {
        Catalog { cases: Vec::new() }
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset)
        .map_or(1, |head| head.matches('\n').count() + 1)
}

impl<S: SuiteFormat> Catalog<S> {
    /// The suites compiled into the binary.
    pub fn embedded() -> Result<Self, SuiteError> {
        if let Some(catalog) = S::embedded_once().get() {
            return Ok(catalog.clone());
        }
        let catalog = Self::from_texts(
            S::EMBEDDED
                .iter()
                .map(|(name, text)| (name.to_string(), text.to_string())),
        )?;
        Ok(S::embedded_once().get_or_init(|| catalog).clone())
    }

    /// Every `*.toml` in `dir` (sorted by name), named by their file names.
    pub fn from_dir(dir: &Path) -> Result<Self, SuiteError> {
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
        Self::from_texts(texts)
    }

    /// The suites of `dir`, or the built-in ones without it (`--suites`).
    pub fn load(dir: Option<&Path>) -> Result<Self, SuiteError> {
        match dir {
            Some(dir) => Self::from_dir(dir),
            None => Self::embedded(),
        }
    }

    /// The cases of (name, text) suite files, IDs unique across them, checked as the
    /// protocol asks.
    pub fn from_texts(
        texts: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, SuiteError> {
        let mut catalog = Catalog::default();
        let mut seen = HashSet::new();
        for (name, text) in texts {
            for case in Self::parse_suite(&name, &text)? {
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
        S::check(&catalog)?;
        Ok(catalog)
    }

    /// Parses one suite file's text.
    pub fn parse_suite(file: &str, text: &str) -> Result<Vec<Case<S>>, SuiteError> {
        let error = |line: usize, message: String| SuiteError::Parse {
            file: file.to_owned(),
            line,
            message,
        };
        let parsed: SuiteFile<S> = toml::from_str(text).map_err(|e| {
            error(
                e.span().map_or(1, |span| line_of(text, span.start)),
                e.message().to_owned(),
            )
        })?;
        let stem = Path::new(file).file_stem().map_or_else(
            || file.to_owned(),
            |stem| stem.to_string_lossy().into_owned(),
        );
        let area = format!("{}{}", S::AREA_PREFIX, parsed.area.clone().unwrap_or(stem));
        let mut cases = Vec::new();
        for spanned in parsed.cases {
            let line = line_of(text, spanned.span().start);
            let case = spanned.into_inner();
            if !S::PROBES_AND_VERSIONS {
                if let Some(field) = [("probe", &case.probe), ("since", &case.since)]
                    .iter()
                    .find_map(|(field, value)| value.is_some().then_some(field))
                {
                    let message = format!("case {}: these suites take no `{field}`", case.id);
                    return Err(error(line, message));
                }
            } else if !case.versions.is_empty() {
                let message = format!(
                    "case {}: these suites take `since`, not `versions`",
                    case.id
                );
                return Err(error(line, message));
            }
            if case.steps.is_empty() && case.probe.is_none() {
                let message = if S::PROBES_AND_VERSIONS {
                    format!("case {} has neither steps nor a probe", case.id)
                } else {
                    format!("case {} has no steps", case.id)
                };
                return Err(error(line, message));
            }
            if let Some(since) = &case.since {
                if crate::checks::frame::parse_version(since).is_none() {
                    let message =
                        format!("case {}: since {since:?} is not MAJOR.MINOR.PATCH", case.id);
                    return Err(error(line, message));
                }
            }
            let steps = case
                .steps
                .into_iter()
                .map(|step| Located {
                    at: format!("{file}:{}", line_of(text, step.span().start)),
                    step: step.into_inner(),
                })
                .collect();
            cases.push(Case {
                info: CaseInfo {
                    id: case.id,
                    level: case.level,
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
                versions: case.versions,
                waits_ms: case.waits_ms,
                exclusive: case.exclusive,
                steps,
            });
        }
        Ok(cases)
    }

    /// The catalog as `ahpspec list` prints it: ID, level, area and what it does
    /// (tab-separated), the cases then the always-on rules, as `selection` admits them
    /// (a shard lists them all: each shard reports on the same rules).
    pub fn listing(&self, selection: &Selection) -> Vec<String> {
        let cases = self
            .cases
            .iter()
            .filter(|case| selection.includes(&case.info.id, case.info.level))
            .map(|case| &case.info);
        let rules = S::ALWAYS_ON
            .iter()
            .filter(|rule| selection.includes(rule.id, rule.level))
            .map(|rule| always_on_info(rule, S::ALWAYS_ON_OVER));
        cases
            .cloned()
            .chain(rules)
            .map(|info| {
                format!(
                    "{}\t{}\t{}\t{}",
                    info.id,
                    info.level.as_str(),
                    info.area,
                    info.does
                )
            })
            .collect()
    }
}

/// The header of an always-on rule's row: `over` says what it is checked on, after
/// "Checked on every" ("frame of every case").
pub fn always_on_info(rule: &AlwaysOnRule, over: &str) -> CaseInfo {
    CaseInfo {
        id: rule.id.to_owned(),
        level: rule.level,
        area: rule.area.to_owned(),
        spec: rule.spec.to_owned(),
        requirement: rule.requirement.to_owned(),
        does: format!("Checked on every {over} ({})", rule.unit),
        source: "builtin".to_owned(),
    }
}

fn split_source(source: &str) -> (String, usize) {
    match source.rsplit_once(':') {
        Some((file, line)) => (file.to_owned(), line.parse().unwrap_or(1)),
        None => (source.to_owned(), 1),
    }
}
