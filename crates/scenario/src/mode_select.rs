//! What the `mode-select` strategy's selector is told about its machine
//! (`cint_policy::mode_select::ModeSelectParams`, docs/ALGORITHMS.md
//! section 10), from the host and device profiles: one reading for every
//! engine that runs the strategy.

use cint_policy::mode_select::{IdleStateCost, ModeSelectParams, MAX_IDLE_STATES};

use crate::profiles::{DeviceProfile, Governor, HostProfile};

/// Watts to whole milliwatts.
fn milliwatts(w: f64) -> u32 {
    (w * 1e3).round().clamp(0.0, f64::from(u32::MAX)) as u32
}

/// The selector's parameters on `host` with `device`: the cpuidle table
/// and powers of the host's power profile, the device's idle power, the
/// governor's iowait rule, and the host's CPU costs of a sleep and
/// wake-up and of a timer. `None` when either profile has no power data.
/// Not validated here: `ModeSelect::new` does that.
pub fn mode_select_params(host: &HostProfile, device: &DeviceProfile) -> Option<ModeSelectParams> {
    let (power, device_power) = (host.power.as_ref()?, device.power.as_ref()?);
    let mut idle_states = [IdleStateCost::default(); MAX_IDLE_STATES];
    for (slot, s) in idle_states.iter_mut().zip(&power.idle_states) {
        *slot = IdleStateCost {
            exit_latency: s.exit_latency.0,
            target_residency: s.target_residency.0,
            power_mw: milliwatts(s.power_w),
        };
    }
    Some(ModeSelectParams {
        static_mw: milliwatts(power.base_w + power.uncore_w + device_power.idle_w),
        spin_mw: milliwatts(power.core_spin_w),
        busy_mw: milliwatts(power.core_busy_w),
        idle_states,
        idle_count: power.idle_states.len(),
        // Only 5.15's menu governor has the iowait rule.
        iowait_factor: match power.governor {
            Governor::Menu => 10,
            _ => 0,
        },
        // The interrupt's (or timer's) entry and handler, the reap, the
        // wake-up, the switch back from idle and the return to user space.
        sleep_path: host.irq_fixed.0
            + host.irq_reap_entry.0
            + host.wakeup.0
            + host.context_switch_idle.0
            + host.return_to_user.0,
        timer_arm: host.timer_setup.0,
        timer_slack: host.timer_slack.0,
    })
}

/// Why `mode-select` cannot run on `host` with `device` when
/// [`mode_select_params`] gives `None`: one wording for every engine.
pub fn without_power_data(host: &HostProfile, device: &DeviceProfile) -> String {
    format!(
        "\"mode-select\" decides from the host's and the device's power data, which host '{}' \
         or device '{}' lacks (use a profile with a power section, e.g. host \
         \"xeon-e3-1230v5\" and device \"optane-900p\")",
        host.model, device.model
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_profiles_with_power_data_give_valid_parameters_and_the_others_none() {
        let host = HostProfile::builtin("xeon-e3-1230v5").expect("profile");
        let device = DeviceProfile::builtin("optane-900p").expect("profile");
        let params = mode_select_params(&host, &device).expect("both have power data");
        params.validate().expect("valid");
        assert_eq!(
            params.idle_count,
            host.power.as_ref().unwrap().idle_states.len()
        );
        assert!(params.spin_mw > params.idle_states[params.idle_count - 1].power_mw);
        let bare = HostProfile::builtin("xeon-e5-2660v4").expect("profile");
        assert!(bare.power.is_none());
        assert_eq!(mode_select_params(&bare, &device), None);
    }
}
