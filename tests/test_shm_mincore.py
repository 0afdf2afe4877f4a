"""The mincore(2) fallback of the shared-memory probe (kernels before 6.5, which lack
cachestat): on a /dev/shm file with holes and a memfd, each with pages written at known
places, mincore and cachestat count the same pages, and both count exactly the pages
written; mapping for mincore leaves the file as it was (content, times)."""

import hashlib
import os
import uuid

import pytest

from smem.parsers.shmem_inventory import parse_shmem_inventory
from smem.sources.shmem_probe import mincore_resident_bytes, probe_shmem, resident_bytes

PAGE = os.sysconf("SC_PAGE_SIZE")


def _write_pages(fd, pages):
    for page in pages:
        os.pwrite(fd, bytes([page % 251 + 1]) * 17, page * PAGE + 100)


@pytest.fixture(scope="module")
def objects():
    """A 48 MiB /dev/shm file (12 MiB written: the 20 largest files of a mount are listed) and
    a memfd of 16 MiB this process holds, each written at scattered pages."""
    if not os.path.isdir("/dev/shm") or not hasattr(os, "memfd_create"):
        pytest.skip("no /dev/shm or no memfd_create")
    path = f"/dev/shm/smem-mincore-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    file_pages = range(0, (48 << 20) // PAGE, 4)
    memfd_pages = sorted({(i * 7919) % ((16 << 20) // PAGE) for i in range(700)} | {((16 << 20) // PAGE) - 1})
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    memfd = os.memfd_create("smem-mincore-test")
    try:
        os.ftruncate(fd, 48 << 20)
        _write_pages(fd, file_pages)
        os.ftruncate(memfd, 16 << 20)
        _write_pages(memfd, memfd_pages)
        yield dict(path=path, fd=fd, file_pages=len(file_pages), memfd=memfd,
                   memfd_inode=os.fstat(memfd).st_ino, memfd_pages=len(memfd_pages))
    finally:
        os.close(fd)
        os.close(memfd)
        os.unlink(path)


def _figures(objects, residency):
    inventory = parse_shmem_inventory(probe_shmem("/proc", [os.getpid()], residency))
    files = [f.rss for f in inventory.files if f.path == objects["path"]]
    memfds = {h.rss for h in inventory.memfds if h.inode == objects["memfd_inode"]}
    assert len(files) == 1 and len(memfds) == 1, (files, memfds)
    return files[0], memfds.pop()


@pytest.mark.uses("cpu")
def test_mincore_counts_the_written_pages_as_cachestat_does(objects):
    by_mincore = _figures(objects, "mincore")
    assert by_mincore == (objects["file_pages"] * PAGE, objects["memfd_pages"] * PAGE)
    if resident_bytes(objects["memfd"], PAGE) is None:
        pytest.skip("no cachestat(2) on this kernel (Linux < 6.5): mincore alone checked")
    assert _figures(objects, "cachestat") == by_mincore
    assert _figures(objects, "auto") == by_mincore


@pytest.mark.uses("cpu")
def test_mincore_reads_a_large_file_in_windows(objects):
    """Windows that do not divide the file (7 pages) add up to the whole."""
    for fd, pages in ((objects["fd"], objects["file_pages"]), (objects["memfd"], objects["memfd_pages"])):
        assert mincore_resident_bytes(fd, PAGE, window=7 * PAGE) == pages * PAGE


@pytest.mark.uses("cpu")
def test_mapping_for_mincore_leaves_the_file_as_it_was(objects):
    fd = objects["fd"]
    digest = hashlib.sha256(os.pread(fd, 48 << 20, 0)).hexdigest()
    os.utime(objects["path"], ns=(1_000_000_000, 2_000_000_000))  # atime before mtime: relatime would update it
    before = os.fstat(fd)
    _figures(objects, "mincore")
    after = os.fstat(fd)
    assert (after.st_size, after.st_blocks, after.st_mtime_ns, after.st_atime_ns, after.st_ctime_ns) == \
        (before.st_size, before.st_blocks, before.st_mtime_ns, before.st_atime_ns, before.st_ctime_ns)
    assert hashlib.sha256(os.pread(fd, 48 << 20, 0)).hexdigest() == digest


def test_an_unknown_method_is_refused():
    with pytest.raises(ValueError):
        probe_shmem("/proc", [], "fincore")
