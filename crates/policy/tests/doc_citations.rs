//! The specifications this crate implements are in the repository, and the
//! citations of them resolve: every upper-case document (`MODEL.md`) that
//! a source file, a scenario or a document names exists (in `docs/` or at the root), and
//! every "ALGORITHMS.md section N" names a section that docs/ALGORITHMS.md
//! has. A moved or renumbered section fails here rather than leaving
//! comments that point nowhere.

use std::fs;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Text files under `dir` (sources, documents, scenarios, C examples),
/// skipping build output.
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("readable directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            text_files(&path, out);
        } else if path.extension().is_some_and(|e| {
            ["rs", "md", "toml", "c", "h", "fio"]
                .iter()
                .any(|x| e == *x)
        }) {
            out.push(path);
        }
    }
}

/// The upper-case document names of `text` (`ALGORITHMS.md`,
/// `HOST-COSTS.md`), each with the text that follows it.
fn cited_names(text: &str) -> Vec<(&str, &str)> {
    let mut found = Vec::new();
    let mut search = 0;
    while let Some(at) = text[search..].find(".md") {
        let end = search + at;
        let start = text[..end]
            .rfind(|c: char| {
                !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '-' || c == '_')
            })
            .map_or(0, |i| i + 1);
        let name = &text[start..end];
        let after = &text[end + 3..];
        let word_ends = !after.starts_with(|c: char| c.is_ascii_alphanumeric());
        if name.starts_with(|c: char| c.is_ascii_uppercase()) && word_ends {
            found.push((name, after));
        }
        search = end + 3;
    }
    found
}

/// The section numbers docs/ALGORITHMS.md has (`## N. Title`).
fn algorithm_sections(root: &Path) -> Vec<u32> {
    let text = fs::read_to_string(root.join("docs/ALGORITHMS.md")).expect("docs/ALGORITHMS.md");
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .filter_map(|l| l.split_once(". "))
        .filter_map(|(n, _)| n.parse().ok())
        .collect()
}

/// The number after "section " or "sections " at the start of `after`.
fn section_cited(after: &str) -> Option<u32> {
    let rest = after.trim_start();
    let rest = rest
        .strip_prefix("sections ")
        .or_else(|| rest.strip_prefix("section "))?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn every_cited_document_and_section_exists() {
    let root = repo_root();
    let mut files = Vec::new();
    for dir in ["crates", "docs", "scenarios"] {
        text_files(&root.join(dir), &mut files);
    }
    files.push(root.join("README.md"));
    let sections = algorithm_sections(&root);
    assert!(
        sections.len() >= 8,
        "docs/ALGORITHMS.md sections: {sections:?}"
    );

    let mut missing = Vec::new();
    let mut checked = 0;
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue; // not UTF-8 (an image, a binary fixture)
        };
        for (name, after) in cited_names(&text) {
            checked += 1;
            let doc = format!("{name}.md");
            let in_docs = root.join("docs").join(&doc).is_file();
            let at_root = root.join(&doc).is_file();
            let beside = file.parent().is_some_and(|d| d.join(&doc).is_file());
            if !(in_docs || at_root || beside) {
                missing.push(format!("{}: {doc}", file.display()));
            }
            if name == "ALGORITHMS" {
                if let Some(n) = section_cited(after) {
                    if !sections.contains(&n) {
                        missing.push(format!("{}: {doc} section {n}", file.display()));
                    }
                }
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} citations found: is the scan broken?"
    );
    assert!(
        missing.is_empty(),
        "cited but not in the repository: {missing:#?}"
    );
}

#[test]
fn the_scan_finds_names_and_sections() {
    let text = "see docs/ALGORITHMS.md section 4, MODEL.md's rules, `README.md`, x.md";
    let names: Vec<_> = cited_names(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["ALGORITHMS", "MODEL", "README"]);
    assert_eq!(section_cited(cited_names(text)[0].1), Some(4));
    assert_eq!(section_cited(" sections 2-4"), Some(2));
    assert_eq!(section_cited(", the"), None);
}
