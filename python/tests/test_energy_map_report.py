"""docs/results/energy_map_report.py on a small real sweep: the figures it
prints must agree with the map `cint sweep --energy-map` wrote."""

import csv
import re
import subprocess
import sys

from conftest import REPO, SCENARIOS

SCRIPT = REPO / "docs" / "results" / "energy_map_report.py"


def sweep(cint_bin, tmp_path, scenario):
    out = tmp_path / "map"
    jsonl = tmp_path / "sweep.jsonl"
    subprocess.run(
        [
            str(cint_bin), "sweep", str(SCENARIOS / scenario),
            "--set", "duration=3ms", "--set", "warmup=1ms",
            "--vary", "job.reader.bs=4k,128k",
            "--vary", "job.reader.numjobs=1,4",
            "--vary", "seed=1,2,3",
            "--energy-map", str(out), "--out", str(jsonl),
        ],
        check=True,
        capture_output=True,
    )
    return jsonl, out


def report(*args):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_report_agrees_with_the_map(cint_bin, tmp_path):
    jsonl, out = sweep(cint_bin, tmp_path, "energy-table1.toml")
    text = report(jsonl, out)
    with open(out / "winners.csv", encoding="utf-8") as f:
        winners = list(csv.DictReader(f))
    classic = [w for w in winners if w["winner"] == "classic-poll"]
    assert f"classic polling wins {len(classic)} of 4 tiles" in text, text
    # The crossover line has one entry per thread count.
    crossover = next(l for l in text.splitlines() if l.startswith("crossover"))
    assert crossover.startswith("crossover per thread count 1/4: "), crossover
    assert len(crossover.split(": ")[1].split(" / ")) == 2, crossover


def test_versus_counts_every_tile_once(cint_bin, tmp_path):
    jsonl, out = sweep(cint_bin, tmp_path, "energy-map.toml")
    text = report(jsonl, out, "--versus", "mode-select")
    first = text.splitlines()[0]
    ties, tiles, beats, short = map(int, re.findall(r"\d+", first)[:4])
    assert tiles == 4 and ties + beats + short == 4, text


def test_a_strategy_not_in_the_sweep_is_refused(cint_bin, tmp_path):
    jsonl, out = sweep(cint_bin, tmp_path, "energy-table1.toml")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(jsonl), str(out), "--versus", "nope"],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and "no row for nope" in done.stderr, done.stderr
