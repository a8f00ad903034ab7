//! Writing traces in each format, the inverse of [`crate::parse`]: for
//! generated traces (the random-scenario test) and for checking the
//! readers against the ecosystem's own tools (blkparse, fio).

use crate::blktrace::record_size;

/// One request to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    /// Issue time in nanoseconds.
    pub time: u64,
    /// Byte offset (a multiple of 512 for blktrace).
    pub offset: u64,
    /// Size in bytes.
    pub bytes: u32,
    /// A write; else a read.
    pub write: bool,
    /// The issuer: a pid (blktrace), a file index (iolog), a disk (MSR).
    pub stream: u32,
    /// blktrace: the CPU of the Q event.
    pub cpu: u32,
    /// When it completed, if the trace records it (blktrace's C event, the
    /// MSR response time).
    pub done: Option<u64>,
}

/// fio's iolog version 3: one file per stream (`dev{stream}`), added and
/// opened at time 0; times in whole microseconds (rounded down).
pub fn iolog_v3(ios: &[Io]) -> String {
    let mut files: Vec<u32> = ios.iter().map(|io| io.stream).collect();
    files.sort_unstable();
    files.dedup();
    let mut out = String::from("fio version 3 iolog\n");
    for f in &files {
        out.push_str(&format!("0 dev{f} add\n0 dev{f} open\n"));
    }
    for io in ios {
        out.push_str(&format!(
            "{} dev{} {} {} {}\n",
            io.time / 1_000,
            io.stream,
            if io.write { "write" } else { "read" },
            io.offset,
            io.bytes
        ));
    }
    out
}

/// The MSR CSV: host `h`, disk `stream`; times in 100 ns units (rounded
/// down), the response time from `done` (0 without one).
pub fn msr_csv(ios: &[Io]) -> String {
    let mut out = String::new();
    for io in ios {
        let rt = io.done.map_or(0, |d| d.saturating_sub(io.time) / 100);
        out.push_str(&format!(
            "{},h,{},{},{},{},{}\n",
            io.time / 100,
            io.stream,
            if io.write { "Write" } else { "Read" },
            io.offset,
            io.bytes,
            rt
        ));
    }
    out
}

/// A blktrace record of `version` (7 or 8) in the chosen byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlkRecord {
    /// Event number.
    pub sequence: u32,
    /// Nanoseconds.
    pub time: u64,
    /// 512-byte sector.
    pub sector: u64,
    /// Bytes.
    pub bytes: u32,
    /// The action as version 8 keeps it: code in the low 16 bits,
    /// categories from bit 32.
    pub action: u64,
    /// Process.
    pub pid: u32,
    /// Device number.
    pub device: u32,
    /// CPU.
    pub cpu: u32,
    /// Payload bytes after the record.
    pub pdu: u16,
}

/// `__BLK_TA_QUEUE`, `__BLK_TA_ISSUE`, `__BLK_TA_COMPLETE`.
pub const TA_QUEUE: u64 = 1;
/// `__BLK_TA_ISSUE` (D).
pub const TA_ISSUE: u64 = 7;
/// `__BLK_TA_COMPLETE` (C).
pub const TA_COMPLETE: u64 = 8;

/// The version-8 action of `code` on a read or a write.
pub fn action(code: u64, write: bool) -> u64 {
    let cat: u64 = if write { 1 << 1 } else { 1 << 0 };
    code | (cat << 32)
}

/// Appends `rec` (and `rec.pdu` bytes of payload) to `out`.
///
/// # Panics
/// On a version other than 7 or 8.
pub fn blk_record(out: &mut Vec<u8>, rec: &BlkRecord, version: u8, big: bool) {
    let size = record_size(version).expect("blktrace version 7 or 8");
    let mut buf = vec![0u8; size];
    let mut put = |at: usize, v: u64, width: usize| {
        let bytes = v.to_be_bytes();
        let be = &bytes[8 - width..];
        for i in 0..width {
            buf[at + i] = if big { be[i] } else { be[width - 1 - i] };
        }
    };
    put(0, u64::from(0x6561_7400u32 | u32::from(version)), 4);
    put(4, u64::from(rec.sequence), 4);
    put(8, rec.time, 8);
    put(16, rec.sector, 8);
    put(24, u64::from(rec.bytes), 4);
    if version == 7 {
        let a = (rec.action & 0xffff) | (((rec.action >> 32) & 0xffff) << 16);
        put(28, a, 4);
        put(32, u64::from(rec.pid), 4);
        put(36, u64::from(rec.device), 4);
        put(40, u64::from(rec.cpu), 4);
        put(46, u64::from(rec.pdu), 2);
    } else {
        put(28, u64::from(rec.pid), 4);
        put(32, rec.action, 8);
        put(40, u64::from(rec.device), 4);
        put(44, u64::from(rec.cpu), 4);
        put(50, u64::from(rec.pdu), 2);
    }
    out.extend_from_slice(&buf);
    out.extend(std::iter::repeat_n(0xa5u8, usize::from(rec.pdu)));
}

/// A blktrace of `ios`: a Q event for each (the stream as pid), a D event
/// after it carrying `pdu` bytes of payload, and a C event at `done`
/// where there is one; events in time order.
pub fn blktrace(ios: &[Io], version: u8, big: bool, pdu: u16) -> Vec<u8> {
    let mut events: Vec<(u64, u64, &Io)> = Vec::new();
    for io in ios {
        events.push((io.time, TA_QUEUE, io));
        events.push((io.time, TA_ISSUE, io));
        if let Some(d) = io.done {
            events.push((d, TA_COMPLETE, io));
        }
    }
    // Stable: same-time events keep Q before D before C of one request.
    events.sort_by_key(|e| e.0);
    let mut out = Vec::new();
    for (seq, (time, code, io)) in events.into_iter().enumerate() {
        let rec = BlkRecord {
            sequence: seq as u32,
            time,
            sector: io.offset / 512,
            bytes: io.bytes,
            action: action(code, io.write),
            pid: io.stream,
            device: 0x0070_0000,
            cpu: io.cpu,
            pdu: if code == TA_ISSUE { pdu } else { 0 },
        };
        blk_record(&mut out, &rec, version, big);
    }
    out
}
