//! serde's refusals in the house wording. Profiles and the `[emu]` section
//! are read through serde, whose messages name Rust types ("invalid value:
//! integer `-1`, expected u32", "unknown variant `cauchy`"); a scenario's
//! author should read the same phrases the hand-written checks use ("must
//! be a whole number from 0 to 4294967295 (got -1)", "must be one of ...").
//! Messages that are not serde's generic ones (our own units' refusals)
//! pass through unchanged.

use crate::section::quoted_list;
use crate::tree::Value;

/// `message` (a serde error about `got`) in the house wording.
pub(crate) fn from_serde(message: &str, got: &Value) -> String {
    let message = message.trim();
    if let Some(rest) = message.strip_prefix("unknown variant ") {
        let (variant, expected) = split_expected(rest);
        let allowed = backticked(expected);
        let variant = variant.trim_matches('`');
        return if allowed.is_empty() {
            format!("unknown value \"{variant}\"")
        } else {
            format!(
                "must be one of {} (got \"{variant}\")",
                quoted_list(&allowed)
            )
        };
    }
    if let Some(rest) = message.strip_prefix("missing field ") {
        return format!("the key {} is missing", rest.trim_matches('`'));
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        let (_, expected) = split_expected(rest);
        let valid = backticked(expected);
        return if valid.is_empty() {
            "unknown key (this table takes no keys)".to_string()
        } else {
            format!("unknown key (valid keys: {})", valid.join(", "))
        };
    }
    let (kind, rest) = if let Some(rest) = message.strip_prefix("invalid value: ") {
        (Problem::Value, rest)
    } else if let Some(rest) = message.strip_prefix("invalid type: ") {
        (Problem::Type, rest)
    } else {
        return message.to_string();
    };
    let (_, expected) = split_expected(rest);
    // `--set` keeps a number beyond TOML's integers as a string: out of
    // range, not of the wrong type (and TOML stops at i64's largest).
    if let (Value::Str(s), Some((0, max))) = (got, int_range(expected.trim())) {
        if crate::section::is_big_whole_number(s) {
            return format!("must be at most {} (got {s})", max.min(i64::MAX.into()));
        }
    }
    let want = describe_expected(expected.trim());
    let got = match (kind, got) {
        (Problem::Value, Value::Int(i)) => i.to_string(),
        (Problem::Value, Value::Str(s)) => format!("\"{s}\""),
        _ => got.type_name().to_string(),
    };
    format!("must be {want} (got {got})")
}

#[derive(Clone, Copy)]
enum Problem {
    Value,
    Type,
}

/// Splits `X, expected Y` (serde's layout) into `X` and `Y`.
fn split_expected(s: &str) -> (&str, &str) {
    match s.rfind(", expected ") {
        Some(i) => (&s[..i], &s[i + ", expected ".len()..]),
        None => (s, ""),
    }
}

/// The words serde quotes with backticks (`one of `a`, `b``).
fn backticked(s: &str) -> Vec<&str> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, w)| w)
        .collect()
}

/// The range of serde's integer type named `expected`, if it is one.
fn int_range(expected: &str) -> Option<(i128, i128)> {
    Some(match expected {
        "u8" => (0, u8::MAX.into()),
        "u16" => (0, u16::MAX.into()),
        "u32" => (0, u32::MAX.into()),
        "u64" | "usize" => (0, u64::MAX.into()),
        "i8" => (i8::MIN.into(), i8::MAX.into()),
        "i16" => (i16::MIN.into(), i16::MAX.into()),
        "i32" => (i32::MIN.into(), i32::MAX.into()),
        "i64" | "isize" => (i64::MIN.into(), i64::MAX.into()),
        _ => return None,
    })
}

/// serde's "expected" phrase as the house says it.
fn describe_expected(expected: &str) -> String {
    if let Some((min, max)) = int_range(expected) {
        return format!("a whole number from {min} to {max}");
    }
    match expected {
        "a boolean" => "true or false".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "" => "a valid value".to_string(),
        // A Rust type's name says nothing to a scenario's author.
        other if other.starts_with("struct ") || other.starts_with("map") => "a table".to_string(),
        "a sequence" => "a list".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serde_phrases_become_house_phrases() {
        let cases = [
            (
                "invalid value: integer `-1`, expected u32",
                Value::Int(-1),
                "must be a whole number from 0 to 4294967295 (got -1)",
            ),
            (
                "invalid type: string \"many\", expected u32",
                Value::Str("many".into()),
                "must be a whole number from 0 to 4294967295 (got a string)",
            ),
            (
                "invalid type: floating point `1.5`, expected a boolean",
                Value::Float(1.5),
                "must be true or false (got a float)",
            ),
            (
                "unknown variant `cauchy`, expected one of `none`, `normal`, `lognormal`, \
                 `exponential`",
                Value::Str("cauchy".into()),
                "must be one of \"none\", \"normal\", \"lognormal\" or \"exponential\" \
                 (got \"cauchy\")",
            ),
            (
                "unknown variant `x`, expected `a` or `b`",
                Value::Str("x".into()),
                "must be one of \"a\" or \"b\" (got \"x\")",
            ),
            (
                "unknown field `bogus`, expected one of `backend`, `path`",
                Value::Int(1),
                "unknown key (valid keys: backend, path)",
            ),
            (
                "invalid type: string \"18446744073709551615\", expected u64",
                Value::Str("18446744073709551615".into()),
                "must be at most 9223372036854775807 (got 18446744073709551615)",
            ),
            (
                "missing field `power_w`",
                Value::Int(1),
                "the key power_w is missing",
            ),
            (
                "invalid type: integer `5`, expected struct PageCacheProfile",
                Value::Int(5),
                "must be a table (got an integer)",
            ),
            (
                "bad duration: '1h' has unknown duration unit 'h'",
                Value::Str("1h".into()),
                "bad duration: '1h' has unknown duration unit 'h'",
            ),
        ];
        for (serde, got, house) in cases {
            assert_eq!(from_serde(serde, &got), house, "{serde}");
        }
    }
}
