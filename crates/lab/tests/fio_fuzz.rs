//! Malformed and odd fio job files: the shipped ones, and fio's own
//! examples where installed, those that import as they are, mutated at
//! random (values replaced by
//! extremes, options moved between files, lines and characters deleted,
//! stray section headers), through the import. Each must import, or be
//! refused with one line naming the file and its line; an imported one
//! must run in the simulator or be refused as bad input, never fail with
//! an internal error. Deterministic: a failing case is named by its
//! number.
//!
//! `cargo test -p cint-lab --test fio_fuzz -- --ignored` runs a longer
//! soak; `CINT_FUZZ_SEED=N` picks another seed.

use std::path::Path;

use cint_lab::fio::{import_str, FioArgs};
use cint_test_support::rng::Rng;

/// Values that stress an option's parser.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "4k",
    "1m",
    "99999999999999999999",
    "",
    "4k,8k",
    ",",
    "1-5",
    "10%",
    "abc",
    "0x10",
    "2147483648",
    "4k-1m,8k-64k",
    "1:2",
    "offload",
    "issue",
    "poisson",
    "1ms",
    "50us",
    "é",
    "zipf:1.2",
    "zoned_abs:50/1m:50/1g",
    "pareto:0",
];

/// Modelled options that the shipped job files and fio's examples leave
/// out (or set only in files of other engines), moved in as the files'
/// own options are.
const EXTRA_OPTIONS: &[&str] = &[
    "ioengine=io_uring",
    "hipri=1",
    "sqthread_poll=1",
    "sqthread_poll_cpu=1",
    "sync=1",
    "sync=dsync",
    "direct=1",
    "norandommap=1",
    "random_generator=lfsr",
    "random_distribution=zipf:1.2",
    "random_distribution=zoned:60/10:40/90",
    "random_distribution=normal:5:0.5",
    "blockalign=8k",
    "ratemin=1m",
    "ratecycle=500",
    "bssplit=4k/50:6k/50",
    "bsrange=4k-10k",
    "rw=randrw",
    "rate_iops=500,100",
    "rate=1m,",
    "rate_process=poisson",
    // fio's long names and its defaults written out.
    "steadystate=iops:5%",
    "steadystate_duration=1",
    "ss_dur=0",
    "rate_cycle=250",
    "runtime=0",
    "rate_iops=0",
    "verify=0",
    "do_verify=1",
    // Threads the kernel places, beside pinned ones.
    "numjobs=40",
    "cpus_allowed=2-5",
    "cpus_allowed=1",
    "cpus_allowed_policy=split",
    "cpus_allowed_policy=shared",
];

fn job_files() -> Vec<String> {
    let mut dirs = vec![Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")];
    dirs.push("/usr/share/doc/fio/examples".into());
    let mut texts = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "fio"))
            .collect();
        paths.sort();
        texts.extend(paths.iter().filter_map(|p| std::fs::read_to_string(p).ok()));
    }
    texts
}

fn mutate(rng: &mut Rng, text: &str, options: &[&str]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.index(3) {
        let at = rng.index(lines.len() + 1);
        match rng.index(6) {
            0 if at < lines.len() && lines[at].contains('=') => {
                let key = lines[at].split('=').next().unwrap_or("").to_string();
                lines[at] = format!("{key}={}", VALUES[rng.index(VALUES.len())]);
            }
            1 => lines.insert(at, options[rng.index(options.len())].to_string()),
            2 if at < lines.len() => {
                lines.remove(at);
            }
            3 => lines.insert(
                at,
                ["[j]", "[global]", "[]", "[x y", "]"][rng.index(5)].into(),
            ),
            4 if at < lines.len() && !lines[at].is_empty() => {
                let mut chars: Vec<char> = lines[at].chars().collect();
                chars.remove(rng.index(chars.len()));
                lines[at] = chars.into_iter().collect();
            }
            _ => {
                let key = options[rng.index(options.len())]
                    .split('=')
                    .next()
                    .unwrap_or("");
                lines.push(format!("{key}={}", VALUES[rng.index(VALUES.len())]));
            }
        }
    }
    lines.join("\n") + "\n"
}

fn check(seed: u64, cases: usize) {
    let args = FioArgs {
        vars: Some(Default::default()),
        sets: vec!["duration=1ms".into(), "warmup=0ms".into()],
        ..FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
    };
    // Mutations of the files that import as they are.
    let texts: Vec<String> = job_files()
        .into_iter()
        .filter(|t| import_str(t, "f.fio", &args).is_ok())
        .collect();
    assert!(texts.len() >= 4, "{} job files import", texts.len());
    let mut options: Vec<&str> = texts
        .iter()
        .flat_map(|t| t.lines())
        .map(str::trim)
        .filter(|l| l.contains('=') && !l.starts_with([';', '#']))
        .collect();
    // Options the import models that no job file here sets.
    options.extend(EXTRA_OPTIONS);
    let mut rng = Rng::new(seed);
    let (mut imported, mut ran) = (0, 0);
    for case in 0..cases {
        let base = &texts[rng.index(texts.len())];
        let text = mutate(&mut rng, base, &options);
        match import_str(&text, "f.fio", &args) {
            Err(e) => {
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "case {case}: {msg}\n{text}");
                assert!(msg.starts_with("f.fio"), "case {case}: {msg}\n{text}");
            }
            Ok(import) => {
                imported += 1;
                // A short run of every fourth: the imported scenario is one
                // the simulator takes or refuses as input.
                if case % 4 == 0 {
                    if let Err(e) = cint_sim::run(&import.scenario) {
                        assert!(!e.is_internal(), "case {case}: {e}\n{text}");
                    }
                    ran += 1;
                }
            }
        }
    }
    // The mutations leave some files valid: the test reaches the runs.
    assert!(imported * 10 >= cases, "{imported} of {cases} imported");
    assert!(ran > 0);
}

fn seed() -> u64 {
    std::env::var("CINT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

#[test]
fn mutated_job_files_import_or_are_refused_in_one_line() {
    check(seed(), 600);
}

#[test]
#[ignore = "soak: thousands of job files, minutes"]
fn soak_mutated_job_files() {
    check(seed(), 20_000);
}
