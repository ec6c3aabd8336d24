"""Durable file writes: how a small file is replaced so that a crash never leaves it half-written.

A checkpoint, a snapshot or a metadata file must be either the old version or the new one
after a crash, never a mix. The recipe (Kafka's `Utils.atomicMoveWithFallback` with the
flushes around it): write the new content to `<name>.tmp`, fsync it, rename it over the
old name (a rename within a directory is atomic on POSIX), then fsync the *directory*, so
the rename itself survives a power cut.

Used by the log's checkpoints and producer snapshots and by the embedded metadata; it
lives at the top of the package because both `log/` and `cluster/` need it.
"""

from __future__ import annotations

import os


def fsync_directory(path: str | os.PathLike) -> None:
    """fsync a directory, so that the files created, renamed or deleted in it persist."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: str | os.PathLike, data: bytes, *, tmp_suffix: str = ".tmp") -> None:
    """Replace `path` with `data`: write `path + tmp_suffix`, fsync it, rename it over
    `path`, fsync the directory."""
    path = os.fspath(path)
    tmp = path + tmp_suffix
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_directory(os.path.dirname(os.path.abspath(path)))
