//! From the `ioprio` field of a virtio-blk request header to a policy
//! [`Hint`].
//!
//! Linux puts `req->ioprio` into the header unchanged: bits 13..15 are the
//! class (`IOPRIO_CLASS_RT` = 1, `BE` = 2, `IDLE` = 3, 0 = none), bits
//! 3..12 the 6.x hint field (`IOPRIO_HINT_DEV_DURATION_LIMIT_1..7` = 1..7),
//! bits 0..2 the level. A hint entry of the map, when the request carries
//! that hint, takes precedence over the class entry.

use cint_policy::Hint;

use crate::error::VhostError;

/// Number of 6.x ioprio hint values with a name (`hint1` .. `hint7`).
pub const NAMED_HINTS: usize = 7;

const CLASS_SHIFT: u32 = 13;
const HINT_SHIFT: u32 = 3;
const HINT_MASK: u32 = 0x3ff;

/// How each ioprio class and hint value maps to a policy hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HintMap {
    /// Indexed by class: none (0), rt (1), be (2), idle (3).
    classes: [Hint; 4],
    /// Indexed by hint value - 1; `None` defers to the class.
    hints: [Option<Hint>; NAMED_HINTS],
}

impl Default for HintMap {
    /// RT class means Urgent; the tightest duration-limit hint
    /// (`hint1`) means Urgent and the next (`hint2`) Barrier; everything
    /// else is unmarked.
    fn default() -> Self {
        let mut hints = [None; NAMED_HINTS];
        hints[0] = Some(Hint::Urgent);
        hints[1] = Some(Hint::Barrier);
        HintMap {
            classes: [Hint::Unmarked, Hint::Urgent, Hint::Unmarked, Hint::Unmarked],
            hints,
        }
    }
}

impl HintMap {
    /// Parses `--hint-map`: comma-separated `KEY=VALUE` where KEY is
    /// `none`, `rt`, `be`, `idle` or `hint1`..`hint7` and VALUE is
    /// `urgent`, `barrier` or `none`. Keys not given keep their default.
    pub fn parse(spec: &str) -> Result<HintMap, VhostError> {
        let mut map = HintMap::default();
        let bad = |what: String| VhostError::bad(format!("--hint-map {spec}: {what}"));
        if spec.trim().is_empty() {
            return Err(bad("empty (expected KEY=VALUE[,...])".into()));
        }
        let mut seen: Vec<&str> = Vec::new();
        for item in spec.split(',') {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| bad(format!("\"{item}\" is not KEY=VALUE")))?;
            // As --strategy refuses a key given twice: which one was meant?
            if seen.contains(&key.trim()) {
                return Err(bad(format!("{} is given twice", key.trim())));
            }
            seen.push(key.trim());
            let hint = match value.trim() {
                "urgent" => Hint::Urgent,
                "barrier" => Hint::Barrier,
                "none" => Hint::Unmarked,
                other => {
                    return Err(bad(format!(
                        "{key}: unknown value \"{other}\" (urgent, barrier or none)"
                    )))
                }
            };
            match key.trim() {
                "none" => map.classes[0] = hint,
                "rt" => map.classes[1] = hint,
                "be" => map.classes[2] = hint,
                "idle" => map.classes[3] = hint,
                k => {
                    let n = k
                        .strip_prefix("hint")
                        .and_then(|n| n.parse::<usize>().ok())
                        .filter(|n| (1..=NAMED_HINTS).contains(n))
                        .ok_or_else(|| {
                            bad(format!(
                                "unknown key \"{k}\" (none, rt, be, idle, hint1..hint{NAMED_HINTS})"
                            ))
                        })?;
                    map.hints[n - 1] = Some(hint);
                }
            }
        }
        Ok(map)
    }

    /// The policy hint of a request whose header carries `ioprio`.
    pub fn hint_of(&self, ioprio: u32) -> Hint {
        let hint = (ioprio >> HINT_SHIFT) & HINT_MASK;
        if (1..=NAMED_HINTS as u32).contains(&hint) {
            if let Some(h) = self.hints[hint as usize - 1] {
                return h;
            }
        }
        // Bits above the 16-bit ioprio are not Linux's; a class beyond
        // IDLE is not a class anyone defined: unmarked.
        match (ioprio >> CLASS_SHIFT) as usize {
            c @ 0..=3 => self.classes[c],
            _ => Hint::Unmarked,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prio(class: u32, hint: u32, level: u32) -> u32 {
        (class << CLASS_SHIFT) | (hint << HINT_SHIFT) | level
    }

    #[test]
    fn default_map_follows_class_then_hint() {
        let m = HintMap::default();
        assert_eq!(m.hint_of(prio(1, 0, 4)), Hint::Urgent);
        assert_eq!(m.hint_of(prio(2, 0, 4)), Hint::Unmarked);
        assert_eq!(m.hint_of(prio(3, 0, 0)), Hint::Unmarked);
        assert_eq!(m.hint_of(0), Hint::Unmarked);
        assert_eq!(m.hint_of(prio(2, 1, 0)), Hint::Urgent);
        assert_eq!(m.hint_of(prio(2, 2, 0)), Hint::Barrier);
        assert_eq!(
            m.hint_of(prio(1, 5, 0)),
            Hint::Urgent,
            "hint5 defers to class"
        );
        assert_eq!(m.hint_of(0xffff_ffff), Hint::Unmarked);
    }

    #[test]
    fn overrides_apply_and_others_keep_defaults() {
        let m = HintMap::parse("rt=none,be=barrier,hint1=barrier,hint3=urgent").unwrap();
        assert_eq!(m.hint_of(prio(1, 0, 0)), Hint::Unmarked);
        assert_eq!(m.hint_of(prio(2, 0, 0)), Hint::Barrier);
        assert_eq!(m.hint_of(prio(0, 1, 0)), Hint::Barrier);
        assert_eq!(m.hint_of(prio(0, 3, 0)), Hint::Urgent);
        assert_eq!(m.hint_of(prio(0, 2, 0)), Hint::Barrier);
    }

    #[test]
    fn malformed_maps_are_refused_with_the_option_named() {
        for bad in [
            "",
            "rt",
            "rt=fast",
            "hint0=urgent",
            "hint8=urgent",
            "gold=urgent",
            "rt=urgent,",
            "rt=urgent,rt=none",
        ] {
            let e = HintMap::parse(bad).unwrap_err();
            assert_eq!(e.exit_status(), 2);
            assert!(e.to_string().starts_with("--hint-map"), "{e}");
            assert!(!e.to_string().contains('\n'));
        }
    }
}
