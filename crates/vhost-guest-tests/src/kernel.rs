//! The guest kernel: a Debian cloud kernel package extracted (never
//! installed) by `.ci/deps/qemu-guest.sh`, and the modules the test needs
//! from it with their dependencies.

use crate::error::{Error, Result};
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Where `.ci/deps/qemu-guest.sh` extracts the kernel package when
/// `CINT_GUEST_KERNEL_DIR` does not say otherwise.
pub const DEFAULT_KERNEL_DIR: &str = "/var/cache/cint-guest/root";

/// The modules a guest needs to see a vhost-user-blk disk (the cloud
/// kernel builds virtio as modules); their dependencies are added.
pub const NEEDED_MODULES: &[&str] = &["virtio_pci", "virtio_blk"];

/// An extracted kernel package.
#[derive(Debug, Clone)]
pub struct Kernel {
    /// The kernel image to boot.
    pub vmlinuz: PathBuf,
    /// `lib/modules/<version>` of the same package.
    pub modules: PathBuf,
}

/// The folder the kernel package is extracted into.
pub fn kernel_dir() -> PathBuf {
    std::env::var_os("CINT_GUEST_KERNEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_KERNEL_DIR))
}

/// Finds the kernel image and its modules under an extracted package root.
pub fn locate(root: &Path) -> Result<Kernel> {
    let missing = || {
        Error::Missing(format!(
            "guest kernel under {} (run .ci/deps/qemu-guest.sh, or set CINT_GUEST_KERNEL_DIR)",
            root.display()
        ))
    };
    let boot = root.join("boot");
    let entries = fs::read_dir(&boot).map_err(|_| missing())?;
    let mut images: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("vmlinuz-"))
        })
        .collect();
    images.sort();
    let vmlinuz = images.pop().ok_or_else(missing)?;
    let version = vmlinuz
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("vmlinuz-"))
        .ok_or_else(missing)?
        .to_string();
    let modules = root.join("lib/modules").join(&version);
    if !modules.join("kernel").is_dir() {
        return Err(missing());
    }
    Ok(Kernel { vmlinuz, modules })
}

/// A module's name as the kernel spells it (`-` and `_` are the same).
fn module_name(path: &Path) -> Option<String> {
    let file = path.file_name()?.to_str()?;
    Some(file.strip_suffix(".ko")?.replace('-', "_"))
}

/// The `depends=` entry of a module's `.modinfo` section: the modules that
/// must be loaded before it.
pub fn module_depends(ko: &[u8]) -> Vec<String> {
    const KEY: &[u8] = b"\0depends=";
    let Some(at) = ko.windows(KEY.len()).position(|w| w == KEY) else {
        return Vec::new();
    };
    let value = &ko[at + KEY.len()..];
    let end = value.iter().position(|&b| b == 0).unwrap_or(value.len());
    String::from_utf8_lossy(&value[..end])
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.replace('-', "_"))
        .collect()
}

/// The module files for `wanted` and everything they depend on, in an
/// order `insmod` can load them (dependencies first).
pub fn module_closure(modules_dir: &Path, wanted: &[&str]) -> Result<Vec<PathBuf>> {
    let mut index = BTreeMap::new();
    let mut stack = vec![modules_dir.join("kernel")];
    while let Some(dir) = stack.pop() {
        let entries = fs::read_dir(&dir).map_err(|e| Error::io("reading", &dir, e))?;
        for entry in entries {
            let path = entry.map_err(|e| Error::io("reading", &dir, e))?.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Some(name) = module_name(&path) {
                index.insert(name, path);
            }
        }
    }
    let mut order = Vec::new();
    let mut done = HashSet::new();
    for name in wanted {
        visit(name, &index, &mut done, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

fn visit(
    name: &str,
    index: &BTreeMap<String, PathBuf>,
    done: &mut HashSet<String>,
    path: &mut Vec<String>,
    order: &mut Vec<PathBuf>,
) -> Result<()> {
    if done.contains(name) {
        return Ok(());
    }
    if path.iter().any(|p| p == name) {
        return Err(Error::Failed(format!(
            "module dependency cycle: {} -> {name}",
            path.join(" -> ")
        )));
    }
    let file = index.get(name).ok_or_else(|| {
        Error::Missing(format!(
            "kernel module {name} (is the package's lib/modules compressed or incomplete?)"
        ))
    })?;
    let bytes = fs::read(file).map_err(|e| Error::io("reading", file, e))?;
    path.push(name.to_string());
    for dep in module_depends(&bytes) {
        visit(&dep, index, done, path, order)?;
    }
    path.pop();
    done.insert(name.to_string());
    order.push(file.clone());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depends_are_read_from_modinfo() {
        let ko = b"\x7fELF...\0license=GPL\0depends=virtio,virtio_ring\0vermagic=6.1\0";
        assert_eq!(module_depends(ko), vec!["virtio", "virtio_ring"]);
        assert!(module_depends(b"\0depends=\0name=x\0").is_empty());
        assert!(module_depends(b"no modinfo here").is_empty());
    }

    #[test]
    fn closure_loads_dependencies_first() {
        let dir = tempfile::tempdir().unwrap();
        let k = dir.path().join("kernel/drivers");
        fs::create_dir_all(&k).unwrap();
        fs::write(k.join("a.ko"), b"\0depends=b,c\0").unwrap();
        fs::write(k.join("b.ko"), b"\0depends=c\0").unwrap();
        fs::write(k.join("c.ko"), b"\0depends=\0").unwrap();
        let order = module_closure(dir.path(), &["a"]).unwrap();
        let names: Vec<_> = order.iter().filter_map(|p| module_name(p)).collect();
        assert_eq!(names, vec!["c", "b", "a"]);
        fs::write(k.join("c.ko"), b"\0depends=a\0").unwrap();
        assert!(matches!(
            module_closure(dir.path(), &["a"]),
            Err(Error::Failed(_))
        ));
    }
}
