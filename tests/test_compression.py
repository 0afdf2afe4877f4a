"""One table of compressions (smem/compression.py): what reads a capture, what `smem capture
--compression` writes, what `smem capture -o` takes for a capture it may replace and what a -K kernel
image may hold all come from it."""

import io
import tarfile

import pytest

from smem.cli import capture
from smem.compression import CAPTURE_COMPRESSIONS, COMPRESSIONS, WRITTEN, by_option, compression_of
from smem.output import looks_like_capture
from smem.parsers import kernel_image
from smem.sources import decompressed


def test_every_reader_and_writer_follows_the_table():
    assert set(decompressed.READERS) == {c.name for c in CAPTURE_COMPRESSIONS}
    assert set(kernel_image._DECOMPRESSORS) == {c.name for c in COMPRESSIONS}
    choices = next(p for p in capture.params if p.name == "compression").type.choices
    assert tuple(choices) == WRITTEN


@pytest.mark.parametrize("option", [o for o in WRITTEN if o not in ("none", "zst")])
def test_a_written_capture_is_read_as_the_same_compression(option):
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode=f"w|{option}") as tar:
        info = tarfile.TarInfo("meminfo")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"x\n\n"))
    found = compression_of(out.getvalue())
    assert found is by_option(option) and found.starts(out.getvalue()[:8])
    assert looks_like_capture(out.getvalue()[:512])  # (smem capture -o may replace it without --force)
    assert compression_of(b"\x00" * 512) is None


def test_a_kernel_stream_needs_more_than_the_magic():
    gzip = by_option("gz")
    assert gzip.starts(b"\x1f\x8b\x08\x00") and not gzip.starts(b"\x1f\x8b\x07\x00")
    assert not by_option("bz2").starts(b"BZhx") and by_option("bz2").starts(b"BZh9")
