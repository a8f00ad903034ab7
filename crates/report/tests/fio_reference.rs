//! Our fio buckets and percentiles against a real fio 3.33 json+ output
//! (tests/data/fio-3.33-latency.json: `fio --output-format=json+
//! --lat_percentiles=1`, psync randrw 4k on a file): from fio's own bins,
//! our arithmetic must give back fio's bucket values and fio's 17
//! percentiles exactly.

use std::collections::BTreeMap;

use cint_report::fio_hist::{plat_idx_to_val, plat_val_to_idx};
use cint_report::{FioHistogram, FioLatency, FIO_DEFAULT_PERCENTILES};
use serde_json::Value;

fn reference() -> Value {
    let text = include_str!("data/fio-3.33-latency.json");
    serde_json::from_str(text).expect("valid JSON")
}

fn bins(lat: &Value) -> BTreeMap<u64, u64> {
    lat["bins"]
        .as_object()
        .expect("json+ bins")
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect()
}

#[test]
fn fios_bins_and_percentiles_come_out_of_our_arithmetic() {
    let doc = reference();
    let mut checked = 0;
    for dir in ["read", "write"] {
        for kind in ["clat_ns", "lat_ns"] {
            let lat = &doc[dir][kind];
            let n = lat["N"].as_u64().unwrap();
            let fio_bins = bins(lat);
            assert_eq!(fio_bins.values().sum::<u64>(), n, "{dir} {kind}");
            // Every printed key is a bucket's value as we compute it.
            for &v in fio_bins.keys() {
                assert_eq!(plat_idx_to_val(plat_val_to_idx(v)), v, "{dir} {kind} {v}");
            }
            // Recording those latencies gives fio's bins back.
            let mut h = FioHistogram::new();
            for (&v, &c) in &fio_bins {
                for _ in 0..c {
                    h.record(v);
                }
            }
            let ours: FioLatency = h.summary();
            assert_eq!(ours.bins_by_value(), fio_bins, "{dir} {kind}");
            // fio's percentiles, from the same buckets.
            let fio_pct: Vec<(String, u64)> = lat["percentile"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
                .collect();
            let our_pct: Vec<(String, u64)> = ours
                .percentiles(&FIO_DEFAULT_PERCENTILES)
                .into_iter()
                .map(|(p, v)| (format!("{p:.6}"), v))
                .collect();
            assert_eq!(our_pct, fio_pct, "{dir} {kind}");
            checked += 1;
        }
    }
    assert_eq!(checked, 4);
}
