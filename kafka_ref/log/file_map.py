"""A file mapped into memory without holding a file descriptor: the indexes' backing store.

Each segment's `.index` and `.timeindex` is a memory-mapped file (abstract_index.py). Once
a file is mapped, the kernel needs no descriptor to keep the map alive: the descriptor can
be closed, and Kafka's `MappedByteBuffer` keeps none. Python's `mmap` module, however,
keeps a duplicate of the descriptor for as long as the map lives (for its `size()` and
`resize()`; Python 3.13 adds `trackfd=False` to opt out). With it a partition holds three
descriptors: its active segment's `.log` and one per index map. A broker with 10,000
partitions then needs 30,000 descriptors, above the 20,000 that some machines allow a
process at all (the hard `RLIMIT_NOFILE`), and it fails with EMFILE while creating topics.

`FileMap` therefore calls the C library's `mmap(2)` through `ctypes` and keeps only the
address: a partition then holds one descriptor, as in Kafka (INDEX-8). The map is a
`ctypes` char array over the mapped bytes, which supports what the indexes need:
`struct.pack_into`/`unpack_from` (it is a writable buffer) and slices, read and assigned.
It is advised random access on creation (`madvise(MADV_RANDOM)`, INDEX-8): a fault reads
in only the page touched, never the kernel's read-ahead window around it. `close()`
unmaps; touching a closed map is a bug the callers guard against (they drop it at once).

Rules: INDEX-8.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import mmap
import os

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = (
    ctypes.c_void_p,
    ctypes.c_size_t,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_int,
    ctypes.c_long,
)
_libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_libc.msync.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
_MAP_FAILED = ctypes.c_void_p(-1).value
_MS_SYNC = getattr(mmap, "MS_SYNC", 4)  # Linux's value; mmap does not export it


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


class FileMap:
    """`length` bytes of the file open as `fd`, mapped shared and read-write; `fd` may be
    closed as soon as this returns."""

    def __init__(self, fd: int, length: int) -> None:
        address = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        if address in (None, _MAP_FAILED):
            err = ctypes.get_errno()
            raise OSError(err, f"mmap: {os.strerror(err)}")
        self._address, self.length = address, length
        self.buffer = (ctypes.c_char * length).from_address(address)
        _check(_libc.madvise(address, length, mmap.MADV_RANDOM), "madvise")

    def flush(self) -> None:
        """Write the map's dirty pages to the file and wait for the disk (msync)."""
        _check(_libc.msync(self._address, self.length, _MS_SYNC), "msync")

    def close(self) -> None:
        if self._address is not None:
            address, self._address = self._address, None
            self.buffer = None
            _check(_libc.munmap(address, self.length), "munmap")

    def __del__(self) -> None:
        if getattr(self, "_address", None) is not None:
            self.close()
