//! The job file's syntax: sections, `key=value` lines and bare flags,
//! comments and `${VAR}` expansion, read the way fio reads them. What an
//! option means is not decided here (see `options`).

use std::collections::BTreeMap;

use super::FioError;

/// One option line: `key=value`, or a bare `key`.
#[derive(Clone, Debug)]
pub(super) struct Opt {
    pub(super) key: String,
    pub(super) value: Option<String>,
    pub(super) line: usize,
}

/// A `[name]` header and the options under it.
pub(super) struct Section {
    pub(super) name: String,
    pub(super) line: usize,
    pub(super) options: Vec<Opt>,
}

fn strip_comment(line: &str) -> &str {
    // fio (strip_blank_end in parse.c) cuts every line at its first ';'
    // or '#', wherever it stands: `bs=4k;4 KiB blocks` is `bs=4k`, and
    // neither character can be part of a value. Reading the file the way
    // fio does means a job file means the same thing to both.
    line.find([';', '#']).map_or(line, |i| &line[..i])
}

/// fio's `${VAR}` expansion from the environment (or `vars`); a variable
/// that is not set is an error naming it.
fn expand_vars(line: &str, vars: Option<&BTreeMap<String, String>>) -> Result<String, String> {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("'${{' without a closing '}}' in '{line}'"))?;
        let name = &after[..end];
        let value = match vars {
            Some(v) => v.get(name).cloned(),
            None => std::env::var(name).ok(),
        };
        match value {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "'${{{name}}}' is not set (fio takes it from the environment)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The sections of `text` in file order; `file` names it in errors.
pub(super) fn parse(
    text: &str,
    file: &str,
    vars: Option<&BTreeMap<String, String>>,
) -> Result<Vec<Section>, FioError> {
    let err = |line: usize, message: String| FioError::at_line(file, line, message);
    let mut sections: Vec<Section> = Vec::new();
    for (idx, raw) in text.lines().enumerate() {
        let line_no = idx + 1;
        let expanded = expand_vars(strip_comment(raw), vars).map_err(|m| err(line_no, m))?;
        let line = expanded.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            let name = rest
                .strip_suffix(']')
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| err(line_no, format!("malformed section header '{line}'")))?;
            sections.push(Section {
                name: name.into(),
                line: line_no,
                options: Vec::new(),
            });
            continue;
        }
        if line.starts_with("include ") {
            return Err(err(
                line_no,
                "'include' is not supported; inline the included file".into(),
            ));
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (line, None),
        };
        if key.is_empty() || key.contains(char::is_whitespace) {
            return Err(err(line_no, format!("cannot read '{line}' as key=value")));
        }
        let section = sections
            .last_mut()
            .ok_or_else(|| err(line_no, format!("option '{key}' before any [section]")))?;
        section.options.push(Opt {
            key: key.into(),
            value,
            line: line_no,
        });
    }
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::super::import_str;
    use super::super::test_support::{args, io};
    use super::*;
    use cint_scenario::{Engine, Rw};

    #[test]
    fn a_comment_starts_at_the_first_semicolon_or_hash_anywhere() {
        assert_eq!(strip_comment("filename=/tmp/a#b ; x"), "filename=/tmp/a");
        assert_eq!(strip_comment("bs=4k;4 KiB blocks"), "bs=4k");
        assert_eq!(strip_comment("iodepth=32#deep"), "iodepth=32");
        assert_eq!(strip_comment("[job];first"), "[job]");
        assert_eq!(strip_comment("# all"), "");
        assert_eq!(strip_comment("rw=randread"), "rw=randread");
    }

    #[test]
    fn comments_without_a_space_before_them_are_cut_as_fio_does() {
        let text = "[global];shared\nioengine=libaio#async\nbs=4k;4 KiB blocks\n\
                    runtime=10ms;short\n[qd8]#deeper\niodepth=8;eight\nrw=randread#random\n";
        let imp = import_str(text, "c.fio", &args()).expect("the comments are not values");
        let s = &imp.scenario;
        assert_eq!(s.duration, 10_000_000);
        assert_eq!(s.jobs.len(), 1);
        assert_eq!(s.jobs[0].name, "qd8");
        let a = io(&s.jobs[0]);
        assert_eq!(
            (a.engine, a.rw, a.bs, a.iodepth),
            (Engine::Libaio, Rw::RandRead, 4096, 8)
        );
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn variables_expand_from_the_environment_or_are_refused() {
        let mut a = args();
        a.vars = Some(
            [("DEPTH".to_string(), "16".to_string())]
                .into_iter()
                .collect(),
        );
        let text = "[j]\nioengine=libaio\niodepth=${DEPTH}\nrw=${PATTERN}\n";
        let e = import_str(text, "v.fio", &a).expect_err("PATTERN is not set");
        assert_eq!(e.line, Some(4));
        assert!(e.to_string().contains("'${PATTERN}' is not set"), "{e}");
        assert!(!e.to_string().contains('\n'));
        a.vars
            .as_mut()
            .map(|v| v.insert("PATTERN".into(), "randread".into()));
        let s = import_str(text, "v.fio", &a).expect("both set").scenario;
        assert_eq!(
            (io(&s.jobs[0]).iodepth, io(&s.jobs[0]).rw),
            (16, Rw::RandRead)
        );
    }
}
