#!/usr/bin/env python3
"""Provenance of a benchmark run: writes a JSON file beside the run's CSV with the device, the date, the git commit
and the command, which scripts/perf_report.py prints under every table it makes from that CSV.

  scripts/bench_meta.py OUT/groups.meta.json --command "STEPS=groups scripts/gpu_check.sh OUT" \
      --runs-file OUT/groups.commands

Fields: device and driver (nvidia-smi of the first GPU; "unknown" without one), gpus (how many nvidia-smi lists),
date (UTC, when this file is written, i.e. when the run ended), commit (git rev-parse of this checkout with "+dirty"
when tracked files differ from it; BCSR24_GIT_COMMIT where the tree is a copy without .git; else "unknown"), command
(how to repeat the run), runs (the program invocations it made, one per line of --runs-file), and any --field
KEY=VALUE. sweep.py imports write_meta() for its own meta.json.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def run_quietly(command, cwd=None):
    """Standard output of the command, or None when it is missing or fails."""
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def gpu_fields():
    """device, driver and gpus from nvidia-smi; 'unknown' where it is absent (a CPU-only machine)."""
    text = run_quietly(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    lines = [line for line in (text or "").splitlines() if line.strip()]
    if not lines:
        return {"device": "unknown", "driver": "unknown", "gpus": 0}
    name, _, driver = lines[0].partition(",")
    return {"device": name.strip(), "driver": driver.strip() or "unknown", "gpus": len(lines)}


def git_commit():
    """The checkout's commit, '+dirty' when tracked files were changed; BCSR24_GIT_COMMIT for a copy without .git."""
    commit = run_quietly(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT)
    if commit:
        changed = run_quietly(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT)
        return commit + ("+dirty" if changed else "")
    return os.environ.get("BCSR24_GIT_COMMIT", "unknown")


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def write_meta(path, command, runs=(), **fields):
    """Writes the provenance of a run to `path` (JSON) and returns it."""
    meta = {**gpu_fields(), "date": utc_now(), "commit": git_commit(), "command": command}
    if runs:
        meta["runs"] = list(runs)
    meta.update(fields)
    Path(path).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("output", help="the JSON file to write (e.g. OUT/groups.meta.json)")
    parser.add_argument("--command", required=True, help="how to repeat the run")
    parser.add_argument("--runs-file", help="a file with the program invocations the run made, one per line")
    parser.add_argument("--field", action="append", default=[], metavar="KEY=VALUE", help="an extra field")
    args = parser.parse_args()
    runs = []
    if args.runs_file and Path(args.runs_file).is_file():
        runs = [line.rstrip("\n") for line in Path(args.runs_file).read_text().splitlines() if line.strip()]
    fields = {}
    for item in args.field:
        key, eq, value = item.partition("=")
        if not eq or not key:
            parser.error(f"--field wants KEY=VALUE, got {item!r}")
        fields[key] = value
    write_meta(args.output, args.command, runs, **fields)
    return 0


if __name__ == "__main__":
    sys.exit(main())
