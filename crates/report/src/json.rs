//! The JSON sink: exactly one JSON document, fields in the order of
//! docs/SCENARIO.md ("Result format"), every number finite.

use core::fmt;

use crate::RunResult;

/// A result holding a number JSON cannot carry (NaN or infinity): an
/// engine bug, refused rather than written as `null`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NonFiniteError {
    /// Path of the field, e.g. `results[1].jobs[0].iops`.
    pub field: String,
}

impl fmt::Display for NonFiniteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "result field {} is not a finite number", self.field)
    }
}

impl std::error::Error for NonFiniteError {}

/// The result as one pretty-printed JSON document, ending in a newline.
pub fn to_json(result: &RunResult) -> Result<String, NonFiniteError> {
    check_finite(result)?;
    // Serializing plain structs of strings, integers, finite floats and
    // string-keyed maps cannot fail.
    let mut text = serde_json::to_string_pretty(result).map_err(|e| NonFiniteError {
        field: e.to_string(),
    })?;
    text.push('\n');
    Ok(text)
}

fn check_finite(r: &RunResult) -> Result<(), NonFiniteError> {
    let check = |field: String, v: f64| {
        if v.is_finite() {
            Ok(())
        } else {
            Err(NonFiniteError { field })
        }
    };
    for (i, s) in r.results.iter().enumerate() {
        check(format!("results[{i}].interrupts_per_s"), s.interrupts_per_s)?;
        check(format!("results[{i}].cpu_util"), s.cpu_util)?;
        if let Some(e) = s.energy_j {
            check(format!("results[{i}].energy_j"), e)?;
        }
        if let Some(e) = &s.energy {
            let at = |f: &str| format!("results[{i}].energy.{f}");
            check(at("power_w"), e.power_w)?;
            check(at("bytes_per_joule"), e.bytes_per_joule)?;
            check(at("base_j"), e.base_j)?;
            check(at("uncore_j"), e.uncore_j)?;
            check(at("device_j"), e.device_j)?;
            if let Some(m) = e.measured_package_j {
                check(at("measured_package_j"), m)?;
            }
            for (k, core) in e.cores.iter().enumerate() {
                let at = |f: &str| format!("results[{i}].energy.cores[{k}].{f}");
                check(at("energy_j"), core.energy_j)?;
                check(at("power_w"), core.power_w)?;
                for (r, state) in core.residency.iter().enumerate() {
                    check(at(&format!("residency[{r}].share")), state.share)?;
                }
            }
        }
        for (j, job) in s.jobs.iter().enumerate() {
            let at = |f: &str| format!("results[{i}].jobs[{j}].{f}");
            check(at("iops"), job.iops)?;
            check(at("cpu_util"), job.cpu_util)?;
            check(at("lat_ns.mean"), job.lat_ns.mean)?;
            check(at("lat_ns.stddev"), job.lat_ns.stddev)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    #[test]
    fn one_document_in_the_documented_order() {
        let text = to_json(&sample()).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let top: Vec<&str> = doc
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            top,
            [
                "cint_version",
                "scenario",
                "substrate",
                "device",
                "host",
                "seed",
                "duration_ns",
                "results"
            ]
        );
        let strategy: Vec<&str> = doc["results"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            strategy,
            [
                "strategy",
                "kind",
                "interrupts",
                "interrupts_per_s",
                "urgent_interrupts",
                "cpu_util",
                "context_switches",
                "wakeups",
                "energy_j",
                "jobs"
            ]
        );
        let job: Vec<&str> = doc["results"][0]["jobs"][0]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            job,
            [
                "name",
                "ios",
                "iops",
                "bw_bytes",
                "cpu_util",
                "context_switches",
                "wakeups",
                "lat_ns"
            ]
        );
        let lat = &doc["results"][0]["jobs"][0]["lat_ns"];
        let keys: Vec<&str> = lat
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys, ["min", "max", "mean", "stddev", "N", "percentile"]);
        let pct: Vec<&str> = lat["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            pct,
            [
                "1.000000",
                "50.000000",
                "90.000000",
                "99.000000",
                "99.900000",
                "99.990000"
            ]
        );
        assert_eq!(doc["results"][0]["energy_j"], serde_json::Value::Null);
        assert_eq!(doc["results"][1]["energy_j"], serde_json::json!(12.5));
        // Exactly one document: the text parses as one value and a
        // streaming reader finds nothing after it.
        let mut stream = serde_json::Deserializer::from_str(&text).into_iter::<serde_json::Value>();
        assert!(stream.next().is_some());
        assert!(stream.next().is_none());
        assert!(text.ends_with("}\n"));
    }

    #[test]
    fn non_finite_numbers_are_refused_by_name() {
        let mut r = sample();
        r.results[1].jobs[0].iops = f64::NAN;
        assert_eq!(to_json(&r).unwrap_err().field, "results[1].jobs[0].iops");
        let mut r = sample();
        r.results[0].interrupts_per_s = f64::INFINITY;
        assert_eq!(
            to_json(&r).unwrap_err().field,
            "results[0].interrupts_per_s"
        );
    }
}
