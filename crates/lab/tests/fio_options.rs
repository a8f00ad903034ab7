//! The import against the option table of the fio installed here (`fio
//! --cmdhelp`, installed by `.ci/deps/fio.sh`):
//! - every option written at fio's own default leaves fio's run as it is
//!   without the option, so the import must accept it (`verify=0` in
//!   cloud providers' published commands was refused);
//! - every alias fio lists is read as its option (`rate_cycle` and
//!   `steadystate`, fio's own names, were refused where their aliases ran).
//!
//! Under `CI=true` a missing fio is a failure; elsewhere the test says
//! loudly that it skipped.

use std::process::Command;
use std::sync::OnceLock;

use cint_lab::fio::{import_str, FioArgs};

/// One option as `fio --cmdhelp=NAME` describes it.
struct FioOption {
    name: String,
    alias: Option<String>,
    /// `None` where fio prints `no default`.
    default: Option<String>,
}

/// A job fio and the import both take, to which one option line is added.
const BASE: &str = "[j]\nioengine=libaio\ndirect=1\nrw=randread\nruntime=1\ntime_based\n";

fn args() -> FioArgs {
    FioArgs::new("optane-p4800x", "xeon-e5-2660v4")
}

/// fio's option table, or `None` (after the skip rule) without fio.
fn fio_options() -> Option<&'static [FioOption]> {
    // Read once for both tests: fio starts in tens of milliseconds.
    static TABLE: OnceLock<Option<Vec<FioOption>>> = OnceLock::new();
    let table = TABLE.get_or_init(read_fio_options).as_deref();
    if table.is_none() {
        cint_test_support::skip::missing("fio not found (install it with .ci/deps/fio.sh)");
    }
    table
}

fn read_fio_options() -> Option<Vec<FioOption>> {
    let all = Command::new("fio").arg("--cmdhelp=all").output().ok()?;
    let names: Vec<String> = String::from_utf8_lossy(&all.stdout)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_string())
        .filter(|name| !name.is_empty())
        .collect();
    assert!(names.len() > 150, "fio --cmdhelp=all listed {names:?}");
    let options = names
        .into_iter()
        .map(|name| {
            let help = Command::new("fio")
                .arg(format!("--cmdhelp={name}"))
                .output()
                .expect("fio ran once already");
            let help = String::from_utf8_lossy(&help.stdout).into_owned();
            let field = |label: &str| {
                help.lines()
                    .find_map(|l| l.trim_start().strip_prefix(label))
                    .map(|v| v.trim().to_string())
            };
            FioOption {
                alias: field("alias:"),
                default: field("default:").filter(|d| d != "no default"),
                name,
            }
        })
        .collect();
    Some(options)
}

/// Whether fio itself takes the job with this option line.
fn fio_accepts(line: &str) -> bool {
    let dir = std::env::temp_dir().join(format!("cint-fio-options-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("job.fio");
    std::fs::write(&path, format!("{BASE}{line}\n")).expect("job file");
    let ok = Command::new("fio")
        .arg("--parse-only")
        .arg(&path)
        .output()
        .is_ok_and(|o| o.status.success());
    let _ = std::fs::remove_dir_all(&dir);
    ok
}

#[test]
fn every_option_at_fios_default_imports() {
    let Some(options) = fio_options() else {
        return;
    };
    let mut tried = 0;
    let mut refused = Vec::new();
    for option in options {
        let Some(default) = &option.default else {
            continue;
        };
        let line = format!("{}={default}", option.name);
        tried += 1;
        // fio is asked only about a refusal (its parse takes a while):
        // where fio refuses the line too (an engine's option on libaio),
        // so may the import.
        if let Err(e) = import_str(&format!("{BASE}{line}\n"), "d.fio", &args()) {
            if fio_accepts(&line) {
                refused.push(format!("{line}: {e}"));
            }
        }
    }
    assert!(tried > 80, "only {tried} options with a default");
    assert!(
        refused.is_empty(),
        "refused at fio's own default:\n{}",
        refused.join("\n")
    );
}

#[test]
fn every_alias_reads_as_its_option() {
    let Some(options) = fio_options() else {
        return;
    };
    let mut compared = 0;
    for option in options {
        let (Some(alias), Some(default)) = (&option.alias, &option.default) else {
            continue;
        };
        let by_name = import_str(
            &format!("{BASE}{}={default}\n", option.name),
            "a.fio",
            &args(),
        );
        let by_alias = import_str(&format!("{BASE}{alias}={default}\n"), "a.fio", &args());
        match (by_name, by_alias) {
            (Ok(n), Ok(a)) => {
                assert_eq!(n.scenario, a.scenario, "{alias} against {}", option.name);
                assert_eq!(n.warnings.len(), a.warnings.len(), "{alias}");
            }
            (Err(n), Err(a)) => assert_eq!(
                n.to_string(),
                a.to_string()
                    .replace(&format!("'{alias}"), &format!("'{}", option.name)),
            ),
            (n, a) => panic!(
                "{} and its alias {alias} part: {:?} against {:?}",
                option.name,
                n.err(),
                a.err()
            ),
        }
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} aliases with a default");
}
