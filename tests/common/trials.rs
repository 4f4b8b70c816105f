//! Test binaries whose tests mostly wait (on catalogs' quiet windows, on the processes they
//! start) run as libtest-mimic trials, more at once than there are cores.

use libtest_mimic::{Arguments, Failed};

/// Trials run at once for each core, unless `--test-threads` or `RUST_TEST_THREADS` say.
const TRIALS_PER_CORE: usize = 2;

/// The command line's arguments, with the number of threads defaulting to
/// [`TRIALS_PER_CORE`] per core.
pub fn arguments() -> Arguments {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        let from_env = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|n| n.parse().ok());
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        args.test_threads = Some(from_env.unwrap_or(cores * TRIALS_PER_CORE));
    }
    args
}

/// Runs `work` to its end on a runtime `builder` makes, for a trial (what `#[tokio::test]`
/// does for a test).
pub fn on_runtime(
    mut builder: tokio::runtime::Builder,
    work: impl std::future::Future<Output = ()>,
) -> Result<(), Failed> {
    builder
        .enable_all()
        .build()
        .map_err(|e| Failed::from(format!("no runtime: {e}")))?
        .block_on(work);
    Ok(())
}
