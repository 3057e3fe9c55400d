# SPDX-License-Identifier: MIT
"""`perf report` summaries of the profiles taken with `bench.py --profile DIR` (Swift processes only)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def _demangle(text: str) -> str:
    """Swift symbols made readable with `swift demangle --simplified` (unchanged when it is missing)."""
    swift = shutil.which("swift")
    if swift is None:
        return text
    done = subprocess.run([swift, "demangle", "--simplified"], input=text, capture_output=True, text=True)
    return done.stdout if done.returncode == 0 else text


def summarize(profile_dir: Path, limit: float = 0.7) -> list[Path]:
    """For each perf.data file: the flat profile (self time by symbol, ≥ ``limit`` %) and the
    shared-object split, written next to it as <name>.txt. Returns the files written."""
    written = []
    for data in sorted(profile_dir.glob("*.data")):
        flat = subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,symbol",
             "--percent-limit", str(limit), "-g", "none"],
            capture_output=True, text=True,
        ).stdout
        dsos = subprocess.run(
            ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso", "-g", "none"],
            capture_output=True, text=True,
        ).stdout
        out = data.with_suffix(".txt")
        text = _demangle(flat) + "\n\n# By shared object\n" + dsos
        out.write_text("\n".join(line.rstrip() for line in text.splitlines()) + "\n")
        written.append(out)
    return written
