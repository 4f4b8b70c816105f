//! One terminal as the world holds it (kept apart from the terminal commands, which work on
//! the world, so that the world's file need not import them).

use std::time::Instant;

use ahp_types::state::TerminalState;

use super::pty::Pty;

/// One terminal as the host holds it.
#[derive(Debug)]
pub struct TerminalEntry {
    pub state: TerminalState,
    /// The running shell; `None` once it exited.
    pub(super) pty: Option<Pty>,
    pub(super) output_bytes: usize,
    pub(super) commands: u64,
    /// The command line the shell announced for the command about to start.
    pub(super) command_line: Option<String>,
    /// The executing command: its id and when it started.
    pub(super) running: Option<(String, Instant)>,
}
