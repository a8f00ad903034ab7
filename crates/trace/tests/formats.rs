//! Each reader on hand-made and generated files: what it reads, and the
//! place and kind of every refusal (bad magic, truncation, bad records,
//! time going backwards), and arbitrary bytes never panicking.

use cint_trace::encode::{self, action, blk_record, BlkRecord, Io};
use cint_trace::{detect, parse, ErrorKind, Format, Place};
use proptest::prelude::*;

fn ios() -> Vec<Io> {
    vec![
        Io {
            time: 1_000_000,
            offset: 4096,
            bytes: 4096,
            write: false,
            stream: 7,
            cpu: 1,
            done: Some(1_011_000),
        },
        Io {
            time: 1_005_000,
            offset: 1 << 20,
            bytes: 8192,
            write: true,
            stream: 9,
            cpu: 0,
            done: Some(1_030_000),
        },
        Io {
            time: 1_020_000,
            offset: 4096,
            bytes: 4096,
            write: false,
            stream: 7,
            cpu: 1,
            done: None,
        },
    ]
}

#[test]
fn fio_writes_version_3_and_it_reads_back() {
    // The first lines of a `write_iolog` of fio 3.33 (psync randrw).
    let text = "fio version 3 iolog\n18 /tmp/f.dat add\n149 /tmp/f.dat open\n\
                154 /tmp/f.dat read 249856 4096\n534 /tmp/f.dat write 1970176 4096\n\
                600 /tmp/f.dat sync 0 0\n817 /tmp/f.dat close\n";
    assert_eq!(detect(text.as_bytes()), Some(Format::FioIolog));
    let t = parse(text.as_bytes(), None).unwrap();
    assert_eq!(t.version, 3);
    assert_eq!(t.streams.len(), 1);
    assert_eq!(t.streams[0].label, "/tmp/f.dat");
    assert_eq!(t.requests.len(), 2);
    assert_eq!(t.requests[0].time, 154_000);
    assert_eq!(t.requests[1].time, 534_000);
    assert!(t.requests[1].write);
    assert_eq!(t.requests[1].offset, 1_970_176);
    assert_eq!(t.requests[1].place, Place::Line(5));
    // add, open, sync, close.
    assert_eq!(t.skipped, 4);
}

#[test]
fn version_2_times_are_the_waits_before_each_request() {
    let text = "fio version 2 iolog\n/dev/a add\n/dev/b add\n/dev/a open\n\
                /dev/a read 0 4096\n/dev/a wait 250 0\n/dev/b write 512 512\n\
                /dev/a wait 100 0\n/dev/a read 8192 4096\n";
    let t = parse(text.as_bytes(), None).unwrap();
    assert_eq!(t.version, 2);
    let times: Vec<u64> = t.requests.iter().map(|r| r.time).collect();
    assert_eq!(times, [0, 250_000, 350_000]);
    let streams: Vec<u32> = t.requests.iter().map(|r| r.stream).collect();
    assert_eq!(streams, [0, 1, 0]);
}

#[test]
fn iolog_refusals_name_the_line() {
    let cases: &[(&[u8], ErrorKind, u64)] = &[
        (
            b"fio version 3 iolog\n0 f add\n5 f read 0\n",
            ErrorKind::BadRecord,
            3,
        ),
        (
            b"fio version 3 iolog\n0 f add\n5 f frob 0 4096\n",
            ErrorKind::BadRecord,
            3,
        ),
        (
            b"fio version 3 iolog\n5 g read 0 4096\n",
            ErrorKind::BadRecord,
            2,
        ),
        (
            b"fio version 3 iolog\n0 f add\nx f read 0 4096\n",
            ErrorKind::BadRecord,
            3,
        ),
        (
            b"fio version 3 iolog\n0 f add\n5 f read 0 0\n",
            ErrorKind::BadRecord,
            3,
        ),
        // Version 2's waits add up past the clock: refused, not saturated
        // (requests 292 000 years apart would replay back to back).
        (
            b"fio version 2 iolog\nf add\nf wait 9223372036854775807 0\nf read 0 4096\n",
            ErrorKind::BadRecord,
            3,
        ),
        (
            b"fio version 2 iolog\nf add\nf wait 18446744073709551 0\n\
              f wait 18446744073709551 0\nf read 0 4096\n",
            ErrorKind::BadRecord,
            4,
        ),
        (
            b"fio version 3 iolog\n0 f add\n5 f read 0 40",
            ErrorKind::Truncated,
            3,
        ),
        (
            b"fio version 3 iolog\n0 f add\n5 f read 0 4096\n\xff\n",
            ErrorKind::BadRecord,
            4,
        ),
        (b"fio version 1 iolog\n", ErrorKind::BadMagic, 1),
    ];
    for (text, kind, line) in cases {
        let e = parse(text, Some(Format::FioIolog)).unwrap_err();
        let shown = String::from_utf8_lossy(text);
        assert_eq!(
            (e.kind, e.place),
            (*kind, Some(Place::Line(*line))),
            "{shown:?}: {e}"
        );
    }
}

#[test]
fn blktrace_reads_q_events_both_orders_both_versions() {
    for version in [7u8, 8] {
        for big in [false, true] {
            let bytes = encode::blktrace(&ios(), version, big, 24);
            assert_eq!(detect(&bytes), Some(Format::Blktrace));
            let t = parse(&bytes, None).unwrap();
            assert_eq!((t.version, t.big_endian), (version, big));
            assert_eq!(t.requests.len(), 3, "v{version} big={big}");
            assert_eq!(t.streams.len(), 2);
            assert_eq!(t.streams[0].label, "pid 7");
            assert_eq!(t.streams[0].cpu, Some(1));
            let r = &t.requests[1];
            assert_eq!(
                (r.time, r.offset, r.bytes, r.write),
                (1_005_000, 1 << 20, 8192, true)
            );
            // C events matched first in, first out by sector and size: the
            // first 4 KiB read at 4096 gets the first C at that place.
            assert_eq!(t.requests[0].latency, Some(11_000));
            assert_eq!(t.requests[1].latency, Some(25_000));
            assert_eq!(t.requests[2].latency, None);
            // 3 D events and 2 C events.
            assert_eq!(t.skipped, 5);
        }
    }
}

#[test]
fn blktrace_refusals_name_the_byte() {
    let good = encode::blktrace(&ios(), 7, false, 8);
    // The second record's magic broken.
    let mut bad = good.clone();
    bad[50] ^= 0xff;
    let e = parse(&bad, None).unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::BadMagic, Some(Place::Byte(48)))
    );
    // Version 9 on the first record.
    let mut v9 = good.clone();
    v9[0] = 0x09;
    let e = parse(&v9, None).unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::UnsupportedVersion, Some(Place::Byte(0)))
    );
    // A version 7 record among version 8 ones.
    let mut mixed = encode::blktrace(&ios(), 8, false, 0);
    mixed[64] = 0x07;
    let e = parse(&mixed, None).unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::UnsupportedVersion, Some(Place::Byte(64)))
    );
    assert!(
        e.to_string()
            .contains("a version 7 record after version 8 ones"),
        "{e}"
    );
    // Not a trace at all.
    let e = parse(b"hello world\n", None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::UnknownFormat);
}

#[test]
fn msr_reads_filetime_and_response_time() {
    let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\r\n\
                128166372003061629,wdev,0,Read,3154152448,4096,2100\r\n\
                128166372003081629,wdev,1,Write,512,8192,41\r\n";
    assert_eq!(detect(text.as_bytes()), Some(Format::MsrCsv));
    let t = parse(text.as_bytes(), None).unwrap();
    assert_eq!(t.streams.len(), 2);
    assert_eq!(t.streams[1].label, "wdev/1");
    assert_eq!(t.requests[0].time, 12_816_637_200_306_162_900);
    assert_eq!(t.requests[1].time - t.requests[0].time, 2_000_000);
    assert_eq!(t.requests[0].latency, Some(210_000));
    assert!(t.requests[1].write);
    let e = parse(b"1,h,0,Erase,0,512,1\n", Some(Format::MsrCsv)).unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::BadRecord, Some(Place::Line(1)))
    );
    // The record's shape is the format's: a bad value in it is named at
    // its line, not taken for an unknown format.
    let e = parse(b"0.5,h,0,Read,0,512,1\n", None).unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::BadRecord, Some(Place::Line(1))),
        "{e}"
    );
    assert!(e.to_string().contains("timestamp"), "{e}");
}

#[test]
fn time_backwards_is_found_per_stream() {
    let text = "fio version 3 iolog\n0 a add\n0 b add\n10 a read 0 512\n5 b read 0 512\n\
                4 a read 0 512\n";
    let t = parse(text.as_bytes(), None).unwrap();
    let e = t.check_ordered().unwrap_err();
    assert_eq!(
        (e.kind, e.place),
        (ErrorKind::TimeBackwards, Some(Place::Line(6)))
    );
    assert!(
        e.to_string()
            .starts_with("line 6: time goes backwards in a"),
        "{e}"
    );
}

#[test]
fn a_trace_without_requests_is_refused() {
    let e = parse(b"fio version 3 iolog\n0 a add\n", None).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Empty);
}

/// A valid file of each format, from generated requests.
fn files(ios: &[Io]) -> Vec<(Format, Vec<u8>)> {
    vec![
        (Format::FioIolog, encode::iolog_v3(ios).into_bytes()),
        (Format::MsrCsv, encode::msr_csv(ios).into_bytes()),
        (Format::Blktrace, encode::blktrace(ios, 7, false, 12)),
        (Format::Blktrace, encode::blktrace(ios, 8, true, 0)),
    ]
}

fn arb_ios() -> impl Strategy<Value = Vec<Io>> {
    prop::collection::vec(
        (
            0u64..1 << 40,
            0u64..1 << 30,
            1u32..256,
            any::<bool>(),
            0u32..4,
            0u32..8,
            prop::option::of(0u64..1 << 20),
        ),
        1..20,
    )
    .prop_map(|v| {
        let mut t = 0;
        v.into_iter()
            .map(|(dt, off, blocks, write, stream, cpu, lat)| {
                t += dt % 1_000_000_000;
                Io {
                    time: t,
                    offset: off * 512,
                    bytes: blocks * 512,
                    write,
                    stream,
                    cpu,
                    done: lat.map(|l| t + l),
                }
            })
            .collect()
    })
}

/// Where the record holding byte `cut` starts: its line, or its byte.
fn record_at(format: Format, bytes: &[u8], cut: usize) -> Option<Place> {
    match format {
        Format::Blktrace => {
            let mut at = 0usize;
            while at < bytes.len() {
                let size = if bytes[0] == 0x07 || bytes[3] == 0x07 {
                    48
                } else {
                    64
                };
                let pdu_at = if size == 48 { 46 } else { 50 };
                let big = bytes[0] == 0x65;
                let p = [bytes[at + pdu_at], bytes[at + pdu_at + 1]];
                let pdu = if big {
                    u16::from_be_bytes(p)
                } else {
                    u16::from_le_bytes(p)
                };
                let next = at + size + usize::from(pdu);
                if cut < next {
                    return (cut > at).then_some(Place::Byte(at as u64));
                }
                at = next;
            }
            None
        }
        _ => {
            if cut == 0 || bytes[cut - 1] == b'\n' {
                return None;
            }
            let line = bytes[..cut].iter().filter(|&&b| b == b'\n').count() + 1;
            Some(Place::Line(line as u64))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for f in [None, Some(Format::FioIolog), Some(Format::Blktrace), Some(Format::MsrCsv)] {
            let _ = parse(&bytes, f);
        }
    }

    #[test]
    fn mangled_valid_files_never_panic(ios in arb_ios(), at in any::<usize>(), byte in any::<u8>()) {
        for (f, mut bytes) in files(&ios) {
            let i = at % bytes.len();
            bytes[i] = byte;
            let _ = parse(&bytes, Some(f));
            let _ = parse(&bytes, None);
        }
    }

    #[test]
    fn generated_files_read_back(ios in arb_ios()) {
        for (f, bytes) in files(&ios) {
            let t = parse(&bytes, None).unwrap();
            prop_assert_eq!(t.format, f);
            prop_assert_eq!(t.requests.len(), ios.len());
            for (r, io) in t.requests.iter().zip(&ios) {
                prop_assert_eq!((r.offset, r.bytes, r.write), (io.offset, u64::from(io.bytes), io.write));
            }
        }
    }

    #[test]
    fn truncations_name_the_cut_record(ios in arb_ios(), cut in any::<usize>()) {
        for (f, bytes) in files(&ios) {
            let cut = cut % bytes.len();
            let head = &bytes[..cut];
            match record_at(f, &bytes, cut) {
                Some(place) => {
                    let e = parse(head, Some(f)).unwrap_err();
                    prop_assert_eq!((e.kind, e.place), (ErrorKind::Truncated, Some(place)), "{}", e);
                }
                // Cut between records: a shorter valid file, or one with
                // no request left.
                None => match parse(head, Some(f)) {
                    Ok(t) => prop_assert!(t.requests.len() <= ios.len()),
                    Err(e) => prop_assert!(
                        matches!(e.kind, ErrorKind::Empty | ErrorKind::Truncated | ErrorKind::BadMagic),
                        "{}", e
                    ),
                },
            }
        }
    }
}

#[test]
fn syncs_flushes_and_trims_are_counted_as_not_replayed() {
    let text = "fio version 3 iolog\n0 f add\n1 f open\n2 f write 0 4096\n3 f sync 0 0\n\
                4 f datasync 0 0\n5 f trim 0 4096\n6 f close\n";
    let t = parse(text.as_bytes(), None).unwrap();
    assert_eq!(t.requests.len(), 1);
    assert_eq!((t.not_replayed.syncs, t.not_replayed.trims), (2, 1));
    // blktrace: a write, a flush (a write's category, no bytes) and a
    // discard (a write's category with BLK_TC_DISCARD, and its range's
    // bytes), each queued and completed.
    const DISCARD: u64 = 1 << 13;
    let mut bytes = Vec::new();
    let mut seq = 0;
    for (time, sector, size, extra) in [
        (1_000, 8, 4096, 0),
        (2_000, 0, 0, 0),
        (3_000, 64, 1 << 20, DISCARD),
    ] {
        for code in [1, 8] {
            let rec = BlkRecord {
                sequence: seq,
                time: time + code,
                sector,
                bytes: size,
                action: action(code, true) | (extra << 32),
                pid: 7,
                device: 0x0070_0000,
                cpu: 0,
                pdu: 0,
            };
            seq += 1;
            blk_record(&mut bytes, &rec, 7, false);
        }
    }
    let t = parse(&bytes, None).unwrap();
    // The discard is not replayed as a 1 MiB write.
    assert_eq!(t.requests.len(), 1);
    assert_eq!(t.requests[0].bytes, 4096);
    assert_eq!((t.not_replayed.syncs, t.not_replayed.trims), (1, 1));
}
