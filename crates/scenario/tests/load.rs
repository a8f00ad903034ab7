//! Valid scenarios: defaults, profile overrides, `--set`, and the
//! resolved TOML of `cint check` loading back to the same scenario.

mod common;

use cint_policy::config::{BarrierMode, StormGuardMode, VicParams, VicSchedParams};
use cint_policy::{Hint, PolicyConfig};
use cint_scenario::{
    load_file, load_str, to_toml, CompletionMode, DeviceProfile, Engine, HybridSleep, Origin, Rw,
    Scenario, Work,
};
use common::{with, BASE};

fn load(text: &str, sets: &[&str]) -> Scenario {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match load_str(text, "t.toml", &sets) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

fn policy(s: &Scenario, name: &str) -> PolicyConfig {
    match s
        .strategies
        .iter()
        .find(|st| st.name == name)
        .map(|st| st.mode)
    {
        Some(CompletionMode::Interrupt(p)) => p,
        other => panic!("{name}: {other:?}"),
    }
}

fn io(s: &Scenario, name: &str) -> cint_scenario::IoJob {
    match s.jobs.iter().find(|j| j.name == name).map(|j| &j.work) {
        Some(Work::Io(io)) => io.clone(),
        other => panic!("{name}: {other:?}"),
    }
}

const MINIMAL: &str =
    "name = \"m\"\n[[strategy]]\nname = \"s\"\nkind = \"adaptive\"\n[[job]]\nname = \"j\"\n";

#[test]
fn the_spec_example_resolves_as_written() {
    let s = load(BASE, &[]);
    assert_eq!(s.name, "mixed");
    assert_eq!((s.seed, s.duration, s.warmup), (1, 200_000_000, 20_000_000));
    assert_eq!(s.host.cores, 2);
    let names: Vec<&str> = s.strategies.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(names, ["default", "adaptive", "cint", "vic"]);
    let PolicyConfig::Cinterrupts(c) = policy(&s, "cint") else {
        panic!()
    };
    assert_eq!((c.adaptive.delta, c.adaptive.thr, c.ooo), (6_000, 32, true));
    assert_eq!(c.barrier, BarrierMode::Relaxed);
    assert_eq!(c.max_irq_rate, None);
    assert_eq!(policy(&s, "vic"), PolicyConfig::Vic(VicParams::default()));
    let a = io(&s, "async");
    assert_eq!(
        (a.engine, a.rw, a.bs, a.iodepth),
        (Engine::Libaio, Rw::RandRead, 4096, 16)
    );
    assert_eq!(
        a.size, s.device.capacity.0,
        "size defaults to the device capacity"
    );
    assert!(a.direct);
    assert_eq!(a.hint, None);
    assert_eq!(s.jobs[1].cpu, 1);
}

#[test]
fn defaults_of_a_minimal_file() {
    let s = load(MINIMAL, &[]);
    assert_eq!((s.seed, s.duration, s.warmup), (1, 1_000_000_000, 0));
    assert_eq!(s.device, DeviceProfile::builtin("optane-p4800x").unwrap());
    assert_eq!(s.host.model, "xeon-e5-2660v4");
    assert_eq!(
        policy(&s, "s"),
        PolicyConfig::Adaptive(cint_policy::config::AdaptiveParams {
            delta: 6_000,
            thr: 32
        })
    );
    let j = io(&s, "j");
    assert_eq!(
        (j.engine, j.rw, j.bs, j.iodepth, j.batch),
        (Engine::Psync, Rw::Read, 4096, 1, 1)
    );
    assert_eq!((j.think, j.rate_iops, j.rwmixread), (0, None, 50));
    assert_eq!(
        (s.jobs[0].cpu, s.jobs[0].numjobs, s.jobs[0].runtime),
        (0, 1, None)
    );
}

#[test]
fn adaptive_defaults_follow_the_device_profile_and_its_overrides() {
    let s = load(
        &MINIMAL.replace(
            "name = \"m\"\n",
            "name = \"m\"\n[device]\nmodel = \"p3700\"\n",
        ),
        &[],
    );
    let PolicyConfig::Adaptive(p) = policy(&s, "s") else {
        panic!()
    };
    assert_eq!(p.delta, 15_000);
    let s = load(
        MINIMAL,
        &["device.reference_delta=9us", "device.reference_thr=8"],
    );
    let PolicyConfig::Adaptive(p) = policy(&s, "s") else {
        panic!()
    };
    assert_eq!((p.delta, p.thr), (9_000, 8));
}

#[test]
fn device_and_host_fields_override_generically() {
    let text = with(
        "model = \"optane-p4800x\"\n",
        "model = \"optane-p4800x\"\nparallel_units = 8\nread.base = \"3us\"\njitter = \"none\"\n",
    );
    let s = load(
        &text,
        &[
            "host.cores=4",
            "host.irq_fixed=2us",
            "device.write.bandwidth=1000000",
        ],
    );
    let builtin = DeviceProfile::builtin("optane-p4800x").unwrap();
    assert_eq!(s.device.parallel_units, 8);
    assert_eq!(s.device.read.base.0, 3_000);
    assert_eq!(
        s.device.read.bandwidth, builtin.read.bandwidth,
        "untouched sibling kept"
    );
    assert_eq!(s.device.write.bandwidth, 1_000_000);
    assert_eq!(s.device.jitter, cint_scenario::profiles::JitterKind::None);
    assert_eq!(s.device.queue_depth, builtin.queue_depth);
    assert_eq!((s.host.cores, s.host.irq_fixed.0), (4, 2_000));
}

#[test]
fn set_overrides_every_kind_of_key() {
    let s = load(
        BASE,
        &[
            "duration=1s",
            "seed=3",
            "name=renamed",
            "strategy.cint.delta=4us",
            "strategy.cint.barrier=strict",
            "strategy.cint.max_irq_rate=100000",
            "job.async.iodepth=64",
            "job.async.hint=urgent",
            "device.parallel_units=8",
            "emu.backend=io_uring",
        ],
    );
    assert_eq!(
        (s.duration, s.seed, s.name.as_str()),
        (1_000_000_000, 3, "renamed")
    );
    let PolicyConfig::Cinterrupts(c) = policy(&s, "cint") else {
        panic!()
    };
    assert_eq!(c.adaptive.delta, 4_000);
    assert_eq!(c.barrier, BarrierMode::Strict);
    assert_eq!(c.max_irq_rate, Some(100_000));
    assert_eq!(c.guard, StormGuardMode::Rate, "rate is the default mode");
    assert_eq!(io(&s, "async").iodepth, 64);
    assert_eq!(io(&s, "async").hint, Some(Hint::Urgent));
    assert_eq!(s.device.parallel_units, 8);
    assert_eq!(s.emu.backend, cint_scenario::Backend::IoUring);
}

#[test]
fn later_sets_win_and_a_set_can_repair_the_file() {
    let broken = with("iodepth = 16", "iodepth = 0");
    assert!(load_str(&broken, "t", &[]).is_err());
    let s = load(&broken, &["job.async.iodepth=2", "job.async.iodepth=8"]);
    assert_eq!(io(&s, "async").iodepth, 8);
}

#[test]
fn sync_engines_ignore_iodepth_and_batching_like_fio() {
    let text = with(
        "cpu    = 1",
        "cpu    = 1\niodepth = 32\nbatch = 8\nbatch_complete_min = 4",
    );
    let s = load(&text, &[]);
    let sync = io(&s, "sync");
    assert_eq!(
        (sync.iodepth, sync.batch, sync.batch_complete_min),
        (1, 1, 1)
    );
}

#[test]
fn every_strategy_kind_and_its_defaults() {
    let text = "name = \"k\"\n\
        [[strategy]]\nname = \"a\"\nkind = \"none\"\n\
        [[strategy]]\nname = \"b\"\nkind = \"nvme\"\n\
        [[strategy]]\nname = \"c\"\nkind = \"nvme\"\nthr = 8\ntime = \"200us\"\ncoalescing_disabled = true\n\
        [[strategy]]\nname = \"d\"\nkind = \"vic-sched\"\n\
        [[strategy]]\nname = \"e\"\nkind = \"vic\"\nquirk_failsafe = 16\nquirk_reset_on_skip = true\nepoch = \"1ms\"\n\
        [[strategy]]\nname = \"f\"\nkind = \"poll\"\n\
        [[strategy]]\nname = \"g\"\nkind = \"hybrid-poll\"\n\
        [[strategy]]\nname = \"h\"\nkind = \"hybrid-poll\"\nsleep = \"min\"\n\
        [[strategy]]\nname = \"i\"\nkind = \"hybrid-poll\"\nsleep = \"3us\"\n\
        [[job]]\nname = \"j\"\n";
    let s = load(text, &[]);
    let kinds: Vec<&str> = s.strategies.iter().map(|st| st.kind()).collect();
    assert_eq!(
        kinds,
        [
            "none",
            "nvme",
            "nvme",
            "vic-sched",
            "vic",
            "poll",
            "hybrid-poll",
            "hybrid-poll",
            "hybrid-poll"
        ]
    );
    let PolicyConfig::Nvme(b) = policy(&s, "b") else {
        panic!()
    };
    assert_eq!((b.thr, b.time, b.coalescing_disabled), (32, 100_000, false));
    let PolicyConfig::Nvme(c) = policy(&s, "c") else {
        panic!()
    };
    assert_eq!((c.thr, c.time, c.coalescing_disabled), (8, 200_000, true));
    assert_eq!(
        policy(&s, "d"),
        PolicyConfig::VicSched(VicSchedParams::default())
    );
    let PolicyConfig::Vic(e) = policy(&s, "e") else {
        panic!()
    };
    assert_eq!(
        (e.quirk_failsafe, e.quirk_reset_on_skip, e.epoch),
        (Some(16), true, 1_000_000)
    );
    let modes: Vec<CompletionMode> = s.strategies[5..].iter().map(|st| st.mode).collect();
    assert_eq!(
        modes,
        [
            CompletionMode::Poll,
            CompletionMode::HybridPoll(HybridSleep::Adaptive),
            CompletionMode::HybridPoll(HybridSleep::Min),
            CompletionMode::HybridPoll(HybridSleep::Fixed(3_000)),
        ]
    );
}

#[test]
fn cpu_jobs_and_job_extras() {
    let text = with(
        "cpu    = 1",
        "cpu    = 1\n\n[[job]]\nname = \"burn\"\nkind = \"cpu\"\ncpu = 1\nnumjobs = 2\nruntime = \"50ms\"\n\n\
         [[job]]\nname = \"mix\"\nengine = \"pvsync2\"\nrw = \"randrw\"\nrwmixread = 70\n\
         hint = \"none\"\nrate_iops = 1000\nthink = \"2us\"\nsize = \"1GiB\"\ndirect = false\nbs = 8192\n\
         fadvise_hint = false",
    );
    let s = load(&text, &[]);
    let burn = &s.jobs[2];
    assert_eq!(
        (burn.work.clone(), burn.numjobs, burn.runtime),
        (Work::Cpu, 2, Some(50_000_000))
    );
    let mix = io(&s, "mix");
    assert_eq!((mix.rw, mix.rwmixread), (Rw::RandRw, 70));
    assert!(!mix.fadvise_hint && io(&s, "sync").fadvise_hint);
    assert_eq!(
        (mix.hint, mix.rate_iops, mix.think),
        (Some(Hint::Unmarked), Some(1000), 2_000)
    );
    assert_eq!((mix.size, mix.direct, mix.bs), (1 << 30, false, 8192));
}

#[test]
fn the_resolved_text_loads_back_to_the_same_scenario() {
    let text = with(
        "cpu    = 1",
        "cpu    = 1\n[[job]]\nname = \"burn\"\nkind = \"cpu\"\nruntime = \"1ms\"\n[[job]]\nname = \"mix\"\n\
         engine = \"pvsync2\"\nrw = \"randrw\"\nhint = \"barrier\"\nrate_iops = 5\n\
         [[strategy]]\nname = \"h\"\nkind = \"hybrid-poll\"\nsleep = \"3us\"\n\
         [[strategy]]\nname = \"vs\"\nkind = \"vic-sched\"\nquirk_failsafe = 3\n\
         [[strategy]]\nname = \"n\"\nkind = \"nvme\"\n",
    );
    for sets in [
        &[][..],
        &[
            "device.model=p3700",
            "strategy.cint.max_irq_rate=5000",
            "emu.device_core=1",
        ][..],
        &[
            "strategy.cint.max_irq_rate=5000",
            "strategy.cint.guard=artifact",
        ][..],
        &[
            "job.async.iodepth_low=4",
            "job.async.max_latency=50us",
            "job.mix.max_latency=,2ms",
        ][..],
        &["job.mix.rate_iops=1000,"][..],
        &["job.mix.rate_iops=,300"][..],
        &[
            "run_to_end=true",
            "job.mix.rate_iops_min=3",
            "job.mix.ratecycle=20ms",
        ][..],
    ] {
        let original = load(&text, sets);
        let rendered = assert_renders_and_loads_back(&original);
        let per_direction_rate = |s: &&&str| s.starts_with("job.mix.rate_iops=") && s.contains(',');
        if let Some(set) = sets.iter().find(per_direction_rate) {
            let mix = original.jobs.iter().find(|j| j.name == "mix").expect("mix");
            let cint_scenario::Work::Io(mix) = &mix.work else {
                panic!("mix is an I/O job");
            };
            let caps = mix.shape.rate_per_direction.expect(set);
            assert_eq!(mix.rate_iops, None, "{set}");
            assert!(
                rendered.contains(&format!("rate_iops = \"{}\"", &set[18..])),
                "{set}"
            );
            assert_eq!(caps.write.is_some(), !set.ends_with(','), "{set}");
        }
        assert!(
            rendered.contains("parallel_units"),
            "profile fields are spelled out"
        );
    }
}

#[test]
fn application_scenarios_render_and_load_back_the_same() {
    for file in [
        "rocksdb-fillbatch",
        "rocksdb-readwhilewriting",
        "coloc-rocksdb-dump",
        "coloc-rocksdb-kvell",
        "kvell-ycsb-e",
    ] {
        let path = format!("{}/../../scenarios/{file}.toml", env!("CARGO_MANIFEST_DIR"));
        let original = load_file(std::path::Path::new(&path), &[]).expect("loads");
        assert!(!original.apps.programs.is_empty());
        assert_renders_and_loads_back(&original);
    }
}

/// `cint check`'s rendering of `original` loads back to the same
/// scenario (its source name aside); returns the rendered text.
fn assert_renders_and_loads_back(original: &Scenario) -> String {
    let rendered = to_toml(original);
    let mut again = match load_str(&rendered, "rendered", &[]) {
        Ok(s) => s,
        Err(e) => panic!("{e}\n{rendered}"),
    };
    again.source = original.source.clone();
    assert_eq!(&again, original, "{rendered}");
    rendered
}

#[test]
fn files_load_and_missing_files_are_one_line_errors() {
    let dir = std::env::temp_dir().join(format!("cint-scenario-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("x.toml");
    std::fs::write(&path, BASE).unwrap();
    let s = load_file(&path, &["seed=9".to_string()]).unwrap();
    assert_eq!((s.seed, s.source.clone()), (9, path.display().to_string()));
    std::fs::remove_dir_all(&dir).unwrap();
    let e = load_file(&dir.join("nope.toml"), &[]).unwrap_err();
    assert_eq!(e.origin, Origin::File);
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("{}: cannot read", dir.join("nope.toml").display())),
        "{msg}"
    );
    assert!(!msg.contains('\n'));
}

#[test]
fn the_storm_guard_mode_is_read_with_its_rate() {
    for (word, mode) in [
        ("rate", StormGuardMode::Rate),
        ("artifact", StormGuardMode::Artifact),
    ] {
        let text = with(
            "ooo     = true",
            &format!("ooo     = true\nmax_irq_rate = 100000\nguard = \"{word}\""),
        );
        let s = load(&text, &[]);
        let PolicyConfig::Cinterrupts(c) = policy(&s, "cint") else {
            panic!()
        };
        assert_eq!((c.max_irq_rate, c.guard), (Some(100_000), mode));
    }
}
