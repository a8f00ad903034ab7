//! The energy model's keys: bad input is one line naming the file, the
//! line and the key.

use cint_scenario::load_str;

const BASE: &str = "name = \"e\"\n\
[device]\nmodel = \"optane-900p\"\n\
[host]\nmodel = \"xeon-e3-1230v5\"\n\
[[strategy]]\nname = \"i\"\nkind = \"none\"\n\
[[job]]\nname = \"j\"\nengine = \"pvsync2\"\n";

fn refusal(extra_host: &str) -> String {
    let text = BASE.replace(
        "model = \"xeon-e3-1230v5\"\n",
        &format!("model = \"xeon-e3-1230v5\"\n{extra_host}"),
    );
    load_str(&text, "f.toml", &[])
        .expect_err("refused")
        .to_string()
}

#[test]
fn the_shipped_energy_profiles_load() {
    let sc = load_str(BASE, "f.toml", &[]).unwrap();
    let p = sc.host.power.expect("power data");
    assert_eq!(p.idle_states[1].name, "C1");
    assert!(sc.device.power.is_some());
}

#[test]
fn a_bad_key_inside_an_idle_state_is_named_by_its_position() {
    let state = |c1: &str| {
        refusal(&format!(
            "[host.power]\nidle_states = [\n{{ name = \"POLL\", exit_latency = \"0ns\", \
             target_residency = \"0ns\", power_w = 6.0, polling = true }},\n{{ name = \"C1\", \
             {c1} }},\n]\n"
        ))
    };
    let full = "exit_latency = \"1us\", target_residency = \"2us\", power_w = 1.0";
    assert_eq!(
        state(&format!("{full}, polling = \"yes\"")),
        "f.toml:9: host.power.idle_states[1].polling: must be true or false (got a string)"
    );
    assert_eq!(
        state(&format!("{full}, watts = 2.0")),
        "f.toml:9: host.power.idle_states[1].watts: unknown key (valid keys: name, \
         exit_latency, target_residency, power_w, polling)"
    );
    assert_eq!(
        state("exit_latency = \"1us\", target_residency = \"2us\""),
        "f.toml:9: host.power.idle_states[1]: the key power_w is missing"
    );
}

#[test]
fn idle_states_deepest_first_are_refused() {
    // Listed deepest first, the governors would never reach the shallow
    // state and every wake-up would pay the deep one's exit.
    let e = refusal(
        "[host.power]\nidle_states = [\n{ name = \"C6\", exit_latency = \"100us\", \
         target_residency = \"400us\", power_w = 1.0 },\n\
         { name = \"C1\", exit_latency = \"2us\", target_residency = \"2us\", power_w = 2.0 },\n]\n",
    );
    assert_eq!(
        e,
        "f.toml:9: host.power.idle_states[1].exit_latency: 2us is below the previous state \
         \"C6\"'s 100us: list the states shallowest first"
    );
}

#[test]
fn a_residency_below_the_exit_latency_is_refused_at_its_line() {
    let e = refusal(
        "[host.power]\nidle_states = [\n{ name = \"POLL\", exit_latency = \"0ns\", \
         target_residency = \"0ns\", power_w = 6.0, polling = true },\n\
         { name = \"C1\", exit_latency = \"5us\", target_residency = \"2us\", power_w = 2.0 },\n]\n",
    );
    assert!(
        e.starts_with("f.toml:9: host.power.idle_states[1].target_residency: must be at least"),
        "{e}"
    );
}

#[test]
fn more_idle_states_than_linux_allows_are_refused_at_the_first_extra() {
    let states: String = (0..11)
        .map(|i| {
            format!(
                "{{ name = \"C{i}\", exit_latency = \"{i}us\", target_residency = \"{i}us\", \
                 power_w = 1.0 }},\n"
            )
        })
        .collect();
    let e = refusal(&format!("[host.power]\nidle_states = [\n{states}]\n"));
    assert_eq!(
        e,
        "f.toml:18: host.power.idle_states[10]: lists 11 idle states; Linux allows at most 10 \
         (CPUIDLE_STATE_MAX)"
    );
}

#[test]
fn a_negative_or_enormous_power_is_refused() {
    let e = refusal("[host.power]\nuncore_w = -1.0\n");
    assert_eq!(
        e,
        "f.toml:7: host.power.uncore_w: must be a power from 0 to 10000 watts (got -1)"
    );
    // Past 10 kW the selector and the engines' sums of microwatts would not be exact.
    let e = refusal("[host.power]\nbase_w = 1e14\n");
    assert_eq!(
        e,
        "f.toml:7: host.power.base_w: must be a power from 0 to 10000 watts (got 1e14)"
    );
    let text = BASE.replace(
        "model = \"optane-900p\"\n",
        "model = \"optane-900p\"\npower.idle_w = -5.0\n",
    );
    let e = load_str(&text, "f.toml", &[]).unwrap_err().to_string();
    assert!(
        e.starts_with("f.toml:4: device.power.idle_w: must be a power"),
        "{e}"
    );
}

#[test]
fn the_tick_is_the_hosts_and_not_the_energy_models() {
    let e = refusal("[host.power]\ntick = \"1ms\"\n");
    assert_eq!(
        e,
        "f.toml:7: host.power.tick: moved to host.tick (the kernel's CONFIG_HZ period, which \
         the scheduler uses too)"
    );
    let e = refusal("tick = \"0ns\"\n");
    assert!(e.starts_with("f.toml:6: host.tick: "), "{e}");
    let text = BASE.replace(
        "model = \"xeon-e3-1230v5\"\n",
        "model = \"xeon-e3-1230v5\"\ntick = \"1ms\"\n",
    );
    let sc = load_str(&text, "f.toml", &[]).unwrap();
    assert_eq!(sc.host.tick.0, 1_000_000);
}

#[test]
fn an_unknown_governor_is_refused() {
    let e = refusal("power.governor = \"ladder\"\n");
    assert_eq!(
        e,
        "f.toml:6: host.power.governor: must be one of \"menu\", \"menu-no-iowait\" or \"teo\" \
         (got \"ladder\")"
    );
}

#[test]
fn power_keys_on_a_profile_without_power_data_say_so() {
    let text = BASE.replace("xeon-e3-1230v5", "xeon-e5-2660v4") + "";
    let text = text.replace(
        "model = \"xeon-e5-2660v4\"\n",
        "model = \"xeon-e5-2660v4\"\npower.base_w = 1.0\n",
    );
    let e = load_str(&text, "f.toml", &[]).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "f.toml:6: host.power: the host profile \"xeon-e5-2660v4\" has no power data"
        ),
        "{e}"
    );
}

#[test]
fn a_polling_flag_on_an_engine_that_cannot_poll_is_refused() {
    let text = BASE.replace(
        "engine = \"pvsync2\"\n",
        "engine = \"libaio\"\nhipri = true\n",
    );
    let e = load_str(&text, "f.toml", &[]).unwrap_err().to_string();
    assert!(e.starts_with("f.toml:12: job.j.hipri: only pvsync2"), "{e}");
}

#[test]
fn the_energy_host_has_four_cores_of_two_hardware_threads() {
    let sc = load_str(BASE, "f.toml", &[]).unwrap();
    let smt = sc.host.smt.expect("SMT data");
    assert_eq!((sc.host.cores, smt.threads_per_core), (8, 2));
    assert_eq!(smt.physical_cores(sc.host.cores), 4);
}

#[test]
fn bad_smt_input_is_refused_at_its_line() {
    assert_eq!(
        refusal("[host.smt]\nthreads_per_core = 0\n"),
        "f.toml:7: host.smt.threads_per_core: must be at least 1 (got 0)"
    );
    assert_eq!(
        refusal("cores = 6\n[host.smt]\nthreads_per_core = 4\n"),
        "f.toml:8: host.smt.threads_per_core: must divide host.cores, the logical CPUs (6 is \
         not a whole number of 4-thread cores)"
    );
    assert_eq!(
        refusal("[host.smt]\ngain = 1.5\n"),
        "f.toml:7: host.smt.gain: must be a fraction from 0 to 1 (got 1.5)"
    );
    // A profile without SMT data has nothing to override.
    let text = BASE.replace("xeon-e3-1230v5", "xeon-e5-2660v4").replace(
        "[[strategy]]",
        "[host.smt]\nthreads_per_core = 2\n[[strategy]]",
    );
    let e = load_str(&text, "f.toml", &[]).expect_err("refused");
    assert!(
        e.to_string()
            .starts_with("f.toml:6: host.smt: the host profile \"xeon-e5-2660v4\" has no SMT"),
        "{e}"
    );
}

#[test]
fn a_hybrid_sleep_past_an_hour_is_refused_as_too_long() {
    // A duration, so not "must be adaptive, min or a duration".
    let text = BASE.replace(
        "kind = \"none\"\n",
        "kind = \"hybrid-poll\"\nsleep = \"3601s\"\n",
    );
    let e = load_str(&text, "f.toml", &[]).unwrap_err().to_string();
    assert_eq!(
        e,
        "f.toml:9: strategy.i.sleep: must be at most 3600s (got 3601s)"
    );
}
