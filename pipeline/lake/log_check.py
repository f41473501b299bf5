"""A lake table whose Delta log cannot be read, named with the file at fault and what to
do, instead of delta-rs' own words (a Rust debug dump, ``Json error: Truncated record``)
or a table taken for empty.

When delta-rs cannot open a table, the log is looked at entry by entry (the files of
``_delta_log`` after its newest checkpoint): a version missing between two others, an
entry that is not whole JSON (a write cut short). What is found is said; what delta-rs
said is kept at the end.
"""

from __future__ import annotations

import errno
import json
import re

import pyarrow.fs as pafs

from pipeline.core.untrusted import one_line

ENTRY = re.compile(r"^(\d{20})\.json$")
CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(\.\d+\.\d+)?\.parquet$")


class LakeUnreadable(OSError):
    """A lake table's Delta log cannot be read: which table, which file, what to do."""

    def __init__(self, message: str):
        super().__init__(errno.EIO, message)

    def __str__(self) -> str:
        return self.strerror


def unreadable(fs: pafs.FileSystem, root: str, where: str, exc: Exception
               ) -> LakeUnreadable | None:
    """The error of a table at ``where`` (its folder ``root`` in ``fs``) that delta-rs
    could not open with ``exc``, when its log shows why (None: it does not, or cannot be
    listed: a store that is down fails elsewhere, by name)."""
    try:
        found = _fault(getattr(fs, "raw", fs), f"{root}/_delta_log")  # (pyarrow's own)
    except OSError:
        return None
    if found is None:
        return None
    said = one_line(str(exc)).split(" 0: ")[0]  # (not its backtrace, nor a Rust debug
    if " {" in said:                              # dump: "found gap: ParsedLogPath { ..")
        said = said.split(" {")[0].rsplit(":", 1)[0]
    return LakeUnreadable(f"lake table {where}: {found} (delta-rs: {said[:200]})")


def _fault(fs: pafs.FileSystem, log: str) -> str | None:
    infos = fs.get_file_info(pafs.FileSelector(log, allow_not_found=True))
    names = {i.base_name for i in infos if i.type == pafs.FileType.File}
    versions = sorted(int(m.group(1)) for n in names if (m := ENTRY.match(n)))
    checkpoints = [int(m.group(1)) for n in names if (m := CHECKPOINT.match(n))]
    if not versions:
        return None
    start = max([c for c in checkpoints if c <= versions[-1]], default=versions[0] - 1) + 1
    start = max(start, versions[0])
    present = set(versions)
    lost = [v for v in range(start, versions[-1] + 1) if v not in present]
    if lost:
        return (f"its Delta log lacks version {lost[0]} (_delta_log/{lost[0]:020d}.json, "
                f"between versions {lost[0] - 1} and {lost[0] + 1}): the table cannot be "
                "read past it; restore that file from a backup of the lake")
    for version in [v for v in versions if v >= start]:
        path = f"{log}/{version:020d}.json"
        with fs.open_input_stream(path) as fh:
            text = fh.read().decode("utf-8", "replace")
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except ValueError:
                newest = version == versions[-1]
                todo = ("a write cut short: move the file aside (the load it records is "
                        "then not in the lake; `pos-etl load ... --missing-only` fetches it "
                        "again), or restore it from a backup" if newest else
                        "restore it from a backup of the lake")
                return (f"its Delta log entry _delta_log/{version:020d}.json is not whole "
                        f"(line {n} is not JSON): {todo}")
    return None
