//! The counts of the frame rules: how many things each looked at.

use crate::checks::FastMap;

/// How many things each rule looked at.
pub type Counts = FastMap<&'static str, usize>;

/// The rules the frame checks count, one slot each in [`Tally`].
#[derive(Debug, Clone, Copy)]
pub(super) enum Rule {
    Transport001,
    Transport002,
    Transport003,
    Transport004,
    Transport005,
    Transport011,
    Transport012,
    Sub002,
    Sub012,
    Status001,
    InvSchema1,
    Env002,
    Env003,
    Env004,
    Env005,
}

impl Rule {
    pub(super) const ALL: [Rule; 15] = [
        Rule::Transport001,
        Rule::Transport002,
        Rule::Transport003,
        Rule::Transport004,
        Rule::Transport005,
        Rule::Transport011,
        Rule::Transport012,
        Rule::Sub002,
        Rule::Sub012,
        Rule::Status001,
        Rule::InvSchema1,
        Rule::Env002,
        Rule::Env003,
        Rule::Env004,
        Rule::Env005,
    ];

    pub(super) fn id(self) -> &'static str {
        match self {
            Rule::Transport001 => "TRANSPORT-001",
            Rule::Transport002 => "TRANSPORT-002",
            Rule::Transport003 => "TRANSPORT-003",
            Rule::Transport004 => "TRANSPORT-004",
            Rule::Transport005 => "TRANSPORT-005",
            Rule::Transport011 => "TRANSPORT-011",
            Rule::Transport012 => "TRANSPORT-012",
            Rule::Sub002 => "SUB-002",
            Rule::Sub012 => "SUB-012",
            Rule::Status001 => "STATUS-001",
            Rule::InvSchema1 => "INV-SCHEMA-1",
            Rule::Env002 => "ENV-002",
            Rule::Env003 => "ENV-003",
            Rule::Env004 => "ENV-004",
            Rule::Env005 => "ENV-005",
        }
    }
}

/// How many things each frame rule looked at: a fixed slot per rule instead of a map entry,
/// because a dozen counters move on every frame. `None` = the rule never ran (it then has
/// no entry in [`FrameChecker::counts`], as a map would have had none); `Some(0)` = it ran
/// and looked at nothing (STATUS-001 on a frame without a status member).
#[derive(Debug, Default, Clone)]
pub(super) struct Tally(pub(super) [Option<usize>; Rule::ALL.len()]);

impl Tally {
    pub(super) fn add(&mut self, rule: Rule, n: usize) {
        let slot = &mut self.0[rule as usize];
        *slot = Some(slot.unwrap_or(0) + n);
    }

    pub(super) fn bump(&mut self, rule: Rule) {
        self.add(rule, 1);
    }
}
