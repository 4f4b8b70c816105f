//! Which cases a run takes: globs over case IDs, levels, and a deterministic shard, over
//! the case headers of either protocol.

use std::fmt;
use std::str::FromStr;

use super::{Case, Catalog, SuiteFormat};
use crate::verdict::Level;

/// Which cases to run.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Glob patterns over case IDs (`*` and `?`); empty = all.
    pub filter: Vec<String>,
    pub exclude: Vec<String>,
    /// Only cases of these levels; empty = all.
    pub levels: Vec<Level>,
    /// Only this deterministic slice of the selected cases (always-on rows are in every
    /// shard: each reports what its own cases showed, and `ahpspec merge` combines them).
    pub shard: Option<Shard>,
}

impl Selection {
    pub fn includes(&self, id: &str, level: Level) -> bool {
        (self.filter.is_empty() || self.filter.iter().any(|p| glob(p, id)))
            && !self.exclude.iter().any(|p| glob(p, id))
            && (self.levels.is_empty() || self.levels.contains(&level))
    }

    /// The selected cases of the catalog, in catalog order: those `includes` admits, and of
    /// those, with a shard, every `count`-th by case ID (so a shard holds the same cases
    /// whatever the suite files' order). The cases of one exclusive group count as one, by
    /// their first ID, and stay in one shard: shards may run side by side against one server,
    /// and the group's cases must not.
    pub fn cases<'a, S>(&self, catalog: &'a Catalog<S>) -> Vec<&'a Case<S>> {
        let selected: Vec<&Case<S>> = catalog
            .cases
            .iter()
            .filter(|case| self.includes(&case.info.id, case.info.level))
            .collect();
        let Some(shard) = self.shard else {
            return selected;
        };
        // Each case's unit: its exclusive group's first ID, or its own.
        let mut firsts: std::collections::HashMap<&str, &str> = Default::default();
        for case in &selected {
            if let Some(group) = &case.exclusive {
                let first = firsts.entry(group.as_str()).or_insert(&case.info.id);
                *first = (*first).min(case.info.id.as_str());
            }
        }
        let unit = |case: &'a Case<S>| -> &'a str {
            match &case.exclusive {
                Some(group) => firsts.get(group.as_str()).copied().unwrap_or(&case.info.id),
                None => &case.info.id,
            }
        };
        let mut units: Vec<&str> = selected.iter().map(|case| unit(case)).collect();
        units.sort_unstable();
        units.dedup();
        let mine: std::collections::HashSet<&str> = units
            .iter()
            .enumerate()
            .filter(|(position, _)| position % shard.count == shard.index - 1)
            .map(|(_, id)| *id)
            .collect();
        selected
            .into_iter()
            .filter(|case| mine.contains(unit(case)))
            .collect()
    }

    /// Whether anything of the catalog is selected: a case, or (without a shard, whose
    /// always-on rows only report on its own cases) an always-on rule.
    pub fn matches_any<S: SuiteFormat>(&self, catalog: &Catalog<S>) -> bool {
        !self.cases(catalog).is_empty()
            || (self.shard.is_none()
                && S::ALWAYS_ON
                    .iter()
                    .any(|rule| self.includes(rule.id, rule.level)))
    }

    /// Which cases and rules the selection admits, as command-line options (`--filter
    /// TOOL-* --level MUST`), without the shard; `None` for the whole catalog. Reports carry
    /// it, so that `ahpspec merge` combines only shards of one selection.
    pub fn choice(&self) -> Option<String> {
        let parts = self.choice_parts();
        (!parts.is_empty()).then(|| parts.join(" "))
    }

    /// The selection as command-line options, for messages (`--filter NOPE-*`).
    pub fn describe(&self) -> String {
        let mut parts = self.choice_parts();
        if let Some(shard) = self.shard {
            parts.push(format!("--shard {shard}"));
        }
        if parts.is_empty() {
            "the whole catalog".to_owned()
        } else {
            parts.join(" ")
        }
    }

    fn choice_parts(&self) -> Vec<String> {
        let mut parts = Vec::new();
        if !self.filter.is_empty() {
            parts.push(format!("--filter {}", self.filter.join(",")));
        }
        if !self.exclude.is_empty() {
            parts.push(format!("--exclude {}", self.exclude.join(",")));
        }
        if !self.levels.is_empty() {
            let levels: Vec<&str> = self.levels.iter().map(|l| l.as_str()).collect();
            parts.push(format!("--level {}", levels.join(",")));
        }
        parts
    }
}

/// Glob match with `*` (any run) and `?` (one character); a pattern without wildcards
/// also matches as a prefix followed by `/` (`TOOL-007` selects `TOOL-007/denied`).
pub fn glob(pattern: &str, text: &str) -> bool {
    fn matches(p: &[char], t: &[char]) -> bool {
        match (p.first(), t.first()) {
            (None, None) => true,
            (Some('*'), _) => matches(&p[1..], t) || (!t.is_empty() && matches(p, &t[1..])),
            (Some('?'), Some(_)) => matches(&p[1..], &t[1..]),
            (Some(a), Some(b)) if a == b => matches(&p[1..], &t[1..]),
            _ => false,
        }
    }
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches(&p, &t) || (!pattern.contains(['*', '?']) && text.starts_with(&format!("{pattern}/")))
}

/// Slice `index` of `count` (1-based, `--shard 2/4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// A `--shard` value that is not `I/N` with 1 ≤ I ≤ N.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid shard {0:?} (expected I/N with 1 <= I <= N, e.g. 2/4)")]
pub struct ShardError(pub String);

impl FromStr for Shard {
    type Err = ShardError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let error = || ShardError(text.to_owned());
        let (index, count) = text.split_once('/').ok_or_else(error)?;
        let index: usize = index.trim().parse().map_err(|_| error())?;
        let count: usize = count.trim().parse().map_err(|_| error())?;
        if index == 0 || index > count {
            return Err(error());
        }
        Ok(Shard { index, count })
    }
}

impl Shard {
    /// The whole campaign or catalog: shard 1 of 1.
    pub const WHOLE: Shard = Shard { index: 1, count: 1 };

    /// This shard's share of `total` sequences: the remainder goes to the first shards,
    /// so the shares add up to `total`.
    pub fn share(self, total: u64) -> u64 {
        let count = self.count as u64;
        let index = self.index as u64 - 1;
        total / count + u64::from(index < total % count)
    }

    /// The campaign-wide number of this shard's `nth` sequence when the shards deal a
    /// campaign's sequences round-robin (shard I runs I-1, I-1+N, I-1+2N, …).
    pub fn nth(self, nth: u64) -> u64 {
        (self.index as u64 - 1) + nth * self.count as u64
    }
}

/// Seed `n` derived from `seed` (splitmix64 of the two): the same for the same pair, far
/// apart for neighbouring `n` (a fuzz shard's seed; an AAP fuzz sequence's own seed).
pub fn derive_seed(seed: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_add(n.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_shards_deal_every_sequence_once() {
        let total = 11;
        let mut dealt: Vec<u64> = (1..=3)
            .flat_map(|index| {
                let shard = Shard { index, count: 3 };
                (0..shard.share(total)).map(move |n| shard.nth(n))
            })
            .collect();
        dealt.sort_unstable();
        assert_eq!(dealt, (0..total).collect::<Vec<_>>());
        assert_eq!(Shard::WHOLE.nth(7), 7);
        assert_ne!(derive_seed(5, 1), derive_seed(5, 2));
    }

    #[test]
    fn glob_matches_ids() {
        assert!(glob("TOOL-*", "TOOL-007"));
        assert!(glob("TOOL-007", "TOOL-007/denied"));
        assert!(glob("*-00?", "ENV-003"));
        assert!(!glob("TOOL-00", "TOOL-007"));
        assert!(!glob("ENV-*", "TOOL-007"));
    }

    #[test]
    fn shards_parse_and_reject_nonsense() {
        assert_eq!("2/4".parse::<Shard>(), Ok(Shard { index: 2, count: 4 }));
        for bad in ["0/4", "5/4", "x", "1/0", "1/", "/2", "-1/2"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 3, count: 8 }.to_string(), "3/8");
    }

    #[test]
    fn shards_partition_the_selection() {
        let catalog = crate::suite::Catalog::embedded().expect("suites load");
        let all = Selection::default().cases(&catalog).len();
        let mut seen = std::collections::BTreeSet::new();
        for index in 1..=4 {
            let selection = Selection {
                shard: Some(Shard { index, count: 4 }),
                ..Selection::default()
            };
            for case in selection.cases(&catalog) {
                assert!(seen.insert(case.info.id.clone()), "{} twice", case.info.id);
            }
        }
        assert_eq!(seen.len(), all);
    }

    #[test]
    fn an_exclusive_group_stays_in_one_shard() {
        let catalog = crate::suite::Catalog::embedded().expect("suites load");
        let group: Vec<&str> = catalog
            .cases
            .iter()
            .filter(|case| case.exclusive.as_deref() == Some("tool-auth"))
            .map(|case| case.info.id.as_str())
            .collect();
        assert!(group.len() >= 6, "the tool-auth group: {group:?}");
        let holders: Vec<usize> = (1..=4)
            .filter(|&index| {
                let selection = Selection {
                    shard: Some(Shard { index, count: 4 }),
                    ..Selection::default()
                };
                let cases = selection.cases(&catalog);
                let held = group
                    .iter()
                    .filter(|id| cases.iter().any(|case| case.info.id == **id))
                    .count();
                assert!(
                    held == 0 || held == group.len(),
                    "shard {index} holds {held}"
                );
                held > 0
            })
            .collect();
        assert_eq!(holders.len(), 1, "the group is in shards {holders:?}");
    }
}
