//! `--set KEY=VALUE`: dotted-path overrides applied to the document before
//! validation, so a bad value is refused by the same checks as in the
//! file, with the `--set` argument as its origin.
//!
//! Paths: `duration`, `device.parallel_units`, `device.read.base`;
//! `strategy.NAME.KEY`, `job.NAME.KEY`, `app.NAME.KEY` and
//! `guest.NAME.KEY` pick the `[[strategy]]`, `[[job]]`, `[[app]]` or
//! `[[guest]]` whose `name` is NAME. Missing tables and keys are created
//! (validation then refuses keys that do not exist).

use crate::error::{Origin, ScenarioError};
use crate::tree::{parse_set_value, Node, Table, Value};

/// The sections made of `[[...]]` elements addressed by name.
const NAMED_ARRAYS: &[&str] = &["strategy", "job", "app", "guest", "sched_group"];

/// The dotted key a `--set KEY=VALUE` argument sets, as [`apply`] reads
/// it (spaces around the key and its dots are not part of it); `None`
/// without an `=`.
///
/// ```
/// assert_eq!(cint_scenario::set_key(" duration = 5s").as_deref(), Some("duration"));
/// assert_eq!(cint_scenario::set_key("job. a .bs=4k").as_deref(), Some("job.a.bs"));
/// ```
pub fn set_key(arg: &str) -> Option<String> {
    let (path, _) = arg.split_once('=')?;
    Some(path.split('.').map(str::trim).collect::<Vec<_>>().join("."))
}

/// Applies one `--set` argument to the document.
pub(crate) fn apply(root: &mut Table, arg: &str, source: &str) -> Result<(), ScenarioError> {
    let origin = Origin::Set(arg.to_string());
    let err = |key: &str, message: String| ScenarioError {
        source: source.to_string(),
        origin: origin.clone(),
        key: key.to_string(),
        message,
    };
    let Some((path, value)) = arg.split_once('=') else {
        return Err(err(
            "",
            "expected KEY=VALUE, e.g. job.async.iodepth=64".into(),
        ));
    };
    let path = path.trim();
    let segments: Vec<&str> = path.split('.').map(str::trim).collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(err(path, "empty key in the dotted path".into()));
    }
    let node = parse_set_value(value.trim(), origin.clone());

    let (table, rest) = if NAMED_ARRAYS.contains(&segments[0]) {
        let section = segments[0];
        if segments.len() < 3 {
            return Err(err(
                path,
                format!("expected {section}.NAME.KEY, naming a [[{section}]] by its name"),
            ));
        }
        let wanted = segments[1];
        let elements = match root.iter_mut().find(|(k, _)| k == section) {
            Some((
                _,
                Node {
                    value: Value::Array(items),
                    ..
                },
            )) => items,
            _ => return Err(err(path, format!("the scenario has no [[{section}]]"))),
        };
        let names: Vec<String> = elements.iter().filter_map(element_name).collect();
        let Some(element) = elements
            .iter_mut()
            .find(|n| element_name(n).as_deref() == Some(wanted))
        else {
            return Err(err(
                path,
                format!(
                    "no [[{section}]] named \"{wanted}\" (names: {})",
                    names.join(", ")
                ),
            ));
        };
        let Value::Table(t) = &mut element.value else {
            return Err(err(
                path,
                format!("[[{section}]] \"{wanted}\" is not a table"),
            ));
        };
        (t, &segments[2..])
    } else {
        (root, &segments[..])
    };
    insert(table, rest, node).map_err(|at| {
        err(
            path,
            format!("cannot set a key inside `{at}`: it is not a table"),
        )
    })
}

fn element_name(node: &Node) -> Option<String> {
    match &node.value {
        Value::Table(t) => match crate::tree::get(t, "name").map(|n| &n.value) {
            Some(Value::Str(s)) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Sets `path` (non-empty) in `table`, creating tables on the way.
/// On failure returns the segment that is not a table.
fn insert(table: &mut Table, path: &[&str], node: Node) -> Result<(), String> {
    let (first, rest) = path.split_first().ok_or_else(String::new)?;
    if rest.is_empty() {
        match table.iter_mut().find(|(k, _)| k == first) {
            Some((_, old)) => *old = node,
            None => table.push((first.to_string(), node)),
        }
        return Ok(());
    }
    if !table.iter().any(|(k, _)| k == first) {
        table.push((
            first.to_string(),
            Node {
                value: Value::Table(Vec::new()),
                origin: node.origin.clone(),
            },
        ));
    }
    match table.iter_mut().find(|(k, _)| k == first) {
        Some((
            _,
            Node {
                value: Value::Table(inner),
                ..
            },
        )) => insert(inner, rest, node),
        _ => Err(first.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{get, parse};

    const DOC: &str = "name = \"x\"\n[[strategy]]\nname = \"cint\"\nkind = \"cinterrupts\"\n[[job]]\nname = \"async\"\niodepth = 16\n";

    fn job_iodepth(t: &Table) -> Node {
        let Value::Array(jobs) = &get(t, "job").unwrap().value else {
            panic!()
        };
        let Value::Table(j) = &jobs[0].value else {
            panic!()
        };
        get(j, "iodepth").unwrap().clone()
    }

    #[test]
    fn overrides_replace_values_and_take_the_set_origin() {
        let mut t = parse(DOC, "f").unwrap();
        apply(&mut t, "job.async.iodepth=64", "f").unwrap();
        let n = job_iodepth(&t);
        assert_eq!(n.value, Value::Int(64));
        assert_eq!(n.origin, Origin::Set("job.async.iodepth=64".into()));
        apply(&mut t, "device.read.base=5us", "f").unwrap();
        let Value::Table(d) = &get(&t, "device").unwrap().value else {
            panic!()
        };
        let Value::Table(r) = &get(d, "read").unwrap().value else {
            panic!()
        };
        assert_eq!(get(r, "base").unwrap().value, Value::Str("5us".into()));
    }

    #[test]
    fn bad_targets_are_refused() {
        let mut t = parse(DOC, "f").unwrap();
        for (arg, needle) in [
            ("job.nosuch.iodepth=1", "no [[job]] named \"nosuch\""),
            ("strategy.cint=1", "expected strategy.NAME.KEY"),
            ("iodepth", "expected KEY=VALUE"),
            ("name.inner=3", "not a table"),
            ("job..x=1", "empty key"),
        ] {
            let e = apply(&mut t, arg, "f").unwrap_err();
            assert_eq!(e.origin, Origin::Set(arg.into()));
            assert!(e.to_string().contains(needle), "{arg}: {e}");
        }
    }
}
