use std::path::Path;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let on = args[1] == "on";
    let strat: usize = args[2].parse().unwrap();
    let threads: u32 = args[3].parse().unwrap();
    let reps: usize = args[4].parse().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let cpus: Vec<String> = (0..threads).map(|c| c.to_string()).collect();
    let sets = [
        "duration=300ms".to_string(),
        "warmup=0ms".to_string(),
        format!("job.reader.numjobs={threads}"),
        format!("job.reader.cpus=[{}]", cpus.join(",")),
    ];
    let mut sc = cint_scenario::load_file(&dir.join("energy-table1.toml"), &sets).unwrap();
    sc.strategies = vec![sc.strategies[strat].clone()];
    if !on {
        sc.host.power = None;
        sc.device.power = None;
    }
    let mut best = f64::MAX;
    let mut ev = 0;
    let mut ios = 0;
    for _ in 0..reps {
        let t = Instant::now();
        let (_, st) = cint_sim::run_with_stats(&sc).unwrap();
        best = best.min(t.elapsed().as_secs_f64());
        ev = st.events;
        ios = st.ios;
    }
    println!(
        "{} {} ev={} ios={} best={:.4}s {:.2}M ev/s {:.2}M io/s",
        if on { "on" } else { "off" },
        sc.strategies[0].name,
        ev,
        ios,
        best,
        ev as f64 / best / 1e6,
        ios as f64 / best / 1e6
    );
}
