"""``python -m cinterrupts sweep``: ``cint sweep``'s arguments and output,
on this machine's cores or (``--ray ADDRESS``) on a Ray cluster.

``cint sweep ... --ray ADDRESS`` runs this. Exit status as ``cint``'s: 0,
2 with one line for bad input, 1 for an internal error, 130 after Ctrl-C
with the finished points written.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, NoReturn, Optional

from . import InputError, InternalError, SweepInterrupted, _source, _sweep

EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, as every cint error.
        self.exit(EXIT_USAGE, f"cinterrupts: {message} (see python -m cinterrupts sweep --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m cinterrupts", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    s = commands.add_parser(
        "sweep",
        help="every --vary value on every strategy (as cint sweep)",
        description="The cross product of --vary values, every point on every strategy, "
        "as cint sweep: JSON lines on stdout, or --out / --csv files.",
    )
    s.add_argument("scenario", nargs="?", help="the scenario file (TOML); or give --fio JOB.fio")
    s.add_argument("--fio", metavar="JOB.fio", help="a fio job file instead of a scenario")
    s.add_argument("--device", metavar="PROFILE", help="device profile for --fio")
    s.add_argument("--host", metavar="PROFILE", help="host profile for --fio")
    s.add_argument("--strategy", metavar="KIND,...", help="strategy kinds for --fio")
    s.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="override a key, as cint's --set")
    s.add_argument("--vary", action="append", required=True, metavar="KEY=V1,V2,...",
                   help="values of a key; repeat for a cross product (the first varies slowest)")
    s.add_argument("--out", metavar="FILE.jsonl", help="write the JSON lines here instead of stdout")
    s.add_argument("--csv", metavar="FILE.csv", help="also write a CSV")
    s.add_argument("--ray", metavar="ADDRESS",
                   help="run on the Ray cluster at ADDRESS (host:port, ray://host:port, "
                   "auto, or local for a Ray started for the sweep)")
    s.add_argument("--jobs", type=int, metavar="N", help="worker threads without --ray (default: one per core)")
    # Last, as cint's: everything after it is the fio command line.
    s.add_argument("--fio-cmd", nargs=argparse.REMAINDER, metavar="FIO_ARGS",
                   help="a fio command line instead of a scenario: everything after it "
                   "(the word fio optional); give the other options before it")
    return parser


def _write(path: str, text: str) -> None:
    parent = os.path.dirname(path)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(text)


def _emit(frame, out: Optional[str], csv: Optional[str]) -> None:
    rows = len(frame)
    if csv is not None:
        _write(csv, frame.attrs["csv"])
        print(f"cint: wrote {csv} ({rows} rows)", file=sys.stderr)
    if out is not None:
        _write(out, frame.attrs["jsonl"])
        print(f"cint: wrote {out} ({rows} rows)", file=sys.stderr)
    elif csv is None:
        sys.stdout.write(frame.attrs["jsonl"])
        sys.stdout.flush()


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(argv)
    given = [args.scenario is not None, args.fio is not None, args.fio_cmd is not None]
    if sum(given) != 1:
        print("cint: give one of a scenario file, --fio JOB.fio or --fio-cmd FIO_ARGS... "
              "(see python -m cinterrupts sweep --help)", file=sys.stderr)
        return EXIT_USAGE
    if args.fio_cmd is not None and not args.fio_cmd:
        print("cint: --fio-cmd: give the fio command line after it", file=sys.stderr)
        return EXIT_USAGE
    if args.ray is not None and args.jobs is not None:
        print("cint: --jobs applies without --ray (Ray places the points)", file=sys.stderr)
        return EXIT_USAGE
    try:
        if args.fio_cmd is not None:
            scenario = args.fio_cmd
        else:
            scenario = args.scenario if args.fio is None else args.fio
        source = _source(
            scenario,
            args.fio is not None or args.fio_cmd is not None,
            args.device,
            args.host,
            args.strategy.split(",") if args.strategy else None,
        )
        frame = _sweep(
            source,
            args.sets,
            args.vary,
            backend="local" if args.ray is None else "ray",
            ray_address=args.ray,
            progress=True,
            workers=args.jobs or 0,
        )
        _emit(frame, args.out, args.csv)
    except SweepInterrupted as stop:
        _emit(stop.rows, args.out, args.csv)
        print(f"cint: sweep interrupted: {stop.finished} of {stop.total} points finished, "
              "and are written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except InputError as e:
        print(e, file=sys.stderr)
        return EXIT_USAGE
    except InternalError as e:
        print(e, file=sys.stderr)
        return EXIT_INTERNAL
    except OSError as e:
        print(f"cint: {e.filename}: cannot write: {e.strerror}", file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
