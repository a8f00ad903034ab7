//! Our job files in scenarios/ that use the options of published job
//! files: the cinterrupts artifact's (`barrier=1`, `name=` inside a
//! section, NUMA and fio-accounting options) and fio's groups and request
//! shaping. Each imports with warnings only for options with no meaning in
//! a model, and runs; the mechanisms they name change the result.

use std::path::{Path, PathBuf};

use cint_lab::fio::{import_file, import_str, FioArgs};
use cint_report::RunResult;
use cint_scenario::{CompletionMode, Scenario, Strategy, Work};

fn scenario_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(name)
}

fn short_args() -> FioArgs {
    FioArgs {
        sets: vec!["duration=10ms".into(), "warmup=1ms".into()],
        ..FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    }
}

fn run(s: &Scenario) -> RunResult {
    cint_sim::run(s).unwrap_or_else(|e| panic!("{}: {e}", s.name))
}

#[test]
fn barrier_submit_imports_the_artifacts_options_and_marks_each_batch() {
    let path = scenario_file("barrier-submit.fio");
    let imported = import_file(&path, &short_args()).unwrap_or_else(|e| panic!("{e}"));
    for w in &imported.warnings {
        assert!(
            w.contains("has no meaning in the model") || w.contains("is named"),
            "{w}"
        );
    }
    for option in ["numa_mem_policy", "disable_bw", "disk_util"] {
        assert!(
            imported
                .warnings
                .iter()
                .any(|w| w.contains(&format!("'{option}'"))),
            "{option} is accepted with a warning"
        );
    }
    let s = &imported.scenario;
    assert_eq!(
        s.jobs[0].name, "batched-barrier-reader",
        "name= in the section"
    );
    let Work::Io(io) = &s.jobs[0].work else {
        panic!("an I/O job")
    };
    // The random generator is modelled (a direct job of one size draws no
    // offsets, so it changes nothing here).
    assert_eq!(io.shape.random_map, cint_scenario::RandomMap::Lfsr);
    assert!(io.shape.barrier_last);
    // Modelled, not warned: fio's gtod_reduce lowers the generator's CPU.
    assert!(io.gtod_reduce);

    // The modelled kernel already marks the last request of each
    // io_submit Barrier (docs/ALGORITHMS.md section 5), which is what the
    // patched fio asks for: with or without `barrier`, the same run.
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let plain = import_str(
        &text.replace("barrier=1", ""),
        &path.display().to_string(),
        &short_args(),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .scenario;
    let (with, without) = (run(s), run(&plain));
    assert!(with.results.iter().all(|r| r.jobs[0].ios > 0));
    let json = |r: &RunResult| serde_json::to_string(&r.results).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(json(&with), json(&without));
    // Under cinterrupts each batch of 8 ends in a Barrier: at least one
    // interrupt per 8 requests.
    let c = with
        .results
        .iter()
        .find(|r| r.strategy == "cinterrupts")
        .expect("cinterrupts");
    assert!(
        c.interrupts * 8 >= c.jobs[0].ios,
        "{} interrupts for {} requests",
        c.interrupts,
        c.jobs[0].ios
    );
}

#[test]
fn phases_run_one_group_after_another_with_their_shapes() {
    let args = FioArgs {
        strategies: Some(vec![Strategy {
            name: "none".into(),
            mode: CompletionMode::Interrupt(cint_policy::PolicyConfig::None),
            interrupts: cint_policy::PolicyConfig::None,
        }]),
        ..FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    };
    let imported =
        import_file(&scenario_file("phases.fio"), &args).unwrap_or_else(|e| panic!("{e}"));
    assert!(imported.warnings.is_empty(), "{:?}", imported.warnings);
    let s = &imported.scenario;
    let groups: Vec<u32> = s.jobs.iter().map(|j| j.schedule.group).collect();
    assert_eq!(groups, [0, 1, 1, 1]);
    let result = run(s);
    let jobs = &result.results[0].jobs;
    for job in jobs {
        assert!(job.ios > 0, "{} ran", job.name);
    }
    // The writer is paced at 200 MiB/s (its window is 20 ms of a rate
    // measured per completed byte: allow the last batch in flight).
    let writer = jobs.iter().find(|j| j.name == "writer").expect("writer");
    let cap = 200u64 << 20;
    assert!(
        writer.bw_bytes <= cap + cap / 10,
        "writer at {} B/s, cap {cap}",
        writer.bw_bytes
    );
    assert!(
        writer.bw_bytes >= cap / 2,
        "writer at {} B/s",
        writer.bw_bytes
    );
    // Each group has its note; group 1 starts after the fill ended.
    assert!(result.notes.iter().any(|n| n.contains("group 0: 'fill'")));
    assert!(result.notes.iter().any(|n| n.contains("group 1: 'reader'")));
}

/// Every new key survives `cint check`: the imported scenario written as
/// TOML loads back equal, with fio's text forms (splits, percentiles,
/// steady-state criteria) read back exactly.
#[test]
fn imports_with_every_shaping_option_render_and_load_back_equal() {
    let text = "[global]\nruntime=20ms\nramp_time=1ms\n\
                [a]\nioengine=libaio\niodepth=8\niodepth_batch_submit=4\nrw=randwrite\n\
                bssplit=4k/10:64k/90,16k\nrate=50m,10m\nrate_process=poisson\n\
                thinktime=15\nthinktime_spin=5\nthinktime_blocks=3\nbarrier=1\n\
                percentile_list=50:99.5:99.99\nflow=3\nflow_id=2\nflow_sleep=50\n\
                fsync=4\nfdatasync=8\nexitall\nss=bw_slope:0.25%\nss_dur=2s\nss_ramp=1s\n\
                [b]\nstonewall\nrw=readwrite\nbsrange=4k-32k\nsize=1m\nloops=2\n\
                number_ios=100\nstartdelay=3ms\n";
    let imported = import_str(text, "all.fio", &short_args()).unwrap_or_else(|e| panic!("{e}"));
    let toml = cint_scenario::to_toml(&imported.scenario);
    let back =
        cint_scenario::load_str(&toml, "all.fio", &[]).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(back, imported.scenario, "{toml}");
    let result = run(&back);
    assert!(result.results.iter().all(|r| r.jobs.len() == 2));
}

#[test]
fn bssplit_shares_short_of_100_are_fios_with_a_warning_and_load_back() {
    let text = "[a]\nruntime=10ms\nrw=randread\nbssplit=4k/50:8k/30\n";
    let imported = import_str(text, "short.fio", &short_args()).unwrap_or_else(|e| panic!("{e}"));
    let [warning] = &imported.warnings[..] else {
        panic!("one warning: {:?}", imported.warnings);
    };
    assert!(
        warning.starts_with("short.fio:4: warning: option 'bssplit=4k/50:8k/30'")
            && warning.contains("other 20% to 4KiB"),
        "{warning}"
    );
    let Work::Io(io) = &imported.scenario.jobs[0].work else {
        panic!("an I/O job");
    };
    let shares: Vec<(u64, u32)> = io
        .shape
        .bssplit
        .iter()
        .map(|s| (s.bytes, s.percent))
        .collect();
    assert_eq!(shares, [(4096, 70), (8192, 30)]);
    // The scenario it renders holds shares that come to 100.
    let toml = cint_scenario::to_toml(&imported.scenario);
    let back =
        cint_scenario::load_str(&toml, "short.fio", &[]).unwrap_or_else(|e| panic!("{e}\n{toml}"));
    assert_eq!(back, imported.scenario);
}

#[test]
fn a_job_file_that_is_not_utf8_is_refused_at_its_line() {
    let dir = cint_test_support::temp_dir("fio-utf8");
    let path = dir.path().join("latin1.fio");
    std::fs::write(&path, b"[global]\nrw=read\n; caf\xe9\n[j]\n").expect("write");
    let e = import_file(&path, &short_args()).expect_err("not UTF-8");
    assert_eq!(e.line, Some(3), "{e}");
    assert!(e.to_string().contains("not UTF-8"), "{e}");
}
