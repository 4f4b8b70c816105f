//! The arguments of `ahpspec fuzz`, shared by the AHP campaign (`fuzz.rs`) and the AAP one
//! (`aap_fuzz.rs`): each command module reads them, neither imports the other's.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::{parse_duration, ConnectArgs};

#[derive(Debug, Args)]
pub struct FuzzArgs {
    /// Server to fuzz (ws:// or wss:// URL); omitted: a fresh built-in host per sequence.
    pub(super) url: Option<String>,
    #[command(flatten)]
    pub(super) connect: ConnectArgs,
    /// Seed (printed at start; the same seed reproduces the run against a deterministic server).
    #[arg(long)]
    pub(super) seed: Option<u64>,
    /// Stop after this many sequences (a finding does not stop the campaign); with --shard,
    /// the total over all shards.
    #[arg(long)]
    pub(super) cases: Option<u64>,
    /// Campaign I of N for parallel CI jobs: its seed is derived from --seed and I, and it
    /// runs its share of --cases; `ahpspec merge` combines the shards' reports.
    #[arg(long, value_parser = crate::parse_shard)]
    pub(super) shard: Option<ahpspec::catalog::Shard>,
    /// Stop after this long (e.g. 60s, 10m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub(super) duration: Duration,
    /// Cap on shrinking each rule's first failure (the smallest sequence found by then is reported).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub(super) shrink_time: Duration,
    /// Generate only the fuzzer's own operations: no case of the catalog runs as an
    /// operation of a sequence (by default, cases run amid the sequences' traffic, each
    /// judged by its own expectations).
    #[arg(long)]
    pub(super) no_cases: bool,
    /// Longest generated sequence.
    #[arg(long, default_value_t = 30)]
    pub(super) max_len: usize,
    /// Clients acting on the same session.
    #[arg(long, default_value_t = 2)]
    pub(super) clients: usize,
    /// model: random action sequences; frames: malformed and mutated frames; mixed (the
    /// default): both, interleaved sequence by sequence. AAP: model and mixed run the
    /// model's request sequences; malformed sends requests a server has to cope with
    /// (broken JSON, wrong content types, oversized bodies, unknown fields and values,
    /// clients that read streams badly).
    #[arg(long, default_value = "mixed", value_parser = ["mixed", "model", "frames", "malformed"])]
    pub(super) mode: String,
    /// Break rules in the built-in host: one fault or several (`a,b`).
    #[arg(long)]
    pub(super) fault: Option<String>,
    /// Target profile: the agent behaviours to drive; operations needing a behaviour it
    /// lacks are not generated.
    #[arg(long)]
    pub(super) target_profile: Option<PathBuf>,
    /// Known failures (rule IDs, one per line, as for `run`): seen, counted, not failures.
    #[arg(long)]
    pub(super) baseline: Option<PathBuf>,
    /// Rules not judged at all (globs, comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    pub(super) exclude: Vec<String>,
    /// Per-expectation timeout.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub(super) timeout: Duration,
    /// Record every frame of the campaign into this capture (JSON Lines; `ahpspec check`
    /// re-checks it). Needs a URL: the built-in target is a fresh host per sequence.
    #[arg(long, value_name = "FILE")]
    pub(super) record: Option<PathBuf>,
    /// Reports and traces go to <DIR>/fuzz/.
    #[arg(long, default_value = "reports")]
    pub(super) report_dir: PathBuf,
    /// ahp (default) or aap (an http:// URL picks aap too).
    #[arg(long)]
    pub(super) protocol: Option<String>,
    /// AAP API key, sent as `Authorization: Bearer KEY`.
    #[arg(long)]
    pub(super) token: Option<String>,
}
