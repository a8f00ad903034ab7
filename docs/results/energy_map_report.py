#!/usr/bin/env python3
"""Counts the energy study's observations on a Figure 3 sweep.

Reads what `cint sweep ... --energy-map DIR --out FILE.jsonl` wrote for
`scenarios/energy-table1.toml` (docs/results/energy.md, "The map") and
prints, per tile of request size by thread count, the figures that
docs/results/energy.md checks the study's observations against:

- the crossover per thread count: the smallest size from which interrupts
  win, or tie with the winner, at every larger size (`-` when they do not
  win the largest size);
- where classic polling wins;
- where hybrid polling uses less CPU than classic polling, and where it is
  the least and the most efficient of the three modes;
- where interrupts use the least CPU, and where they are nevertheless not
  the most efficient.

Means are over the seeds of each tile; "most efficient" is the map's
winner (its t-test decides ties), the rest compares means.

    python3 docs/results/energy_map_report.py out/map-menu.jsonl out/map-menu
    python3 docs/results/energy_map_report.py out/select.jsonl out/select --versus mode-select

With `--versus NAME`, it prints instead where strategy NAME ties with,
beats or falls short of the best of the sweep's other strategies (from the map's
`strategies.csv`: a tie where the seeds do not separate them, p > 0.05).

Standard library only, so that it runs wherever `cint` does.
"""

import csv
import json
import sys
from collections import defaultdict

MODES = ("interrupt", "classic-poll", "hybrid-poll")


def size_bytes(size):
    """`4k` -> 4096; the sweep's sizes are KiB multiples or plain bytes."""
    units = {"k": 1 << 10, "m": 1 << 20}
    tail = size[-1].lower()
    return int(size[:-1]) * units[tail] if tail in units else int(size)


def load_means(jsonl_path):
    """(size, threads) -> mode -> (mean bytes per joule, mean CPU use)."""
    sums = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0, 0]))
    with open(jsonl_path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            row = json.loads(line)
            if row.get("strategy") not in MODES or row.get("energy") is None:
                continue
            point = row["point"]
            tile = (point["job.reader.bs"], int(point["job.reader.numjobs"]))
            acc = sums[tile][row["strategy"]]
            acc[0] += row["energy"]["bytes_per_joule"]
            acc[1] += row["cpu_util"]
            acc[2] += 1
    if not sums:
        sys.exit(f"{jsonl_path}: no rows of the modes {', '.join(MODES)} with energy figures")
    means = {}
    for tile, modes in sums.items():
        missing = [m for m in MODES if m not in modes]
        if missing:
            sys.exit(f"{jsonl_path}: tile {tile} lacks {', '.join(missing)}")
        means[tile] = {m: (a[0] / a[2], a[1] / a[2]) for m, a in modes.items()}
    return means


def load_winners(map_dir):
    """(size, threads) -> (winner, runner-up, tie)."""
    out = {}
    with open(f"{map_dir}/winners.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            tile = (row["size"], int(row["threads"]))
            out[tile] = (row["winner"], row["runner_up"], row["tie"] == "true")
    return out


def load_standings(map_dir):
    """(size, threads, strategy) -> (best other, margin, tie)."""
    out = {}
    with open(f"{map_dir}/strategies.csv", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            key = (row["size"], int(row["threads"]), row["strategy"])
            out[key] = (row["best_other"], float(row["margin"]), row["tie"] == "true")
    return out


def versus(standings, name, tiles):
    """Where strategy `name` ties with, beats or falls short of the best other."""
    ties, beats, short = [], [], []
    for size, threads in tiles:
        entry = standings.get((size, threads, name))
        if entry is None:
            sys.exit(f"strategies.csv has no row for {name} at {size} x{threads}")
        best, margin, tie = entry
        text = f"{size} x{threads} ({margin * 100:+.1f}% against {best})"
        (ties if tie else beats if margin > 0 else short).append(text)
    return (
        f"{name}: ties in {len(ties)} of {len(tiles)} tiles, beats the best other in "
        f"{len(beats)}, falls short in {len(short)}.\n"
        f"  beats: {'; '.join(beats) or 'none'}\n"
        f"  falls short: {'; '.join(short) or 'none'}"
    )


def interrupts_win(entry):
    winner, runner_up, tie = entry
    return winner == "interrupt" or (tie and runner_up == "interrupt")


def crossover(winners, sizes, threads):
    """The smallest size from which interrupts win or tie at every larger one."""
    found = "-"
    for size in reversed(sizes):
        if not interrupts_win(winners[(size, threads)]):
            break
        found = size
    return found


def report(means, winners):
    sizes = sorted({s for s, _ in means}, key=size_bytes)
    thread_counts = sorted({t for _, t in means})
    tiles = [(s, t) for t in thread_counts for s in sizes]
    missing = [tile for tile in tiles if tile not in winners]
    if missing:
        sys.exit(f"winners.csv lacks tiles {missing[:3]}")
    lines = []
    crossovers = [crossover(winners, sizes, t) for t in thread_counts]
    lines.append(
        "crossover per thread count "
        + "/".join(map(str, thread_counts))
        + ": "
        + " / ".join(crossovers)
    )
    classic = [f"{s}x{t}" for (s, t) in tiles if winners[(s, t)][0] == "classic-poll"]
    lines.append(f"classic polling wins {len(classic)} of {len(tiles)} tiles: {' '.join(classic)}")

    def bpj(tile, mode):
        return means[tile][mode][0]

    def cpu(tile, mode):
        return means[tile][mode][1]

    hybrid_less_cpu = [t for t in tiles if cpu(t, "hybrid-poll") < cpu(t, "classic-poll")]
    lines.append(
        f"hybrid polling uses less CPU than classic polling in {len(hybrid_less_cpu)} "
        f"of {len(tiles)} tiles; not in: "
        + " ".join(f"{s}x{t}" for (s, t) in tiles if (s, t) not in hybrid_less_cpu)
    )
    least = [t for t in tiles if min(MODES, key=lambda m: bpj(t, m)) == "hybrid-poll"]
    most = [t for t in tiles if winners[t][0] == "hybrid-poll"]
    lines.append(
        f"hybrid polling is the least efficient in {len(least)} tiles "
        f"({' '.join(f'{s}x{t}' for s, t in least)}), the most efficient in {len(most)} "
        f"({' '.join(f'{s}x{t}' for s, t in most)})"
    )
    irq_least_cpu = [t for t in tiles if min(MODES, key=lambda m: cpu(t, m)) == "interrupt"]
    irq_not_best = [t for t in irq_least_cpu if winners[t][0] != "interrupt"]
    lines.append(
        f"interrupts use the least CPU in {len(irq_least_cpu)} of {len(tiles)} tiles, "
        f"and are not the most efficient in {len(irq_not_best)} of those"
    )
    return "\n".join(lines)


def main(argv):
    args = argv[1:]
    name = None
    if "--versus" in args:
        i = args.index("--versus")
        if i + 1 >= len(args):
            sys.exit("--versus needs a strategy name")
        name = args[i + 1]
        del args[i : i + 2]
    if len(args) != 2:
        sys.exit("usage: energy_map_report.py SWEEP.jsonl MAP_DIR [--versus STRATEGY]")
    means = load_means(args[0])
    if name is None:
        print(report(means, load_winners(args[1])))
        return
    # In scenarios/energy-map.toml every other strategy is a fixed mode,
    # so the best other is the best fixed mode.
    print(versus(load_standings(args[1]), name, sorted(means, key=lambda t: (t[1], size_bytes(t[0])))))


if __name__ == "__main__":
    main(sys.argv)
