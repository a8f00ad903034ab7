//! What a physical core's energy result must say of its hardware threads.

use cint_report::CoreEnergy;

/// Asserts that `core`'s active share (busy or spinning) lies between its
/// busiest hardware thread's and the sum of its threads' (at most the
/// whole window), as the measure of the union of the threads' active
/// periods must; `threads` are (CPU, active share) and `label` names the
/// run in the message.
pub fn assert_core_between_its_threads(label: &str, core: &CoreEnergy, threads: &[(u32, f64)]) {
    let active: f64 = core
        .residency
        .iter()
        .filter(|r| r.state == "busy" || r.state == "spin")
        .map(|r| r.share)
        .sum();
    let most = threads.iter().map(|c| c.1).fold(0.0, f64::max);
    let sum: f64 = threads.iter().map(|c| c.1).sum();
    assert!(
        active >= most - 1e-6 && active <= sum.min(1.0) + 1e-6,
        "{label}: core {active}, cpus {threads:?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use cint_report::StateResidency;

    fn core(busy: f64, spin: f64) -> CoreEnergy {
        let state = |state: &str, share| StateResidency {
            state: state.into(),
            share,
            entries: 0,
        };
        CoreEnergy {
            core: 0,
            energy_j: 0.0,
            power_w: 0.0,
            residency: vec![
                state("busy", busy),
                state("spin", spin),
                state("C1", 1.0 - busy - spin),
            ],
        }
    }

    #[test]
    fn a_core_between_its_busiest_thread_and_their_sum_passes() {
        assert_core_between_its_threads("t", &core(0.5, 0.2), &[(0, 0.6), (4, 0.3)]);
    }

    #[test]
    #[should_panic(expected = "t: core")]
    fn a_core_busier_than_its_threads_together_fails() {
        assert_core_between_its_threads("t", &core(0.8, 0.2), &[(0, 0.6), (4, 0.3)]);
    }

    #[test]
    #[should_panic(expected = "t: core")]
    fn a_core_idler_than_its_busiest_thread_fails() {
        assert_core_between_its_threads("t", &core(0.3, 0.2), &[(0, 0.6), (4, 0.3)]);
    }
}
