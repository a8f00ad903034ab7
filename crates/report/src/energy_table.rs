//! The table's energy section, printed only when the engines reported
//! energy: per strategy its energy, mean power and bytes per joule, then
//! per core its mean power and the share of time in each state.

use crate::{EnergyResult, RunResult};

/// What the energy columns mean.
pub const ENERGY_LEGEND: &str = "energy_J, power_W: system energy over the measured time and \
its mean power (base + uncore + cores + device, docs/ENERGY.md); MB/J: megabytes moved per \
joule; per core: its own power and the percentage of time running a thread (busy), spinning \
in a poll loop (spin), in interrupt handlers (irq) and in each idle state";

/// The section, or an empty string when no strategy has energy figures.
pub(crate) fn section(r: &RunResult) -> String {
    let with: Vec<(&str, f64, &EnergyResult)> = r
        .results
        .iter()
        .filter_map(|s| Some((s.strategy.as_str(), s.energy_j?, s.energy.as_ref()?)))
        .collect();
    let Some((_, _, first)) = with.first() else {
        return String::new();
    };
    let states: Vec<String> = first
        .cores
        .first()
        .map(|c| c.residency.iter().map(|s| s.state.clone()).collect())
        .unwrap_or_default();
    let mut header: Vec<String> = ["strategy", "core", "energy_J", "power_W", "MB/J"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(states.iter().map(|s| format!("{s}%")));
    let mut rows = vec![header];
    for (name, joules, e) in &with {
        let mut row = vec![
            name.to_string(),
            "all".into(),
            format!("{joules:.3}"),
            format!("{:.2}", e.power_w),
            format!("{:.3}", e.bytes_per_joule / 1e6),
        ];
        row.resize(rows[0].len(), String::new());
        rows.push(row);
        for core in &e.cores {
            let mut row = vec![
                String::new(),
                core.core.to_string(),
                format!("{:.3}", core.energy_j),
                format!("{:.2}", core.power_w),
                String::new(),
            ];
            row.extend(
                core.residency
                    .iter()
                    .map(|s| format!("{:.1}", s.share * 100.0)),
            );
            row.resize(rows[0].len(), String::new());
            rows.push(row);
        }
    }
    let mut out = crate::table::aligned_block(
        &format!("energy (model, cpuidle governor {})", first.governor),
        &rows,
    );
    for (name, _, e) in &with {
        if let Some(m) = e.measured_package_j {
            out.push_str(&format!(
                "{name}: package energy measured by RAPL {m:.3} J\n"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;
    use crate::{CoreEnergy, StateResidency};

    #[test]
    fn no_energy_no_section() {
        assert_eq!(section(&sample()), "");
    }

    #[test]
    fn a_strategy_with_energy_gets_its_rows() {
        let mut r = sample();
        let s = &mut r.results[1];
        s.energy_j = Some(10.0);
        s.energy = Some(EnergyResult {
            source: "model".into(),
            governor: "menu".into(),
            power_w: 50.0,
            bytes_per_joule: 2e6,
            base_j: 6.0,
            uncore_j: 1.0,
            device_j: 1.0,
            measured_package_j: None,
            cores: vec![CoreEnergy {
                core: 0,
                energy_j: 2.0,
                power_w: 10.0,
                residency: vec![
                    StateResidency {
                        state: "busy".into(),
                        share: 0.25,
                        entries: 0,
                    },
                    StateResidency {
                        state: "C1".into(),
                        share: 0.75,
                        entries: 9,
                    },
                ],
            }],
        });
        let text = section(&r);
        assert!(text.contains("governor menu"), "{text}");
        assert!(text.contains("busy%") && text.contains("C1%"), "{text}");
        let name = &r.results[1].strategy;
        let total = text.lines().find(|l| l.starts_with(name.as_str())).unwrap();
        assert!(total.contains("10.000") && total.contains("50.00") && total.contains("2.000"));
        assert!(text.contains("25.0") && text.contains("75.0"), "{text}");
    }
}
