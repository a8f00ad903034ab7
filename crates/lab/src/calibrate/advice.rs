//! What a vendor reads last: whether each recommendation agrees with the
//! device profile's reference value (the paper's choice), and when it does
//! not, which measurement makes the difference. Every sentence is built
//! from the calibration's own figures; nothing here knows a device.

use super::{format_pct, us, Calibration, ThrPoint};
use crate::calibrate::rules::ThrBasis;

/// One line per parameter: agreement, or the difference and its cause.
pub(super) fn advise(c: &Calibration) -> Vec<String> {
    vec![delta_advice(c), thr_advice(c)]
}

fn delta_advice(c: &Calibration) -> String {
    let (ours, reference) = (c.delta, c.reference_delta);
    if ours == reference {
        return format!(
            "delta agrees with the profile's reference ({} us).",
            us(reference as f64)
        );
    }
    let head = format!(
        "delta {} us differs from the profile's reference {} us:",
        us(ours as f64),
        us(reference as f64)
    );
    if c.gaps.is_empty() {
        return format!("{head} it was given, not measured.");
    }
    let pct = format_pct(c.percentile);
    if ours > reference {
        // The reference ends bursts too early for some workload.
        let worst = c
            .gaps
            .iter()
            .max_by(|a, b| a.above_reference.total_cmp(&b.above_reference))
            .expect("gaps is not empty");
        format!(
            "{head} at {} us, {:.1}% of the gaps{} of the workload with {} are longer and would \
             each end a burst early and raise an extra interrupt; the rule allows {}% (p{pct}).",
            us(reference as f64),
            worst.above_reference * 100.0,
            if worst.reading.within_bursts() {
                " inside bursts"
            } else {
                ""
            },
            worst.workload,
            format_pct(100.0 - c.percentile),
        )
    } else {
        let largest = c.gaps.iter().map(|g| g.at_chosen).max().unwrap_or(0);
        format!(
            "{head} the rule's p{pct} of every workload's gaps is at most {} us, so the \
             reference holds the last completion of each burst about {} us longer than the \
             gaps need.",
            us(largest as f64),
            us(reference.saturating_sub(ours) as f64),
        )
    }
}

fn thr_advice(c: &Calibration) -> String {
    let reference = c.reference_thr;
    if c.thr == reference {
        return format!("thr agrees with the profile's reference ({reference}).");
    }
    let head = format!(
        "thr {} differs from the profile's reference {reference}:",
        c.thr
    );
    let Some(at_ref) = c.sweep.iter().find(|p| p.thr == reference) else {
        return format!("{head} the reference was not among the thr values swept.");
    };
    let chosen = c
        .sweep
        .iter()
        .find(|p| p.thr == c.thr)
        .expect("the recommendation is a swept thr");
    let best = c.sweep.iter().map(|p| p.iops).fold(0.0, f64::max);
    let share = |p: &ThrPoint| format!("{:.1}%", p.iops / best * 100.0);
    let floor = best * (1.0 - c.tolerance);
    let tol = format_pct(c.tolerance * 100.0);
    if at_ref.iops < floor {
        let why = if reference > c.thr {
            "too much coalescing"
        } else {
            "too many interrupts for the core"
        };
        return format!(
            "{head} at {reference} IOPS are {} of the best, below the {}% floor ({why}).",
            share(at_ref),
            format_pct(100.0 - c.tolerance * 100.0),
        );
    }
    let cpu_gap = |p: &ThrPoint| {
        (p.cpu_ns_per_io() / chosen.cpu_ns_per_io().max(f64::MIN_POSITIVE) - 1.0) * 100.0
    };
    if reference < c.thr {
        return match c.thr_basis {
            ThrBasis::Cpu => format!(
                "{head} at {reference} IOPS already reach {} of the best, but each I/O costs \
                 {:.0} ns of CPU against {:.0} ns at {}: interrupts still cost the core \
                 {:+.1}% there.",
                share(at_ref),
                at_ref.cpu_ns_per_io(),
                chosen.cpu_ns_per_io(),
                c.thr,
                cpu_gap(at_ref),
            ),
            _ => format!(
                "{head} at {reference} IOPS are {} of the best, but a lower dip separates it \
                 from the last plateau, which starts at {}.",
                share(at_ref),
                c.thr
            ),
        };
    }
    let (from, to) = (
        format!("{:.1}", chosen.interrupts_per_s / 1e3),
        format!("{:.1}", at_ref.interrupts_per_s / 1e3),
    );
    let effect = if from == to {
        format!("leaves interrupts at {from} K/s")
    } else {
        format!("lowers interrupts from {from} to {to} K/s")
    };
    format!(
        "{head} the reference also qualifies ({} of the best IOPS, CPU per I/O {:+.1}% against \
         {}); the rule takes the smallest thr that does. The larger thr {effect} for less than \
         {tol}% of CPU per I/O, and each interrupt may then wait for up to {reference} \
         completions.",
        share(at_ref),
        cpu_gap(at_ref),
        c.thr,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(thr: u32, interrupts_per_s: f64) -> ThrPoint {
        ThrPoint {
            thr,
            iops: 500_000.0,
            interrupts_per_s,
            lat_mean_ns: 10_000.0,
            lat_p99_ns: 20_000,
            cpu_util: 0.5,
        }
    }

    fn calibration(sweep: Vec<ThrPoint>) -> Calibration {
        Calibration {
            device: "d".into(),
            host: "h".into(),
            percentile: 99.0,
            gaps: Vec::new(),
            delta: 6_000,
            sweep,
            tolerance: 0.02,
            thr: 16,
            thr_basis: ThrBasis::Iops,
            reference_delta: 6_000,
            reference_thr: 32,
            plots: Vec::new(),
        }
    }

    #[test]
    fn a_larger_reference_says_what_it_does_to_interrupts() {
        let lowers = thr_advice(&calibration(vec![point(16, 40_000.0), point(32, 23_000.0)]));
        assert!(
            lowers.contains("lowers interrupts from 40.0 to 23.0 K/s"),
            "{lowers}"
        );
        let level = thr_advice(&calibration(vec![point(16, 23_010.0), point(32, 22_990.0)]));
        assert!(level.contains("leaves interrupts at 23.0 K/s"), "{level}");
        assert!(!level.contains("from 23.0 to 23.0"), "{level}");
    }
}
