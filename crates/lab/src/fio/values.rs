//! fio's value syntax: booleans, times with fio's units, per-direction
//! `READS,WRITES` lists, `random_distribution` and CPU lists. Only the
//! syntax: which option takes which value is the table in `options`.

use cint_policy::Nanos;
use cint_scenario::units::UnitError;

/// A size as fio 3.33 reads one with its default `kb_base=1024` (the only
/// one the import takes; parse.c `__get_mult_bytes`): `k`, `m`, `g`, `t`,
/// with or without `b`, are powers of 1024, and the IEC `KiB`, `MiB`,
/// `GiB`, `TiB` powers of 1000, the opposite of their names
/// (`size=1MiB` reads 244 requests of 4 KiB in fio 3.33).
pub(super) fn parse_size(v: &str) -> Result<u64, UnitError> {
    let t = v.trim();
    let lower = t.to_ascii_lowercase();
    for (pow, unit) in [(1u32, "kib"), (2, "mib"), (3, "gib"), (4, "tib")] {
        if let Some(number) = lower.strip_suffix(unit) {
            let n = cint_scenario::units::parse_size(number)?;
            return n
                .checked_mul(1000u64.pow(pow))
                .ok_or_else(|| UnitError(format!("'{v}' is too large")));
        }
    }
    cint_scenario::units::parse_size(t)
}

/// `v` with each size written in an IEC unit (`4KiB`) turned into bytes
/// as fio reads it ([`parse_size`]), for the scenario's parsers of split
/// and range lists, whose units are the scenario's own.
pub(super) fn with_fio_units(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let iec = token.trim().to_ascii_lowercase().ends_with("ib");
        match parse_size(token) {
            Ok(bytes) if iec => out.push_str(&bytes.to_string()),
            _ => out.push_str(token),
        }
        token.clear();
    };
    for c in v.chars() {
        if matches!(c, '/' | ':' | ',' | '-') {
            flush(&mut token, &mut out);
            out.push(c);
        } else {
            token.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// A flag's value; a bare flag (no value) is on, as fio reads it.
pub(super) fn parse_bool(v: Option<&str>) -> Option<bool> {
    match v.map(str::to_ascii_lowercase).as_deref() {
        None | Some("1") | Some("true") | Some("yes") | Some("on") => Some(true),
        Some("0") | Some("false") | Some("no") | Some("off") => Some(false),
        _ => None,
    }
}

/// fio time values: a bare number is seconds; `d`, `h`, `m` (minutes),
/// `s`, `ms`/`msec`, `us`/`usec`, `ns`.
pub(super) fn parse_fio_time(s: &str) -> Option<Nanos> {
    parse_fio_time_in(s, 1_000_000_000)
}

/// A fio time whose bare number is in `bare` ns (fio's `thinktime` is in
/// microseconds, `runtime` and `startdelay` in seconds).
pub(super) fn parse_fio_time_in(s: &str, bare: Nanos) -> Option<Nanos> {
    let s = s.trim();
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let n: u64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" => bare,
        "s" | "sec" => 1_000_000_000,
        "ms" | "msec" => 1_000_000,
        "us" | "usec" => 1_000,
        "ns" | "nsec" => 1,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return None,
    };
    n.checked_mul(mult)
}

/// fio's per-direction values `READS,WRITES[,TRIMS]`: the read part and
/// the write part if one is written (a single value is both).
pub(super) fn split_dirs(v: &str) -> (&str, Option<&str>) {
    let mut parts = v.split(',').map(str::trim);
    let r = parts.next().unwrap_or("");
    match parts.next() {
        None => (r, None),
        Some(w) => (r, Some(w)),
    }
}

/// A per-direction number (`rate`, `rate_iops`): `[reads, writes]`, 0
/// for a direction left empty or written 0 (no cap, fio's default), a
/// single value for both. `None` when a part is not a number.
pub(super) fn per_direction(v: &str, parse: impl Fn(&str) -> Option<u64>) -> Option<[u64; 2]> {
    let (r, w) = split_dirs(v);
    let one = |p: &str| if p.is_empty() { Some(0) } else { parse(p) };
    let read = one(r)?;
    let write = match w {
        None => read,
        Some(w) => one(w)?,
    };
    Some([read, write])
}

/// A per-direction cap or floor as a job keeps it: none when both
/// directions are 0, which in fio is the option's default (no cap).
pub(super) fn some_direction(dirs: [u64; 2]) -> Option<[u64; 2]> {
    (dirs != [0, 0]).then_some(dirs)
}

/// A CPU list: `3`, `0-3`, `1,5,8-9`.
pub(super) fn parse_cpus(s: &str) -> Option<Vec<u32>> {
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                if a > b || b - a > 4096 {
                    return None;
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().ok()?),
        }
    }
    Some(cpus)
}

/// fio 3.33's `cpumask`: a decimal or `0x` hexadecimal mask whose bit
/// `i` allows CPU `i`, of which fio reads bits 0 to 31 (options.c
/// `str_cpumask_cb`). `None`: no number, no CPU, or a bit past 31.
pub(super) fn parse_cpumask(s: &str) -> Option<Vec<u32>> {
    let s = s.trim();
    let mask = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok()?,
        None => s.parse::<u64>().ok()?,
    };
    if mask == 0 || mask >> 32 != 0 {
        return None;
    }
    Some((0..32).filter(|i| mask >> i & 1 == 1).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// fio 3.33 with its default `kb_base=1024`: `size=1MiB` reads 244
    /// requests of 4 KiB (1 000 000 bytes), `size=1m` 256, and
    /// `size=2048KiB` 500 (until 2026-11-29, second session, the import
    /// read every IEC unit as a power of 1024).
    /// fio's manual: CPUs 1 and 5 are `cpumask=34`.
    #[test]
    fn cpu_masks_read_as_fio_reads_them() {
        assert_eq!(parse_cpumask("34"), Some(vec![1, 5]));
        assert_eq!(parse_cpumask("0x6"), Some(vec![1, 2]));
        assert_eq!(parse_cpumask("0XFF000000"), Some((24..32).collect()));
        for bad in ["0", "0x100000000", "-1", "0xg", "", "1,2"] {
            assert_eq!(parse_cpumask(bad), None, "{bad}");
        }
    }

    #[test]
    fn sizes_read_as_fio_reads_them() {
        assert_eq!(parse_size("1m").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MiB").unwrap(), 1_000_000);
        assert_eq!(parse_size("2048KiB").unwrap(), 2_048_000);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(with_fio_units("4KiB/50:16k/50"), "4000/50:16k/50");
        assert_eq!(with_fio_units("4k-16k,8KiB-32KiB"), "4k-16k,8000-32000");
        assert_eq!(with_fio_units("4k/50:16k/50"), "4k/50:16k/50");
    }

    #[test]
    fn fio_times_and_cpu_lists_read_as_fio_writes_them() {
        assert_eq!(parse_fio_time("2m"), Some(120_000_000_000));
        assert_eq!(parse_fio_time("150us"), Some(150_000));
        assert_eq!(parse_fio_time("x"), None);
        assert_eq!(parse_cpus("1,5,8-9"), Some(vec![1, 5, 8, 9]));
    }
}
