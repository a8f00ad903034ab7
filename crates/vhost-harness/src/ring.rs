//! The driver's side of one split virtqueue (virtio 1.x, 2.6): the
//! descriptor table, the available ring the driver fills and the used ring
//! the device fills, laid out in guest memory, with EVENT_IDX handling on
//! both directions (when to kick, when the device may interrupt).

use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;

use crate::memory::{Gpa, GuestMemory};
use crate::Error;

/// Descriptor flag: the buffer continues in `next`.
pub const DESC_F_NEXT: u16 = 1;
/// Descriptor flag: the device writes this buffer.
pub const DESC_F_WRITE: u16 = 2;
const USED_F_NO_NOTIFY: u16 = 1;
const AVAIL_F_NO_INTERRUPT: u16 = 1;

/// One descriptor as the driver writes it, verbatim (so a fuzzer can write
/// wrong ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    /// Guest-physical address of the buffer.
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// `DESC_F_*` bits.
    pub flags: u16,
    /// Index of the next descriptor when `DESC_F_NEXT` is set.
    pub next: u16,
}

/// Where the ring's three parts are, in guest-physical addresses.
#[derive(Clone, Copy, Debug)]
pub struct RingLayout {
    /// Number of descriptors (a power of two).
    pub size: u16,
    /// Descriptor table.
    pub desc: Gpa,
    /// Available ring.
    pub avail: Gpa,
    /// Used ring.
    pub used: Gpa,
}

/// The driver's state of one split virtqueue.
pub struct SplitRing {
    mem: Arc<GuestMemory>,
    layout: RingLayout,
    event_idx: bool,
    /// Available-ring index not yet published to the device.
    next_avail: u16,
    /// Available index the device was last told about (for kick suppression).
    published_avail: u16,
    last_used: u16,
    /// Per head descriptor: whether the device currently owns that chain.
    in_flight: Vec<bool>,
    in_flight_count: usize,
}

impl SplitRing {
    /// Lays out a ring of `size` descriptors in `mem`.
    pub fn new(mem: Arc<GuestMemory>, size: u16, event_idx: bool) -> Result<Self, Error> {
        if size == 0 || !size.is_power_of_two() {
            return Err(Error::Config(format!(
                "queue size {size} is not a power of two"
            )));
        }
        let n = u64::from(size);
        // Each part on its own page keeps the device's and the driver's
        // writes off each other's cache lines.
        let desc = mem.alloc(16 * n, 4096)?;
        let avail = mem.alloc(6 + 2 * n, 4096)?;
        let used = mem.alloc(6 + 8 * n, 4096)?;
        let layout = RingLayout {
            size,
            desc,
            avail,
            used,
        };
        Ok(Self {
            mem,
            layout,
            event_idx,
            next_avail: 0,
            published_avail: 0,
            last_used: 0,
            in_flight: vec![false; usize::from(size)],
            in_flight_count: 0,
        })
    }

    /// The ring's addresses.
    pub fn layout(&self) -> RingLayout {
        self.layout
    }

    /// Shared guest memory.
    pub fn memory(&self) -> &Arc<GuestMemory> {
        &self.mem
    }

    /// Chains the device owns now.
    pub fn in_flight(&self) -> usize {
        self.in_flight_count
    }

    /// Writes descriptor `index` of the table verbatim.
    pub fn write_desc(&self, index: u16, d: Desc) {
        assert!(index < self.layout.size, "front-end bug: descriptor index");
        let at = self.layout.desc + 16 * u64::from(index);
        let mut raw = [0u8; 16];
        raw[0..8].copy_from_slice(&d.addr.to_le_bytes());
        raw[8..12].copy_from_slice(&d.len.to_le_bytes());
        raw[12..14].copy_from_slice(&d.flags.to_le_bytes());
        raw[14..16].copy_from_slice(&d.next.to_le_bytes());
        self.mem.write(at, &raw);
    }

    /// Queues the chain starting at `head` in the available ring (not yet
    /// visible to the device: see `publish`).
    pub fn push_avail(&mut self, head: u16) -> Result<(), Error> {
        let slot = usize::from(head);
        if slot >= self.in_flight.len() || self.in_flight[slot] {
            return Err(Error::Config(format!(
                "descriptor {head} is already owned by the device"
            )));
        }
        self.in_flight[slot] = true;
        self.in_flight_count += 1;
        let pos = u64::from(self.next_avail % self.layout.size);
        let at = self.layout.avail + 4 + 2 * pos;
        self.mem.write(at, &head.to_le_bytes());
        self.next_avail = self.next_avail.wrapping_add(1);
        Ok(())
    }

    /// Makes every pushed chain visible to the device and says whether the
    /// device asked to be kicked for them (EVENT_IDX `avail_event`, or the
    /// used ring's NO_NOTIFY flag without it).
    pub fn publish(&mut self) -> bool {
        let old = self.published_avail;
        let new = self.next_avail;
        if old == new {
            return false;
        }
        // Release: ring entries and the buffers they point at are written
        // before the device can see the new index.
        self.avail_idx().store(new, Ordering::Release);
        self.published_avail = new;
        // The device's suppression field must be read after the index store
        // is visible, or a device going to sleep could miss the new work.
        fence(Ordering::SeqCst);
        if self.event_idx {
            let avail_event = self.used_trailer().load(Ordering::Acquire);
            need_event(avail_event, new, old)
        } else {
            self.used_flags().load(Ordering::Acquire) & USED_F_NO_NOTIFY == 0
        }
    }

    /// Takes the next used-ring entry: `(head, bytes written)`. A head the
    /// device does not own (a duplicate or invented completion) is an error.
    pub fn pop_used(&mut self) -> Result<Option<(u16, u32)>, Error> {
        let used_idx = self.used_idx().load(Ordering::Acquire);
        if used_idx == self.last_used {
            return Ok(None);
        }
        let ahead = used_idx.wrapping_sub(self.last_used);
        if usize::from(ahead) > self.in_flight_count {
            return Err(Error::Protocol(format!(
                "used index moved {ahead} past {} entries, with only {} chains in flight",
                self.last_used, self.in_flight_count
            )));
        }
        let pos = u64::from(self.last_used % self.layout.size);
        let at = self.layout.used + 4 + 8 * pos;
        let id = self.mem.read_u32(at);
        let len = self.mem.read_u32(at + 4);
        self.last_used = self.last_used.wrapping_add(1);
        let head = u16::try_from(id)
            .ok()
            .filter(|h| *h < self.layout.size && self.in_flight[usize::from(*h)])
            .ok_or_else(|| {
                Error::Protocol(format!(
                    "used ring returned chain {id}, which the device does not own (completed twice or never submitted)"
                ))
            })?;
        self.in_flight[usize::from(head)] = false;
        self.in_flight_count -= 1;
        Ok(Some((head, len)))
    }

    /// Whether the device has completed something not yet popped.
    pub fn has_used(&self) -> bool {
        self.used_idx().load(Ordering::Acquire) != self.last_used
    }

    /// Asks for an interrupt at the next completion (what a driver does
    /// after reaping) and says whether completions arrived meanwhile, which
    /// the caller must reap before sleeping.
    pub fn enable_interrupts(&mut self) -> bool {
        if self.event_idx {
            self.avail_trailer()
                .store(self.last_used, Ordering::Release);
        } else {
            self.avail_flags().store(0, Ordering::Release);
        }
        fence(Ordering::SeqCst);
        self.used_idx().load(Ordering::Acquire) != self.last_used
    }

    /// Tells the device not to interrupt (only honoured without EVENT_IDX;
    /// with it, `used_event` left behind suppresses by itself).
    pub fn disable_interrupts(&mut self) {
        if !self.event_idx {
            self.avail_flags()
                .store(AVAIL_F_NO_INTERRUPT, Ordering::Relaxed);
        }
    }

    fn avail_flags(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem.atomic_u16(self.layout.avail)
    }
    fn avail_idx(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem.atomic_u16(self.layout.avail + 2)
    }
    /// `used_event`, after the available ring's entries.
    fn avail_trailer(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem
            .atomic_u16(self.layout.avail + 4 + 2 * u64::from(self.layout.size))
    }
    fn used_flags(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem.atomic_u16(self.layout.used)
    }
    fn used_idx(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem.atomic_u16(self.layout.used + 2)
    }
    /// `avail_event`, after the used ring's entries.
    fn used_trailer(&self) -> &std::sync::atomic::AtomicU16 {
        self.mem
            .atomic_u16(self.layout.used + 4 + 8 * u64::from(self.layout.size))
    }
}

/// virtio's `vring_need_event`: whether moving an index from `old` to `new`
/// crosses the other side's event index.
pub fn need_event(event: u16, new: u16, old: u16) -> bool {
    new.wrapping_sub(event).wrapping_sub(1) < new.wrapping_sub(old)
}

#[cfg(test)]
mod tests {
    use super::need_event;

    #[test]
    fn need_event_fires_only_when_the_event_index_is_crossed() {
        assert!(need_event(0, 1, 0));
        assert!(!need_event(5, 3, 0));
        assert!(need_event(5, 6, 0));
        assert!(!need_event(5, 6, 6));
        // Across the 16-bit wrap.
        assert!(need_event(65535, 2, 65530));
        assert!(!need_event(3, 2, 65530));
    }
}
