//! Submitting arbitrary descriptor chains, well-formed or not, and
//! collecting exactly one completion for each: the primitive under the
//! data round-trip and fuzz tests.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::blk;
use crate::device::Queue;
use crate::memory::Gpa;
use crate::ring::{Desc, DESC_F_NEXT, DESC_F_WRITE};
use crate::Error;

/// A chain to submit: descriptors written verbatim at the given table
/// indices; the first one is the head.
#[derive(Clone, Debug)]
pub struct RawChain {
    /// `(table index, descriptor)` pairs; `[0]` is the head.
    pub descs: Vec<(u16, Desc)>,
}

/// Builds the well-formed three-descriptor chain of one request at table
/// indices `base..base + 3`: header (device-readable), data (readable for a
/// write, writable for a read; left out when `data_len` is 0), status.
pub fn request_chain(
    base: u16,
    header: Gpa,
    data: Gpa,
    data_len: u32,
    data_writable: bool,
    status: Gpa,
) -> RawChain {
    let mut descs = vec![(
        base,
        Desc {
            addr: header,
            len: blk::HEADER_LEN,
            flags: DESC_F_NEXT,
            next: base + 1,
        },
    )];
    let mut next = base + 1;
    if data_len > 0 {
        descs.push((
            next,
            Desc {
                addr: data,
                len: data_len,
                flags: DESC_F_NEXT | if data_writable { DESC_F_WRITE } else { 0 },
                next: next + 1,
            },
        ));
        next += 1;
    }
    descs.push((
        next,
        Desc {
            addr: status,
            len: 1,
            flags: DESC_F_WRITE,
            next: 0,
        },
    ));
    RawChain { descs }
}

/// Submits `chains` (one notification for all) and waits until each head
/// has come back exactly once; returns the bytes-written length per head.
/// A completion for a head not in flight, or twice, is an error; so is
/// silence for `timeout`.
pub fn submit_and_wait(
    q: &mut Queue,
    chains: &[RawChain],
    timeout: Duration,
) -> Result<BTreeMap<u16, u32>, Error> {
    let mut waiting = BTreeMap::new();
    for c in chains {
        let (head, _) = *c
            .descs
            .first()
            .ok_or_else(|| Error::Config("an empty chain".into()))?;
        for (i, d) in &c.descs {
            q.ring.write_desc(*i, *d);
        }
        q.ring.push_avail(head)?;
        waiting.insert(head, ());
    }
    if q.ring.publish() {
        q.kick()?;
    }
    let mut done = BTreeMap::new();
    let deadline = Instant::now() + timeout;
    while done.len() < chains.len() {
        while let Some((head, len)) = q.ring.pop_used()? {
            if waiting.remove(&head).is_none() || done.insert(head, len).is_some() {
                return Err(Error::Protocol(format!("chain {head} completed twice")));
            }
        }
        if done.len() == chains.len() {
            break;
        }
        if q.ring.enable_interrupts() {
            continue;
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "{} of {} chains never completed: heads {:?}",
                waiting.len(),
                chains.len(),
                waiting.keys().collect::<Vec<_>>()
            )));
        }
        q.wait_interrupt(20)?;
    }
    Ok(done)
}
