"""The DRM fdinfo parser (smem/parsers/drm_fdinfo.py) and the dma-buf fdinfo parser, against
every recorded sample of ../shared/realproc/drm-fdinfo-zoo (its README says where each comes
from and how it is wrapped), and hostile variants of them."""

import re

import pytest

from conftest import REALPROC
from smem.parsers.dmabuf_fdinfo import parse_dmabuf_fdinfo
from smem.parsers.drm_fdinfo import drm_amount_kib, parse_drm_fdinfo

ZOO = REALPROC / "drm-fdinfo-zoo"


def _zoo_files():
    if not ZOO.is_dir():
        return []
    return sorted(p for p in ZOO.rglob("*") if p.is_file() and p.name != "README.md")


def unwrapped(data):
    """A zoo sample without its wrapping (README: indents, ``grep`` path prefixes, kernel-doc
    `` * `` prefixes): the lines as the kernel printed them."""
    lines = []
    for line in data.split(b"\n"):
        line = re.sub(rb"^/proc/[0-9]+/fdinfo/[0-9]+:", b"", line)
        line = re.sub(rb"^ \* ?", b"", line)
        lines.append(line.strip())
    return b"\n".join(lines)


def _sample(name):
    path = ZOO / name
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    return unwrapped(path.read_bytes())


@pytest.mark.parametrize("path", _zoo_files(), ids=lambda p: str(p.relative_to(ZOO)))
def test_every_zoo_sample_reads_without_error(path):
    for data in (path.read_bytes(), unwrapped(path.read_bytes())):
        client = parse_drm_fdinfo(data)
        buffer = parse_dmabuf_fdinfo(data)
        assert client is None or buffer is None
        if client is not None:
            assert client.driver
            for region in client.regions.values():
                assert all(v is None or v >= 0 for v in region)


def test_the_zoo_is_there_or_skipped():
    if not ZOO.is_dir():
        pytest.skip("the zoo is not available")
    assert len(_zoo_files()) >= 12


def test_amdgpu_regions_in_mixed_units():
    client = parse_drm_fdinfo(_sample("amdgpu-tvrtko-print-memory-stats-2024/sample-1-indented.txt"))
    assert (client.driver, client.client_id, client.pdev) == ("amdgpu", "30", "0000:04:00.0")
    assert client.client == ("amdgpu", "0000:04:00.0", "30")
    vram, gtt, cpu = client.regions["vram"], client.regions["gtt"], client.regions["cpu"]
    assert (vram.total, vram.shared, vram.resident, vram.active) == (544428, 13584, 544428, 260356)
    assert (gtt.total, gtt.resident, gtt.shared) == (22 * 1024, 22 * 1024, 0)
    assert cpu.resident == 0 and vram.purgeable is None  # no purgeable key: absent, not 0
    assert client.other["drm-engine-gfx"] == "39456116802 ns"  # engines and amd- keys pass through
    assert client.other["amd-requested-vram"] == "544428 KiB"


def test_the_old_drm_memory_keys_are_what_is_resident():
    client = parse_drm_fdinfo(_sample("amdgpu-amdgpu_top-issue87/proc/2217/fdinfo/99"))
    assert client.regions["vram"].resident == 2068 and client.regions["gtt"].resident == 8192
    assert client.regions["vram"].shared is None and client.regions["vram"].total is None


def test_i915_mib_and_a_region_with_a_dash():
    client = parse_drm_fdinfo(_sample("i915-tvrtko-fdinfo-memstats-v7/proc/1383/fdinfo/8"))
    system = client.regions["system"]
    assert (system.total, system.shared, system.resident, system.purgeable) == (125 << 10, 16 << 10, 125 << 10,
                                                                              2 << 10)
    assert client.regions["stolen-system"].resident == 0


def test_xe_cycles_are_not_regions():
    client = parse_drm_fdinfo(_sample("DOC-xe-drm-client-c/sample-1-kerneldoc.txt"))
    assert set(client.regions) == {"system", "gtt", "vram0", "stolen"}
    assert client.regions["vram0"].shared == 16 << 10 and client.regions["vram0"].resident == 23992


def test_platform_devices_have_no_pdev_and_engines_only_drivers_no_regions():
    v3d = parse_drm_fdinfo(_sample("v3d-rpi-gpu-usage-readme/sample-1-grep.txt"))
    assert v3d.client == ("v3d", None, "14") and v3d.regions["memory"].shared == 31600
    msm = parse_drm_fdinfo(_sample("msm-robclark-engine-util-2022/sample-1-indented.txt"))
    assert msm.client_id == "7" and msm.regions == {}


def test_an_excerpt_without_drm_driver_is_no_client():
    assert parse_drm_fdinfo(_sample("amdgpu-nvtop-pr492-gfx1150/sample-1-grep.txt")) is None


def test_dma_buf_fdinfo():
    buffer = parse_dmabuf_fdinfo(_sample("dmabuf-rpi-labwc-resources-issue408/proc/812/fdinfo/101"))
    assert (buffer.inode, buffer.size_bytes, buffer.exporter, buffer.name) == (180, 16384, "drm", None)
    assert parse_dmabuf_fdinfo(_sample("dmabuf-rpi-labwc-resources-issue408/proc/812/fdinfo/100")) is None
    assert parse_drm_fdinfo(_sample("dmabuf-rpi-labwc-resources-issue408/proc/812/fdinfo/101")) is None


@pytest.mark.parametrize("value, kib", [("0", 0), ("2048", 2), ("2047", 1), ("3 KiB", 3), ("2 MiB", 2048),
                                        ("1 GiB", 1 << 20), ("5348 KiB   <- a note", 5348), ("", None),
                                        ("12 kB", None), ("-5 KiB", None), ("x", None), ("1" * 21, None),
                                        (str(2 ** 64) + " GiB", None), ("٣ KiB", None)])
def test_amounts(value, kib):
    assert drm_amount_kib(value) == kib


GOOD = (b"pos:\t0\nflags:\t02100002\nino:\t1204\ndrm-driver:\tamdgpu\ndrm-client-id:\t30\n"
        b"drm-pdev:\t0000:04:00.0\ndrm-total-vram:\t100 KiB\ndrm-shared-vram:\t10 KiB\n"
        b"drm-resident-vram:\t90 KiB\n")


@pytest.mark.parametrize("data", [
    b"", b"\n\n", b"drm-driver:", b"drm-driver:\t\n", GOOD[:37], GOOD[:len(GOOD) // 2], GOOD * 3,
    GOOD.replace(b"90 KiB", b"9" * 5000 + b" KiB"), GOOD.replace(b"90 KiB", str(2 ** 70).encode()),
    GOOD.replace(b"amdgpu", b"\xff\xfe\xc3"), GOOD.replace(b"30", b"\xff30"), GOOD + b"drm-frob-vram: 7\nzzz\n",
    GOOD.replace(b":", b""), GOOD.replace(b"\n", b"\0"), b"\xff" * 3000, GOOD + b"x" * 200000,
])
def test_hostile_fdinfo_reads_as_a_client_or_none(data):
    client = parse_drm_fdinfo(data)
    buffer = parse_dmabuf_fdinfo(data)
    if client is not None:
        for region in client.regions.values():
            assert all(v is None or 0 <= v < 1 << 54 for v in region)
    assert buffer is None or buffer.size_bytes < 1 << 64


def test_a_repeated_key_keeps_its_first_value_and_absurd_amounts_are_absent():
    client = parse_drm_fdinfo(GOOD + b"drm-resident-vram:\t5 KiB\n")
    assert client.regions["vram"].resident == 90
    client = parse_drm_fdinfo(GOOD.replace(b"90 KiB", str(2 ** 70).encode()))
    assert client.regions["vram"].resident is None and client.regions["vram"].shared == 10
    assert parse_drm_fdinfo(GOOD.replace(b"30", b"\xff30")).client_id is None


def test_the_zoo_bufinfo_cut_short_gives_the_buffers_before_the_cut():
    from smem.parsers.dmabuf_buffers import parse_dmabuf_bufinfo
    path = ZOO / "dmabuf-asahi-bufinfo-issue126/sys/kernel/debug/dma_buf/bufinfo.TRUNCATED"
    if not path.is_file():
        pytest.skip(f"{path} is not available")
    assert parse_dmabuf_bufinfo(path.read_bytes()) == {125955: 1064960, 125953: 1064960, 125950: 23068672,
                                                       125948: 23068672, 125947: 23805952}


@pytest.mark.parametrize("path", _zoo_files(), ids=lambda p: str(p.relative_to(ZOO)))
def test_every_zoo_sample_reads_as_maps_and_bufinfo_without_error(path):
    from smem.parsers.dmabuf_buffers import parse_dmabuf_bufinfo, parse_dmabuf_size
    from smem.parsers.maps import dmabuf_mappings
    data = path.read_bytes()
    assert dmabuf_mappings(data) == {}
    assert isinstance(parse_dmabuf_bufinfo(data), dict)
    assert parse_dmabuf_size(data) is None


MAPS = (b"55d0c0000000-55d0c0001000 r--p 00000000 08:02 173521      /usr/bin/weston\n"
        b"7f0000000000-7f0000004000 rw-s 00000000 00:0d 180                        /dmabuf:drm\n"
        b"7f0000008000-7f000000a000 rw-s 00000000 00:0d 180 /dmabuf:\n"
        b"7f0000010000-7f0000110000 rw-s 00000000 00:0d 4242 /dmabuf:system-heap name with spaces\n")


@pytest.mark.parametrize("data, expected", [
    (MAPS, {180: 24, 4242: 1024}), (b"", {}), (MAPS[:150], {}), (MAPS * 2, {180: 48, 4242: 2048}),
    (MAPS.replace(b"7f0000000000-", b"zz-"), {180: 8, 4242: 1024}),
    (MAPS.replace(b" 180 ", b" " + b"9" * 30 + b" "), {4242: 1024}),
    (MAPS.replace(b"7f0000110000", b"ffffffffffffffffffffff"), {180: 24}),
    (MAPS.replace(b"00:0d", b"\xff\xfe"), {180: 24, 4242: 1024}), (b"/dmabuf:" * 1000, {}),
])
def test_dma_buf_mappings_of_maps_and_hostile_maps(data, expected):
    from smem.parsers.maps import dmabuf_mappings
    assert dmabuf_mappings(data) == expected


@pytest.mark.parametrize("data", [b"", b"size flags mode count exp_name ino name\n", b"\xff" * 100,
                                  b"size ino\n" + b"9" * 30 + b" 5\n12 x\n"])
def test_hostile_bufinfo(data):
    from smem.parsers.dmabuf_buffers import parse_dmabuf_bufinfo
    assert parse_dmabuf_bufinfo(data) == {}
