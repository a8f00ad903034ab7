//! # cint-trace: the block traces storage engineers already have
//!
//! Reads three formats into one list of requests ([`Trace`]) that the
//! simulator replays (docs/TRACES.md):
//!
//! * fio's iolog, versions 2 and 3 ([`Format::FioIolog`]): the text that
//!   fio's `write_iolog` writes (`fio version 3 iolog`, one line per file
//!   action or I/O, version 3 with a timestamp in microseconds first) and
//!   `read_iolog` replays (fio's iolog.c);
//! * blktrace's binary records ([`Format::Blktrace`]): `struct
//!   blk_io_trace` (version 7, 48 bytes) and `struct blk_io_trace2`
//!   (version 8, 64 bytes, Linux 6.19's wider action), in either byte
//!   order, each followed by `pdu_len` bytes of payload. Q (queue) events
//!   are the requests; C (complete) events give their completion times;
//! * the SNIA IOTTA / MSR Cambridge CSV ([`Format::MsrCsv`]):
//!   `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, times
//!   in Windows filetime units of 100 ns.
//!
//! The format is detected from the content ([`detect`]: a magic number or
//! a header line) unless the caller names it. Every refusal is a
//! [`TraceError`] with a kind and the place (byte offset or line) of the
//! record at fault; no input makes the readers panic.

#![warn(missing_docs)]

mod blktrace;
pub mod encode;
mod iolog;
mod msr;
mod text;

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::str::FromStr;

/// A trace format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// fio's iolog, version 2 or 3.
    FioIolog,
    /// blktrace's binary records, version 7 or 8.
    Blktrace,
    /// The SNIA / MSR Cambridge CSV.
    MsrCsv,
}

impl Format {
    /// Every format with the name [`Format::name`] gives it.
    pub const ALL: [Format; 3] = [Format::FioIolog, Format::Blktrace, Format::MsrCsv];

    /// The name options and scenario keys use: `iolog`, `blktrace`, `msr`.
    pub fn name(self) -> &'static str {
        match self {
            Format::FioIolog => "iolog",
            Format::Blktrace => "blktrace",
            Format::MsrCsv => "msr",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Format, String> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| format!("unknown trace format \"{s}\" (known: iolog, blktrace, msr)"))
    }
}

/// Where in the file a record lies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// Byte offset of a binary record's first byte.
    Byte(u64),
    /// Line number (from 1) of a text record.
    Line(u64),
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Byte(b) => write!(f, "byte {b}"),
            Place::Line(l) => write!(f, "line {l}"),
        }
    }
}

/// What is wrong with a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// No format's magic number or header matches the start of the file.
    UnknownFormat,
    /// A blktrace record whose magic number is not blktrace's, or a file
    /// that does not start with the named format's header.
    BadMagic,
    /// A blktrace record of a version this reader does not know.
    UnsupportedVersion,
    /// The file ends inside a record (or a text line without its newline).
    Truncated,
    /// A record that cannot be read (a field that is not a number, an
    /// unknown action, a size of zero, a value out of range).
    BadRecord,
    /// A stream's time goes backwards ([`Trace::check_ordered`]).
    TimeBackwards,
    /// The trace holds no request to replay.
    Empty,
}

/// Why a trace cannot be read or replayed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// What is wrong.
    pub kind: ErrorKind,
    /// The record at fault, when there is one.
    pub place: Option<Place>,
    /// One line saying what is wrong.
    pub message: String,
}

impl TraceError {
    pub(crate) fn new(kind: ErrorKind, place: Option<Place>, message: impl Into<String>) -> Self {
        TraceError {
            kind,
            place,
            message: message.into(),
        }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.place {
            Some(p) => write!(f, "{p}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for TraceError {}

/// One request of the trace, in file order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Index in [`Trace::streams`] of the process (or file, or disk) that
    /// issued it.
    pub stream: u32,
    /// Issue time in nanoseconds on the trace's own clock.
    pub time: u64,
    /// Byte offset on the device.
    pub offset: u64,
    /// Size in bytes (> 0).
    pub bytes: u64,
    /// A write; else a read.
    pub write: bool,
    /// The trace's own latency of this request (its completion time less
    /// its issue time), where the trace records it.
    pub latency: Option<u64>,
    /// Where it was read.
    pub place: Place,
}

/// One issuer of requests: a process of a blktrace, a file of an iolog,
/// a host's disk of an MSR trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stream {
    /// How the trace names it: `pid 1234`, the file name, `host/disk`.
    pub label: String,
    /// The CPU its first request was queued on (blktrace only).
    pub cpu: Option<u32>,
    /// Where its first request lies.
    pub first: Place,
}

/// A parsed trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    /// Its format.
    pub format: Format,
    /// The format's version: 2 or 3 for an iolog, 7 or 8 for blktrace,
    /// 1 for the MSR CSV.
    pub version: u8,
    /// blktrace only: the records are big-endian.
    pub big_endian: bool,
    /// The issuers, in order of first appearance.
    pub streams: Vec<Stream>,
    /// The requests, in file order.
    pub requests: Vec<Request>,
    /// Records read but not replayed: file actions, syncs, trims, waits,
    /// and blktrace events other than Q and C.
    pub skipped: u64,
    /// The requests among them that the traced program made of its
    /// device and the model cannot replay, which a user must be told of.
    pub not_replayed: NotReplayed,
}

/// Requests a trace holds that are neither reads nor writes, which the
/// simulated device does not model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotReplayed {
    /// Syncs and cache flushes: an iolog's `sync` and `datasync`, a
    /// blktrace Q event of a flush (no bytes).
    pub syncs: u64,
    /// Trims and discards: an iolog's `trim`, a blktrace Q event of a
    /// discard.
    pub trims: u64,
}

impl Trace {
    /// The earliest issue time: the trace's time zero for replay.
    pub fn origin(&self) -> u64 {
        self.requests.iter().map(|r| r.time).min().unwrap_or(0)
    }

    /// Refuses a trace in which some stream's issue time goes backwards
    /// (what open-loop replay cannot honour): the error names the first
    /// such request.
    pub fn check_ordered(&self) -> Result<(), TraceError> {
        let mut last: Vec<Option<u64>> = vec![None; self.streams.len()];
        for r in &self.requests {
            let slot = &mut last[r.stream as usize];
            if let Some(prev) = *slot {
                if r.time < prev {
                    return Err(TraceError::new(
                        ErrorKind::TimeBackwards,
                        Some(r.place),
                        format!(
                            "time goes backwards in {} ({} ns after {} ns): open-loop replay \
                             needs each stream in time order (closed-loop replay keeps file order)",
                            self.streams[r.stream as usize].label, r.time, prev
                        ),
                    ));
                }
            }
            *slot = Some(r.time);
        }
        Ok(())
    }
}

/// The format whose magic number or header starts `bytes`, if any.
pub fn detect(bytes: &[u8]) -> Option<Format> {
    if blktrace::detect(bytes).is_some() {
        return Some(Format::Blktrace);
    }
    if iolog::version(bytes).is_some() {
        return Some(Format::FioIolog);
    }
    if msr::looks_like(bytes) {
        return Some(Format::MsrCsv);
    }
    None
}

/// Reads a trace: `format` if given, else the one [`detect`] finds.
pub fn parse(bytes: &[u8], format: Option<Format>) -> Result<Trace, TraceError> {
    let format = match format.or_else(|| detect(bytes)) {
        Some(f) => f,
        None => {
            return Err(TraceError::new(
                ErrorKind::UnknownFormat,
                Some(Place::Byte(0)),
                "not a known trace: no blktrace magic (0x65617407 or 0x65617408), no \
                 'fio version 2 iolog' or 'fio version 3 iolog' header, and no MSR CSV line",
            ))
        }
    };
    let trace = match format {
        Format::FioIolog => iolog::parse(bytes)?,
        Format::Blktrace => blktrace::parse(bytes)?,
        Format::MsrCsv => msr::parse(bytes)?,
    };
    if trace.requests.is_empty() {
        return Err(TraceError::new(
            ErrorKind::Empty,
            None,
            format!(
                "the {} trace holds no read or write to replay ({} other records)",
                format, trace.skipped
            ),
        ));
    }
    Ok(trace)
}

/// Streams in order of first appearance, found by their key.
pub(crate) struct StreamTable<K> {
    keys: HashMap<K, u32>,
    streams: Vec<Stream>,
}

impl<K: Hash + Eq> StreamTable<K> {
    pub(crate) fn new() -> Self {
        StreamTable {
            keys: HashMap::new(),
            streams: Vec::new(),
        }
    }

    /// The index of the stream of `key`, made with `make` if new.
    pub(crate) fn index(&mut self, key: K, make: impl FnOnce() -> Stream) -> u32 {
        let next = self.streams.len() as u32;
        let i = *self.keys.entry(key).or_insert(next);
        if i == next {
            self.streams.push(make());
        }
        i
    }

    /// The index of the stream of `key`, if it has one.
    pub(crate) fn find(&self, key: &K) -> Option<u32> {
        self.keys.get(key).copied()
    }

    pub(crate) fn into_streams(self) -> Vec<Stream> {
        self.streams
    }
}
