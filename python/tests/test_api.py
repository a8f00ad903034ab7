"""cinterrupts.check / sim / emu against the `cint` command: the same bytes
for the same scenario and seed, the same one-line errors."""

import pickle
import threading
import time

import pytest

import cinterrupts
from conftest import REPO, SCENARIOS, run_cint

SHIPPED = sorted(SCENARIOS.glob("*.toml")) + sorted(SCENARIOS.glob("*.fio"))
SHORT = {"duration": "20ms", "warmup": "5ms"}


def cli_input(path):
    return ["--fio", path] if path.suffix == ".fio" else [path]


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_sim_gives_the_cli_json_bytes_for_the_same_seed(cint_bin, path):
    cli = run_cint(cint_bin, "sim", *cli_input(path), "--set", "duration=20ms",
                   "--set", "warmup=5ms", "--seed", "7", "--json")
    assert cli.returncode == 0, cli.stderr
    with pytest.warns(cinterrupts.FioImportWarning) if cli.stderr else _no_warning():
        result = cinterrupts.sim(path, SHORT, seed=7)
    assert result.json == cli.stdout
    assert result.doc["seed"] == 7
    assert result.warnings == cli.stderr.splitlines()


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_toml_string_runs_as_the_file_does():
    path = SCENARIOS / "sync-qd1.toml"
    from_text = cinterrupts.sim(path.read_text(), SHORT)
    from_path = cinterrupts.sim(str(path), SHORT)
    # Only the source's name differs.
    assert from_text.doc["results"] == from_path.doc["results"]
    assert from_text.doc["scenario"] == from_path.doc["scenario"]


def test_a_fio_command_line_runs_as_cint_fio_cmd_runs_it(cint_bin):
    # etcd's disk check, shortened, as a list of arguments.
    argv = ["fio", "--rw=write", "--ioengine=sync", "--fdatasync=1", "--size=1m",
            "--bs=2300", "--name=etcd"]
    with pytest.warns(cinterrupts.FioImportWarning, match="fio-command-line"):
        result = cinterrupts.sim(argv + ["--directory=d"], device="optane-900p")
    cli = run_cint(cint_bin, "sim", "--json", "--device", "optane-900p", "--fio-cmd",
                   *argv, "--directory=d")
    assert cli.returncode == 0, cli.stderr
    assert result.json.rstrip("\n") == cli.stdout.rstrip("\n")
    job = result.doc["results"][0]["jobs"][0]
    assert job["ios"] == (1 << 20) // 2300
    # The file leaves less than a request after the last write, so fio's
    # loop looks once more and makes the fdatasync due (fio 3.33: 455
    # for 455 writes).
    assert job["sync"]["calls"] == job["ios"]
    with pytest.raises(cinterrupts.InputError, match="fio-command-line:2: option 'verify'"):
        cinterrupts.sim(["--name=a", "--verify=md5"])


def test_rows_fio_documents_and_check_are_the_cli_ones(cint_bin, tmp_path):
    path = SCENARIOS / "mixed.toml"
    result = cinterrupts.sim(path, SHORT)
    # to_pandas: the sweep CSV's rows, without the varied keys.
    csv = tmp_path / "s.csv"
    cli = run_cint(cint_bin, "sweep", path, "--set", "duration=20ms", "--set", "warmup=5ms",
                   "--vary", "seed=1", "--csv", csv)
    assert cli.returncode == 0, cli.stderr
    lines = csv.read_text().splitlines()
    assert result.csv().splitlines() == [line.split(",", 1)[1] for line in lines]
    frame = result.to_pandas()
    assert list(frame.columns) == lines[0].split(",")[1:]
    jobs = {j["name"] for s in result.doc["results"] for j in s["jobs"]}
    assert len(frame) == len(result.strategies) * len(jobs)
    assert frame["iops"].dtype.kind == "f" and (frame["iops"] > 0).all()
    # fio's json+, as --fio-json writes it (same SOURCE_DATE_EPOCH).
    fio_dir = tmp_path / "fio"
    cli = run_cint(cint_bin, "sim", path, "--set", "duration=20ms", "--set", "warmup=5ms",
                   "--fio-json", fio_dir)
    assert cli.returncode == 0, cli.stderr
    for strategy in result.strategies:
        assert result.fio_json(strategy) == (fio_dir / f"{strategy}.json").read_text()
    with pytest.raises(cinterrupts.InputError, match="no strategy 'nope'"):
        result.fio_json("nope")
    # check: the resolved scenario as cint check prints it.
    cli = run_cint(cint_bin, "check", path, "--set", "duration=20ms")
    resolved = cinterrupts.check(path, {"duration": "20ms"})
    assert resolved.text == cli.stdout
    assert resolved.doc["duration"] == "20ms" and resolved.doc["name"] == "mixed"


def test_a_job_without_latency_samples_has_nan_latencies_in_its_frame():
    # A job that ends within its warm-up reports its whole life, as fio
    # does, and no latency sample: NaN in the frame, never 0 or text.
    text = (
        'name = "ramp"\nduration = "20ms"\nwarmup = "100ms"\n'
        '[[strategy]]\nname = "none"\nkind = "none"\n'
        '[[job]]\nname = "short"\nbs = "4k"\nio_size = "1m"\n'
        '[[job]]\nname = "long"\n'
    )
    frame = cinterrupts.sim(text).to_pandas()
    short = frame[frame["job"] == "short"].iloc[0]
    long = frame[frame["job"] == "long"].iloc[0]
    assert short["iops"] > 0
    for column in ("lat_mean_ns", "lat_p50_ns", "lat_p99_ns"):
        assert frame[column].dtype.kind == "f", column
        assert short[column] != short[column], column  # NaN
        assert long[column] > 0, column


def test_results_pickle_with_their_documents():
    result = cinterrupts.sim(SCENARIOS / "sync-qd1.toml", SHORT)
    copy = pickle.loads(pickle.dumps(result))
    assert copy.json == result.json
    assert copy.doc == result.doc
    assert copy.to_pandas().equals(result.to_pandas())
    assert all(copy.fio_json(s) == result.fio_json(s) for s in result.strategies)


def test_the_gil_is_released_while_a_run_executes():
    # A run of a few hundred ms in a thread; the main thread must get to
    # run Python meanwhile, which a held GIL would forbid until the end.
    done = threading.Event()

    def long_run():
        cinterrupts.sim(SCENARIOS / "async-batch.toml", {"duration": "3s"})
        done.set()

    worker = threading.Thread(target=long_run)
    worker.start()
    time.sleep(0.05)
    total = sum(range(200_000))
    ran_alongside = not done.is_set()
    worker.join()
    assert total > 0 and ran_alongside, "the main thread waited for the run to finish"


def test_bad_input_raises_the_cli_message(cint_bin, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\nduration = "fast"\n')
    cases = [
        (["sim", tmp_path / "missing.toml"], lambda: cinterrupts.sim(tmp_path / "missing.toml")),
        (["sim", bad], lambda: cinterrupts.sim(bad)),
        (["sim", SCENARIOS / "mixed.toml", "--set", "job.nope.iodepth=4"],
         lambda: cinterrupts.sim(SCENARIOS / "mixed.toml", {"job.nope.iodepth": 4})),
        (["check", SCENARIOS / "mixed.toml", "--set", "duration=-1s"],
         lambda: cinterrupts.check(SCENARIOS / "mixed.toml", {"duration": "-1s"})),
        (["sim", "--fio", SCENARIOS / "mixed.fio", "--device", "nvme-9000"],
         lambda: cinterrupts.sim(SCENARIOS / "mixed.fio", device="nvme-9000")),
    ]
    for args, call in cases:
        cli = run_cint(cint_bin, *args)
        assert cli.returncode == 2, args
        with pytest.raises(cinterrupts.InputError) as caught:
            call()
        assert str(caught.value) == cli.stderr.strip(), args
        assert "\n" not in str(caught.value)


def test_a_seed_rust_cannot_hold_is_an_input_error():
    for seed in (-1, 2**64, 1.5):
        with pytest.raises(cinterrupts.InputError, match="seed: expected an integer"):
            cinterrupts.sim(SCENARIOS / "sync-qd1.toml", SHORT, seed=seed)


def test_internal_errors_are_their_own_class():
    assert not issubclass(cinterrupts.InternalError, cinterrupts.InputError)
    source = cinterrupts._native.toml_source((SCENARIOS / "sync-qd1.toml").read_text())
    broken = source.replace('"Toml"', '"Yaml"', 1)  # a source no caller of the package can make
    assert broken != source
    with pytest.raises(cinterrupts.InternalError, match="a scenario source that does not read back: unknown variant"):
        cinterrupts._native.run(broken, [])


def test_emu_runs_where_the_machine_allows_it_and_refuses_as_the_cli(cint_bin):
    path = SCENARIOS / "sync-qd1.toml"
    sets = {"duration": "20ms", "warmup": "5ms", "emu.realtime": "prefer"}
    cli = run_cint(cint_bin, "emu", path, *[a for k, v in sets.items() for a in ("--set", f"{k}={v}")],
                   "--json")
    if cli.returncode == 0:
        result = cinterrupts.emu(path, sets)
        # Real time differs run to run; what ran does not.
        assert result.strategies == [s["strategy"] for s in __import__("json").loads(cli.stdout)["results"]]
        assert result.doc["substrate"] == "emu"
    else:
        assert cli.returncode == 2, cli.stderr
        with pytest.raises(cinterrupts.InputError) as caught:
            cinterrupts.emu(path, sets)
        assert str(caught.value) == cli.stderr.strip()
