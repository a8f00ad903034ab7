//! Generic overrides of serde structs: a built-in profile is serialized to
//! a TOML table, the user's keys are laid over it one by one, and the
//! result is deserialized back. A field added to a profile becomes a
//! scenario key with no change here; a key the struct lacks is refused.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::{Origin, ScenarioError};
use crate::tree::{Node, Table, Value};
use crate::wording;

/// One user value to lay over the base, with its path below the section.
struct Leaf<'a> {
    path: Vec<&'a str>,
    node: &'a Node,
}

/// Lays `user` (minus the keys in `skip`) over `base` and deserializes
/// the result. `section` names the table in messages (`device`, `host`).
pub(crate) fn overlay<P: Serialize + DeserializeOwned>(
    source: &str,
    section: &str,
    base: &P,
    user: &[(String, Node)],
    skip: &[&str],
) -> Result<P, ScenarioError> {
    let err = |path: &[&str], origin: &Origin, message: String| ScenarioError {
        source: source.to_string(),
        origin: origin.clone(),
        key: std::iter::once(section)
            .chain(path.iter().copied())
            .collect::<Vec<_>>()
            .join("."),
        message,
    };
    let mut root = match toml::Value::try_from(base) {
        Ok(toml::Value::Table(t)) => t,
        // Serializing a plain struct to a table cannot fail; report it as
        // a refusal rather than a panic in case a future field breaks it.
        _ => {
            return Err(err(
                &[],
                &Origin::File,
                "internal error: the built-in profile does not serialize to a table".into(),
            ))
        }
    };
    let mut leaves = Vec::new();
    collect(user, &root, Vec::new(), skip, &mut leaves)
        .map_err(|(path, origin, msg)| err(&path, &origin, msg))?;
    for leaf in leaves {
        if !set_path(&mut root, &leaf.path, leaf.node.value.to_toml()) {
            return Err(err(
                &leaf.path,
                &leaf.node.origin,
                "not a table in the profile".into(),
            ));
        }
        if let Err(e) = toml::Value::Table(root.clone()).try_into::<P>() {
            if let Some((at, node, message)) = in_array::<P>(&root, &leaf) {
                let mut path = leaf.path.clone();
                let last = format!("{}{at}", path.pop().unwrap_or_default());
                let message = wording::from_serde(&message, &node.value);
                return Err(err(&[path, vec![&last]].concat(), &node.origin, message));
            }
            let message = wording::from_serde(e.message(), &leaf.node.value);
            return Err(err(&leaf.path, &leaf.node.origin, message));
        }
    }
    toml::Value::Table(root)
        .try_into::<P>()
        .map_err(|e| err(&[], &Origin::File, e.message().to_string()))
}

/// Where in an array of tables (`idle_states = [{...}, ...]`) the value
/// that `root` cannot take is: `[i]` or `[i].key`, its node and serde's
/// message about it. The first element that fails alone with those
/// before it is the one; within it, the key whose removal changes the
/// message (a value of the wrong type becomes a missing key, or the
/// error goes). `None` when the leaf is not such an array.
fn in_array<'a, P: DeserializeOwned>(
    root: &toml::Table,
    leaf: &Leaf<'a>,
) -> Option<(String, &'a Node, String)> {
    let Value::Array(items) = &leaf.node.value else {
        return None;
    };
    // Only an array of tables has elements to blame; a list given for a
    // scalar or a table is refused whole.
    if items.is_empty() || !items.iter().all(|n| matches!(n.value, Value::Table(_))) {
        return None;
    }
    let fails = |value: toml::Value| {
        let mut probe = root.clone();
        set_path(&mut probe, &leaf.path, value);
        toml::Value::Table(probe)
            .try_into::<P>()
            .err()
            .map(|e| e.message().to_string())
    };
    let as_toml =
        |items: &[Node]| toml::Value::Array(items.iter().map(|n| n.value.to_toml()).collect());
    let (i, message) =
        (0..items.len()).find_map(|i| fails(as_toml(&items[..=i])).map(|m| (i, m)))?;
    let item = &items[i];
    let Value::Table(fields) = &item.value else {
        return Some((format!("[{i}]"), item, message));
    };
    // A missing key is the element's; removing another would only
    // change which one serde names.
    if message.starts_with("missing field") {
        return Some((format!("[{i}]"), item, message));
    }
    for (key, node) in fields {
        let without: toml::Table = fields
            .iter()
            .filter(|(k, _)| k != key)
            .map(|(k, n)| (k.clone(), n.value.to_toml()))
            .collect();
        let mut trial = items[..i]
            .iter()
            .map(|n| n.value.to_toml())
            .collect::<Vec<_>>();
        trial.push(toml::Value::Table(without));
        if fails(toml::Value::Array(trial)).as_deref() != Some(message.as_str()) {
            return Some((format!("[{i}].{key}"), node, message));
        }
    }
    Some((format!("[{i}]"), item, message))
}

/// Stores `value` at `path` (whose parents `collect` found to be tables);
/// false if the path does not lead through tables.
fn set_path(root: &mut toml::Table, path: &[&str], value: toml::Value) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut table = root;
    for p in parents {
        match table.get_mut(*p) {
            Some(toml::Value::Table(t)) => table = t,
            _ => return false,
        }
    }
    table.insert((*last).to_string(), value);
    true
}

type Refusal<'a> = (Vec<&'a str>, Origin, String);

fn collect<'a>(
    user: &'a [(String, Node)],
    base: &toml::Table,
    prefix: Vec<&'a str>,
    skip: &[&str],
    out: &mut Vec<Leaf<'a>>,
) -> Result<(), Refusal<'a>> {
    for (key, node) in user {
        if prefix.is_empty() && skip.contains(&key.as_str()) {
            continue;
        }
        let mut path = prefix.clone();
        path.push(key.as_str());
        match (base.get(key.as_str()), &node.value) {
            (None, _) => {
                let valid: Vec<&str> = base.keys().map(String::as_str).collect();
                return Err((
                    path,
                    node.origin.clone(),
                    format!("unknown key (valid keys: {})", valid.join(", ")),
                ));
            }
            (Some(toml::Value::Table(inner)), Value::Table(user_inner)) => {
                collect(user_inner, inner, path, &[], out)?;
            }
            _ => out.push(Leaf { path, node }),
        }
    }
    Ok(())
}

/// Deserializes a section whose struct has serde defaults (like `[emu]`),
/// trying each key alone first so a refusal names its key and line.
pub(crate) fn defaults_with<P: DeserializeOwned>(
    source: &str,
    section: &str,
    user: &Table,
) -> Result<P, ScenarioError> {
    for (key, node) in user {
        let mut single = toml::Table::new();
        single.insert(key.clone(), node.value.to_toml());
        if let Err(e) = toml::Value::Table(single).try_into::<P>() {
            return Err(ScenarioError {
                source: source.to_string(),
                origin: node.origin.clone(),
                key: format!("{section}.{key}"),
                message: wording::from_serde(e.message(), &node.value),
            });
        }
    }
    let whole: toml::Table = user
        .iter()
        .map(|(k, n)| (k.clone(), n.value.to_toml()))
        .collect();
    toml::Value::Table(whole)
        .try_into::<P>()
        .map_err(|e| ScenarioError {
            source: source.to_string(),
            origin: Origin::File,
            key: section.to_string(),
            message: e.message().to_string(),
        })
}

/// A `[section.key]` table given for a profile without that data
/// (`what`, e.g. "power data"): the overlay has nothing to lay it over,
/// so say why, and which built-in profiles (`with`) have it, rather than
/// "unknown key".
pub(crate) fn refuse_without_base(
    source: &str,
    (section, model): (&str, &str),
    user: &[(String, Node)],
    (key, what): (&str, &str),
    with: &[&str],
) -> Result<(), ScenarioError> {
    match user.iter().find(|(k, _)| k == key) {
        None => Ok(()),
        Some((_, node)) => Err(ScenarioError {
            source: source.to_string(),
            origin: node.origin.clone(),
            key: format!("{section}.{key}"),
            message: format!(
                "the {section} profile \"{model}\" has no {what} to override (profiles with \
                 it: {})",
                with.join(", ")
            ),
        }),
    }
}
