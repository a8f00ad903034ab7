//! The device controller's transfer pipe, shared by the simulator's and
//! the emulator's device models (docs/MODEL.md, "Device model";
//! docs/HOST-COSTS.md, "The shared controller").
//!
//! One pipe carries both directions' data. It serves the transfers in
//! progress round-robin, one memory page at a time: an NVMe command
//! describes its data as PRP entries, each naming one memory page of the
//! size the host set in CC.MPS, and Linux sets 4 KiB pages (5.0's
//! `nvme_enable_ctrl` in drivers/nvme/host/core.c, `page_shift = 12`,
//! "Default to a 4K page size"; `NVME_CTRL_PAGE_SHIFT` 12 in
//! drivers/nvme/host/nvme.h from 5.9, used by pci.c's PRP set-up in
//! 5.15; NVMe 1.3, 4.3 "Physical Region Page Entry and List"). A
//! controller with several commands' data in flight moves them page by
//! page, so a 4 KiB transfer waits for at most one page of each transfer
//! ahead of it, not for a whole 1 MiB one.
//!
//! A transfer of one page (or less) is served whole, so while no longer
//! transfer is in progress the pipe is the FIFO it was: [`TransferPipe::add`]
//! gives such a transfer its end at once, and the ends come in arrival
//! order. A longer transfer (or any transfer that arrives while one is in
//! progress) joins the round instead; the round is computed, not stepped
//! page by page: with `n` transfers in it, the next to end is found in
//! `O(n)` and only that end is an event. A transfer alone ends at its own
//! `transfer_ns`.
//!
//! The pipe is work-conserving whatever the order, so the instant it has
//! moved everything queued on it ([`TransferPipe::free_at`]) is the one the
//! FIFO gave: the order of finishing changes, the time the pipe is busy
//! does not, and the device never moves more than its bandwidth.

use std::collections::VecDeque;

use crate::profiles::transfer_ns;

/// The memory page a controller moves at a time (CC.MPS as Linux sets
/// it: 4 KiB; see the module documentation).
pub const PIPE_PAGE_BYTES: u64 = 4096;

/// While the round is empty, a transfer of fewer bytes than this crosses
/// whole.
const WHOLE_BELOW: u64 = PIPE_PAGE_BYTES + 1;

/// Time in ns, as both engines count it.
pub type Nanos = u64;

/// One transfer in the round.
#[derive(Clone, Copy, Debug)]
struct Share<T> {
    item: T,
    /// Pages still to move, the one under way included.
    pages: u64,
    /// Time of each page but the last.
    page_ns: Nanos,
    /// Time of the last page: the transfer's remainder, so that its pages
    /// add up to its `transfer_ns` exactly.
    last_ns: Nanos,
}

/// The controller's transfer pipe: a FIFO for whole single-page transfers
/// while nothing longer is in progress, a page-by-page round-robin
/// otherwise. `T` names a transfer to its owner (a request slot).
#[derive(Clone, Debug)]
pub struct TransferPipe<T> {
    /// When the pipe has moved everything queued on it.
    free_at: Nanos,
    /// Start of the page the round's first transfer moves (now under way,
    /// or waiting for earlier whole transfers to end).
    page_start: Nanos,
    /// Transfers in progress, in the order the pipe serves them from
    /// `page_start`; a transfer whose page ends goes to the back.
    round: VecDeque<Share<T>>,
    /// Transfers whose last page ended before a later one joined the
    /// round, with their ends, until [`TransferPipe::finish`] takes them.
    ended: VecDeque<(Nanos, T)>,
    /// Sizes below this cross whole: one page plus one while the round is
    /// empty, none while it is not (one comparison on the common path).
    whole_below: u64,
}

impl<T: Copy> Default for TransferPipe<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> TransferPipe<T> {
    /// An idle pipe.
    pub fn new() -> Self {
        TransferPipe {
            free_at: 0,
            page_start: 0,
            round: VecDeque::new(),
            ended: VecDeque::new(),
            whole_below: WHOLE_BELOW,
        }
    }

    /// When the pipe has moved everything queued on it (the FIFO's end
    /// of its last transfer: the same whatever the order).
    pub fn free_at(&self) -> Nanos {
        self.free_at
    }

    /// Whether transfers are in the round: their ends are then given by
    /// [`TransferPipe::next_end`], one at a time.
    pub fn is_sharing(&self) -> bool {
        self.whole_below == 0
    }

    /// Queues `item`, a transfer of `bytes` taking `ns` on the pipe
    /// (`transfer_ns(bytes, bandwidth)`) whose full pages take `page_ns`
    /// each (`transfer_ns(PIPE_PAGE_BYTES, bandwidth)`), at `now`. Returns
    /// its end when it is served whole (one page at most, nothing in the
    /// round): such ends never decrease from one to the next. `None`: it
    /// joined the round, and [`TransferPipe::next_end`] changed.
    #[inline(always)]
    pub fn add(
        &mut self,
        now: Nanos,
        item: T,
        bytes: u64,
        ns: Nanos,
        page_ns: Nanos,
    ) -> Option<Nanos> {
        let start = self.free_at.max(now);
        self.free_at = start.saturating_add(ns);
        if bytes < self.whole_below {
            return Some(self.free_at);
        }
        self.join_round(now, start, item, bytes, ns, page_ns);
        None
    }

    /// `item` joins the round at `now`; `start`: when the pipe is done
    /// with what was queued before it. Out of line: a workload of
    /// single pages never comes here.
    #[inline(never)]
    fn join_round(
        &mut self,
        now: Nanos,
        start: Nanos,
        item: T,
        bytes: u64,
        ns: Nanos,
        page_ns: Nanos,
    ) {
        self.advance(now);
        if self.round.is_empty() {
            self.page_start = start;
        }
        self.whole_below = 0;
        let pages = bytes.div_ceil(PIPE_PAGE_BYTES).max(1);
        // Each full page takes `page_ns`, the last the remainder. Only a
        // transfer time cut short (a saturated one) can be below its
        // pages' time; its pages then share it evenly.
        let page_ns = if page_ns.saturating_mul(pages - 1) <= ns {
            page_ns
        } else {
            ns / pages
        };
        self.round.push_back(Share {
            item,
            pages,
            page_ns,
            last_ns: ns - page_ns * (pages - 1),
        });
    }

    /// [`TransferPipe::add`] with the times computed from `bandwidth`.
    pub fn add_at(&mut self, now: Nanos, item: T, bytes: u64, bandwidth: u64) -> Option<Nanos> {
        let ns = transfer_ns(bytes, bandwidth);
        let page_ns = transfer_ns(PIPE_PAGE_BYTES, bandwidth);
        self.add(now, item, bytes, ns, page_ns)
    }

    /// Moves the round on to the page under way at `now`: pages that end
    /// by `now` are done and their transfers go to the back, or, after
    /// their last page, to `ended` (a caller that adds a transfer before
    /// it took the ends due until then still sees them, in order).
    fn advance(&mut self, now: Nanos) {
        while !self.round.is_empty() && self.page_start <= now {
            // Whole rounds first: each moves one full page of every
            // transfer, as long as none reaches its last page.
            let fewest = self.round.iter().map(|s| s.pages).min().unwrap_or(1);
            let round_ns = self.round_ns();
            let whole = match (now - self.page_start).checked_div(round_ns) {
                Some(rounds) => rounds.min(fewest - 1),
                None => fewest - 1,
            };
            if whole > 0 {
                for s in &mut self.round {
                    s.pages -= whole;
                }
                self.page_start = self
                    .page_start
                    .saturating_add(whole.saturating_mul(round_ns));
            }
            // Then page by page, less than one round, until `now` or a
            // transfer's end (which changes the round: start again).
            while let Some(mut head) = self.round.pop_front() {
                let page_ns = if head.pages == 1 {
                    head.last_ns
                } else {
                    head.page_ns
                };
                let end = self.page_start.saturating_add(page_ns);
                if end > now {
                    self.round.push_front(head);
                    return;
                }
                self.page_start = end;
                if head.pages == 1 {
                    self.ended.push_back((end, head.item));
                    break;
                }
                head.pages -= 1;
                self.round.push_back(head);
            }
        }
    }

    /// Time of one round of full pages.
    fn round_ns(&self) -> Nanos {
        self.round
            .iter()
            .fold(0u64, |sum, s| sum.saturating_add(s.page_ns))
    }

    /// The next transfer of the round to end, and when, if nothing
    /// joins the round before: the first, in the round's order, of those
    /// with the fewest pages left.
    pub fn next_end(&self) -> Option<(Nanos, T)> {
        if let Some(&first) = self.ended.front() {
            return Some(first);
        }
        let fewest = self.round.iter().map(|s| s.pages).min()?;
        let mut at = self
            .page_start
            .saturating_add((fewest - 1).saturating_mul(self.round_ns()));
        for s in &self.round {
            if s.pages == fewest {
                return Some((at.saturating_add(s.last_ns), s.item));
            }
            at = at.saturating_add(s.page_ns);
        }
        None
    }

    /// Ends the round's next transfer if it ends at `at`
    /// ([`TransferPipe::next_end`]), and returns it.
    pub fn finish(&mut self, at: Nanos) -> Option<T> {
        if self.next_end()?.0 != at {
            return None;
        }
        if self.ended.is_empty() {
            self.advance(at);
        }
        let (_, item) = self.ended.pop_front()?;
        if self.round.is_empty() && self.ended.is_empty() {
            self.whole_below = WHOLE_BELOW;
        }
        Some(item)
    }

    /// Empties the round (the device is stopping), returning its
    /// transfers, those that ended first.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.whole_below = WHOLE_BELOW;
        self.ended
            .drain(..)
            .map(|(_, item)| item)
            .chain(self.round.drain(..).map(|s| s.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 4 KiB a microsecond.
    const BW: u64 = 4_096_000_000;

    /// Runs `pipe` to its end, returning each transfer's end in the order
    /// they come.
    fn run_out(pipe: &mut TransferPipe<u32>) -> Vec<(Nanos, u32)> {
        let mut ends = Vec::new();
        while let Some((at, item)) = pipe.next_end() {
            assert_eq!(pipe.finish(at), Some(item));
            ends.push((at, item));
        }
        ends
    }

    #[test]
    fn single_pages_alone_are_a_fifo() {
        let mut pipe = TransferPipe::new();
        assert_eq!(pipe.add_at(0, 0u32, 4096, BW), Some(1_000));
        assert_eq!(pipe.add_at(0, 1, 512, BW), Some(1_125));
        assert_eq!(pipe.add_at(5_000, 2, 4096, BW), Some(6_000));
        assert!(!pipe.is_sharing());
        assert_eq!(pipe.free_at(), 6_000);
    }

    #[test]
    fn a_large_transfer_alone_ends_at_its_own_time() {
        let mut pipe = TransferPipe::new();
        assert_eq!(pipe.add_at(100, 7u32, 1 << 20, BW), None);
        assert_eq!(pipe.next_end(), Some((100 + 256_000, 7)));
        assert_eq!(run_out(&mut pipe), [(256_100, 7)]);
        assert_eq!(pipe.free_at(), 256_100);
    }

    #[test]
    fn a_small_transfer_waits_for_one_page_not_a_whole_large_one() {
        // 1 MiB from 0 (256 pages of 1 us), 4 KiB at 10.5 us: the page
        // under way ends at 11 us, then the small one's page: 12 us. In
        // arrival order it would have ended at 257 us.
        let mut pipe = TransferPipe::new();
        assert_eq!(pipe.add_at(0, 0u32, 1 << 20, BW), None);
        assert_eq!(pipe.add_at(10_500, 1, 4096, BW), None);
        assert_eq!(pipe.next_end(), Some((12_000, 1)));
        let ends = run_out(&mut pipe);
        assert_eq!(ends, [(12_000, 1), (257_000, 0)]);
        assert_eq!(pipe.free_at(), 257_000);
    }

    #[test]
    fn transfers_in_progress_take_pages_in_turn() {
        // Two 3-page transfers from 0 and a 2-page one at 0: pages go
        // a b c a b c a b, so c ends at 6 us (its second page is the
        // round's sixth), a at 7, b at 8.
        let mut pipe = TransferPipe::new();
        pipe.add_at(0, 0u32, 3 * 4096, BW);
        pipe.add_at(0, 1, 3 * 4096, BW);
        pipe.add_at(0, 2, 2 * 4096, BW);
        assert_eq!(run_out(&mut pipe), [(6_000, 2), (7_000, 0), (8_000, 1)]);
    }

    #[test]
    fn the_last_page_carries_the_rounding() {
        // A page at 3 GB/s is 1365.33 ns, counted 1365: the last page
        // takes the remainder, and the transfer its own transfer_ns.
        let bw = 3_000_000_000;
        let mut pipe = TransferPipe::new();
        pipe.add_at(0, 0u32, 7 * 4096 + 100, bw);
        let want = transfer_ns(7 * 4096 + 100, bw);
        assert_eq!(run_out(&mut pipe), [(want, 0)]);
    }

    /// The round stepped one page at a time: the pipe's definition, to
    /// check the computed round against. `arrivals` are (instant, bytes,
    /// bandwidth) in time order; returns each transfer's end.
    fn page_by_page(arrivals: &[(Nanos, u64, u64)]) -> Vec<Nanos> {
        let mut ends = vec![0; arrivals.len()];
        // (transfer, bytes left, bandwidth)
        let mut turns: VecDeque<(usize, u64, u64)> = VecDeque::new();
        let mut clock = 0;
        let mut next = 0;
        // Time a transfer's next page takes: the remainder on its last.
        let page = |left: u64, total: u64, bw: u64| {
            if left > PIPE_PAGE_BYTES {
                transfer_ns(PIPE_PAGE_BYTES, bw)
            } else {
                let full = total.div_ceil(PIPE_PAGE_BYTES).max(1) - 1;
                transfer_ns(total, bw) - full * transfer_ns(PIPE_PAGE_BYTES, bw)
            }
        };
        while next < arrivals.len() || !turns.is_empty() {
            let Some(&(i, left, bw)) = turns.front() else {
                // Idle: the next arrival starts the pipe.
                clock = clock.max(arrivals[next].0);
                turns.push_back((next, arrivals[next].1, arrivals[next].2));
                next += 1;
                continue;
            };
            let end = clock + page(left, arrivals[i].1, bw);
            // Arrivals before the page ends join the round ahead of its
            // transfer's next turn; one at its end, behind it.
            while next < arrivals.len() && arrivals[next].0 < end {
                turns.push_back((next, arrivals[next].1, arrivals[next].2));
                next += 1;
            }
            turns.pop_front();
            clock = end;
            if left > PIPE_PAGE_BYTES {
                turns.push_back((i, left - PIPE_PAGE_BYTES, bw));
            } else {
                ends[i] = end;
            }
        }
        ends
    }

    proptest! {
        /// Any mix of sizes and arrival instants (ends taken as they
        /// come, arrivals in between): every transfer ends exactly once,
        /// none before its own time on the pipe after it arrived, the
        /// last when the FIFO would have ended it, and the pipe is never
        /// given more than the time that passed.
        #[test]
        fn every_transfer_ends_once_and_the_pipe_stays_busy_as_a_fifo(
            transfers in proptest::collection::vec(
                (1u64..=300_000, 0u64..50_000, any::<bool>()),
                1..120,
            ),
        ) {
            let mut pipe = TransferPipe::new();
            let mut ended = vec![None; transfers.len()];
            let mut arrived = Vec::new();
            let (mut now, mut busy) = (0u64, 0u64);
            let mut fifo_end = 0u64;
            let mut first = None;
            let end = |at: Nanos, item: u32, ended: &mut Vec<Option<Nanos>>| {
                prop_assert!(ended[item as usize].is_none(), "{item} ended twice");
                ended[item as usize] = Some(at);
                Ok(())
            };
            for (i, &(bytes, gap, slow)) in transfers.iter().enumerate() {
                let target = now + gap;
                // Ends due before the next arrival come first.
                while let Some((at, item)) = pipe.next_end() {
                    if at > target {
                        break;
                    }
                    prop_assert_eq!(pipe.finish(at), Some(item));
                    end(at, item, &mut ended)?;
                }
                now = target;
                let bw = if slow { 1_000_000_000 } else { BW };
                let ns = transfer_ns(bytes, bw);
                first.get_or_insert(now);
                fifo_end = fifo_end.max(now) + ns;
                busy += ns;
                arrived.push((now, ns));
                if let Some(at) = pipe.add_at(now, i as u32, bytes, bw) {
                    end(at, i as u32, &mut ended)?;
                }
            }
            while let Some((at, item)) = pipe.next_end() {
                prop_assert_eq!(pipe.finish(at), Some(item));
                end(at, item, &mut ended)?;
            }
            let last = ended.iter().map(|e| e.unwrap_or(0)).max().unwrap_or(0);
            for (i, e) in ended.iter().enumerate() {
                let at = e.expect("every transfer ends");
                prop_assert!(at >= arrived[i].0 + arrived[i].1, "transfer {i} ended early");
            }
            prop_assert_eq!(last, fifo_end);
            prop_assert_eq!(pipe.free_at(), fifo_end);
            prop_assert!(busy <= last - first.unwrap_or(0));
        }

        /// The computed round ends every transfer when stepping it page
        /// by page does, whatever the sizes, directions and arrivals, and
        /// whether or not the caller took the ends due before each
        /// arrival (the emulator's device core may add first).
        #[test]
        fn the_computed_round_matches_the_round_stepped_page_by_page(
            transfers in proptest::collection::vec(
                (1u64..=100_000, 0u64..30_000, any::<bool>()),
                1..80,
            ),
            late in any::<bool>(),
        ) {
            let mut arrivals = Vec::new();
            let mut now = 0;
            for &(bytes, gap, slow) in &transfers {
                now += gap;
                arrivals.push((now, bytes, if slow { 1_000_000_000 } else { 3_000_000_000 }));
            }
            let mut pipe = TransferPipe::new();
            let mut ends = vec![None; arrivals.len()];
            for (i, &(at, bytes, bw)) in arrivals.iter().enumerate() {
                while let Some((end, item)) = pipe.next_end() {
                    if end > at || late {
                        break;
                    }
                    pipe.finish(end);
                    ends[item as usize] = Some(end);
                }
                if let Some(end) = pipe.add_at(at, i as u32, bytes, bw) {
                    ends[i] = Some(end);
                }
            }
            for (end, item) in run_out(&mut pipe) {
                ends[item as usize] = Some(end);
            }
            let ends: Vec<Nanos> = ends.into_iter().map(|e| e.unwrap_or(0)).collect();
            prop_assert_eq!(ends, page_by_page(&arrivals));
        }
    }
}
