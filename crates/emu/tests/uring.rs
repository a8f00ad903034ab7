//! The io_uring backend moves the right bytes and reports every failure
//! as an error on the request, never as a hang.

mod common;

use std::io::Write;
use std::os::fd::IntoRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use cint_emu::{
    BackendConfig, DeviceConfig, Emulator, FileSource, IoBuf, IoError, Op, QueueConfig, QueueMode,
    Request, WaitMode,
};
use cint_policy::config::CinterruptsParams;
use cint_policy::{Hint, PolicyConfig, US};
use cint_test_support::skip;
use common::*;

const FILE_LEN: usize = 1 << 20;

/// A file of known content in the system's temporary directory, removed
/// on drop.
struct TestFile(PathBuf);

impl TestFile {
    fn new(tag: &str) -> TestFile {
        Self::with_len(tag, FILE_LEN)
    }

    fn with_len(tag: &str, len: usize) -> TestFile {
        let path = std::env::temp_dir().join(format!("cint-emu-{}-{tag}", std::process::id()));
        let mut f = std::fs::File::create(&path).expect("create test file");
        f.write_all(&pattern(0, len)).expect("write test file");
        f.sync_all().expect("sync test file");
        TestFile(path)
    }

    fn path(&self) -> String {
        self.0.to_string_lossy().into_owned()
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Byte `i` of the file: not periodic in any block size.
fn pattern(start: usize, len: usize) -> Vec<u8> {
    (start..start + len)
        .map(|i| (i as u64).wrapping_mul(2_654_435_761).rotate_right(13) as u8)
        .collect()
}

fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// O_DIRECT needs a filesystem that supports it (tmpfs does not).
fn direct_supported(file: &TestFile) -> bool {
    match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&file.0)
    {
        Ok(_) => true,
        Err(e) => {
            skip::not_here(&format!(
                "O_DIRECT unsupported on {}: {e}",
                file.0.display()
            ));
            false
        }
    }
}

fn start(file: FileSource, mode: QueueMode) -> Emulator {
    start_one_queue(mode, BackendConfig::IoUring { file }, Default::default())
}

fn cint_mode() -> QueueMode {
    QueueMode::Interrupt(PolicyConfig::Cinterrupts(CinterruptsParams::with_adaptive(
        6 * US,
        32,
    )))
}

fn read(offset: u64, len: u32, buf: IoBuf, user_data: u64) -> Request {
    Request {
        op: Op::Read,
        offset,
        len,
        hint: Hint::Unmarked,
        buf: Some(buf),
        user_data,
    }
}

#[test]
fn reads_return_the_file_bytes_and_writes_land_on_it() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let file = TestFile::new("bytes");
    if !direct_supported(&file) {
        return;
    }
    for mode in [cint_mode(), QueueMode::Poll] {
        let emulator = start(FileSource::Path(file.path()), mode);
        let mut client = emulator.client(0, 32).expect("client");
        let wait = if mode == QueueMode::Poll {
            WaitMode::Spin
        } else {
            WaitMode::Block
        };
        // 64 reads of 16 KiB covering the file, in flight together.
        let chunk = 16 * 1024;
        let mut done = Vec::new();
        for k in 0..(FILE_LEN / chunk) {
            if client.in_flight() == client.depth() {
                client.wait(1, wait, &mut done);
            }
            let request = read(
                (k * chunk) as u64,
                chunk as u32,
                IoBuf::new(chunk),
                k as u64,
            );
            client.submit(request).expect("submit");
        }
        let left = client.in_flight();
        client.wait(left, wait, &mut done);
        assert_eq!(done.len(), FILE_LEN / chunk);
        for c in &done {
            assert_eq!(c.result, Ok(chunk as u32));
            let start = c.user_data as usize * chunk;
            let buf = c.buf.as_ref().expect("buffer comes back");
            assert_eq!(
                checksum(buf.as_slice()),
                checksum(&pattern(start, chunk)),
                "chunk {}",
                c.user_data
            );
        }
        // A write through the emulator, read back through the page cache.
        let mut data = IoBuf::new(4096);
        data.as_mut_slice().copy_from_slice(&[0x5a; 4096]);
        let write = Request {
            op: Op::Write,
            offset: 8192,
            len: 4096,
            hint: Hint::Urgent,
            buf: Some(data),
            user_data: 7,
        };
        let c = client.submit_and_wait(write, wait).expect("write");
        assert_eq!(c.result, Ok(4096));
        let on_disk = std::fs::read(&file.0).expect("read back");
        assert!(on_disk[8192..12288].iter().all(|&b| b == 0x5a));
        // Restore the pattern for the next mode.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .open(&file.0)
            .expect("open");
        use std::io::{Seek, SeekFrom};
        f.seek(SeekFrom::Start(8192)).expect("seek");
        f.write_all(&pattern(8192, 4096)).expect("restore");
        f.sync_all().expect("sync");
        drop(client);
        emulator.shutdown().expect("shutdown");
    }
}

#[test]
fn failures_come_back_as_errors() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let file = TestFile::new("errors");
    if !direct_supported(&file) {
        return;
    }
    let emulator = start(FileSource::Path(file.path()), cint_mode());
    let mut client = emulator.client(0, 4).expect("client");
    // Beyond the end of the file: nothing transferred.
    let c = client
        .submit_and_wait(
            read(FILE_LEN as u64 + 4096, 4096, IoBuf::new(4096), 1),
            WaitMode::Block,
        )
        .expect("completes");
    assert_eq!(
        c.result,
        Err(IoError::Short {
            done: 0,
            wanted: 4096
        })
    );
    // A buffer O_DIRECT cannot use.
    let c = client
        .submit_and_wait(
            read(0, 4096, IoBuf::misaligned(4096, 1), 2),
            WaitMode::Block,
        )
        .expect("completes");
    assert_eq!(c.result, Err(IoError::Os(libc::EINVAL)));
    // No buffer at all.
    let c = client
        .submit_and_wait(
            Request {
                buf: None,
                ..read(0, 4096, IoBuf::new(1), 3)
            },
            WaitMode::Block,
        )
        .expect("completes");
    assert_eq!(c.result, Err(IoError::Os(libc::EFAULT)));
    drop(client);
    emulator.shutdown().expect("shutdown");

    // A descriptor closed behind the device's back.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&file.0)
        .expect("open");
    let fd = f.into_raw_fd();
    let emulator = start(FileSource::Fd(fd), QueueMode::Poll);
    // SAFETY: `fd` came from into_raw_fd above and is closed exactly once.
    unsafe { libc::close(fd) };
    let mut client = emulator.client(0, 4).expect("client");
    let c = client
        .submit_and_wait(read(0, 4096, IoBuf::new(4096), 4), WaitMode::Spin)
        .expect("completes");
    assert_eq!(c.result, Err(IoError::Os(libc::EBADF)));
    drop(client);
    emulator.shutdown().expect("shutdown");
}

#[test]
fn a_missing_file_is_a_one_line_start_error() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    let cpus = cint_emu::sys::allowed_cpus().expect("affinity");
    let err = Emulator::start(DeviceConfig {
        device_cpu: *cpus.last().expect("a cpu"),
        queues: vec![QueueConfig {
            app_cpu: cpus[0],
            mode: QueueMode::Poll,
        }],
        backend: BackendConfig::IoUring {
            file: FileSource::Path("/nonexistent/cint-emu".into()),
        },
        realtime: cint_emu::Realtime::Prefer,
        idle_delivery: Default::default(),
    })
    .err()
    .expect("refused");
    let msg = err.to_string();
    assert!(
        msg.contains("/nonexistent/cint-emu") && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn cint_emu_fails_naming_the_job_when_its_requests_fail() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // 1000 bytes: every 4 KiB read at offset 0 transfers 1000 bytes, short.
    let file = TestFile::with_len("short", 1000);
    if !direct_supported(&file) {
        return;
    }
    let mut s = scenario(
        "short",
        device(10_000, 4),
        vec![none()],
        vec![io_job("reader", cint_scenario::Engine::Psync, 1, 1, 1)],
        10 * cint_policy::MS,
    );
    s.emu.backend = cint_scenario::Backend::IoUring;
    s.emu.path = Some(file.path());
    let d = cint_emu::run_detailed(&s).expect("the run itself works");
    let job = &d.strategies[0].jobs[0];
    assert!(job.errors > 0 && job.errors == job.completed, "{job:?}");
    assert_eq!(d.result.results[0].jobs[0].ios, 0);

    let err = cint_emu::run(&s).expect_err("failed requests fail the run");
    let msg = err.to_string();
    let cint_emu::EmuError::RequestsFailed { job, failed, first } = &err else {
        panic!("not a request failure: {msg}");
    };
    assert!(job.starts_with("reader"), "{msg}");
    assert!(*failed > 0, "{msg}");
    assert_eq!(first, "short transfer: 1000 of 4096 bytes", "{msg}");
    assert!(
        msg.contains("reader") && msg.contains(&failed.to_string()) && msg.contains(first.as_str()),
        "{msg}"
    );
    assert!(!msg.contains('\n'), "{msg}");
}

/// A scenario replaying, on the io_uring backend's `file`, a trace of 200
/// requests of 16 KiB, reads and writes, closed loop.
fn trace_on(file: &TestFile, dir: &std::path::Path) -> cint_scenario::Scenario {
    let ios: Vec<cint_trace::encode::Io> = (0..200u64)
        .map(|i| cint_trace::encode::Io {
            time: 0,
            offset: (i % 64) * 16384,
            bytes: 16384,
            write: i % 3 == 0,
            stream: 0,
            cpu: 0,
            done: None,
        })
        .collect();
    let path = dir.join("t.iolog");
    std::fs::write(&path, cint_trace::encode::iolog_v3(&ios)).expect("write the trace");
    let text = format!(
        "name = \"u\"\nduration = \"200ms\"\nwarmup = \"0ns\"\n\
         [emu]\nbackend = \"io_uring\"\npath = {:?}\n\
         [[strategy]]\nname = \"none\"\nkind = \"none\"\n\
         [[job]]\nname = \"t\"\ntrace = {:?}\ntrace_mode = \"closed\"\ntrace_depth = 4\n",
        file.path(),
        path.display().to_string()
    );
    cint_scenario::load_str(&text, "u.toml", &[]).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_trace_replays_on_the_file_with_its_own_request_sizes() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // 16 KiB requests, four times the job's default `bs`: each needs a
    // buffer of its own size (the first replay on this backend failed
    // every one, "buffer of 4096 bytes is shorter than the request").
    let file = TestFile::new("trace");
    if !direct_supported(&file) {
        return;
    }
    let dir = cint_test_support::temp_dir("emu-uring-trace");
    let d = cint_emu::run_detailed(&trace_on(&file, dir.path())).unwrap_or_else(|e| panic!("{e}"));
    let job = &d.strategies[0].jobs[0];
    assert_eq!(
        (job.errors, job.completed),
        (0, 200),
        "{:?}",
        job.first_error
    );
    let fio = d.result.results[0].jobs[0]
        .fio
        .as_ref()
        .expect("fio's figures");
    assert_eq!(fio.read.bytes + fio.write.bytes, 200 * 16384);
}

#[test]
fn a_trace_past_the_backends_file_is_refused_naming_the_job() {
    let _g = serial();
    if !can_emulate() {
        return;
    }
    // The trace reaches 1 MiB; a 64 KiB file would cut its reads short.
    let file = TestFile::with_len("trace-short", 64 * 1024);
    let dir = cint_test_support::temp_dir("emu-uring-trace-short");
    let err = cint_emu::run(&trace_on(&file, dir.path())).expect_err("refused");
    let cint_emu::EmuError::Unsupported { key, .. } = &err else {
        panic!("{err}");
    };
    assert_eq!(key, "job.t.trace");
    assert!(err.to_string().contains("reaches byte 1048576"), "{err}");
}
