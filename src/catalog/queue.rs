//! The order a run starts its cases in, for both runners: the order given, except that a
//! case whose exclusive group ([`Case::exclusive`]) has a case running waits, and the next
//! free case starts in its place.

use std::collections::HashSet;

use super::Case;

/// The cases a run has yet to start, and the exclusive groups that have a case running.
#[derive(Debug)]
pub struct CaseQueue {
    /// Indexes into the run's cases, in the order they are to start.
    waiting: Vec<usize>,
    /// Each case's exclusive group, by index.
    groups: Vec<Option<String>>,
    running: HashSet<String>,
}

impl CaseQueue {
    /// A queue of `order` (indexes into `cases`), started in that order.
    pub fn new<S>(cases: &[&Case<S>], order: Vec<usize>) -> Self {
        CaseQueue {
            waiting: order,
            groups: cases.iter().map(|case| case.exclusive.clone()).collect(),
            running: HashSet::new(),
        }
    }

    /// The first waiting case that may start now, taken off the queue (its group, if it has
    /// one, counts as running until [`CaseQueue::finished`]); `None` when every waiting case's
    /// group is running, or none is left.
    pub fn start(&mut self) -> Option<usize> {
        let position = self.waiting.iter().position(|&index| {
            self.groups[index]
                .as_ref()
                .is_none_or(|group| !self.running.contains(group))
        })?;
        let index = self.waiting.remove(position);
        if let Some(group) = &self.groups[index] {
            self.running.insert(group.clone());
        }
        Some(index)
    }

    /// Case `index` has ended: its group's next case may start.
    pub fn finished(&mut self, index: usize) {
        if let Some(group) = &self.groups[index] {
            self.running.remove(group);
        }
    }

    /// Whether no case is left to start.
    pub fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{CaseInfo, Level};

    fn case(id: &str, exclusive: Option<&str>) -> Case<()> {
        let info = CaseInfo {
            id: id.to_owned(),
            level: Level::Must,
            area: "t".to_owned(),
            spec: "s".to_owned(),
            requirement: "r".to_owned(),
            does: "d".to_owned(),
            source: "t.toml:1".to_owned(),
        };
        Case {
            exclusive: exclusive.map(str::to_owned),
            ..Case::of_steps(info, Vec::new())
        }
    }

    #[test]
    fn a_case_waits_while_its_group_runs_and_the_next_free_one_starts_instead() {
        let cases = [
            case("A-1", Some("token")),
            case("A-2", Some("token")),
            case("B-1", None),
            case("C-1", Some("other")),
        ];
        let refs: Vec<&Case<()>> = cases.iter().collect();
        let mut queue = CaseQueue::new(&refs, vec![0, 1, 2, 3]);
        assert_eq!(queue.start(), Some(0));
        assert_eq!(queue.start(), Some(2), "A-2 waits for A-1");
        assert_eq!(queue.start(), Some(3), "another group is free");
        assert_eq!(queue.start(), None, "only A-2 is left, and A-1 runs");
        assert!(!queue.is_empty());
        queue.finished(2);
        assert_eq!(queue.start(), None, "B-1 ending frees no group");
        queue.finished(0);
        assert_eq!(queue.start(), Some(1));
        assert!(queue.is_empty());
    }

    #[test]
    fn without_groups_the_order_given_is_kept() {
        let cases = [case("A-1", None), case("A-2", None), case("A-3", None)];
        let refs: Vec<&Case<()>> = cases.iter().collect();
        let mut queue = CaseQueue::new(&refs, vec![2, 0, 1]);
        let started: Vec<usize> = std::iter::from_fn(|| queue.start()).collect();
        assert_eq!(started, [2, 0, 1]);
    }
}
