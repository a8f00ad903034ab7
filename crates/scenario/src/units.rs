//! Durations and sizes as scenario files write them: `"6us"`, `"200ms"`,
//! `"4k"`, `"4KiB"`, `"1m"`. Integers are taken as nanoseconds and bytes.

use core::fmt;

use cint_policy::Nanos;
use serde::{de, Deserialize, Deserializer, Serialize, Serializer};

/// Why a duration or size string was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

/// A parsed number: integer part, optional decimal fraction as
/// `(numerator, denominator)`, and the unit suffix.
type NumberParts<'a> = (u64, Option<(u64, u64)>, &'a str);

fn split_number(s: &str) -> Result<NumberParts<'_>, UnitError> {
    // Accepts "12", "1.5" (a decimal fraction), followed by a unit suffix.
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    if num.is_empty() {
        return Err(UnitError(format!("'{s}' does not start with a number")));
    }
    let (int_part, frac) = match num.split_once('.') {
        Some((i, f)) if !f.is_empty() && !f.contains('.') => {
            let digits = f.len() as u32;
            if digits > 9 {
                return Err(UnitError(format!("'{s}' has too many decimals")));
            }
            let f: u64 = f
                .parse()
                .map_err(|_| UnitError(format!("'{s}' is not a number")))?;
            (i, Some((f, 10u64.pow(digits))))
        }
        Some(_) => return Err(UnitError(format!("'{s}' is not a number"))),
        None => (num.as_str(), None),
    };
    let int_part: u64 = if int_part.is_empty() {
        0
    } else {
        int_part
            .parse()
            .map_err(|_| UnitError(format!("'{s}' is too large")))?
    };
    Ok((int_part, frac, unit.trim()))
}

fn scale(s: &str, int: u64, frac: Option<(u64, u64)>, mult: u64) -> Result<u64, UnitError> {
    let whole = int
        .checked_mul(mult)
        .ok_or_else(|| UnitError(format!("'{s}' is too large")))?;
    let part = match frac {
        Some((f, denom)) => {
            let v = u128::from(f) * u128::from(mult);
            if v % u128::from(denom) != 0 {
                return Err(UnitError(format!(
                    "'{s}' is not a whole number of the base unit"
                )));
            }
            (v / u128::from(denom)) as u64
        }
        None => 0,
    };
    whole
        .checked_add(part)
        .ok_or_else(|| UnitError(format!("'{s}' is too large")))
}

/// Parses a duration: a number followed by `ns`, `us` (or `µs`), `ms` or
/// `s`. A bare number is refused (only `0` needs no unit): in TOML it used
/// to mean nanoseconds while fio's `runtime=2` means seconds, so
/// `duration = "200"` silently measured nothing.
pub fn parse_duration(s: &str) -> Result<Nanos, UnitError> {
    let (int, frac, unit) = split_number(s)?;
    let mult = match unit {
        "" if int == 0 && frac.is_none() => 1,
        "" => return Err(bare_duration(s)),
        "ns" => 1,
        "us" | "µs" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        _ => {
            return Err(UnitError(format!(
                "'{s}' has unknown duration unit '{unit}' (use ns, us, ms or s)"
            )))
        }
    };
    scale(s, int, frac, mult)
}

/// The refusal of a duration written without a unit.
pub fn bare_duration(number: &str) -> UnitError {
    UnitError(format!(
        "'{number}' has no unit: write \"{number}ns\", \"{number}us\", \"{number}ms\" or \"{number}s\""
    ))
}

/// Parses a size: a number followed by nothing (bytes), `k`/`KiB`/`KB`,
/// `m`/`MiB`/`MB`, `g`/`GiB`/`GB`, `t`/`TiB`/`TB`, each a power of two.
/// (fio, with its default `kb_base=1024`, reads `KiB` and the other IEC
/// units as powers of ten; its import reads them so.)
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let (int, frac, unit) = split_number(s)?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(UnitError(format!(
                "'{s}' has unknown size unit '{unit}' (use k, KiB, m, MiB, g, GiB)"
            )))
        }
    };
    scale(s, int, frac, mult)
}

/// Formats nanoseconds in the largest unit that keeps it whole.
pub fn format_duration(ns: Nanos) -> String {
    for (mult, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "us")] {
        if ns != 0 && ns % mult == 0 {
            return format!("{}{unit}", ns / mult);
        }
    }
    format!("{ns}ns")
}

/// A duration in milliseconds with three decimals, as both engines' notes
/// write an instant or a wait (`"6.372 ms"`).
pub fn format_ms(ns: Nanos) -> String {
    format!("{:.3} ms", ns as f64 / 1e6)
}

/// Formats bytes in the largest binary unit that keeps it whole.
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes != 0 && bytes % (1u64 << shift) == 0 {
            return format!("{}{unit}", bytes >> shift);
        }
    }
    format!("{bytes}")
}

/// A duration field in a profile or scenario: written `"6us"` or as an
/// integer of nanoseconds; serialized back as a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(pub Nanos);

/// A size field: written `"4k"` or as an integer of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Size(pub u64);

/// Reads a duration or size: a string with a unit, or a whole number of
/// the base unit. Refusals use the scenario's wording ("bad duration:
/// ...", "must not be negative (got -5)"); a value of another type gets
/// serde's "invalid type ..., expected <what>", which the loader words
/// for the user.
struct UnitVisitor {
    what: &'static str,
    expecting: &'static str,
    parse: fn(&str) -> Result<u64, UnitError>,
    /// Whether a bare integer is a count of the base unit (sizes: bytes).
    /// Durations refuse it, as `parse_duration` does.
    bare_integers: bool,
}

impl UnitVisitor {
    fn integer<E: de::Error>(&self, v: u64) -> Result<u64, E> {
        if self.bare_integers || v == 0 {
            Ok(v)
        } else {
            Err(E::custom(format!(
                "bad {}: {}",
                self.what,
                bare_duration(&v.to_string())
            )))
        }
    }
}

impl de::Visitor<'_> for UnitVisitor {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.expecting)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        let v =
            u64::try_from(v).map_err(|_| E::custom(format!("must not be negative (got {v})")))?;
        self.integer(v)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        self.integer(v)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<u64, E> {
        (self.parse)(s).map_err(|e| E::custom(format!("bad {}: {e}", self.what)))
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "duration",
            expecting: "a duration with a unit, such as \"6us\"",
            parse: parse_duration,
            bare_integers: false,
        })
        .map(Duration)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(self.0))
    }
}

impl<'de> Deserialize<'de> for Size {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(UnitVisitor {
            what: "size",
            expecting: "a size such as \"4k\" or a whole number of bytes",
            parse: parse_size,
            bare_integers: true,
        })
        .map(Size)
    }
}

impl Serialize for Size {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_size(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("6us"), Ok(6_000));
        assert_eq!(parse_duration("200ms"), Ok(200_000_000));
        assert_eq!(parse_duration("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("1.5us"), Ok(1_500));
        assert_eq!(parse_duration("750ns"), Ok(750));
        assert_eq!(parse_duration("0"), Ok(0));
        let bare = parse_duration("200").expect_err("a bare number is not a duration");
        assert!(bare.to_string().contains("\"200ms\""), "{bare}");
        assert!(parse_duration("1.5").is_err());
        assert!(parse_duration("6 parsecs").is_err());
        assert!(parse_duration("us").is_err());
        assert!(parse_duration("1.0001ns").is_err());
        assert!(parse_duration("99999999999999999999s").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1m"), Ok(1 << 20));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("375G"), Ok(375 << 30));
        assert!(parse_size("4q").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for ns in [0, 1, 999, 6_000, 20_000_000, 3_000_000_000] {
            assert_eq!(parse_duration(&format_duration(ns)), Ok(ns));
        }
        for b in [0, 512, 4096, 4200, 1 << 20, 375 << 30] {
            assert_eq!(parse_size(&format_size(b)), Ok(b));
        }
    }
}
