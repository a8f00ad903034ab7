//! fio's command line (`fio --name=seq --rw=read --bs=4k ...`) read as
//! fio 3.33 reads it (init.c `parse_cmd_line`): the options before the
//! first `--name` are global, each `--name=X` starts job `X` (`--name=global`
//! a global section), and every option after it is that job's, so the
//! command line is a job file written out. Published benchmarks (etcd's
//! disk check, cloud providers' guides) are command lines, and `fio
//! --showcmd JOB.fio` writes one from a job file.
//!
//! Each argument stands where a job file's line would: messages give its
//! position in the command line as the line.

use super::diag::Diagnostics;
use super::jobfile::{Opt, Section};
use super::FioError;

/// The name messages give the command line in place of a file's.
pub const COMMAND_LINE: &str = "fio-command-line";

/// fio's own command-line options (init.c `l_opts`) that shape only what
/// fio prints or logs: the model prints its own results.
const OUTPUT_ONLY: &[&str] = &[
    "output",
    "output-format",
    "minimal",
    "append-terse",
    "terse-version",
    "eta",
    "eta-interval",
    "eta-newline",
    "status-interval",
    "latency-log",
    "bandwidth-log",
    "readonly",
    "debug",
    "warnings-fatal",
    "max-jobs",
    "alloc-size",
    "idle-prof",
    "aux-path",
    "section",
];

/// fio's command-line options that run no job (they print, test or serve).
const RUNS_NO_JOB: &[&str] = &[
    "version",
    "help",
    "cmdhelp",
    "enghelp",
    "showcmd",
    "parse-only",
    "server",
    "server-internal",
    "daemonize",
    "client",
    "remote-config",
    "cpuclock-test",
    "crctest",
    "memcpytest",
    "inflate-log",
    "merge-blktrace-only",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
];

/// The sections of a fio command line, `argv` without the program's name
/// (a leading `fio` is skipped, but keeps its position).
pub(super) fn sections(argv: &[String], diag: &mut Diagnostics) -> Result<Vec<Section>, FioError> {
    let mut sections: Vec<Section> = Vec::new();
    let mut taken_as_value = false;
    for (i, arg) in argv.iter().enumerate() {
        let at = i + 1;
        if (i == 0 && is_fio(arg)) || std::mem::take(&mut taken_as_value) {
            continue;
        }
        let Some(option) = arg.strip_prefix("--") else {
            let why = if arg.starts_with('-') {
                "fio's short options print or test and run no job"
            } else {
                "a job file: give it with --fio (a command line and job files together are \
                 not read)"
            };
            return Err(diag.err(at, format!("argument '{arg}': {why}")));
        };
        let (key, value) = match option.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            // getopt's `--key value` for an option that takes a value
            // (fio's flags take none, and a word after one would be a job
            // file, refused above either way).
            None => match argv.get(i + 1).filter(|next| !next.starts_with('-')) {
                Some(next) => {
                    taken_as_value = true;
                    (option, Some(next.clone()))
                }
                None => (option, None),
            },
        };
        if arg.contains(['\n', '\r']) || value.as_ref().is_some_and(|v| v.contains(['\n', '\r'])) {
            return Err(diag.err(at, format!("argument '{arg}' holds a line break")));
        }
        if key.is_empty() {
            return Err(diag.err(at, format!("argument '{arg}' names no option")));
        }
        if OUTPUT_ONLY.contains(&key) {
            diag.warn(
                at,
                format!("fio's option '--{key}' only shapes fio's own output; ignored"),
            );
            continue;
        }
        if RUNS_NO_JOB.contains(&key) {
            return Err(diag.err(
                at,
                format!("fio's option '--{key}' runs no job; nothing to simulate"),
            ));
        }
        if key == "name" {
            let name = value
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| diag.err(at, "option '--name' needs a value".into()))?;
            sections.push(Section {
                name: name.trim().to_string(),
                line: at,
                options: Vec::new(),
            });
            continue;
        }
        if sections.is_empty() {
            // Options before the first --name: fio's global job.
            sections.push(Section {
                name: "global".into(),
                line: at,
                options: Vec::new(),
            });
        }
        let section = sections.last_mut().expect("a section was pushed above");
        section.options.push(Opt {
            key: key.to_string(),
            value,
            line: at,
        });
    }
    if !sections.iter().any(|s| s.name != "global") {
        // fio: "No job(s) defined".
        return Err(diag.err_file("no job: fio runs a job for each --name=NAME".into()));
    }
    Ok(sections)
}

/// The program's own name, as a command line copied whole starts.
fn is_fio(arg: &str) -> bool {
    arg == "fio" || arg.ends_with("/fio")
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, io};
    use super::super::{import_command_line, import_str};
    use cint_scenario::{Engine, Rw};

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn a_command_line_is_the_job_file_it_writes_out() {
        // What `fio --showcmd` writes for a file of a [global] and two jobs.
        let cmd = "fio --ioengine=libaio --direct=1 --bs=4k --runtime=1 --name=seq --rw=read \
                   --name=rand --rw=randread --iodepth=8 --stonewall";
        let file = "[global]\nioengine=libaio\ndirect=1\nbs=4k\nruntime=1\n[seq]\nrw=read\n\
                    [rand]\nrw=randread\niodepth=8\nstonewall\n";
        let from_cmd = import_command_line(&argv(cmd), &args()).expect("the command line");
        let from_file = import_str(file, "f.fio", &args()).expect("the file");
        assert_eq!(from_cmd.scenario.jobs, from_file.scenario.jobs);
        assert_eq!(from_cmd.scenario.duration, from_file.scenario.duration);
        let rand = io(&from_cmd.scenario.jobs[1]);
        assert_eq!(
            (rand.engine, rand.rw, rand.iodepth),
            (Engine::Libaio, Rw::RandRead, 8)
        );
        assert_eq!(from_cmd.scenario.jobs[1].schedule.group, 1);
    }

    #[test]
    fn messages_give_the_arguments_position() {
        // etcd's disk check, with an option the model refuses.
        let cmd = "fio --rw=write --ioengine=sync --fdatasync=1 --verify=md5 --size=22m \
                   --bs=2300 --name=mytest";
        let e = import_command_line(&argv(cmd), &args()).expect_err("verify");
        assert_eq!(e.line, Some(5), "{e}");
        assert!(
            e.to_string()
                .starts_with("fio-command-line:5: option 'verify'"),
            "{e}"
        );
        let ok = import_command_line(&argv(&cmd.replace("md5", "0")), &args()).expect("etcd");
        assert_eq!(ok.scenario.jobs[0].name, "mytest");
        // fio's own output options are warned by position; what runs no
        // job and a job file are refused.
        let warned =
            import_command_line(&argv("--output-format=json --name=a --runtime=1"), &args())
                .expect("output options");
        assert!(
            warned.warnings[0].starts_with("fio-command-line:1: warning: fio's option"),
            "{:?}",
            warned.warnings
        );
        for (cmd, at, needle) in [
            ("--name=a --showcmd", 2, "runs no job"),
            ("--name=a job.fio", 2, "give it with --fio"),
            (
                "--name=a --direct --rw=read job.fio",
                4,
                "give it with --fio",
            ),
            ("--name=a --rw bogus", 2, "rw=bogus"),
            ("--name=a -v", 2, "short options"),
            ("--name= --rw=read", 1, "needs a value"),
        ] {
            let e = import_command_line(&argv(cmd), &args()).expect_err(cmd);
            assert_eq!(e.line, Some(at), "{cmd}: {e}");
            assert!(e.to_string().contains(needle), "{cmd}: {e}");
        }
        let e = import_command_line(&argv("fio --rw=read --size=1m"), &args()).expect_err("no job");
        assert!(e.to_string().contains("no job"), "{e}");
    }

    #[test]
    fn a_value_may_follow_its_option_after_a_space() {
        // getopt reads `--rw randread` as `--rw=randread`; a flag keeps no
        // value when an option follows it.
        let spaced = import_command_line(
            &argv("fio --name a --rw randread --bs 8k --direct --runtime 1"),
            &args(),
        )
        .expect("spaced values");
        let joined = import_command_line(
            &argv("fio --name=a --rw=randread --bs=8k --direct --runtime=1"),
            &args(),
        )
        .expect("joined values");
        assert_eq!(spaced.scenario.jobs, joined.scenario.jobs);
        let a = io(&spaced.scenario.jobs[0]);
        assert_eq!((a.rw, a.bs, a.direct), (Rw::RandRead, 8192, true));
    }

    #[test]
    fn values_are_taken_whole() {
        // No comments on a command line: a '#' or ';' is part of the value.
        let cmd = vec![
            "--name=a".to_string(),
            "--description=disk #1; the fast one".to_string(),
            "--runtime=1".to_string(),
        ];
        let imp = import_command_line(&cmd, &args()).expect("a description");
        assert_eq!(imp.scenario.duration, 1_000_000_000);
    }
}
