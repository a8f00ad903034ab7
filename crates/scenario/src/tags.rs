//! blk-mq's driver tags: a request needs one of its hardware queue's tags
//! from its submission path until its completion is handled, and a
//! submitter that finds none sleeps until enough are freed (Linux 5.0
//! block/blk-mq-tag.c `blk_mq_get_tag`: `io_schedule()` on the sbitmap
//! queue's wait queue, after running the hardware queue). Freed tags wake
//! the waiters in batches (lib/sbitmap.c: `wake_batch`, the depth over
//! `SBQ_WAIT_QUEUES` = 8 clamped to 1..=`SBQ_WAKE_BATCH` = 8): with the
//! NVMe driver's 1 024 tags per queue, every eighth freed tag wakes up to
//! eight waiters. A woken submitter tries again and sleeps again if the
//! tags went to someone else. So a job file that keeps more requests in
//! flight than a queue has tags runs, as it does on Linux, and the wait
//! shows in its latency (docs/HOST-COSTS.md, "Tag waits").

use std::collections::VecDeque;

/// `SBQ_WAIT_QUEUES` and `SBQ_WAKE_BATCH` (include/linux/sbitmap.h).
const SBQ_WAIT_QUEUES: u32 = 8;
const SBQ_WAKE_BATCH: u32 = 8;

/// One hardware queue's tags and the threads sleeping for one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TagPool {
    free: u32,
    depth: u32,
    wake_batch: u32,
    /// Tags freed since the last batch of wake-ups, while someone waited.
    freed_while_waited: u32,
    /// Woken waiters that have not tried again yet.
    woken_pending: u32,
    /// Freed tags set aside for them, shared equally.
    reserved: u32,
    /// Threads asleep in `blk_mq_get_tag`, oldest first.
    waiters: VecDeque<u32>,
}

impl TagPool {
    /// A pool of `depth` tags (at least one).
    pub fn new(depth: u32) -> TagPool {
        let depth = depth.max(1);
        TagPool {
            free: depth,
            depth,
            wake_batch: (depth / SBQ_WAIT_QUEUES).clamp(1, SBQ_WAKE_BATCH),
            freed_while_waited: 0,
            woken_pending: 0,
            reserved: 0,
            waiters: VecDeque::new(),
        }
    }

    /// Takes up to `n` tags for one plug of a submission call; returns how
    /// many it got. `woken`: the caller was woken from the waiters and
    /// tries again.
    ///
    /// The kernel takes one tag per request as the call walks it, so a
    /// submitter running on another core cannot take, in one go, the tags
    /// a batch of wake-ups freed before the woken threads run: it walks
    /// its requests one by one (1.8 us each) while they take theirs. The
    /// model takes a plug's tags at once, so the tags whose release woke a
    /// batch of waiters are set aside for those waiters, shared equally,
    /// until each has tried again; without that, a waiter whose core was
    /// busy with the waking handler lost every freed tag to a submitter on
    /// an idle core, and starved.
    ///
    /// A woken waiter takes its share of the set-aside tags and, like any
    /// submitter, the free tags nobody's share holds. A batch can wake
    /// more waiters than it freed tags (the last free tag of a queue wakes
    /// a whole batch), so a share can be empty: limited to it, a woken
    /// waiter found no tag among all the free ones, slept again, and with
    /// nothing left in flight to free one, slept for ever.
    pub fn take(&mut self, n: u32, woken: bool) -> u32 {
        debug_assert!(self.reserved <= self.free);
        let unreserved = self.free.saturating_sub(self.reserved);
        let got = if woken && self.woken_pending > 0 {
            let share = self.reserved.div_ceil(self.woken_pending);
            self.woken_pending -= 1;
            let from_share = n.min(share).min(self.reserved);
            self.reserved -= from_share;
            if self.woken_pending == 0 {
                // What the woken did not need is anyone's again.
                self.reserved = 0;
            }
            from_share + (n - from_share).min(unreserved)
        } else {
            n.min(unreserved)
        };
        self.free -= got;
        got
    }

    /// Puts `thread` to sleep for a tag; `retry`: it was woken and lost
    /// the tag again, so it keeps its place at the head.
    pub fn wait(&mut self, thread: u32, retry: bool) {
        if retry {
            self.waiters.push_front(thread);
        } else {
            self.waiters.push_back(thread);
        }
    }

    /// Frees one tag; returns the threads to wake now (a batch, or none).
    /// Inline across crates: the simulator frees a tag per completion,
    /// and mostly with no thread waiting.
    #[inline]
    pub fn put(&mut self, woken: &mut Vec<u32>) {
        self.free += 1;
        debug_assert!(self.free <= self.depth);
        if self.waiters.is_empty() {
            self.freed_while_waited = 0;
            return;
        }
        self.put_while_waited(woken);
    }

    /// [`TagPool::put`] with threads asleep for a tag.
    fn put_while_waited(&mut self, woken: &mut Vec<u32>) {
        self.freed_while_waited += 1;
        // A batch is due, or every tag is free again (nothing in flight
        // could free another, so waiting for a full batch would stall).
        if self.freed_while_waited >= self.wake_batch || self.free == self.depth {
            self.reserved = self.free.min(self.reserved + self.freed_while_waited);
            self.freed_while_waited = 0;
            for _ in 0..self.wake_batch {
                match self.waiters.pop_front() {
                    Some(t) => {
                        woken.push(t);
                        self.woken_pending += 1;
                    }
                    None => break,
                }
            }
        }
    }

    /// Tags in use, for the invariants.
    pub fn in_use(&self) -> u32 {
        self.depth - self.free
    }

    /// Threads asleep for a tag.
    pub fn waiting(&self) -> usize {
        self.waiters.len()
    }

    /// Whether a thread sleeps for a tag with nothing left to wake it:
    /// every tag is free (no completion will free another) and no woken
    /// thread is still to try again. The simulator checks it among its
    /// run's invariants.
    pub fn strands_a_waiter(&self) -> bool {
        !self.waiters.is_empty() && self.free == self.depth && self.woken_pending == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiters_wake_in_batches_of_the_sbitmap() {
        let mut pool = TagPool::new(1024);
        assert_eq!(pool.take(2000, false), 1024);
        for t in 0..20 {
            pool.wait(t, false);
        }
        let mut woken = Vec::new();
        for _ in 0..7 {
            pool.put(&mut woken);
        }
        assert!(woken.is_empty(), "seven frees are less than a batch");
        pool.put(&mut woken);
        assert_eq!(woken, (0..8).collect::<Vec<_>>());
        assert_eq!(pool.waiting(), 12);
        assert_eq!(pool.in_use(), 1016);
        // The eight freed tags are set aside for the eight woken threads:
        // a submitter that was not waiting gets none of them.
        assert_eq!(pool.take(16, false), 0);
        assert_eq!(pool.take(16, true), 1, "a woken waiter gets its share");
        assert_eq!(pool.take(16, true), 1);
    }

    #[test]
    fn a_small_pool_wakes_on_every_free_and_never_strands_a_waiter() {
        let mut pool = TagPool::new(4);
        assert_eq!(pool.take(4, false), 4);
        pool.wait(7, false);
        let mut woken = Vec::new();
        pool.put(&mut woken);
        assert_eq!(woken, vec![7], "depth 4 has a wake batch of one");
        let mut pool = TagPool::new(64);
        assert_eq!(pool.take(3, false), 3);
        pool.wait(1, false);
        woken.clear();
        for _ in 0..3 {
            pool.put(&mut woken);
        }
        assert_eq!(woken, vec![1], "all tags free again wakes the waiter");
    }

    /// A submitter as the liveness search plays it: how many requests it
    /// has left to send, in flight (each holding a tag), and whether it
    /// runs (woken from the waiters or not) or sleeps for a tag.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    struct Submitter {
        left: u32,
        in_flight: u32,
        depth: u32,
        state: Waiting,
    }

    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    enum Waiting {
        No,
        Woken,
        Asleep,
    }

    /// Every interleaving of tag takes and completions, from a pool of
    /// `depth` tags shared by submitters of the given queue depths and
    /// request counts: in no state reachable is a submitter asleep for a
    /// tag with nothing left to wake it. A take asks for up to `plug`
    /// tags (1: one per request, as the emulator and a call of one or two
    /// requests take them; more: the simulator's plug of a batch).
    /// Returns the states explored.
    fn assert_no_waiter_is_stranded(depth: u32, plug: u32, submitters: &[(u32, u32)]) -> usize {
        use std::collections::HashSet;
        let start = (
            TagPool::new(depth),
            submitters
                .iter()
                .map(|&(depth, left)| Submitter {
                    left,
                    in_flight: 0,
                    depth,
                    state: Waiting::No,
                })
                .collect::<Vec<_>>(),
        );
        let mut seen = HashSet::new();
        let mut todo = vec![start];
        let mut woken = Vec::new();
        while let Some((pool, threads)) = todo.pop() {
            if !seen.insert((pool.clone(), threads.clone())) {
                continue;
            }
            assert!(
                !pool.strands_a_waiter(),
                "stranded: {threads:?} with {pool:?}"
            );
            let mut moved = false;
            for (i, t) in threads.iter().enumerate() {
                if t.state != Waiting::Asleep && t.left > 0 && t.in_flight < t.depth {
                    let (mut pool, mut threads) = (pool.clone(), threads.clone());
                    let retry = t.state == Waiting::Woken;
                    let t = &mut threads[i];
                    let got = pool.take(plug.min(t.left).min(t.depth - t.in_flight), retry);
                    if got > 0 {
                        (t.left, t.in_flight, t.state) =
                            (t.left - got, t.in_flight + got, Waiting::No);
                    } else {
                        pool.wait(i as u32, retry);
                        t.state = Waiting::Asleep;
                    }
                    todo.push((pool, threads));
                    moved = true;
                }
                if t.in_flight > 0 {
                    let (mut pool, mut threads) = (pool.clone(), threads.clone());
                    threads[i].in_flight -= 1;
                    woken.clear();
                    pool.put(&mut woken);
                    for &w in &woken {
                        assert_eq!(threads[w as usize].state, Waiting::Asleep, "woken twice");
                        threads[w as usize].state = Waiting::Woken;
                    }
                    todo.push((pool, threads));
                    moved = true;
                }
            }
            assert!(
                moved || threads.iter().all(|t| t.left == 0),
                "stranded: {threads:?} with {pool:?}"
            );
        }
        seen.len()
    }

    /// Before the fix, a batch of two woken by the queue's last free tag
    /// shared one set-aside tag: the second found its share empty, slept
    /// again among sixteen free tags, and nothing was left to wake it.
    #[test]
    fn no_interleaving_strands_a_waiter_among_free_tags() {
        // Pools with wake batches of 1, 2 and 3 (depth 4, 16, 24),
        // submitters whose depths together exceed the pool's.
        assert!(assert_no_waiter_is_stranded(16, 1, &[(9, 10), (9, 10)]) > 10_000);
        assert_no_waiter_is_stranded(16, 1, &[(9, 10), (9, 10), (2, 3)]);
        assert_no_waiter_is_stranded(24, 1, &[(13, 15), (13, 15)]);
        assert_no_waiter_is_stranded(4, 1, &[(3, 5), (3, 5), (2, 3)]);
        // Plugs of several requests take several tags at once.
        assert_no_waiter_is_stranded(16, 3, &[(9, 10), (9, 10), (2, 3)]);
        assert_no_waiter_is_stranded(16, 4, &[(12, 14), (12, 14)]);
    }
}
