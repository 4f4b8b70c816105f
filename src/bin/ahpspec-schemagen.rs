//! Generates the AHP 1.0.0 JSON Schemas from the type inventory.
//!
//! `ahpspec-schemagen [--inventory PATH] [--out DIR] [--check]`; with `--check` nothing is written
//! and the exit status is 1 when the files in DIR differ from freshly generated ones.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Generate the AHP 1.0.0 JSON Schemas from the type inventory")]
struct Args {
    /// Type inventory (default: upstream/ahp/1.0.0/derived/types-1.0.0.json under the crate root).
    #[arg(long)]
    inventory: Option<PathBuf>,
    /// Output directory (default: schemas/ahp/1.0.0 under the crate root).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Compare instead of writing; exit 1 if anything differs.
    #[arg(long)]
    check: bool,
}

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn main() -> Result<ExitCode> {
    let args = Args::parse();
    let inventory = args
        .inventory
        .unwrap_or_else(|| crate_root().join("upstream/ahp/1.0.0/derived/types-1.0.0.json"));
    let out = args
        .out
        .unwrap_or_else(|| crate_root().join("schemas/ahp/1.0.0"));
    let text = std::fs::read_to_string(&inventory)
        .with_context(|| format!("reading inventory {}", inventory.display()))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("parsing inventory {}", inventory.display()))?;
    let files = ahpspec::schemagen::generate(&value).context("generating schemas")?;
    if args.check {
        let diffs = check(&out, &files)?;
        if diffs.is_empty() {
            println!("{}: {} files up to date", out.display(), files.len());
            return Ok(ExitCode::SUCCESS);
        }
        for d in &diffs {
            eprintln!("{d}");
        }
        eprintln!("schemas are out of date; run `cargo run --bin ahpspec-schemagen`");
        return Ok(ExitCode::from(1));
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    for (name, text) in &files {
        let path = out.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    for stale in extra_files(&out, &files)? {
        eprintln!("note: {} is not generated (left in place)", stale.display());
    }
    println!("wrote {} files to {}", files.len(), out.display());
    Ok(ExitCode::SUCCESS)
}

fn check(out: &Path, files: &std::collections::BTreeMap<String, String>) -> Result<Vec<String>> {
    let mut diffs = Vec::new();
    for (name, text) in files {
        let path = out.join(name);
        match std::fs::read_to_string(&path) {
            Ok(current) if &current == text => {}
            Ok(_) => diffs.push(format!("differs: {}", path.display())),
            Err(_) => diffs.push(format!("missing: {}", path.display())),
        }
    }
    for extra in extra_files(out, files)? {
        diffs.push(format!("not generated: {}", extra.display()));
    }
    Ok(diffs)
}

fn extra_files(
    out: &Path,
    files: &std::collections::BTreeMap<String, String>,
) -> Result<Vec<PathBuf>> {
    let mut extra = Vec::new();
    let Ok(entries) = std::fs::read_dir(out) else {
        return Ok(extra);
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("listing {}", out.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".json") && !files.contains_key(&name) {
            extra.push(entry.path());
        }
    }
    extra.sort();
    Ok(extra)
}
