//! The counts of the frame rules: how many things each looked at.

use crate::checks::{FastMap, Rule};

/// How many things each rule looked at.
pub type Counts = FastMap<Rule, usize>;

/// How many things each frame rule looked at: a fixed slot per rule instead of a map entry,
/// because a dozen counters move on every frame. `None` = the rule never ran (it then has
/// no entry in [`FrameChecker::counts`], as a map would have had none); `Some(0)` = it ran
/// and looked at nothing (STATUS-001 on a frame without a status member).
/// (One slot per always-on rule of either protocol, indexed by the variant; only the frame
/// rules' slots ever move.)
#[derive(Debug, Clone)]
pub(super) struct Tally(pub(super) [Option<usize>; Rule::ALWAYS_ON.len()]);

impl Default for Tally {
    fn default() -> Self {
        Tally([None; Rule::ALWAYS_ON.len()])
    }
}

impl Tally {
    pub(super) fn add(&mut self, rule: Rule, n: usize) {
        let slot = &mut self.0[rule as usize];
        *slot = Some(slot.unwrap_or(0) + n);
    }

    pub(super) fn bump(&mut self, rule: Rule) {
        self.add(rule, 1);
    }
}
