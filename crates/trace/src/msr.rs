//! The SNIA IOTTA / MSR Cambridge block traces (Narayanan, Donnelly and
//! Rowstron, "Write Off-Loading", FAST 2008): one CSV line per request,
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, with
//! `Timestamp` in Windows filetime (100 ns units since 1601), `Type`
//! `Read` or `Write`, `Offset` and `Size` in bytes, and `ResponseTime` in
//! the same 100 ns units. The published files have no header; a first
//! line naming the columns is accepted. Each host's disk is a stream.

use crate::text::{lines, number, shorten};
use crate::{ErrorKind, Format, Place, Request, Stream, StreamTable, Trace, TraceError};

/// Nanoseconds per filetime unit.
const TICK_NS: u64 = 100;

fn is_header(line: &str) -> bool {
    line.trim_start()
        .to_ascii_lowercase()
        .starts_with("timestamp,")
}

/// Whether the first line is an MSR header or record.
pub(crate) fn looks_like(bytes: &[u8]) -> bool {
    let end = bytes
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(bytes.len());
    let Ok(first) = std::str::from_utf8(&bytes[..end]) else {
        return false;
    };
    let first = first.trim_end_matches('\r');
    if is_header(first) {
        return true;
    }
    // Seven fields with a read or write type are the format's shape; a
    // bad value in them is then the parser's to name, at its line.
    let f: Vec<&str> = first.split(',').collect();
    f.len() == 7 && (f[3].eq_ignore_ascii_case("read") || f[3].eq_ignore_ascii_case("write"))
}

pub(crate) fn parse(bytes: &[u8]) -> Result<Trace, TraceError> {
    let mut streams: StreamTable<(String, String)> = StreamTable::new();
    let mut requests = Vec::new();
    let mut skipped = 0u64;
    for line in lines(bytes) {
        let line = line?;
        let n = line.number;
        let place = Some(Place::Line(n));
        let bad = |msg: String| TraceError::new(ErrorKind::BadRecord, place, msg);
        if line.text.trim().is_empty() {
            continue;
        }
        if n == 1 && is_header(line.text) {
            skipped += 1;
            continue;
        }
        let f: Vec<&str> = line.text.split(',').map(str::trim).collect();
        if f.len() != 7 {
            return Err(if n == 1 {
                TraceError::new(
                    ErrorKind::BadMagic,
                    place,
                    "not an MSR CSV line (Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime)",
                )
            } else {
                bad(format!(
                    "{} fields where an MSR line has 7 (Timestamp,Hostname,DiskNumber,Type,\
                     Offset,Size,ResponseTime)",
                    f.len()
                ))
            });
        }
        let ticks = number(f[0], "the timestamp", n)?;
        let write = if f[3].eq_ignore_ascii_case("write") {
            true
        } else if f[3].eq_ignore_ascii_case("read") {
            false
        } else {
            return Err(bad(format!(
                "type \"{}\" is neither Read nor Write",
                shorten(f[3])
            )));
        };
        let offset = number(f[4], "the offset", n)?;
        let size = number(f[5], "the size", n)?;
        let response = number(f[6], "the response time", n)?;
        if size == 0 {
            return Err(bad("a size of 0 bytes".into()));
        }
        let (Some(time), Some(latency)) =
            (ticks.checked_mul(TICK_NS), response.checked_mul(TICK_NS))
        else {
            return Err(bad("a time out of range (more than 58,000 years)".into()));
        };
        let key = (f[1].to_string(), f[2].to_string());
        let stream = streams.index(key, || Stream {
            label: format!("{}/{}", f[1], f[2]),
            cpu: None,
            first: Place::Line(n),
        });
        requests.push(Request {
            stream,
            time,
            offset,
            bytes: size,
            write,
            latency: Some(latency),
            place: Place::Line(n),
        });
    }
    Ok(Trace {
        format: Format::MsrCsv,
        version: 1,
        big_endian: false,
        streams: streams.into_streams(),
        requests,
        skipped,
        // The format has reads and writes only.
        not_replayed: crate::NotReplayed::default(),
    })
}
