//! fio's value syntax: booleans, times with fio's units, per-direction
//! `READS,WRITES` lists, `random_distribution` and CPU lists. Only the
//! syntax: which option takes which value is the table in `options`.

use cint_policy::Nanos;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_times_and_cpu_lists_read_as_fio_writes_them() {
        assert_eq!(parse_fio_time("2m"), Some(120_000_000_000));
        assert_eq!(parse_fio_time("150us"), Some(150_000));
        assert_eq!(parse_fio_time("x"), None);
        assert_eq!(parse_cpus("1,5,8-9"), Some(vec![1, 5, 8, 9]));
    }
}
