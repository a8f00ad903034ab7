//! Lines of a text trace, each with its number, refusing what a text
//! trace cannot hold.

use crate::{ErrorKind, Place, TraceError};

/// One line, without its end (`\n` or `\r\n`).
pub(crate) struct Line<'a> {
    /// From 1.
    pub number: u64,
    pub text: &'a str,
}

/// The lines of `bytes`. Every line of fio's and the MSR files ends with
/// a newline, so a last line without one was cut off: an error, not a
/// shorter record. A line that is not UTF-8 is a bad record.
pub(crate) fn lines(bytes: &[u8]) -> impl Iterator<Item = Result<Line<'_>, TraceError>> {
    let mut rest = bytes;
    let mut number = 0u64;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        number += 1;
        let place = Some(Place::Line(number));
        let (raw, terminated) = match rest.iter().position(|&b| b == b'\n') {
            Some(i) => {
                let raw = &rest[..i];
                rest = &rest[i + 1..];
                (raw, true)
            }
            None => {
                let raw = rest;
                rest = &[];
                (raw, false)
            }
        };
        if !terminated {
            rest = &[];
            return Some(Err(TraceError::new(
                ErrorKind::Truncated,
                place,
                "the file ends inside this line (no newline): the record was cut off",
            )));
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        Some(match std::str::from_utf8(raw) {
            Ok(text) => Ok(Line { number, text }),
            Err(e) => {
                rest = &[];
                Err(TraceError::new(
                    ErrorKind::BadRecord,
                    place,
                    format!(
                        "not text: byte {} of the line is not UTF-8",
                        e.valid_up_to() + 1
                    ),
                ))
            }
        })
    })
}

/// A field as an unsigned number, or a bad-record error naming it.
pub(crate) fn number(field: &str, what: &str, line: u64) -> Result<u64, TraceError> {
    field.parse::<u64>().map_err(|_| {
        TraceError::new(
            ErrorKind::BadRecord,
            Some(Place::Line(line)),
            format!("{what} \"{}\" is not a whole number", shorten(field)),
        )
    })
}

/// A field for a message: at most 40 characters of it.
pub(crate) fn shorten(field: &str) -> String {
    let mut out: String = field.chars().take(40).collect();
    if out.len() < field.len() {
        out.push_str("...");
    }
    out
}
