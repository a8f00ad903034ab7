//! The table's virtual-machine section, printed only when the engines
//! ran guests: per strategy the virtual interrupts and IPIs per second,
//! the CPU cycles per guest I/O and the mean delivery ratio
//! (docs/VIRT.md).

use crate::{RunResult, VirtResult};

/// What the virtual-machine columns mean.
pub const VIRT_LEGEND: &str = "guest_IOPS: the guests' I/Os per second; vIRQ/s: virtual \
interrupts injected into the guests per second; IPI/s: IPIs from hypervisor cores to guests' \
cores per second; cycles/IO: every core's cycles spent for the guests' I/O per guest I/O, at \
the hypervisor profile's clock; R: vIC's mean delivery ratio, interrupts delivered per \
completion as a vic or vic-sched policy chose them (1 under any other strategy, which \
coalesces by its own rule: its vIRQ/s says how much); fe_mean_us, fe_p99_us (Xen-like hypervisors): the front end's request \
latency, from its ring push to the upcall that reaps the response, mean and 99th percentile, \
microseconds";

/// The section, or an empty string when no strategy ran guests.
pub(crate) fn section(r: &RunResult) -> String {
    let with: Vec<(&str, &VirtResult)> = r
        .results
        .iter()
        .filter_map(|s| Some((s.strategy.as_str(), s.virt.as_ref()?)))
        .collect();
    if with.is_empty() {
        return String::new();
    }
    let frontend = with.iter().any(|(_, v)| v.frontend_lat_ns.is_some());
    let mut header = vec![
        "strategy",
        "guest_IOPS",
        "vIRQ/s",
        "IPI/s",
        "cycles/IO",
        "R",
    ];
    if frontend {
        header.extend(["fe_mean_us", "fe_p99_us"]);
    }
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|s| s.to_string()).collect()];
    for (name, v) in with {
        let mut row = vec![
            name.to_string(),
            format!("{:.0}", v.guest_iops),
            format!("{:.0}", v.virtual_interrupts_per_s),
            format!("{:.0}", v.ipis_per_s),
            format!("{:.0}", v.cycles_per_io),
            format!("{:.3}", v.delivery_ratio),
        ];
        if frontend {
            let lat = v.frontend_lat_ns.as_ref().filter(|l| l.n > 0);
            row.push(lat.map_or("-".into(), |l| format!("{:.1}", l.mean / 1e3)));
            row.push(
                lat.and_then(|l| l.at(99.0))
                    .map_or("-".into(), |ns| format!("{:.1}", ns as f64 / 1e3)),
            );
        }
        rows.push(row);
    }
    crate::table::aligned_block("virtual machines", &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata::sample;

    #[test]
    fn no_guests_no_section() {
        assert_eq!(section(&sample()), "");
    }

    #[test]
    fn a_strategy_with_guests_gets_its_row() {
        let mut r = sample();
        r.results[0].virt = Some(VirtResult {
            virtual_interrupts_per_s: 25_000.4,
            ipis_per_s: 2_000.0,
            cycles_per_io: 64_012.0,
            delivery_ratio: 0.1667,
            guest_iops: 53_100.0,
            frontend_lat_ns: None,
            kvm: None,
        });
        let text = section(&r);
        let name = &r.results[0].strategy;
        let row = text.lines().find(|l| l.starts_with(name.as_str())).unwrap();
        for cell in ["53100", "25000", "2000", "64012", "0.167"] {
            assert!(row.contains(cell), "{cell} in {row}");
        }
        assert!(!text.contains(&r.results[1].strategy), "{text}");
    }

    #[test]
    fn xen_runs_get_the_front_end_latency_columns() {
        let mut r = sample();
        let mut hist = crate::LatencyHistogram::new();
        for ns in [1_000, 2_000, 3_000] {
            hist.record(ns);
        }
        r.results[0].virt = Some(VirtResult {
            virtual_interrupts_per_s: 1.0,
            ipis_per_s: 0.0,
            cycles_per_io: 1.0,
            delivery_ratio: 1.0,
            guest_iops: 1.0,
            frontend_lat_ns: Some(hist.stats()),
            kvm: None,
        });
        let text = section(&r);
        assert!(
            text.contains("fe_mean_us") && text.contains("fe_p99_us"),
            "{text}"
        );
        let name = &r.results[0].strategy;
        let row = text.lines().find(|l| l.starts_with(name.as_str())).unwrap();
        assert!(row.contains("2.0"), "{row}");
    }
}
