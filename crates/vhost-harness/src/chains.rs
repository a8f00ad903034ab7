//! Well-formed and malformed virtio-blk descriptor chains, and what a
//! correct device must answer to each: the vocabulary of the fuzz tests.
//!
//! Each request lives in a *slot*: a fixed run of descriptor-table entries
//! and its own header, data and status buffers, so chains in one batch
//! never share memory.

use crate::blk;
use crate::exchange::RawChain;
use crate::memory::{Gpa, GuestMemory};
use crate::ring::{Desc, DESC_F_NEXT, DESC_F_WRITE};
use crate::Error;

/// Descriptor-table entries per slot.
pub const DESCS_PER_SLOT: u16 = 8;
/// Largest data buffer of a slot.
pub const MAX_DATA: u32 = 8 * 512;

/// How a chain is wrong (or not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// A correct request.
    None,
    /// The header descriptor is shorter than 16 bytes.
    ShortHeader(u8),
    /// The header is in a device-writable buffer.
    WritableHeader,
    /// The data buffer has the wrong direction for the request type.
    DataWrongDirection,
    /// The data buffer's length is not a multiple of 512.
    DataNotSectorMultiple(u16),
    /// The header lies outside guest memory.
    HeaderOutsideMemory(u64),
    /// The data buffer starts outside guest memory.
    DataOutsideMemory(u64),
    /// The data buffer starts inside guest memory and runs past its end.
    DataStraddlesEnd,
    /// The data buffer's address plus length wraps around 2^64.
    DataAddressWraps,
    /// The status byte lies outside guest memory (no status can be written).
    StatusOutsideMemory(u64),
    /// The status descriptor is device-readable (no status can be written).
    ReadableStatus,
    /// The status descriptor has length 0 (no status can be written).
    EmptyStatus,
    /// The chain ends after the header (no status descriptor at all).
    NoStatus,
    /// The last descriptor's `next` points back at the head: a loop.
    Loop,
    /// A `next` index past the end of the descriptor table.
    NextOutOfRange(u16),
    /// The request's sectors run past the disk's capacity by this many.
    SectorsPastEnd(u64),
    /// The sector number is near 2^64 (sector * 512 overflows).
    HugeSector,
    /// A request type the device does not know.
    UnknownType(u32),
}

impl Fault {
    /// Whether the status byte is addressable, so a correct device must
    /// write an error status there (otherwise it can only return the chain).
    pub fn status_addressable(self) -> bool {
        !matches!(
            self,
            Fault::StatusOutsideMemory(_)
                | Fault::ReadableStatus
                | Fault::EmptyStatus
                | Fault::NoStatus
                | Fault::Loop
                | Fault::NextOutOfRange(_)
        )
    }
}

/// One request of a batch.
#[derive(Clone, Copy, Debug)]
pub struct ChainSpec {
    /// Write (true) or read.
    pub write: bool,
    /// Sectors of data, 1..=8.
    pub sectors: u8,
    /// First sector, relative to the slot's region of the disk.
    pub sector_offset: u64,
    /// Seed of the data pattern a write carries (and of where the data
    /// buffer is cut when it is split).
    pub seed: u8,
    /// Descriptors the data buffer is split into, 1..=4, cut at arbitrary
    /// byte offsets (valid virtio: only the total length matters).
    pub pieces: u8,
    /// The header's ioprio field (a hint to our back end; any value must
    /// be harmless).
    pub ioprio: u32,
    /// What is wrong with it.
    pub fault: Fault,
}

/// The buffers of one slot.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// Index of the slot (its descriptors start at `index * DESCS_PER_SLOT`).
    pub index: u16,
    /// Header buffer.
    pub header: Gpa,
    /// Data buffer (`MAX_DATA` bytes).
    pub data: Gpa,
    /// Status byte.
    pub status: Gpa,
}

impl Slot {
    /// Allocates `count` slots in `mem`.
    pub fn allocate(mem: &GuestMemory, count: u16) -> Result<Vec<Slot>, Error> {
        (0..count)
            .map(|index| {
                Ok(Slot {
                    index,
                    header: mem.alloc(u64::from(blk::HEADER_LEN), 16)?,
                    data: mem.alloc(u64::from(MAX_DATA), 4096)?,
                    status: mem.alloc(1, 1)?,
                })
            })
            .collect()
    }

    /// The head descriptor's index.
    pub fn head(&self) -> u16 {
        self.index * DESCS_PER_SLOT
    }
}

/// The bytes a write with this seed carries.
pub fn pattern(seed: u8, sector: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| {
            let x = (sector.wrapping_mul(0x9e37_79b9) as usize)
                .wrapping_add(i.wrapping_mul(31))
                .wrapping_add(usize::from(seed).wrapping_mul(97));
            (x ^ (x >> 7)) as u8
        })
        .collect()
}

/// Writes the request's header and data into the slot's buffers, sets the
/// status byte to `S_UNTOUCHED`, and returns the chain to submit.
/// `first_sector` is the absolute first sector the request addresses
/// before any sector fault; `capacity` is the disk's size in sectors;
/// `queue_size` the descriptor table's size.
pub fn build(
    mem: &GuestMemory,
    slot: &Slot,
    spec: &ChainSpec,
    first_sector: u64,
    capacity: u64,
    queue_size: u16,
) -> RawChain {
    let len = u32::from(spec.sectors) * 512;
    let mut req_type = if spec.write { blk::T_OUT } else { blk::T_IN };
    let mut sector = first_sector;
    match spec.fault {
        Fault::SectorsPastEnd(by) => {
            sector = capacity - u64::from(spec.sectors) + 1 + by;
        }
        Fault::HugeSector => sector = u64::MAX - u64::from(spec.sectors) / 2,
        Fault::UnknownType(t) => req_type = t,
        _ => {}
    }
    mem.write(slot.header, &blk::header(req_type, spec.ioprio, sector));
    if spec.write {
        mem.write(slot.data, &pattern(spec.seed, first_sector, len as usize));
    } else {
        // Reads must overwrite this; a stale buffer would hide a short read.
        mem.fill(slot.data, u64::from(MAX_DATA), 0xee);
    }
    mem.write_u8(slot.status, blk::S_UNTOUCHED);

    let base = slot.head();
    let outside = |off: u64| mem.size() + off;
    let mut header = Desc {
        addr: slot.header,
        len: blk::HEADER_LEN,
        flags: DESC_F_NEXT,
        next: base + 1,
    };
    let data_writable = !spec.write;
    let mut data = Desc {
        addr: slot.data,
        len,
        flags: DESC_F_NEXT | if data_writable { DESC_F_WRITE } else { 0 },
        next: base + 2,
    };
    let mut status = Desc {
        addr: slot.status,
        len: 1,
        flags: DESC_F_WRITE,
        next: 0,
    };
    match spec.fault {
        Fault::ShortHeader(n) => header.len = u32::from(n % 16),
        Fault::WritableHeader => header.flags |= DESC_F_WRITE,
        Fault::DataWrongDirection => data.flags ^= DESC_F_WRITE,
        Fault::DataNotSectorMultiple(n) => {
            data.len = (len - 512) + 1 + u32::from(n % 511);
        }
        Fault::HeaderOutsideMemory(off) => header.addr = outside(off),
        Fault::DataOutsideMemory(off) => data.addr = outside(off),
        Fault::DataStraddlesEnd => data.addr = mem.size() - u64::from(len) / 2,
        Fault::DataAddressWraps => data.addr = u64::MAX - u64::from(len) / 2,
        Fault::StatusOutsideMemory(off) => status.addr = outside(off),
        Fault::ReadableStatus => status.flags &= !DESC_F_WRITE,
        Fault::EmptyStatus => status.len = 0,
        Fault::Loop => {
            status.flags |= DESC_F_NEXT;
            status.next = base;
        }
        Fault::NextOutOfRange(off) => {
            data.next = queue_size.saturating_add(off % 1024);
        }
        Fault::NoStatus => header.flags &= !DESC_F_NEXT,
        _ => {}
    }
    if spec.fault == Fault::NoStatus {
        return RawChain {
            descs: vec![(base, header)],
        };
    }
    let pieces =
        u16::from(spec.pieces.clamp(1, 4)).min(u16::try_from(data.len).unwrap_or(4).max(1));
    let status_index = base + 1 + pieces;
    let mut descs = vec![(base, header)];
    let mut offset = 0u32;
    for i in 0..pieces {
        let end = if i + 1 == pieces {
            data.len
        } else {
            // Even cuts moved by up to 12 bytes, so pieces are rarely
            // sector-aligned, and never empty.
            let even = data.len * u32::from(i + 1) / u32::from(pieces);
            even.saturating_sub(u32::from(spec.seed) % 13)
                .max(offset + 1)
        };
        let last = i + 1 == pieces;
        descs.push((
            base + 1 + i,
            Desc {
                addr: data.addr.wrapping_add(u64::from(offset)),
                len: end - offset,
                flags: data.flags,
                next: if last && data.next != base + 2 {
                    // A fault rewrote the data buffer's `next`: keep it.
                    data.next
                } else if last {
                    status_index
                } else {
                    base + 2 + i
                },
            },
        ));
        offset = end;
    }
    status.next = if spec.fault == Fault::Loop { base } else { 0 };
    descs.push((status_index, status));
    RawChain { descs }
}

/// A completed request's verdict against what a correct device does.
/// `Ok(())` when it behaved; otherwise why not.
pub fn check_status(spec: &ChainSpec, status: u8, read_only: bool) -> Result<(), String> {
    let write_refused = read_only && spec.write;
    match spec.fault {
        Fault::None if !write_refused => {
            if status == blk::S_OK {
                Ok(())
            } else {
                Err(format!("a correct request got status {status}"))
            }
        }
        Fault::UnknownType(_) => {
            if status == blk::S_UNSUPP {
                Ok(())
            } else {
                Err(format!(
                    "an unknown request type got status {status}, not UNSUPP"
                ))
            }
        }
        f if f.status_addressable() => {
            if status == blk::S_IOERR || status == blk::S_UNSUPP {
                Ok(())
            } else {
                Err(format!(
                    "a malformed request ({f:?}) got status {status}, not an error"
                ))
            }
        }
        f => {
            if status == blk::S_OK {
                Err(format!(
                    "a request with no usable status ({f:?}) reported success"
                ))
            } else if status == blk::S_UNTOUCHED
                || status == blk::S_IOERR
                || status == blk::S_UNSUPP
            {
                // A device-readable or absent status buffer must not be
                // written; an error there is tolerated only for a loop or a
                // bad `next`, where the status descriptor itself is valid.
                if status != blk::S_UNTOUCHED
                    && !matches!(f, Fault::Loop | Fault::NextOutOfRange(_))
                {
                    Err(format!(
                        "the device wrote status {status} into a buffer it may not write ({f:?})"
                    ))
                } else {
                    Ok(())
                }
            } else {
                Err(format!("status byte changed to {status} ({f:?})"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(write: bool, fault: Fault, pieces: u8) -> ChainSpec {
        ChainSpec {
            write,
            sectors: 3,
            sector_offset: 0,
            seed: 5,
            pieces,
            ioprio: 0,
            fault,
        }
    }

    fn chain(s: &ChainSpec) -> (GuestMemory, Slot, RawChain) {
        let mem = GuestMemory::new(1 << 20).expect("memfd");
        let slot = Slot::allocate(&mem, 2).expect("slots")[1];
        let c = build(&mem, &slot, s, 40, 2048, 256);
        (mem, slot, c)
    }

    #[test]
    fn a_correct_request_is_header_data_pieces_then_status() {
        for pieces in 1..=4 {
            let (mem, slot, c) = chain(&spec(false, Fault::None, pieces));
            let d: Vec<Desc> = c.descs.iter().map(|(_, d)| *d).collect();
            assert_eq!(c.descs[0].0, slot.head());
            assert_eq!(d.len(), 2 + usize::from(pieces));
            assert_eq!(d[0].len, blk::HEADER_LEN);
            let data: u32 = d[1..d.len() - 1].iter().map(|x| x.len).sum();
            assert_eq!(data, 3 * 512);
            assert!(d[1..d.len() - 1]
                .iter()
                .all(|x| x.flags & DESC_F_WRITE != 0 && x.len > 0));
            // Each descriptor's `next` is the following entry's index.
            for w in c.descs.windows(2) {
                assert_eq!(w[0].1.next, w[1].0);
                assert!(w[0].1.flags & DESC_F_NEXT != 0);
            }
            let last = d[d.len() - 1];
            assert_eq!((last.len, last.flags), (1, DESC_F_WRITE));
            assert_eq!(mem.read_u8(slot.status), blk::S_UNTOUCHED);
        }
    }

    #[test]
    fn faults_break_exactly_what_they_name() {
        let (_, slot, c) = chain(&spec(true, Fault::Loop, 2));
        let last = c.descs.last().expect("descs").1;
        assert!(last.flags & DESC_F_NEXT != 0 && last.next == slot.head());
        let (_, _, c) = chain(&spec(true, Fault::NoStatus, 1));
        assert_eq!(c.descs.len(), 1);
        assert_eq!(c.descs[0].1.flags & DESC_F_NEXT, 0);
        let (mem, _, c) = chain(&spec(true, Fault::DataStraddlesEnd, 3));
        let first = c.descs[1].1.addr;
        let end: u64 = first
            + c.descs[1..4]
                .iter()
                .map(|(_, d)| u64::from(d.len))
                .sum::<u64>();
        assert!(first < mem.size() && end > mem.size());
        let (_, _, c) = chain(&spec(false, Fault::DataWrongDirection, 1));
        assert_eq!(c.descs[1].1.flags & DESC_F_WRITE, 0);
        let (_, _, c) = chain(&spec(true, Fault::NextOutOfRange(3), 1));
        assert!(c.descs[1].1.next >= 256);
    }

    #[test]
    fn verdicts_follow_the_status_byte_rules() {
        let good = spec(true, Fault::None, 1);
        assert!(check_status(&good, blk::S_OK, false).is_ok());
        assert!(check_status(&good, blk::S_IOERR, false).is_err());
        assert!(check_status(&good, blk::S_IOERR, true).is_ok());
        assert!(check_status(&good, blk::S_OK, true).is_err());
        let unknown = spec(false, Fault::UnknownType(99), 1);
        assert!(check_status(&unknown, blk::S_UNSUPP, false).is_ok());
        assert!(check_status(&unknown, blk::S_IOERR, false).is_err());
        let past = spec(false, Fault::SectorsPastEnd(0), 1);
        assert!(check_status(&past, blk::S_IOERR, false).is_ok());
        assert!(check_status(&past, blk::S_UNTOUCHED, false).is_err());
        let readable = spec(false, Fault::ReadableStatus, 1);
        assert!(check_status(&readable, blk::S_UNTOUCHED, false).is_ok());
        assert!(check_status(&readable, blk::S_IOERR, false).is_err());
        assert!(check_status(&readable, blk::S_OK, false).is_err());
        let looped = spec(false, Fault::Loop, 1);
        assert!(check_status(&looped, blk::S_IOERR, false).is_ok());
        assert!(check_status(&looped, blk::S_OK, false).is_err());
    }
}
