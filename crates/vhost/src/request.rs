//! A virtio-blk request, read from its descriptor chain and checked
//! against everything an untrusted driver can get wrong.
//!
//! Layout accepted (what Linux, QEMU's and cloud-hypervisor's drivers
//! send): the first descriptor is device-readable and starts with the
//! 16-byte header (type, ioprio, sector); the status byte is the last byte
//! of the last descriptor, which is device-writable; data lies between
//! (and in any bytes of those two descriptors beyond the header and
//! before the status byte). Device-readable descriptors precede
//! device-writable ones (virtio 1.x §2.7.4.2).

use virtio_bindings::virtio_blk::{
    VIRTIO_BLK_S_IOERR, VIRTIO_BLK_S_UNSUPP, VIRTIO_BLK_T_DISCARD, VIRTIO_BLK_T_FLUSH,
    VIRTIO_BLK_T_GET_ID, VIRTIO_BLK_T_IN, VIRTIO_BLK_T_OUT, VIRTIO_BLK_T_WRITE_ZEROES,
    VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP,
};
use virtio_queue::desc::split::Descriptor;
use vm_memory::{Address, Bytes, GuestAddress, GuestMemoryBackend};

use crate::options::SECTOR;

/// Size of the request header: le32 type, le32 ioprio, le64 sector.
pub const HEADER_LEN: u32 = 16;
/// Size of one discard / write-zeroes segment: le64 sector, le32 count,
/// le32 flags.
pub const RANGE_LEN: u32 = 16;

/// A run of guest memory holding request data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Guest physical address.
    pub addr: GuestAddress,
    /// Length in bytes.
    pub len: u32,
}

/// What the request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `VIRTIO_BLK_T_IN`: read from the disk into the data segments.
    Read,
    /// `VIRTIO_BLK_T_OUT`: write the data segments to the disk.
    Write,
    /// `VIRTIO_BLK_T_FLUSH`.
    Flush,
    /// `VIRTIO_BLK_T_GET_ID`: the device id string into the data.
    GetId,
    /// `VIRTIO_BLK_T_DISCARD` of a range of sectors.
    Discard {
        /// First sector.
        sector: u64,
        /// Number of sectors.
        sectors: u32,
    },
    /// `VIRTIO_BLK_T_WRITE_ZEROES` of a range of sectors.
    WriteZeroes {
        /// First sector.
        sector: u64,
        /// Number of sectors.
        sectors: u32,
        /// The driver allows deallocation.
        unmap: bool,
    },
}

/// A well-formed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// What to do.
    pub op: Op,
    /// First sector (read and write).
    pub sector: u64,
    /// The header's ioprio.
    pub ioprio: u32,
    /// Data, in order (empty for flush, discard and write-zeroes).
    pub data: Vec<Segment>,
    /// Sum of the data lengths.
    pub data_len: u64,
    /// Where the status byte goes.
    pub status: GuestAddress,
}

/// A request the device refuses: the status to report, if a status byte
/// can be written, and why (for the log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// Where the status byte goes; `None` when the chain has no usable
    /// status byte (the chain is then consumed with length 0).
    pub status: Option<GuestAddress>,
    /// `VIRTIO_BLK_S_IOERR` or `VIRTIO_BLK_S_UNSUPP`.
    pub code: u8,
    /// The header's ioprio, when the header could be read.
    pub ioprio: u32,
    /// Why, in a few words.
    pub reason: String,
}

/// What the device offers and how large it is.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Capacity in sectors.
    pub sectors: u64,
    /// Writes, discards and write-zeroes fail.
    pub read_only: bool,
    /// Most data descriptors per request (config space `seg_max`).
    pub seg_max: u32,
    /// `VIRTIO_BLK_F_DISCARD` offered.
    pub discard: bool,
    /// `VIRTIO_BLK_F_WRITE_ZEROES` offered.
    pub write_zeroes: bool,
}

/// Why the device refuses a request: the status it reports and the
/// reason it logs.
type Refusal = (u8, &'static str);

const IOERR: u8 = VIRTIO_BLK_S_IOERR as u8;
const UNSUPP: u8 = VIRTIO_BLK_S_UNSUPP as u8;

/// Reads the request of a descriptor chain. `complete` is false when the
/// chain iterator stopped early: a loop, a chain longer than the queue, or
/// a descriptor (or indirect table) that could not be read.
pub fn parse<M: GuestMemoryBackend>(
    mem: &M,
    descs: &[Descriptor],
    complete: bool,
    limits: &Limits,
) -> Result<Request, Rejected> {
    let refuse = |status: Option<GuestAddress>, ioprio: u32, (code, reason): Refusal| Rejected {
        status,
        code,
        ioprio,
        reason: reason.to_string(),
    };
    if !complete {
        // The end of a cut chain is not the driver's status byte.
        return Err(refuse(
            None,
            0,
            (
                IOERR,
                "descriptor chain loops, is longer than the queue, or leaves guest memory",
            ),
        ));
    }
    let Some(status) = status_byte(mem, descs) else {
        return Err(refuse(
            None,
            0,
            (
                IOERR,
                "no device-writable status byte at the end of the chain",
            ),
        ));
    };
    let header = read_header(mem, descs[0]).map_err(|r| refuse(Some(status), 0, r))?;
    let refuse_with_header = |r| refuse(Some(status), header.ioprio, r);
    let data = data_segments(mem, descs, limits).map_err(refuse_with_header)?;
    let op = operation(mem, &header, &data, limits).map_err(refuse_with_header)?;
    let data = match op {
        Op::Read | Op::Write | Op::GetId => data.segments,
        Op::Discard { .. } | Op::WriteZeroes { .. } | Op::Flush => Vec::new(),
    };
    let data_len = data.iter().map(|s| u64::from(s.len)).sum();
    Ok(Request {
        op,
        sector: header.sector,
        ioprio: header.ioprio,
        data,
        data_len,
        status,
    })
}

/// The request header's fields.
struct Header {
    kind: u32,
    ioprio: u32,
    sector: u64,
}

/// Reads the header from the chain's first descriptor.
fn read_header<M: GuestMemoryBackend>(mem: &M, first: Descriptor) -> Result<Header, Refusal> {
    if first.is_write_only() || first.len() < HEADER_LEN {
        return Err((
            IOERR,
            "first descriptor is not a device-readable 16-byte header",
        ));
    }
    let header: [u8; 16] = crate::guest::read_obj(mem, first.addr())
        .ok_or((IOERR, "request header outside guest memory"))?;
    Ok(Header {
        kind: u32::from_le_bytes([header[0], header[1], header[2], header[3]]),
        ioprio: u32::from_le_bytes([header[4], header[5], header[6], header[7]]),
        sector: u64::from_le_bytes([
            header[8], header[9], header[10], header[11], header[12], header[13], header[14],
            header[15],
        ]),
    })
}

/// A chain's data: its segments in chain order and their directions.
struct Data {
    segments: Vec<Segment>,
    any_readable: bool,
    any_writable: bool,
    len: u64,
}

impl Data {
    /// Whether every segment is device-writable (`writable`), or every one
    /// device-readable.
    fn all(&self, writable: bool) -> bool {
        if writable {
            !self.any_readable
        } else {
            !self.any_writable
        }
    }
}

/// The data segments between the header and the status byte, each in
/// guest memory, readable ones before writable ones, at most `seg_max`.
fn data_segments<M: GuestMemoryBackend>(
    mem: &M,
    descs: &[Descriptor],
    limits: &Limits,
) -> Result<Data, Refusal> {
    let mut segments: Vec<Segment> = Vec::with_capacity(descs.len());
    // Directions, tracked as the segments go by so that the segments
    // themselves become the request's data without a second vector.
    let (mut any_readable, mut any_writable, mut readable_after_writable) = (false, false, false);
    let last = descs.len() - 1;
    for (i, d) in descs.iter().enumerate() {
        let (start, len) = match (i == 0, i == last) {
            (true, true) => {
                // Header and status in one descriptor: it would have to be
                // readable and writable at once.
                return Err((IOERR, "header and status byte in one descriptor"));
            }
            (true, false) => (HEADER_LEN, d.len() - HEADER_LEN),
            (false, true) => (0, d.len() - 1),
            (false, false) => (0, d.len()),
        };
        if len == 0 {
            continue;
        }
        let addr = d
            .addr()
            .checked_add(u64::from(start))
            .ok_or((IOERR, "descriptor address overflows"))?;
        if !crate::guest::in_memory(mem, addr, len as usize) {
            return Err((IOERR, "data buffer outside guest memory"));
        }
        let writable = d.is_write_only();
        readable_after_writable |= any_writable && !writable;
        any_writable |= writable;
        any_readable |= !writable;
        segments.push(Segment { addr, len });
    }
    // Readable before writable, whatever the request type.
    if readable_after_writable {
        return Err((IOERR, "device-readable buffer after a device-writable one"));
    }
    if segments.len() > limits.seg_max as usize {
        return Err((IOERR, "more data segments than seg_max"));
    }
    let len = segments.iter().map(|s| u64::from(s.len)).sum();
    Ok(Data {
        segments,
        any_readable,
        any_writable,
        len,
    })
}

/// Whether `count` sectors from `first` lie on the disk.
fn in_bounds(limits: &Limits, first: u64, count: u64) -> bool {
    first
        .checked_add(count)
        .is_some_and(|end| end <= limits.sectors)
}

/// What the header asks for, checked against the data and the device.
fn operation<M: GuestMemoryBackend>(
    mem: &M,
    header: &Header,
    data: &Data,
    limits: &Limits,
) -> Result<Op, Refusal> {
    match header.kind {
        VIRTIO_BLK_T_IN | VIRTIO_BLK_T_OUT => {
            let write = header.kind == VIRTIO_BLK_T_OUT;
            if write && limits.read_only {
                return Err((IOERR, "write to a read-only disk"));
            }
            if !data.all(!write) {
                return Err((
                    IOERR,
                    if write {
                        "device-writable buffer in a write request"
                    } else {
                        "device-readable buffer in a read request"
                    },
                ));
            }
            if data.len % SECTOR != 0 {
                return Err((IOERR, "data length not a multiple of 512"));
            }
            if !in_bounds(limits, header.sector, data.len / SECTOR) {
                return Err((IOERR, "sectors past the end of the disk"));
            }
            Ok(if write { Op::Write } else { Op::Read })
        }
        VIRTIO_BLK_T_FLUSH => Ok(Op::Flush),
        VIRTIO_BLK_T_GET_ID => {
            if !data.all(true) {
                return Err((IOERR, "device-readable buffer in a GET_ID request"));
            }
            Ok(Op::GetId)
        }
        VIRTIO_BLK_T_DISCARD | VIRTIO_BLK_T_WRITE_ZEROES => {
            range_operation(mem, header.kind == VIRTIO_BLK_T_WRITE_ZEROES, data, limits)
        }
        _ => Err((UNSUPP, "unsupported request type")),
    }
}

/// A discard (or, with `zeroes`, a write-zeroes) of the one range its
/// data holds.
fn range_operation<M: GuestMemoryBackend>(
    mem: &M,
    zeroes: bool,
    data: &Data,
    limits: &Limits,
) -> Result<Op, Refusal> {
    let offered = if zeroes {
        limits.write_zeroes
    } else {
        limits.discard
    };
    if !offered {
        return Err((UNSUPP, "discard or write-zeroes not offered"));
    }
    if limits.read_only {
        return Err((IOERR, "discard or write-zeroes on a read-only disk"));
    }
    // One range per request (max_discard_seg = max_write_zeroes_seg = 1).
    if data.segments.len() != 1 || !data.all(false) || data.len != u64::from(RANGE_LEN) {
        return Err((
            IOERR,
            "discard or write-zeroes without exactly one 16-byte range",
        ));
    }
    let range: [u8; 16] = mem
        .read_obj(data.segments[0].addr)
        .map_err(|_| (IOERR, "range outside guest memory"))?;
    let sector = u64::from_le_bytes([
        range[0], range[1], range[2], range[3], range[4], range[5], range[6], range[7],
    ]);
    let sectors = u32::from_le_bytes([range[8], range[9], range[10], range[11]]);
    let flags = u32::from_le_bytes([range[12], range[13], range[14], range[15]]);
    let allowed = if zeroes {
        VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP
    } else {
        0
    };
    if flags & !allowed != 0 {
        return Err((UNSUPP, "unknown discard or write-zeroes flags"));
    }
    if !in_bounds(limits, sector, u64::from(sectors)) {
        return Err((IOERR, "sectors past the end of the disk"));
    }
    Ok(if zeroes {
        Op::WriteZeroes {
            sector,
            sectors,
            unmap: flags & VIRTIO_BLK_WRITE_ZEROES_FLAG_UNMAP != 0,
        }
    } else {
        Op::Discard { sector, sectors }
    })
}

/// The status byte: the last byte of the last descriptor, if that
/// descriptor is device-writable and the byte lies in guest memory.
fn status_byte<M: GuestMemoryBackend>(mem: &M, descs: &[Descriptor]) -> Option<GuestAddress> {
    let last = descs.last()?;
    if !last.is_write_only() || last.len() == 0 {
        return None;
    }
    let addr = last.addr().checked_add(u64::from(last.len()) - 1)?;
    crate::guest::in_memory(mem, addr, 1).then_some(addr)
}
