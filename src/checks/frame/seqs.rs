//! The accepted envelopes one connection received on one channel, as their `serverSeq`s:
//! enough of them to tell, between two checkpoints, which envelope another subscriber got
//! and this one did not ([`crate::checks::delivery`]).

use std::collections::VecDeque;

/// Envelopes remembered per channel: a fuzz checkpoint comes every ten operations, far
/// fewer envelopes on one channel than this.
const KEPT: usize = 64;

/// One channel's accepted envelopes in arrival order (ascending `serverSeq`: an envelope
/// out of order is ENV-003's and not kept), each with whether it carried an origin (a
/// client's dispatch). Only the newest [`KEPT`] are kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelSeqs {
    recent: VecDeque<(u64, bool)>,
    /// Older envelopes were dropped: the remembered ones start at `recent.front()`.
    trimmed: bool,
}

impl ChannelSeqs {
    /// No envelope.
    pub const EMPTY: ChannelSeqs = ChannelSeqs {
        recent: VecDeque::new(),
        trimmed: false,
    };

    /// The newest envelope: its `serverSeq` and whether it carried an origin.
    pub fn last(&self) -> Option<(u64, bool)> {
        self.recent.back().copied()
    }

    /// Takes in an envelope newer than [`ChannelSeqs::last`].
    pub fn push(&mut self, seq: u64, dispatched: bool) {
        if self.recent.len() == KEPT {
            self.recent.pop_front();
            self.trimmed = true;
        }
        self.recent.push_back((seq, dispatched));
    }

    /// Whether an envelope with `seq` arrived, or `None` when it is older than what is
    /// remembered (nothing can be said of it).
    pub fn has(&self, seq: u64) -> Option<bool> {
        match self.recent.front() {
            Some((oldest, _)) if self.trimmed && seq < *oldest => None,
            _ => Some(self.recent.binary_search_by_key(&seq, |(s, _)| *s).is_ok()),
        }
    }

    /// The remembered envelopes, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, bool)> + '_ {
        self.recent.iter().copied()
    }
}

/// What one connection holds of a channel ([`super::FrameChecker::delivery`]).
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a> {
    /// The `fromSeq` of its snapshot while subscribed; `None` when it is not.
    pub from: Option<u64>,
    /// The envelopes it received on the channel (empty when none).
    pub seqs: &'a ChannelSeqs,
    /// Whether the host may hold the channel's envelopes back (a subscription that did not
    /// ask for immediate delivery).
    pub coalescable: bool,
}

impl Delivery<'_> {
    /// The newest envelope received: its `serverSeq` and whether it carried an origin.
    pub fn last(&self) -> Option<(u64, bool)> {
        self.seqs.last()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_are_kept_and_older_ones_are_unknown() {
        let mut seqs = ChannelSeqs::default();
        assert_eq!(seqs.has(3), Some(false));
        for seq in (1..=100).filter(|s| s % 2 == 0) {
            seqs.push(seq, seq % 4 == 0);
        }
        assert_eq!(seqs.last(), Some((100, true)));
        assert_eq!(seqs.has(100), Some(true));
        assert_eq!(seqs.has(99), Some(false));
        // 50 pushed, 64 kept: nothing trimmed yet.
        assert_eq!(seqs.has(1), Some(false));
        for seq in 101..=200 {
            seqs.push(seq, false);
        }
        assert_eq!(seqs.iter().count(), KEPT);
        assert_eq!(seqs.has(200 - KEPT as u64), None, "dropped");
        assert_eq!(seqs.has(201 - KEPT as u64), Some(true));
    }
}
