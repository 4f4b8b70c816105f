//! The catalog as ordinary tests of a Rust server's own crate: one [`libtest_mimic::Trial`]
//! per case (and per always-on rule), named by its case ID, so `cargo test -- TOOL-`,
//! `--list`, `--skip`, `--exact` and `--test-threads` work as usual.
//!
//! The cases run together, once, the first time a trial asks for its verdict: always-on
//! rows judge every frame of every case, so they cannot run one by one. Only the trials that
//! libtest's filter keeps are run (all of them when only always-on rows are kept, since
//! those need cases to look at). A failure shows the same block as the CLI; a case that is
//! not applicable or not testable is ignored with its reason.
//!
//! ```no_run
//! // tests/conformance.rs of a server crate, with `harness = false` in Cargo.toml:
//! fn main() -> std::process::ExitCode {
//!     let args = libtest_mimic::Arguments::from_args();
//!     let options = ahpspec::certify::Options {
//!         url: Some("ws://127.0.0.1:8080".into()), // or None: the built-in host
//!         ..Default::default()
//!     };
//!     let trials = ahpspec::embed::trials(options, &args).expect("catalog loads");
//!     libtest_mimic::run(&args, trials).exit_code()
//! }
//! ```

use std::sync::{Arc, OnceLock};

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::certify::{certify, HarnessError, Options};
use crate::report::render_failure;
use crate::rows::Quiet;
use crate::suite::Catalog;
use crate::verdict::{RunReport, Verdict};

/// The one run all trials share, made by the first trial that needs it.
struct SharedRun {
    options: Options,
    report: OnceLock<Result<RunReport, String>>,
}

impl SharedRun {
    fn report(&self) -> &Result<RunReport, String> {
        self.report.get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start a runtime: {e}"))?;
            let (_stop, interrupt) = tokio::sync::watch::channel(false);
            runtime
                .block_on(certify(&self.options, &mut Quiet, interrupt))
                .map_err(|e| e.to_string())
        })
    }

    /// The verdict of one row (of `version`, in a run of several) as a trial outcome.
    fn outcome(&self, id: &str, version: Option<&str>) -> Result<Completion, Failed> {
        let report = self
            .report()
            .as_ref()
            .map_err(|e| Failed::from(e.clone()))?;
        let key = match version {
            Some(version) => format!("{id}@{version}"),
            None => id.to_owned(),
        };
        let row = report
            .cases
            .iter()
            .find(|c| c.info.id == id && c.protocol_version.as_deref() == version)
            .ok_or_else(|| Failed::from(format!("{key} has no result (the run was cut short)")))?;
        if report.stale_baseline.contains(&key) {
            return Err(Failed::from(format!(
                "{key} is listed in the baseline but now passes: remove the entry"
            )));
        }
        let failing =
            report.unexpected_failures.contains(&key) || row.verdict == Verdict::HarnessError;
        match row.verdict {
            _ if failing => Err(Failed::from(render_failure(row))),
            Verdict::NotApplicable | Verdict::NotTestable => {
                Ok(Completion::ignored_with(&row.summary))
            }
            _ => Ok(Completion::Completed),
        }
    }
}

/// One trial per case and always-on rule the options select, against the options' target
/// (a URL, or the built-in host in-process when `url` is `None`). `args` are the test
/// binary's arguments: they decide which cases the shared run takes.
pub fn trials(mut options: Options, args: &Arguments) -> Result<Vec<Trial>, HarnessError> {
    let catalog = Catalog::load(options.suites.as_deref())?;
    let mut ids: Vec<String> = options
        .selection
        .cases(&catalog)
        .iter()
        .map(|case| case.info.id.clone())
        .collect();
    let case_count = ids.len();
    ids.extend(
        crate::checks::ALWAYS_ON
            .iter()
            .filter(|rule| options.selection.includes(rule.id, rule.level))
            .map(|rule| rule.id.to_owned()),
    );
    // The trials libtest will run decide what the shared run takes: the cases kept, with
    // the always-on rows kept; the whole selection when no case is kept.
    let kept: Vec<(usize, &String)> = ids
        .iter()
        .enumerate()
        .filter(|(_, id)| !args.is_filtered_out(&Trial::test(id.as_str(), || Ok(()))))
        .collect();
    if kept.iter().any(|(at, _)| *at < case_count) {
        options.selection.filter = kept.iter().map(|(_, id)| id.to_string()).collect();
    }
    // Several protocol versions: one trial per case and version, `ID@version`.
    let versions: Vec<Option<String>> = match options.protocol_versions.as_slice() {
        [_] | [] => vec![None],
        several => several.iter().cloned().map(Some).collect(),
    };
    let shared = Arc::new(SharedRun {
        options,
        report: OnceLock::new(),
    });
    Ok(versions
        .iter()
        .flat_map(|version| {
            ids.iter().map(|id| {
                let shared = Arc::clone(&shared);
                let id = id.clone();
                let version = version.clone();
                let name = match &version {
                    Some(v) => format!("{id}@{v}"),
                    None => id.clone(),
                };
                Trial::ignorable_test(name, move || shared.outcome(&id, version.as_deref()))
            })
        })
        .collect())
}
