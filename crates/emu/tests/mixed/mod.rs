//! What a `mode-select` thread does to one client, at random: each
//! request submitted polled or not, each wait a spin, a block, or a sleep
//! then a spin. Shared by mode_select.rs and stress.rs.

#![allow(dead_code)]

use cint_policy::{Hint, US};
use rand::{Rng, SeedableRng};

pub fn request(user_data: u64, hint: Hint) -> cint_emu::Request {
    cint_emu::Request {
        op: cint_emu::Op::Read,
        offset: (user_data % 1024) * 4096,
        len: 4096,
        hint,
        buf: None,
        user_data,
    }
}

/// How one wait of the mixed workload waits.
#[derive(Clone, Copy, Debug)]
pub enum Wait {
    Spin,
    Block,
    /// Sleep this long unless something is in, then spin.
    SleepThenSpin(u64),
}

/// One wait for at least one completion, the `mode-select` thread's way.
pub fn wait_once(client: &mut cint_emu::Client, wait: Wait, done: &mut Vec<cint_emu::Completion>) {
    match wait {
        Wait::Spin => {
            client.wait(1, cint_emu::WaitMode::Spin, done);
        }
        Wait::Block => {
            client.wait(1, cint_emu::WaitMode::Block, done);
        }
        Wait::SleepThenSpin(ns) => {
            if client.reap(done) == 0 {
                cint_emu::sys::sleep_ns(ns);
            }
            client.wait(1, cint_emu::WaitMode::Spin, done);
        }
    }
}

/// What one thread of the mixed workload saw.
#[derive(Default)]
pub struct Seen {
    /// Times each request came back.
    pub count: Vec<u8>,
    /// Requests submitted as polled.
    pub polled: u64,
    /// Requests submitted to wait for an interrupt.
    pub interrupt_driven: u64,
}

/// Submits `count` requests through `client`, each polled or not at
/// random, keeping up to its depth in flight and waiting each time in a
/// mode drawn at random: whatever the mix in flight, each request comes
/// back once, by polling if it was submitted as polled and by an
/// interrupt otherwise, with the device's time of posting it.
pub fn mixed(mut client: cint_emu::Client, count: u64, seed: u64, app_cpu: u32) -> Seen {
    let _ = cint_emu::sys::pin_to(app_cpu);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut seen = Seen {
        count: vec![0; count as usize],
        ..Seen::default()
    };
    let mut asked_polled = vec![false; count as usize];
    let mut done = Vec::with_capacity(client.depth());
    let (mut next, mut returned) = (0, 0);
    while returned < count {
        while next < count && client.in_flight() < client.depth() {
            let hint = if rng.gen_bool(0.3) {
                Hint::Urgent
            } else {
                Hint::Unmarked
            };
            let polled = rng.gen_bool(0.5);
            asked_polled[next as usize] = polled;
            if polled {
                client.submit_polled(request(next, hint)).expect("submit");
                seen.polled += 1;
            } else {
                client.submit(request(next, hint)).expect("submit");
                seen.interrupt_driven += 1;
            }
            next += 1;
        }
        let wait = match rng.gen_range(0..3) {
            0 => Wait::Spin,
            1 => Wait::Block,
            _ => Wait::SleepThenSpin(rng.gen_range(1..20) * US),
        };
        wait_once(&mut client, wait, &mut done);
        for c in done.drain(..) {
            assert_eq!(c.result, Ok(4096));
            let polled = asked_polled[c.user_data as usize];
            assert_eq!(
                c.by == cint_emu::DeliveredBy::Poll,
                polled,
                "request {} submitted {} came back {:?}",
                c.user_data,
                if polled { "polled" } else { "for an interrupt" },
                c.by
            );
            // The device core's clock (another CPU's reading of the same
            // clock: a VM's cores may disagree by some nanoseconds, so no
            // order against the submitter's readings is asserted).
            assert!(c.posted > 0, "{c:?}: the device's post time");
            seen.count[c.user_data as usize] += 1;
            returned += 1;
        }
    }
    assert_eq!((client.strays(), client.in_flight()), (0, 0));
    seen
}
