//! The backing store of the virtual disk: a raw file, a block device, or
//! nothing at all (`null:SIZE`).

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::VhostError;
use crate::options::{ImageSpec, SECTOR};

/// `BLKGETSIZE64`: `_IOR(0x12, 114, size_t)`.
const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;

/// An opened image.
#[derive(Debug)]
pub struct Image {
    /// Size in bytes, a multiple of 512.
    pub size: u64,
    /// What is behind the disk.
    pub kind: ImageKind,
}

/// What is behind the disk.
#[derive(Debug)]
pub enum ImageKind {
    /// Reads return zeros, writes are dropped; no backing I/O.
    Null,
    /// A file or block device.
    File(BackingFile),
}

/// The descriptors of a backing file.
#[derive(Debug)]
pub struct BackingFile {
    /// Path, for messages.
    pub path: PathBuf,
    /// Opened with `O_DIRECT` when the file system allows it.
    pub direct: Option<File>,
    /// Opened without `O_DIRECT`: for requests whose buffers are not
    /// aligned for direct I/O, and for every request when the file system
    /// refused `O_DIRECT`.
    pub buffered: File,
    /// A block device (discard and write-zeroes are then not offered:
    /// `fallocate` on a block device needs a recent kernel).
    pub is_block_device: bool,
}

impl Image {
    /// Opens the image, checking that it exists and that its size is a
    /// non-zero multiple of 512 bytes.
    pub fn open(spec: &ImageSpec, read_only: bool) -> Result<Image, VhostError> {
        match spec {
            ImageSpec::Null(size) => Ok(Image {
                size: *size,
                kind: ImageKind::Null,
            }),
            ImageSpec::File(path) => open_file(path, read_only),
        }
    }

    /// Capacity in 512-byte sectors.
    pub fn sectors(&self) -> u64 {
        self.size / SECTOR
    }
}

fn open_file(path: &Path, read_only: bool) -> Result<Image, VhostError> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| VhostError::bad(format!("--image {shown}: {}", io_reason(&e))))?;
    let ft = meta.file_type();
    if !(ft.is_file() || ft.is_block_device()) {
        return Err(VhostError::bad(format!(
            "--image {shown}: not a regular file or block device"
        )));
    }
    let open = |flags: i32| {
        let mut o = OpenOptions::new();
        o.read(true)
            .write(!read_only)
            .custom_flags(flags | libc::O_CLOEXEC);
        o.open(path)
    };
    let buffered =
        open(0).map_err(|e| VhostError::bad(format!("--image {shown}: {}", io_reason(&e))))?;
    let size = if ft.is_block_device() {
        block_device_size(&buffered).map_err(|e| {
            VhostError::internal(format!("--image {shown}: cannot read the device size: {e}"))
        })?
    } else {
        meta.len()
    };
    if size == 0 || size % SECTOR != 0 {
        return Err(VhostError::bad(format!(
            "--image {shown}: size {size} bytes is not a non-zero multiple of 512"
        )));
    }
    let direct = match open(libc::O_DIRECT) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!(
                "cint vhost: {shown}: O_DIRECT refused ({e}); every request uses buffered I/O"
            );
            None
        }
    };
    Ok(Image {
        size,
        kind: ImageKind::File(BackingFile {
            path: path.to_path_buf(),
            direct,
            buffered,
            is_block_device: ft.is_block_device(),
        }),
    })
}

fn block_device_size(file: &File) -> std::io::Result<u64> {
    let mut size: u64 = 0;
    // SAFETY: BLKGETSIZE64 writes one u64 through the pointer, which points
    // to a live, writable u64; the descriptor is open for the call.
    let rc = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64, &mut size as *mut u64) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size)
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_misaligned_images_are_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.img");
        let e = Image::open(&ImageSpec::File(missing), false).unwrap_err();
        assert_eq!(e.exit_status(), 2);
        assert!(e.to_string().contains("does not exist"), "{e}");

        let odd = dir.path().join("odd.img");
        std::fs::write(&odd, vec![0u8; 1000]).unwrap();
        let e = Image::open(&ImageSpec::File(odd), false).unwrap_err();
        assert_eq!(e.exit_status(), 2);
        assert!(e.to_string().contains("multiple of 512"), "{e}");

        let good = dir.path().join("good.img");
        std::fs::write(&good, vec![0u8; 4096]).unwrap();
        let img = Image::open(&ImageSpec::File(good), true).unwrap();
        assert_eq!(img.sectors(), 8);

        let e = Image::open(&ImageSpec::File(dir.path().to_path_buf()), false).unwrap_err();
        assert_eq!(e.exit_status(), 2);
    }
}
