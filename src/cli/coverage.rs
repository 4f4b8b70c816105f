//! `ahpspec coverage`: for every rule of the catalog, its cases, always-on check, faults and
//! fuzzer operations (or the ledger's reason for none), as text or JSON.

use std::process::ExitCode;

use crate::{usage_error, CoverageArgs};

pub fn coverage_command(args: &CoverageArgs) -> ExitCode {
    let map = match ahpspec::target::protocol_of(None, args.protocol.as_deref()) {
        Ok(ahpspec::target::Protocol::Aap) => ahpspec::coverage::aap(),
        Ok(ahpspec::target::Protocol::Ahp) => ahpspec::coverage::ahp(),
        Err(error) => return usage_error(&error),
    };
    let map = match map {
        Ok(map) => map,
        Err(error) => return usage_error(&error.to_string()),
    };
    let text = if args.json {
        match serde_json::to_string_pretty(&map) {
            Ok(text) => text + "\n",
            Err(error) => return usage_error(&error.to_string()),
        }
    } else {
        map.render_text()
    };
    // A reader that stops early (`| head`) is no error of ours.
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes());
    ExitCode::SUCCESS
}
