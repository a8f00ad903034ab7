//! blktrace's binary records (Linux include/uapi/linux/blktrace_api.h).
//!
//! Version 7, `struct blk_io_trace`, 48 bytes: magic, sequence, time
//! (u64 ns), sector (u64), bytes, action (u32: the action code in the low
//! 16 bits, the categories above them), pid, device, cpu, error (u16),
//! pdu_len (u16). Version 8, `struct blk_io_trace2`, 64 bytes (Linux
//! 6.19): magic, sequence, time, sector, bytes, pid, action (u64: the
//! categories from bit 32), device, cpu, error, pdu_len, 12 bytes of pad.
//! The magic is `0x654174` then the version byte; a record is in the
//! byte order of the machine that wrote it, so the magic's byte order
//! tells. `pdu_len` bytes of payload follow each record (a remap's
//! target, a message's text, a cgroup id) and are skipped.
//!
//! Q (queue) events of reads and writes are the requests, each stream a
//! process (pid) on the CPU of its first Q. A C (complete) event ends the
//! oldest request waiting with the same device, sector and size (first
//! in, first out); a request the block layer merged into another
//! completes under the other's size and keeps no latency of its own.

use std::collections::{HashMap, VecDeque};

use crate::{
    ErrorKind, Format, NotReplayed, Place, Request, Stream, StreamTable, Trace, TraceError,
};

/// `BLK_IO_TRACE_MAGIC` without its version byte.
const MAGIC: u32 = 0x6561_7400;
/// `__BLK_TA_QUEUE`.
const TA_QUEUE: u64 = 1;
/// `__BLK_TA_COMPLETE`.
const TA_COMPLETE: u64 = 8;
/// `BLK_TC_READ`, `BLK_TC_WRITE`, `BLK_TC_NOTIFY` and `BLK_TC_DISCARD`
/// as category bits (include/uapi/linux/blktrace_api.h).
const TC_READ: u64 = 1 << 0;
const TC_WRITE: u64 = 1 << 1;
const TC_NOTIFY: u64 = 1 << 10;
const TC_DISCARD: u64 = 1 << 13;

/// The byte order and version of the record that starts `bytes`:
/// (big-endian, version).
pub(crate) fn detect(bytes: &[u8]) -> Option<(bool, u8)> {
    let head: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    for big in [false, true] {
        let m = if big {
            u32::from_be_bytes(head)
        } else {
            u32::from_le_bytes(head)
        };
        if m & !0xff == MAGIC {
            return Some((big, (m & 0xff) as u8));
        }
    }
    None
}

/// The fields of one record that the replay needs.
struct Event {
    time: u64,
    sector: u64,
    bytes: u32,
    action: u64,
    pid: u32,
    device: u32,
    cpu: u32,
    pdu_len: u16,
}

/// Reads fixed-width fields in one byte order.
struct Fields<'a> {
    rec: &'a [u8],
    big: bool,
}

impl Fields<'_> {
    /// The unsigned integer of `width` bytes at `at`.
    fn uint(&self, at: usize, width: usize) -> u64 {
        let bytes = &self.rec[at..at + width];
        let fold = |v: u64, b: &u8| (v << 8) | u64::from(*b);
        if self.big {
            bytes.iter().fold(0, fold)
        } else {
            bytes.iter().rev().fold(0, fold)
        }
    }

    fn u16(&self, at: usize) -> u16 {
        self.uint(at, 2) as u16
    }

    fn u32(&self, at: usize) -> u32 {
        self.uint(at, 4) as u32
    }

    fn u64(&self, at: usize) -> u64 {
        self.uint(at, 8)
    }
}

/// The record size of a version.
pub(crate) fn record_size(version: u8) -> Option<usize> {
    match version {
        7 => Some(48),
        8 => Some(64),
        _ => None,
    }
}

fn decode(rec: &[u8], big: bool, version: u8) -> Event {
    let f = Fields { rec, big };
    if version == 7 {
        let action = f.u32(28);
        Event {
            time: f.u64(8),
            sector: f.u64(16),
            bytes: f.u32(24),
            // The categories move up to where version 8 keeps them.
            action: u64::from(action & 0xffff) | (u64::from(action >> 16) << 32),
            pid: f.u32(32),
            device: f.u32(36),
            cpu: f.u32(40),
            pdu_len: f.u16(46),
        }
    } else {
        Event {
            time: f.u64(8),
            sector: f.u64(16),
            bytes: f.u32(24),
            pid: f.u32(28),
            action: f.u64(32),
            device: f.u32(40),
            cpu: f.u32(44),
            pdu_len: f.u16(50),
        }
    }
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
    let Some((big, version)) = detect(bytes) else {
        let kind = if bytes.len() < 4 {
            ErrorKind::Truncated
        } else {
            ErrorKind::BadMagic
        };
        return Err(TraceError::new(
            kind,
            Some(Place::Byte(0)),
            "a blktrace record starts with the magic 0x654174 and a version byte",
        ));
    };
    let Some(size) = record_size(version) else {
        return Err(unsupported(0, version));
    };
    let mut streams: StreamTable<u32> = StreamTable::new();
    let mut requests: Vec<Request> = Vec::new();
    // Requests waiting for their C event, by (device, sector, bytes).
    let mut waiting: HashMap<(u32, u64, u32), VecDeque<usize>> = HashMap::new();
    let mut skipped = 0u64;
    let mut not_replayed = NotReplayed::default();
    let mut at = 0usize;
    while at < bytes.len() {
        let place = Some(Place::Byte(at as u64));
        let rest = &bytes[at..];
        if rest.len() < size {
            return Err(TraceError::new(
                ErrorKind::Truncated,
                place,
                format!(
                    "the file ends {} bytes into a {size}-byte version {version} record",
                    rest.len()
                ),
            ));
        }
        match detect(rest) {
            Some((b, v)) if b == big && v == version => {}
            Some((b, v)) if b == big && matches!(v, 7 | 8) => {
                return Err(TraceError::new(
                    ErrorKind::UnsupportedVersion,
                    place,
                    format!(
                        "a version {v} record after version {version} ones: a trace's records \
                         are all of one version"
                    ),
                ))
            }
            Some((b, v)) if b == big => return Err(unsupported(at, v)),
            _ => {
                return Err(TraceError::new(
                    ErrorKind::BadMagic,
                    place,
                    format!(
                        "bad magic 0x{:08x}: not a version {version} {} record like the first",
                        Fields { rec: rest, big }.u32(0),
                        if big { "big-endian" } else { "little-endian" }
                    ),
                ))
            }
        }
        let ev = decode(&rest[..size], big, version);
        let next = size + usize::from(ev.pdu_len);
        if rest.len() < next {
            return Err(TraceError::new(
                ErrorKind::Truncated,
                place,
                format!(
                    "the file ends inside the record's {}-byte payload",
                    ev.pdu_len
                ),
            ));
        }
        let code = ev.action & 0xffff;
        let cats = ev.action >> 32;
        // A discard carries the write category and its range's bytes
        // (blk_add_trace_rq: `ddir_act` of a write op, then
        // BLK_TC_DISCARD): it moves no data, and is no write to replay.
        let io = cats & (TC_READ | TC_WRITE) != 0
            && cats & (TC_NOTIFY | TC_DISCARD) == 0
            && ev.bytes > 0;
        if io && code == TA_QUEUE {
            let offset = ev.sector.checked_mul(512).ok_or_else(|| {
                TraceError::new(
                    ErrorKind::BadRecord,
                    place,
                    format!("sector {} is beyond any device", ev.sector),
                )
            })?;
            let pid = ev.pid;
            let stream = streams.index(pid, || Stream {
                label: format!("pid {pid}"),
                cpu: Some(ev.cpu),
                first: Place::Byte(at as u64),
            });
            waiting
                .entry((ev.device, ev.sector, ev.bytes))
                .or_default()
                .push_back(requests.len());
            requests.push(Request {
                stream,
                time: ev.time,
                offset,
                bytes: u64::from(ev.bytes),
                write: cats & TC_WRITE != 0,
                latency: None,
                place: Place::Byte(at as u64),
            });
        } else if io && code == TA_COMPLETE {
            let matched = waiting
                .get_mut(&(ev.device, ev.sector, ev.bytes))
                .and_then(VecDeque::pop_front);
            if let Some(i) = matched {
                let r = &mut requests[i];
                // A completion stamped before its queue event (clocks of
                // two CPUs) gives no latency rather than a negative one.
                r.latency = ev.time.checked_sub(r.time);
            }
            skipped += 1;
        } else {
            if code == TA_QUEUE && cats & TC_NOTIFY == 0 {
                // A request queued that is no read or write of data: a
                // discard, or a flush (a write category without bytes).
                if cats & TC_DISCARD != 0 {
                    not_replayed.trims += 1;
                } else if ev.bytes == 0 {
                    not_replayed.syncs += 1;
                }
            }
            skipped += 1;
        }
        at += next;
    }
    Ok(Trace {
        format: Format::Blktrace,
        version,
        big_endian: big,
        streams: streams.into_streams(),
        requests,
        skipped,
        not_replayed,
    })
}

fn unsupported(at: usize, version: u8) -> TraceError {
    TraceError::new(
        ErrorKind::UnsupportedVersion,
        Some(Place::Byte(at as u64)),
        format!("blktrace record version {version}: this reader knows versions 7 and 8"),
    )
}
