//! fio's iolog, versions 2 and 3, as fio's iolog.c reads it
//! (`read_iolog`): a header line, then one line per file action
//! (`FILE add|open|close`) or I/O (`FILE read|write|trim|sync|datasync|wait
//! OFFSET LENGTH`), version 3 with a timestamp in microseconds since the
//! job's start before each (what `write_iolog` writes since fio 3.29).
//!
//! Version 2 has no timestamps: fio issues its I/Os back to back and
//! sleeps on a `wait` line for OFFSET microseconds, so a request's time
//! here is the sum of the waits before it. Version 3 ignores `wait`, as
//! fio does. Each file is a stream; an I/O on a file no `add` line named
//! is refused (fio cannot open it either). Syncs and trims are counted
//! as skipped: the simulated device models reads and writes.

use crate::text::{lines, number, shorten};
use crate::{
    ErrorKind, Format, NotReplayed, Place, Request, Stream, StreamTable, Trace, TraceError,
};

const V2: &str = "fio version 2 iolog";
const V3: &str = "fio version 3 iolog";

/// The version whose header starts `bytes`.
pub(crate) fn version(bytes: &[u8]) -> Option<u8> {
    // fio compares the header's length only (strncmp): trailing text on
    // the line is allowed.
    if bytes.starts_with(V2.as_bytes()) {
        Some(2)
    } else if bytes.starts_with(V3.as_bytes()) {
        Some(3)
    } else {
        None
    }
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
    let Some(version) = version(bytes) else {
        if !bytes.is_empty()
            && (V2.as_bytes().starts_with(bytes) || V3.as_bytes().starts_with(bytes))
        {
            return Err(TraceError::new(
                ErrorKind::Truncated,
                Some(Place::Line(1)),
                "the file ends inside the iolog header",
            ));
        }
        return Err(TraceError::new(
            ErrorKind::BadMagic,
            Some(Place::Line(1)),
            format!("an iolog starts with '{V2}' or '{V3}'"),
        ));
    };
    let mut streams: StreamTable<String> = StreamTable::new();
    let mut requests = Vec::new();
    let mut skipped = 0u64;
    let mut not_replayed = NotReplayed::default();
    // Version 2's clock: the waits so far, in ns.
    let mut waited: u64 = 0;
    let mut all = lines(bytes);
    if let Some(Err(e)) = all.next() {
        return Err(e);
    }
    for line in all {
        let line = line?;
        let n = line.number;
        let place = Some(Place::Line(n));
        let fields: Vec<&str> = line.text.split_ascii_whitespace().collect();
        if fields.is_empty() {
            continue;
        }
        let (time, rest) = if version == 3 {
            let us = number(fields[0], "the timestamp", n)?;
            let ns = us.checked_mul(1_000).ok_or_else(|| {
                TraceError::new(ErrorKind::BadRecord, place, "the timestamp is out of range")
            })?;
            (Some(ns), &fields[1..])
        } else {
            (None, &fields[..])
        };
        let bad = |msg: String| TraceError::new(ErrorKind::BadRecord, place, msg);
        match rest {
            [file, action] => match *action {
                "add" => {
                    streams.index(file.to_string(), || Stream {
                        label: file.to_string(),
                        cpu: None,
                        first: Place::Line(n),
                    });
                    skipped += 1;
                }
                "open" | "close" => {
                    if streams.find(&file.to_string()).is_none() {
                        return Err(bad(format!(
                            "'{action}' of {} before its 'add'",
                            shorten(file)
                        )));
                    }
                    skipped += 1;
                }
                other => {
                    return Err(bad(format!(
                        "unknown file action \"{}\" (add, open, close)",
                        shorten(other)
                    )))
                }
            },
            [file, action, offset, length] => {
                let offset = number(offset, "the offset", n)?;
                let length = number(length, "the length", n)?;
                let write = match *action {
                    "read" => false,
                    "write" => true,
                    "wait" => {
                        if version == 2 {
                            waited = offset
                                .checked_mul(1_000)
                                .and_then(|ns| waited.checked_add(ns))
                                .ok_or_else(|| {
                                    bad("the waits so far pass the clock's range (584 years)"
                                        .into())
                                })?;
                        }
                        skipped += 1;
                        continue;
                    }
                    "trim" => {
                        skipped += 1;
                        not_replayed.trims += 1;
                        continue;
                    }
                    "sync" | "datasync" => {
                        skipped += 1;
                        not_replayed.syncs += 1;
                        continue;
                    }
                    other => {
                        return Err(bad(format!(
                            "unknown I/O action \"{}\" (read, write, trim, sync, datasync, wait)",
                            shorten(other)
                        )))
                    }
                };
                // fio reads the length as an unsigned int.
                if length == 0 || length > u64::from(u32::MAX) {
                    return Err(bad(format!(
                        "length {length} is out of range (1 to {})",
                        u32::MAX
                    )));
                }
                let Some(stream) = streams.find(&file.to_string()) else {
                    return Err(bad(format!(
                        "I/O on {} before its 'add' line",
                        shorten(file)
                    )));
                };
                requests.push(Request {
                    stream,
                    time: time.unwrap_or(waited),
                    offset,
                    bytes: length,
                    write,
                    latency: None,
                    place: Place::Line(n),
                });
            }
            _ => {
                let want = if version == 3 {
                    "TIME FILE ACTION [OFFSET LENGTH]"
                } else {
                    "FILE ACTION [OFFSET LENGTH]"
                };
                return Err(bad(format!(
                    "{} fields where an iolog v{version} line has {want}",
                    fields.len()
                )));
            }
        }
    }
    Ok(Trace {
        format: Format::FioIolog,
        version,
        big_endian: false,
        streams: streams.into_streams(),
        requests,
        skipped,
        not_replayed,
    })
}
