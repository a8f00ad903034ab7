//! Which idle state a `mode-select` thread's wait put its CPU in, read
//! from cpuidle's per-state entry counters in sysfs
//! (`cpuN/cpuidle/stateK/usage`), for the selector's
//! [`record_idle`](cint_policy::mode_select::ModeSelect::record_idle).
//!
//! Linux keeps the state a CPU was woken from (`last_state_idx`) where
//! only the kernel sees it; a process sees the counters, which rise by one
//! at each entry. They are read at the end of one wait and again at the
//! end of the next, and that second wait is observed only if it blocked
//! and was the thread's one block in between (no sleep of its own, no
//! other wait), so that every entry in between was made while it waited,
//! and if it was chosen while no other thread wanted the CPU. It then
//! reached the state whose counter rose, where only one did. A polling
//! state's counter may rise beside it: cpuidle's POLL stops at its time
//! limit (`cpuidle_poll_time`) and the governor picks again, so the
//! deeper state the wait ended in is the one state besides it that rose;
//! and a wait spent all in POLL raises POLL's alone, perhaps many times.
//! Two deeper states rising observes nothing. The first read is made as
//! the previous wait ends, not as this one starts, so that the wait's own
//! idle period is not shortened by it.
//!
//! Reading a counter is a system call (about 1.1 us on this project's
//! machine, docs/evidence/cpuidle_usage_per_wait.c), so one wait in
//! [`OBSERVE_EVERY`] is observed.
//!
//! The states are matched to the host profile's by name. Where the CPU
//! has a state, not disabled, whose name the profile does not have, or
//! one that cannot be read, no wait is observed: observing only the named
//! ones would count the waits that reach them and drop the others, and
//! the votes would lean towards the named states.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Where sysfs lists the CPUs.
pub(crate) const SYSFS_CPUS: &str = "/sys/devices/system/cpu";

/// One wait of this many, of those that may idle the CPU (a sleep or an
/// interrupt), is observed: at five states (Skylake's `intel_idle` table)
/// the ten reads, about 11 us, cost under 1 us per wait spread over the
/// sixteen. The selector is told
/// ([`observe_idle_one_in`](cint_policy::mode_select::ModeSelect::observe_idle_one_in)),
/// so that its prior votes sixteen times less often and weighs against
/// these observations as against every wait's.
pub(crate) const OBSERVE_EVERY: u32 = 16;

const _: () = assert!(
    OBSERVE_EVERY >= 1 && OBSERVE_EVERY <= cint_policy::mode_select::MAX_OBSERVE_ONE_IN,
    "the selector takes one wait in 1 to MAX_OBSERVE_ONE_IN"
);

/// One of the host profile's idle states, as the watch matches it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ProfileState<'a> {
    /// cpuidle's name for it (`POLL`, `C1`, ...).
    pub name: &'a str,
    /// A busy-wait in C0 (Linux's `POLL`), which stops at its time limit.
    pub polling: bool,
}

/// One CPU's cpuidle entry counters, open for re-reading, and where the
/// watch stands.
#[derive(Debug)]
pub(crate) struct IdleWatch {
    /// Each enabled state's `usage` file and its index in the profile's
    /// table.
    states: Vec<(File, usize)>,
    /// Whether each of `states` polls.
    polling: Vec<bool>,
    /// The counters read as the previous wait ended, when the next wait is
    /// to be observed, and the thread's blocks by then.
    before: Option<(Vec<u64>, u64)>,
    /// Waits that may idle the CPU still to go before the next observed
    /// one.
    countdown: u32,
    /// Waits whose counters were read at both ends.
    pub sampled: u64,
    /// Of [`IdleWatch::sampled`], those whose state was learnt.
    pub observed: u64,
}

impl IdleWatch {
    /// CPU `cpu`'s counters, where `profile` is the host profile's idle
    /// states in its table's order; or why its waits cannot be observed.
    pub(crate) fn open(cpu: u32, profile: &[ProfileState]) -> Result<IdleWatch, String> {
        IdleWatch::open_under(Path::new(SYSFS_CPUS), cpu, profile)
    }

    /// [`IdleWatch::open`] with sysfs's CPU directory at `root`.
    pub(crate) fn open_under(
        root: &Path,
        cpu: u32,
        profile: &[ProfileState],
    ) -> Result<IdleWatch, String> {
        let dir = root.join(format!("cpu{cpu}/cpuidle"));
        let (mut states, mut polling) = (Vec::new(), Vec::new());
        let mut unknown = Vec::new();
        for k in 0.. {
            let state = dir.join(format!("state{k}"));
            if !state.is_dir() {
                break;
            }
            let name = std::fs::read_to_string(state.join("name"))
                .map_err(|e| format!("{}: {e}", state.join("name").display()))?;
            let name = name.trim().to_string();
            // A disabled state is never entered: its name does not matter.
            let disabled =
                std::fs::read_to_string(state.join("disable")).is_ok_and(|d| d.trim() != "0");
            if disabled {
                continue;
            }
            let Some(index) = profile.iter().position(|p| p.name == name) else {
                unknown.push(name);
                continue;
            };
            let usage = state.join("usage");
            let file = File::open(&usage).map_err(|e| format!("{}: {e}", usage.display()))?;
            states.push((file, index));
            polling.push(profile[index].polling);
        }
        if !unknown.is_empty() {
            let quoted: Vec<String> = unknown.iter().map(|n| format!("'{n}'")).collect();
            let (which, are) = match quoted.len() {
                1 => ("state", "is"),
                _ => ("states", "are"),
            };
            let names: Vec<&str> = profile.iter().map(|p| p.name).collect();
            return Err(format!(
                "CPU {cpu}'s cpuidle {which} {} {are} not in the host profile's table ({})",
                quoted.join(", "),
                names.join(", ")
            ));
        }
        if states.is_empty() {
            return Err(format!(
                "CPU {cpu} has no cpuidle states in {}",
                dir.display()
            ));
        }
        let mut watch = IdleWatch {
            states,
            polling,
            before: None,
            countdown: OBSERVE_EVERY,
            sampled: 0,
            observed: 0,
        };
        // The files must read now, or the waits would silently go unseen.
        watch
            .read()
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(watch)
    }

    /// Every state's entries so far.
    fn read(&mut self) -> std::io::Result<Vec<u64>> {
        let mut out = Vec::with_capacity(self.states.len());
        let mut buf = [0u8; 32];
        for (file, _) in &self.states {
            let n = file.read_at(&mut buf, 0)?;
            let text = std::str::from_utf8(&buf[..n]).unwrap_or("").trim();
            let count = text.parse().map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("an entry count of {text:?}"),
                )
            })?;
            out.push(count);
        }
        Ok(out)
    }

    /// A wait that may idle the CPU has ended. `began` and `ended` count
    /// the times the thread had blocked (its waits' wake-ups and its timed
    /// sleeps) as the wait began and as it ended; `alone` says whether it was
    /// chosen with no other thread wanting the CPU. Returns the profile's
    /// index of the state the wait reached, if it was observed: armed
    /// as the previous such wait ended, the wait blocked, and it was the
    /// thread's one block since (module documentation). Then arms the
    /// watch for the next such wait when its turn comes.
    pub(crate) fn wait_ended(&mut self, (began, ended): (u64, u64), alone: bool) -> Option<usize> {
        let reached = self.before.take().and_then(|(before, armed)| {
            self.sampled += 1;
            let after = self.read().ok()?;
            let its_own = alone && began == armed && ended == armed + 1;
            let k = reached_state(&before, &after, &self.polling).filter(|_| its_own)?;
            Some(self.states[k].1)
        });
        self.observed += u64::from(reached.is_some());
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = OBSERVE_EVERY;
            self.before = self.read().ok().map(|counts| (counts, ended));
        }
        reached
    }
}

/// The state a wait ended in, from the counters before and after it
/// (`polling` marks the polling states): the one non-polling state whose
/// counter rose, whether or not a polling state's rose too (its time
/// limit ran out before); else the one polling state whose counter rose.
/// `None` when nothing rose, when two states of a kind rose, or when a
/// counter fell.
pub(crate) fn reached_state(before: &[u64], after: &[u64], polling: &[bool]) -> Option<usize> {
    let (mut deep, mut poll) = (None, None);
    for (k, ((b, a), &p)) in before.iter().zip(after).zip(polling).enumerate() {
        if a.checked_sub(*b)? == 0 {
            continue;
        }
        let slot = if p { &mut poll } else { &mut deep };
        if slot.replace(k).is_some() {
            return None;
        }
    }
    deep.or(poll)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_test_support::DirFiles;

    const SKYLAKE: [ProfileState; 5] = [
        ProfileState {
            name: "POLL",
            polling: true,
        },
        ProfileState {
            name: "C1",
            polling: false,
        },
        ProfileState {
            name: "C1E",
            polling: false,
        },
        ProfileState {
            name: "C3",
            polling: false,
        },
        ProfileState {
            name: "C6",
            polling: false,
        },
    ];

    fn fake_cpu(states: &[(&str, u64, bool)]) -> cint_test_support::TempDir {
        let dir = cint_test_support::temp_dir("idle-watch");
        for (k, (name, usage, disabled)) in states.iter().enumerate() {
            let state = format!("cpu3/cpuidle/state{k}");
            dir.path()
                .write(&format!("{state}/name"), &format!("{name}\n"));
            dir.path()
                .write(&format!("{state}/usage"), &format!("{usage}\n"));
            dir.path().write(
                &format!("{state}/disable"),
                if *disabled { "1\n" } else { "0\n" },
            );
        }
        dir
    }

    fn set_usage(dir: &Path, k: usize, usage: u64) {
        dir.write(
            &format!("cpu3/cpuidle/state{k}/usage"),
            &format!("{usage}\n"),
        );
    }

    /// Waits that each block once, until the watch is armed; returns the
    /// thread's blocks so far.
    fn arm(watch: &mut IdleWatch, blocks: &mut u64) -> u64 {
        while watch.before.is_none() {
            *blocks += 1;
            assert_eq!(watch.wait_ended((*blocks - 1, *blocks), true), None);
        }
        *blocks
    }

    #[test]
    fn the_state_reached_is_the_deeper_one_that_rose_or_else_poll() {
        let polling = [true, false, false];
        assert_eq!(reached_state(&[5, 7, 9], &[5, 8, 9], &polling), Some(1));
        assert_eq!(
            reached_state(&[5, 7, 9], &[5, 9, 9], &polling),
            Some(1),
            "re-entered"
        );
        assert_eq!(
            reached_state(&[5, 7, 9], &[6, 8, 9], &polling),
            Some(1),
            "POLL's limit first"
        );
        assert_eq!(
            reached_state(&[5, 7, 9], &[30, 7, 9], &polling),
            Some(0),
            "all in POLL"
        );
        assert_eq!(
            reached_state(&[5, 7, 9], &[5, 7, 9], &polling),
            None,
            "no entry"
        );
        assert_eq!(
            reached_state(&[5, 7, 9], &[5, 8, 10], &polling),
            None,
            "two deeper states"
        );
        assert_eq!(
            reached_state(&[5, 7, 9], &[5, 6, 10], &polling),
            None,
            "a counter fell"
        );
    }

    #[test]
    fn every_sixteenth_wait_is_observed_by_the_state_it_ended_in() {
        // The CPU's states in another order than the profile's, as a
        // driver may list them.
        let dir = fake_cpu(&[("POLL", 10, false), ("C6", 20, false), ("C1E", 30, false)]);
        let mut watch = IdleWatch::open_under(dir.path(), 3, &SKYLAKE).expect("opens");
        let mut blocks = 0;
        for _ in 0..OBSERVE_EVERY - 1 {
            blocks += 1;
            assert_eq!(
                watch.wait_ended((blocks - 1, blocks), true),
                None,
                "not armed yet"
            );
        }
        // The sixteenth wait arms the watch; the next is observed.
        blocks += 1;
        assert_eq!(watch.wait_ended((blocks - 1, blocks), true), None);
        set_usage(dir.path(), 0, 11);
        set_usage(dir.path(), 1, 21);
        blocks += 1;
        assert_eq!(
            watch.wait_ended((blocks - 1, blocks), true),
            Some(4),
            "C6, the profile's fifth state, after POLL's time limit"
        );
        assert_eq!((watch.sampled, watch.observed), (1, 1));
        // Not armed again for fifteen more.
        set_usage(dir.path(), 2, 31);
        blocks += 1;
        assert_eq!(watch.wait_ended((blocks - 1, blocks), true), None);
        assert_eq!(watch.sampled, 1);
    }

    #[test]
    fn only_a_wait_that_was_the_threads_one_block_is_observed() {
        let dir = fake_cpu(&[("POLL", 0, false), ("C1", 0, false), ("C1E", 0, false)]);
        let mut watch = IdleWatch::open_under(dir.path(), 3, &SKYLAKE).expect("opens");
        let mut blocks = 0;
        // Two deeper states: the CPU woke and went idle again between.
        let b = arm(&mut watch, &mut blocks);
        set_usage(dir.path(), 1, 1);
        set_usage(dir.path(), 2, 1);
        assert_eq!(watch.wait_ended((b, b + 1), true), None);
        // The thread blocked twice in the wait.
        let b = arm(&mut watch, &mut blocks);
        set_usage(dir.path(), 1, 2);
        assert_eq!(watch.wait_ended((b, b + 2), true), None);
        // It slept before the wait (fio's pacing), and the wait itself
        // did not block: the entry was the sleep's.
        let b = arm(&mut watch, &mut blocks);
        set_usage(dir.path(), 1, 3);
        assert_eq!(watch.wait_ended((b + 1, b + 1), true), None);
        // Another thread wanted the CPU when the wait was chosen.
        let b = arm(&mut watch, &mut blocks);
        set_usage(dir.path(), 0, 1);
        assert_eq!(watch.wait_ended((b, b + 1), false), None);
        // Its one block, alone: observed.
        let b = arm(&mut watch, &mut blocks);
        set_usage(dir.path(), 0, 2);
        assert_eq!(watch.wait_ended((b, b + 1), true), Some(0));
        assert_eq!((watch.sampled, watch.observed), (5, 1));
    }

    #[test]
    fn a_state_the_profile_does_not_name_turns_the_watch_off() {
        let dir = fake_cpu(&[("POLL", 0, false), ("haltpoll", 0, false)]);
        let why = IdleWatch::open_under(dir.path(), 3, &SKYLAKE).expect_err("refused");
        assert!(
            why.contains("state 'haltpoll' is") && why.contains("C1E"),
            "{why}"
        );
        // Disabled, it is never entered, and does not matter.
        let dir = fake_cpu(&[("POLL", 0, false), ("haltpoll", 0, true)]);
        assert!(IdleWatch::open_under(dir.path(), 3, &SKYLAKE).is_ok());
    }

    #[test]
    fn a_cpu_without_cpuidle_or_with_unreadable_states_is_refused() {
        let dir = cint_test_support::temp_dir("idle-watch");
        let why = IdleWatch::open_under(dir.path(), 0, &SKYLAKE).expect_err("no states");
        assert!(why.contains("no cpuidle states"), "{why}");
        let dir = fake_cpu(&[("POLL", 0, false)]);
        dir.path().write("cpu3/cpuidle/state0/usage", "lots\n");
        let why = IdleWatch::open_under(dir.path(), 3, &SKYLAKE).expect_err("bad count");
        assert!(why.contains("\"lots\""), "{why}");
        // A deeper state whose name cannot be read is not skipped.
        let dir = fake_cpu(&[("POLL", 0, false), ("C1", 0, false)]);
        std::fs::remove_file(dir.path().join("cpu3/cpuidle/state1/name")).expect("removed");
        let why = IdleWatch::open_under(dir.path(), 3, &SKYLAKE).expect_err("unreadable");
        assert!(why.contains("state1/name"), "{why}");
    }
}
