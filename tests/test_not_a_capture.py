"""A file that is no capture at all (a page saved from the browser, smemcap.sh itself instead of
what it writes, a zip) given to -S is said so plainly, with what it looks like: it was
"not a readable capture archive (invalid header)", tarfile's words, which told a new user nothing."""

import gzip
import io
import zipfile

import pytest

from conftest import FIXTURES, run_smem

TAIL = "; smemcap or smem capture makes one\n"


def _zip():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("meminfo", "MemTotal: 1 kB\n")
    return buffer.getvalue()


CASES = {
    "page.html": (b"\xef\xbb\xbf\n  <!DOCTYPE html>\n<html><body>smem</body></html>\n", " (it looks like an HTML page)"),
    "smemcap.sh": ((FIXTURES.parent.parent / "scripts" / "smemcap.sh").read_bytes(), " (it looks like a script)"),
    "notes.txt": ("MemTotal: 1 kB, 5 € each\n".encode() * 100, " (it looks like a text file)"),
    "capture.zip": (_zip(), " (it looks like a zip archive)"),
    "notes.txt.gz": (gzip.compress(b"MemTotal: 1 kB\n" * 10), " (it looks like a text file compressed with gzip)"),
    "noise.gz": (gzip.compress(bytes(range(1, 256)) * 4), " (it is gzip-compressed, but what it holds is not a tar archive)"),
    "noise": (bytes(range(1, 256)) * 4, ""),
}


@pytest.mark.parametrize("name", CASES)
def test_a_file_that_is_no_capture_is_said_so_with_what_it_looks_like(name, tmp_path):
    data, looks = CASES[name]
    path = tmp_path / name
    path.write_bytes(data)
    proc = run_smem("-S", path)
    assert proc.returncode == 1
    assert proc.stderr.decode() == f"smem: {path}: not a capture{looks}{TAIL}"


def test_standard_input_and_a_damaged_capture():
    """Standard input is named as a file is; a capture whose first header is damaged is still a
    tar (its "ustar"), not called something else."""
    proc = run_smem("-S", "-", input=b"<html>not a capture</html>\n" * 40)
    assert proc.stderr.decode() == f"smem: standard input: not a capture (it looks like an HTML page){TAIL}"
    tar = gzip.decompress((FIXTURES / "captures" / "faithful.tar.gz").read_bytes())
    damaged = tar[:148] + b"0000001\0" + tar[156:]  # (the first header's checksum)
    err = run_smem("-S", "-", input=damaged).stderr.decode()
    assert err.startswith("smem: standard input: ") and "not a capture" not in err and err.count("\n") == 1, err
