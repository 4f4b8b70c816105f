//! `ahpspec check` of AAP captures (`fuzz --protocol aap --record`, an AAP proxy's
//! `--record`): told from WebSocket captures by their records, checked by the library's
//! [`ahpspec::capture::aap_check`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ahpspec::capture::aap::is_aap_capture;

use crate::usage_error;

/// When every file is an AAP capture: checks them and the exit code; when none is:
/// `None` (the WebSocket check goes on). A mix is a usage error: one report has one
/// protocol.
pub fn check_aap_captures(files: &[PathBuf], report_dir: &Path) -> Option<ExitCode> {
    let aap = files.iter().filter(|f| is_aap_capture(f)).count();
    if aap == 0 {
        return None;
    }
    if aap < files.len() {
        return Some(usage_error(
            "the captures mix AAP and WebSocket (AHP) records: check each protocol's captures on their own",
        ));
    }
    Some(match ahpspec::capture::aap_check::check_aap(files) {
        Ok(report) => {
            for case in report.cases.iter().filter(|c| !c.findings.is_empty()) {
                println!("{}", ahpspec::report::render_failure(case));
            }
            super::run::finish(&report, report_dir)
        }
        Err(error) => usage_error(&error.to_string()),
    })
}
