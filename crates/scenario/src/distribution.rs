//! fio's `random_distribution`, read as fio 3.33 reads it
//! (options.c `str_random_distribution_cb`, `zone_split_ddir`):
//! `random`, `zipf[:THETA[:CENTER]]`, `pareto[:H[:CENTER]]`,
//! `normal[:DEV[:CENTER]]` (or `gauss`), `zoned:ACCESS/SIZE%:...` and
//! `zoned_abs:ACCESS/SIZE:...`.

use crate::model::{Distribution, Zone};
use crate::units::{format_size, parse_size};

/// fio's `FIO_DEF_ZIPF`, the theta of a bare `zipf`.
const DEFAULT_ZIPF: f64 = 1.1;
/// fio's `FIO_DEF_PARETO`, the power of a bare `pareto`.
const DEFAULT_PARETO: f64 = 0.2;
/// Most zones fio keeps in one list (`ZONESPLIT_MAX`).
const ZONES_MAX: usize = 256;

/// Parses `random_distribution`.
///
/// ```
/// use cint_scenario::distribution::parse_distribution;
/// use cint_scenario::Distribution;
/// assert_eq!(
///     parse_distribution("zipf:1.2"),
///     Ok(Distribution::Zipf { theta: 1.2, center: None })
/// );
/// assert!(parse_distribution("zoned:60/10:30/90").is_err());
/// ```
pub fn parse_distribution(text: &str) -> Result<Distribution, String> {
    let text = text.trim();
    let (kind, args) = match text.split_once(':') {
        Some((k, a)) => (k.trim(), Some(a.trim())),
        None => (text, None),
    };
    match kind {
        "random" => Ok(Distribution::Uniform),
        "zipf" => {
            let (theta, center) = value_and_center(args, DEFAULT_ZIPF)?;
            if theta == 1.0 {
                return Err("the zipf theta must be other than 1".into());
            }
            Ok(Distribution::Zipf { theta, center })
        }
        "pareto" => {
            let (h, center) = value_and_center(args, DEFAULT_PARETO)?;
            if !(h > 0.0 && h < 1.0) {
                return Err(format!("the pareto power must be in (0, 1) (got {h})"));
            }
            Ok(Distribution::Pareto { h, center })
        }
        "normal" | "gauss" => {
            let (dev, center) = value_and_center(args, 0.0)?;
            if !(0.0..100.0).contains(&dev) {
                return Err(format!(
                    "the normal deviation must be in [0, 100) percent (got {dev})"
                ));
            }
            Ok(Distribution::Normal { dev, center })
        }
        "zoned" | "zoned_abs" => {
            let absolute = kind == "zoned_abs";
            let list =
                args.ok_or_else(|| format!("'{kind}' needs zones (e.g. {kind}:60/10:40/90)"))?;
            if list.contains(',') {
                return Err("zones per direction (a ',') are not modelled: give one list".into());
            }
            let zones = parse_zones(list, absolute)?;
            Ok(if absolute {
                Distribution::ZonedAbs(zones)
            } else {
                Distribution::Zoned(zones)
            })
        }
        _ => Err(format!(
            "'{kind}' is not a distribution (random, zipf, pareto, normal, gauss, zoned, zoned_abs)"
        )),
    }
}

/// `VALUE[:CENTER]`, the value `default` when absent; the center in
/// [0, 1].
fn value_and_center(args: Option<&str>, default: f64) -> Result<(f64, Option<f64>), String> {
    let number = |s: &str| -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("'{}' is not a number", s.trim()))
    };
    let Some(args) = args.filter(|a| !a.is_empty()) else {
        return Ok((default, None));
    };
    let (value, center) = match args.split_once(':') {
        Some((v, c)) => (number(v)?, Some(number(c)?)),
        None => (number(args)?, None),
    };
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err(format!("the center must be in [0, 1] (got {c})"));
        }
    }
    Ok((value, center))
}

/// `ACCESS/SIZE:...`: each zone's share of the requests in percent and
/// its size, a percentage of the file (or, `absolute`, bytes); an entry
/// without a size shares what the others leave (percentages only).
fn parse_zones(list: &str, absolute: bool) -> Result<Vec<Zone>, String> {
    let mut access = Vec::new();
    let mut sizes: Vec<Option<u64>> = Vec::new();
    for part in list.split(':').map(str::trim).filter(|p| !p.is_empty()) {
        let (a, s) = match part.split_once('/') {
            Some((a, s)) => (a.trim(), Some(s.trim()).filter(|s| !s.is_empty())),
            None => (part, None),
        };
        let a: u32 = a
            .parse()
            .ok()
            .filter(|&a| a <= 100)
            .ok_or_else(|| format!("'{part}': the access share must be a whole percentage"))?;
        let s = match s {
            None if absolute => return Err(format!("'{part}': a zoned_abs zone needs its size")),
            None => None,
            Some(s) if absolute => Some(parse_size(s).map_err(|e| format!("'{part}': {e}"))?),
            Some(s) => Some(
                s.parse::<u64>()
                    .ok()
                    .filter(|&s| s <= 100)
                    .ok_or_else(|| format!("'{part}': the size must be a whole percentage"))?,
            ),
        };
        access.push(a);
        sizes.push(s);
    }
    if access.is_empty() {
        return Err("no zone".into());
    }
    if access.len() > ZONES_MAX {
        return Err(format!(
            "{} zones: fio keeps at most {ZONES_MAX}",
            access.len()
        ));
    }
    let total: u32 = access.iter().sum();
    let given = sizes
        .iter()
        .flatten()
        .fold(0u64, |a, &s| a.saturating_add(s));
    if total != 100 {
        return Err(format!(
            "the access shares add up to {total}%: fio wants 100"
        ));
    }
    if !absolute && given > 100 {
        return Err(format!("the sizes add up to {given}%, more than 100%"));
    }
    let open = sizes.iter().filter(|s| s.is_none()).count() as u64;
    let rest = if open == 1 && sizes.len() == 1 {
        100
    } else {
        (100 - given.min(100)).checked_div(open).unwrap_or(0)
    };
    Ok(access
        .into_iter()
        .zip(sizes)
        .map(|(access, size)| Zone {
            access,
            size: size.unwrap_or(rest),
        })
        .collect())
}

/// The `random_distribution` text of `d` (read back by
/// [`parse_distribution`]).
pub fn format_distribution(d: &Distribution) -> String {
    let with_center = |kind: &str, v: f64, c: Option<f64>| match c {
        Some(c) => format!("{kind}:{v}:{c}"),
        None => format!("{kind}:{v}"),
    };
    let zones = |kind: &str, zones: &[Zone], absolute: bool| {
        let list: Vec<String> = zones
            .iter()
            .map(|z| {
                let size = if absolute {
                    format_size(z.size)
                } else {
                    z.size.to_string()
                };
                format!("{}/{size}", z.access)
            })
            .collect();
        format!("{kind}:{}", list.join(":"))
    };
    match d {
        Distribution::Uniform => "random".into(),
        Distribution::Zipf { theta, center } => with_center("zipf", *theta, *center),
        Distribution::Pareto { h, center } => with_center("pareto", *h, *center),
        Distribution::Normal { dev, center } => with_center("normal", *dev, *center),
        Distribution::Zoned(z) => zones("zoned", z, false),
        Distribution::ZonedAbs(z) => zones("zoned_abs", z, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fios_forms_and_defaults() {
        assert_eq!(
            parse_distribution("zipf"),
            Ok(Distribution::Zipf {
                theta: 1.1,
                center: None
            })
        );
        assert_eq!(
            parse_distribution("pareto:0.3:0.5"),
            Ok(Distribution::Pareto {
                h: 0.3,
                center: Some(0.5)
            })
        );
        assert_eq!(
            parse_distribution("gauss"),
            Ok(Distribution::Normal {
                dev: 0.0,
                center: None
            })
        );
        // fio 3.33 accepts "zoned:50:50/50": the first zone's size is
        // what the second leaves.
        assert_eq!(
            parse_distribution("zoned:50:50/50"),
            Ok(Distribution::Zoned(vec![
                Zone {
                    access: 50,
                    size: 50
                },
                Zone {
                    access: 50,
                    size: 50
                }
            ]))
        );
        assert_eq!(
            parse_distribution("zoned_abs:60/1m:40/10m"),
            Ok(Distribution::ZonedAbs(vec![
                Zone {
                    access: 60,
                    size: 1 << 20
                },
                Zone {
                    access: 40,
                    size: 10 << 20
                }
            ]))
        );
        for d in [
            "zipf:1.2:0.3",
            "zoned:60/10:40/90",
            "zoned_abs:60/1MiB:40/10MiB",
            "random",
        ] {
            let parsed = parse_distribution(d).expect("valid");
            assert_eq!(
                parse_distribution(&format_distribution(&parsed)),
                Ok(parsed)
            );
        }
    }

    /// Each refusal is one fio 3.33 makes too ("failed parsing
    /// random_distribution").
    #[test]
    fn what_fio_refuses_is_refused() {
        for bad in [
            "zipf:1",
            "pareto:1.5",
            "normal:100",
            "zipf:1.2:2",
            "zoned:60/10:30/20",
            "zoned:50/50:50/60",
            "zoned",
            "uniform",
            "zipf:x",
        ] {
            assert!(parse_distribution(bad).is_err(), "{bad}");
        }
    }
}
