//! Whether an application core is idle, and which waiting thread an
//! interrupt may then be delivered to.
//!
//! A real interrupt on an idle core costs one wake-up: the handler runs in
//! the interrupted idle context and makes the waiting thread runnable on
//! the same core. The emulated interrupt wakes a handler *thread*, which
//! then wakes the waiting thread: two wake-ups and two switches. When the
//! core is idle there is nothing for the handler to preempt, so the device
//! core may instead wake a thread that is blocked in
//! [`Client::wait`](crate::client::Client::wait) on that core, and that thread runs the
//! handler's pass itself before it returns: the same reap, under the same
//! lock, with one wake-up. When anything the emulator knows of may be
//! running on the core, the real-time handler thread is woken as before,
//! because only it preempts.
//!
//! The emulator knows what runs on a core through this tracker: every
//! client of the core's queue counts as running except while it is blocked
//! in a wait, and [`Occupant`](crate::emulator::Occupant)s count as running
//! for their whole life (the runner's `kind = "cpu"` threads take one
//! while they burn, not while they wait for their group). Threads the emulator does not know of are not seen: a program
//! that shares the core with its own busy threads holds an `Occupant` for
//! them or turns the path off (`IdleDelivery::Handler`).
//!
//! One 64-bit word, changed only by compare-and-swap:
//! * bits 0-31: threads counted as running;
//! * bits 32-47: the designated sleeper, its channel index plus one (0:
//!   none): a client blocked in a wait while nothing else runs;
//! * bit 48: the sleeper was claimed by an interrupt and must run the
//!   handler's pass when it wakes.
//!
//! Invariant: an unclaimed sleeper is set only while nothing runs. Every
//! claim is honoured, because the claimed thread checks for it on its way
//! out of every wait, whatever woke it.

use std::sync::atomic::{AtomicU64, Ordering};

const RUNNING_MASK: u64 = 0xFFFF_FFFF;
const SLEEPER_SHIFT: u32 = 32;
const SLEEPER_MASK: u64 = 0xFFFF << SLEEPER_SHIFT;
const CLAIMED: u64 = 1 << 48;

/// One application core's idle tracker (see the module documentation).
#[derive(Debug, Default)]
pub(crate) struct CoreIdle {
    word: AtomicU64,
    /// Clients blocked in a wait now: advisory, for `mode-select` (a
    /// thread waiting for its completions wants the core back when they
    /// come), kept apart from `word`, whose protocol it plays no part in.
    waiting: AtomicU64,
}

fn running(word: u64) -> u64 {
    word & RUNNING_MASK
}

fn sleeper(word: u64) -> Option<u32> {
    match (word & SLEEPER_MASK) >> SLEEPER_SHIFT {
        0 => None,
        plus_one => Some(plus_one as u32 - 1),
    }
}

fn with_sleeper(word: u64, channel: Option<u32>) -> u64 {
    let field = channel.map_or(0, |c| (u64::from(c) + 1) << SLEEPER_SHIFT);
    (word & !(SLEEPER_MASK | CLAIMED)) | field
}

impl CoreIdle {
    /// Applies `change` atomically; returns the old word.
    fn update(&self, change: impl Fn(u64) -> u64) -> u64 {
        let mut old = self.word.load(Ordering::SeqCst);
        loop {
            match self.word.compare_exchange_weak(
                old,
                change(old),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return old,
                Err(now) => old = now,
            }
        }
    }

    /// A thread starts running on the core: a client registered, an
    /// occupant arrived. An unclaimed sleeper is no longer alone.
    pub fn arrive(&self) {
        self.update(|w| {
            let w = if w & CLAIMED == 0 {
                with_sleeper(w, None)
            } else {
                w
            };
            w + 1
        });
    }

    /// A running thread leaves for good (client or occupant dropped).
    pub fn depart(&self) {
        self.update(|w| w.saturating_sub(u64::from(running(w) > 0)));
    }

    /// Client `channel` is about to block in a wait. If nothing else
    /// runs, it becomes the core's designated sleeper (unless a claimed one
    /// is still on its way out).
    pub fn sleep(&self, channel: u32) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.update(|w| {
            let w = w.saturating_sub(u64::from(running(w) > 0));
            if running(w) == 0 && sleeper(w).is_none() {
                with_sleeper(w, Some(channel))
            } else {
                w
            }
        });
    }

    /// Client `channel` is out of its wait and running again. True if an
    /// interrupt claimed it while it slept: it must run the handler's
    /// pass now.
    pub fn wake(&self, channel: u32) -> bool {
        let old = self.update(|w| {
            let w = match sleeper(w) {
                Some(c) if c == channel => with_sleeper(w, None),
                // Another sleeper, unclaimed: the core no longer idles.
                Some(_) if w & CLAIMED == 0 => with_sleeper(w, None),
                _ => w,
            };
            w + 1
        });
        // Counted as running first, then no longer as waiting, as `sleep`
        // counts it waiting before it stops running: a neighbour's look
        // at the core never finds it in neither count.
        self.waiting.fetch_sub(1, Ordering::Relaxed);
        sleeper(old) == Some(channel) && old & CLAIMED != 0
    }

    /// The device core's question when an interrupt finds the handler
    /// asleep: is the core idle with a sleeper to deliver to? If so the
    /// sleeper is claimed (the caller must wake it) and returned.
    pub fn claim(&self) -> Option<u32> {
        let mut old = self.word.load(Ordering::SeqCst);
        loop {
            let channel = sleeper(old)?;
            if running(old) != 0 || old & CLAIMED != 0 {
                return None;
            }
            match self.word.compare_exchange_weak(
                old,
                old | CLAIMED,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return Some(channel),
                Err(now) => old = now,
            }
        }
    }

    /// Threads counted as running: the clients out of their waits and
    /// the occupants (what `mode-select` asks to learn whether another
    /// thread wants the core).
    pub fn running_now(&self) -> u64 {
        running(self.word.load(Ordering::SeqCst))
    }

    /// Clients blocked in a wait for their completions now.
    pub fn waiting_now(&self) -> u64 {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn clients_blocked_in_a_wait_are_counted_until_they_wake() {
        let idle = CoreIdle::default();
        idle.arrive();
        idle.arrive();
        assert_eq!((idle.running_now(), idle.waiting_now()), (2, 0));
        idle.sleep(1);
        idle.sleep(2);
        assert_eq!((idle.running_now(), idle.waiting_now()), (0, 2));
        idle.wake(2);
        assert_eq!((idle.running_now(), idle.waiting_now()), (1, 1));
        idle.wake(1);
        assert_eq!(idle.waiting_now(), 0);
    }

    #[test]
    fn a_lone_sleeper_is_claimed_once_and_told_so() {
        let idle = CoreIdle::default();
        idle.arrive();
        idle.sleep(7);
        assert_eq!(idle.claim(), Some(7));
        assert_eq!(idle.claim(), None, "a claim is taken once");
        assert!(idle.wake(7));
        // Asleep and awake again with no interrupt in between: no claim.
        idle.sleep(7);
        assert!(!idle.wake(7));
    }

    #[test]
    fn nothing_is_claimed_while_another_thread_runs() {
        let idle = CoreIdle::default();
        idle.arrive();
        idle.arrive();
        idle.sleep(1);
        assert_eq!(idle.claim(), None);
        idle.sleep(2);
        // The second to sleep finds the core idle.
        assert_eq!(idle.claim(), Some(2));
        assert!(!idle.wake(1));
        assert!(idle.wake(2));
        assert_eq!(idle.running_now(), 2);
    }

    #[test]
    fn an_occupant_arriving_unseats_an_unclaimed_sleeper() {
        let idle = CoreIdle::default();
        idle.arrive();
        idle.sleep(3);
        idle.arrive();
        assert_eq!(idle.claim(), None);
        idle.depart();
        // The sleeper is still asleep but no longer designated: the
        // handler thread takes interrupts until it sleeps again.
        assert_eq!(idle.claim(), None);
        assert!(!idle.wake(3));
    }

    #[test]
    fn a_claimed_sleeper_keeps_its_claim_when_others_run() {
        let idle = CoreIdle::default();
        idle.arrive();
        idle.arrive();
        idle.sleep(1);
        idle.sleep(2);
        assert_eq!(idle.claim(), Some(2));
        assert!(!idle.wake(1));
        idle.arrive();
        assert!(idle.wake(2), "the claim survives other arrivals");
    }

    /// One step of a client's life, or the device's claim.
    #[derive(Clone, Debug)]
    enum Step {
        Sleep(usize),
        Wake(usize),
        Claim,
    }

    proptest! {
        /// Against a model: every claim goes to a thread that is asleep
        /// while no other known thread runs, and is reported to exactly
        /// that thread on its next wake.
        #[test]
        fn claims_go_to_idle_sleepers_and_are_reported_once(
            steps in proptest::collection::vec(
                prop_oneof![
                    (0usize..4).prop_map(Step::Sleep),
                    (0usize..4).prop_map(Step::Wake),
                    Just(Step::Claim),
                ],
                0..200,
            )
        ) {
            let idle = CoreIdle::default();
            let mut asleep = [false; 4];
            let mut owed = [false; 4];
            for _ in 0..4 {
                idle.arrive();
            }
            for step in steps {
                match step {
                    Step::Sleep(t) if !asleep[t] => {
                        idle.sleep(t as u32);
                        asleep[t] = true;
                    }
                    Step::Wake(t) if asleep[t] => {
                        let claimed = idle.wake(t as u32);
                        prop_assert_eq!(claimed, owed[t]);
                        owed[t] = false;
                        asleep[t] = false;
                    }
                    Step::Claim => {
                        let idle_core = asleep.iter().all(|&a| a) && !owed.iter().any(|&o| o);
                        let claimed = idle.claim();
                        prop_assert_eq!(claimed.is_some(), idle_core, "claim iff idle");
                        if let Some(c) = claimed {
                            let c = c as usize;
                            prop_assert!(c < 4 && asleep[c]);
                            prop_assert!(asleep.iter().all(|&a| a), "a thread runs");
                            prop_assert!(!owed.iter().any(|&o| o), "one claim at a time");
                            owed[c] = true;
                        }
                    }
                    _ => {}
                }
                let awake = asleep.iter().filter(|&&a| !a).count() as u64;
                prop_assert_eq!(idle.running_now(), awake);
            }
        }
    }
}
