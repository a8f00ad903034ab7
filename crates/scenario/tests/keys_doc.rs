//! docs/SCENARIO-KEYS.md lists every key the parser accepts: profile
//! fields (including ones added later), strategy and job keys, `[emu]`.

use cint_scenario::{job, strategy, DeviceProfile, EmuConfig, HostProfile};

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/SCENARIO-KEYS.md");
    std::fs::read_to_string(path).expect("docs/SCENARIO-KEYS.md exists")
}

/// Dotted paths of every leaf of a serialized struct.
fn leaves(v: &toml::Value, prefix: &str, out: &mut Vec<String>) {
    if let toml::Value::Table(t) = v {
        for (k, inner) in t {
            let path = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match inner {
                toml::Value::Table(_) => leaves(inner, &path, out),
                _ => out.push(path),
            }
        }
    }
}

fn missing(doc: &str, keys: impl IntoIterator<Item = String>) -> Vec<String> {
    keys.into_iter()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect()
}

#[test]
fn every_key_is_documented() {
    let doc = doc();
    let mut keys = Vec::new();
    let device = DeviceProfile::builtin("optane-p4800x").unwrap();
    leaves(&toml::Value::try_from(&device).unwrap(), "", &mut keys);
    let host = HostProfile::builtin("xeon-e5-2660v4").unwrap();
    leaves(&toml::Value::try_from(&host).unwrap(), "", &mut keys);
    // The energy model's keys live in the profiles that have power data.
    let energy_host = HostProfile::builtin("xeon-e3-1230v5").unwrap();
    leaves(&toml::Value::try_from(&energy_host).unwrap(), "", &mut keys);
    let energy_device = DeviceProfile::builtin("optane-900p").unwrap();
    leaves(
        &toml::Value::try_from(&energy_device).unwrap(),
        "",
        &mut keys,
    );
    keys.extend(
        [
            "name",
            "exit_latency",
            "target_residency",
            "power_w",
            "polling",
        ]
        .iter()
        .map(|k| format!("power.idle_states[].{k}")),
    );
    let emu = EmuConfig {
        path: Some("/dev/null".into()),
        device_core: Some(1),
        ..EmuConfig::default()
    };
    leaves(&toml::Value::try_from(&emu).unwrap(), "", &mut keys);
    for (kind, params) in strategy::KINDS {
        keys.push(kind.to_string());
        keys.extend(params.iter().map(|p| p.to_string()));
    }
    keys.extend(job::IO_KEYS.iter().map(|k| k.to_string()));
    let hypervisor = cint_scenario::HypervisorProfile::builtin("esx-like").unwrap();
    leaves(&toml::Value::try_from(&hypervisor).unwrap(), "", &mut keys);
    keys.extend(["cores", "vcpus", "irq_vcpu"].map(String::from));
    keys.extend(
        cint_scenario::app::ROCKSDB_KEYS
            .iter()
            .map(|k| k.to_string()),
    );
    keys.extend(
        cint_scenario::app::ROCKSDB_BENCHMARKS
            .iter()
            .map(|k| k.to_string()),
    );
    keys.extend(cint_scenario::app::KVELL_KEYS.iter().map(|k| k.to_string()));
    keys.push("app_hints".to_string());
    keys.push("[[app]]".to_string());
    for top in [
        "name",
        "seed",
        "duration",
        "warmup",
        "[device]",
        "[host]",
        "[[strategy]]",
        "[[job]]",
        "[emu]",
        "[hypervisor]",
        "[[guest]]",
    ] {
        keys.push(top.to_string());
    }
    assert!(keys.len() > 60, "{keys:?}");
    let gaps = missing(&doc, keys);
    assert!(gaps.is_empty(), "not in docs/SCENARIO-KEYS.md: {gaps:?}");
}
