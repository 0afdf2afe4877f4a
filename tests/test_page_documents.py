"""smem html's page as a document: the -F json documents it embeds are what smem prints for each
table, add up, hold hostile text as data, and come out the same read by one process or by
workers; a recording's timeline stops at frames without smaps with their own tables; -o - and -o's refusals.
No browser here (test_page.py opens the pages); the pages both read are made once for the two
(the ``pages`` fixture, tests/conftest.py), so these stay in the page group, on one worker.
"""

import json
import re
import shlex
import time

import pytest

from conftest import run_smem
from page_documents import CAPTURE, IMG, SCRIPT_END, SVG_MAP, USER, embedded, write_page
import hostile_inputs as hc

pytest.importorskip("plotly", reason="smem[html]: plotly not installed")
pytestmark = pytest.mark.xdist_group("page")


@pytest.mark.uses("cpu")
def test_the_page_embeds_what_smem_json_prints_for_each_table(pages):
    for name in ("plain", "compared"):
        data = embedded(pages[name][1])
        tables = [key for key, (_, attrs) in data.items() if "data-command" in attrs]
        assert sorted(tables) == ["cgroup", "mapping", "process", "program", "system", "user"]
        for key in tables:
            document, attrs = data[key]
            words = shlex.split(attrs["data-command"])
            assert words[0] == "smem"
            printed = run_smem(*words[1:], check=True).stdout
            assert document == json.loads(printed), (name, key)


@pytest.mark.uses("cpu")
def test_every_level_adds_up_to_the_process(pages):
    data = embedded(pages["plain"][1])
    processes, maps = data["process"][0]["rows"], data["maps"][0]
    fields = maps["fields"]
    assert processes
    for row in processes:
        boxes = maps["processes"][str(row["pid"])]
        for amount in ("pss", "uss", "rss", "swappss"):
            assert sum(b[fields.index(amount)] or 0 for b in boxes) == row[amount], (row["pid"], amount)
    # the largest mappings kept, the rest of each kind one box saying how many it holds
    assert max(len([b for b in boxes if b[1] >= 0]) for boxes in maps["processes"].values()) == maps["top"]
    assert any(b[1] == -1 and b[2] > 1 for boxes in maps["processes"].values() for b in boxes)
    system = data["system"][0]
    assert sum(r["used"] for r in system["rows"] if r["used"] is not None) == data["meta"][0]["memtotal"]


def test_hostile_text_is_data_in_the_file(pages):
    text = pages["hostile"][1]
    for bad in (SCRIPT_END, IMG, "<svg onload", USER):
        assert bad not in text
    data = embedded(text)
    rows = data["process"][0]["rows"]
    assert {r["command"] for r in rows} == {f"{SCRIPT_END} --x"} and {r["name"] for r in rows} == {IMG}
    assert {r["user"] for r in rows} == {USER}
    assert SVG_MAP in data["maps"][0]["names"]


def test_o_dash_writes_the_page_to_stdout_and_o_keeps_a_file_that_is_no_page(pages, tmp_path):
    result = run_smem("html", "-S", CAPTURE, "-o", "-", check=True)
    written, printed = embedded(pages["plain"][1]), embedded(result.stdout.decode())
    assert printed["process"] == written["process"] and printed["maps"] == written["maps"]
    other = tmp_path / "notes.html"
    other.write_text("<p>mine</p>")
    refused = run_smem("html", "-S", CAPTURE, "-o", other)
    assert refused.returncode == 1 and other.read_text() == "<p>mine</p>"
    assert refused.stderr.decode().startswith("smem: ") and len(refused.stderr.splitlines()) == 1
    again = tmp_path / "page.html"
    for _ in range(2):  # a page smem html wrote is replaced without --force
        assert run_smem("html", "-S", CAPTURE, "-o", again).returncode == 0

@pytest.mark.uses("cpu")
@pytest.mark.parametrize("name", ["page.png", "page.SVG", "page.pdf", "shot.jpg"])
def test_a_picture_or_document_name_is_refused_for_the_page(tmp_path, name):
    """The page is HTML: written as page.png it opens in no viewer (charts refuse such a mismatch too)."""
    refused = run_smem("html", "-S", CAPTURE, "-o", tmp_path / name)
    lines = refused.stderr.decode().splitlines()
    assert refused.returncode == 2 and len(lines) == 1, lines
    assert "the page is HTML" in lines[0] and "screenshot" in lines[0], lines
    assert list(tmp_path.iterdir()) == []
    for kept in ("page.htm", "page"):  # .html, .htm and no extension are pages
        assert run_smem("html", "-S", CAPTURE, "-o", tmp_path / kept).returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page", "page.htm"]



    """Each process's mappings are folded where they are read (smem.page.mappings.PageFold) and
    come in any order: names numbered and sharers listed (ties by pid) as one serial read gives."""
    capture = tmp_path / "many.tar"
    processes = {pid: hc.process_files(pid) for pid in range(2000, 2100)}  # 7 chunks (collect.CHUNK) for 2 processes
    capture.write_bytes(hc.capture_tar(processes=processes))
    serial = embedded(write_page("-S", capture, "-j", "1", path=str(tmp_path / "serial.html")))
    shared = embedded(write_page("-S", capture, "-j", "2", path=str(tmp_path / "shared.html")))
    for data in (serial, shared):
        data["meta"][0].pop("read_at")
    assert shared == serial
    sharers = serial["sharers"][0]["mappings"]
    assert sharers and all(rows["rows"][0][0] == 2000 for rows in sharers.values())


def _pushed_recording(rec, capture, frames=3):
    """A recording of ``capture`` pushed ``frames`` times to smem record over TCP, every smaps
    kept in the first frame only (--smaps-every FRAMES): the others keep smaps_rollup."""
    import socket
    from test_recording_playback import wait_frames
    from test_tcp_capture import listening_port, smem_process
    recorder = smem_process("record", "-o", rec, "--listen", "127.0.0.1:0", "--count", frames, "--smaps-every", frames)
    try:
        port = listening_port(recorder)
        for frame in range(1, frames + 1):
            with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
                s.sendall(capture.read_bytes())
                s.shutdown(socket.SHUT_WR)
                s.recv(1)
            wait_frames(rec, recorder, frame)
        assert recorder.wait(timeout=120) == 0, recorder.stderr.read()
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    return rec


@pytest.mark.uses("cpu")
def test_a_recordings_slider_stops_at_frames_without_smaps_with_their_own_tables(tmp_path):
    """Frames 2 and 3 kept smaps_rollup only: each is a stop of its own (it was read from the key
    frame, and the stop was the key frame's), its tables what smem prints at that frame (its
    command says --at 2), no mapping table and no mappings; the last stop is the page's own data
    (null: not embedded twice); frame 1, a key frame, has its mappings."""
    rec = _pushed_recording(tmp_path / "rec", CAPTURE)
    timeline = embedded(write_page("-S", rec, path=str(tmp_path / "rec.html")))["timeline"][0]
    frames, instants = timeline["summary"]["frames"], timeline["instants"]
    assert [(f["number"], f["smaps"], f["full"]) for f in frames] == [(1, True, True), (2, False, True), (3, False, True)]
    assert list(instants) == ["0", "1", "2"] and instants["2"] is None
    second = instants["1"]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(frames[1]["time"]))
    assert second["process"]["source"]["description"] == f"recording {rec} frame 2, {when}"
    assert second["meta"]["rollup"] and "mapping" not in second and second["maps"]["processes"] == {}
    for name, command in second["meta"]["commands"].items():
        assert "--at 2" in command and " maps " not in command and "vss" not in command, command
        printed = json.loads(run_smem(*shlex.split(command)[1:], check=True).stdout)
        assert printed == second[name], name
    assert {"pss_anon", "pss_file", "pss_shmem"} <= set(second["process"]["rows"][0])
    first = instants["0"]
    assert not first["meta"]["rollup"] and first["mapping"]["rows"] and first["maps"]["processes"]
    # a damaged frame costs only itself: the page is of the others, with one warning
    (rec / "frames" / "000002.zst").write_bytes(b"damaged")
    made = run_smem("html", "-S", rec, "-o", tmp_path / "damaged.html")
    assert made.returncode == 0 and made.stderr.decode().splitlines() == [
        f"smem: warning: {rec}: frames/000002.zst: damaged or cut short: not a zstd frame: left out of the page"]
    timeline = embedded((tmp_path / "damaged.html").read_text())["timeline"][0]
    assert [f["number"] for f in timeline["summary"]["frames"]] == [1, 3]


@pytest.mark.uses("cpu")
def test_the_stops_a_budget_keeps_are_spread_over_the_recording(tmp_path, monkeypatch):
    """A budget that holds two instants besides the last keeps the first and the middle one, not
    the two earliest (the stops were kept earliest first: the end of a long recording had none)."""
    from smem.options import Query
    from smem.page import timeline
    from smem.page.data import PageRequest, page_documents
    from smem.page.html import data_json
    from smem.sources.recorded import Recording
    rec = _pushed_recording(tmp_path / "rec", CAPTURE, frames=9)
    request = PageRequest(Query()._replace(source=str(rec)))
    with Recording(str(rec)) as recording:
        entries = list(recording.frames)
    sizes = [len(json.dumps(json.loads(data_json(*page_documents(request, at=str(n), rollup=n > 1)[:2])),
                            separators=(",", ":"))) for n in (1, 2)]  # (as the timeline holds them)
    monkeypatch.setattr(timeline, "FULL_BUDGET", sum(sizes) + sizes[1] // 2)
    documents, _, _ = timeline.timeline_documents(request, entries)
    instants = json.loads(documents["timeline"])["instants"]
    assert {int(i) for i in instants} == {0, 4, 8} and instants["8"] is None
    assert instants["4"]["process"]["source"]["description"].startswith(f"recording {rec} frame 5, ")


@pytest.mark.uses("cpu")
def test_a_frame_whose_rollups_have_no_pss_split_stops_at_its_key_frame(tmp_path):
    """Rollups without Pss_Anon (Linux before 5.9) cannot give the breakdown of their frame: its
    tables are read from the key frame, and the stop is that key frame's (its number and time),
    never a later frame's label over the key frame's tables."""
    import io
    import tarfile
    capture = tmp_path / "unsplit.tar"
    with tarfile.open(CAPTURE) as tin, tarfile.open(capture, "w") as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            if data is not None and m.name.endswith("/smaps_rollup"):
                data = b"".join(line for line in data.splitlines(True) if not line.startswith(b"Pss_"))
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    rec = _pushed_recording(tmp_path / "rec", capture)
    timeline = embedded(write_page("-S", rec, path=str(tmp_path / "rec.html")))["timeline"][0]
    frames = timeline["summary"]["frames"]
    assert list(timeline["instants"]) == ["0"] and [f["full"] for f in frames] == [True, False, False]
    page = embedded((tmp_path / "rec.html").read_text())
    described = page["process"][0]["source"]["description"]
    when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(frames[0]["time"]))
    assert re.fullmatch(rf"recording {re.escape(str(rec))} frame 1( \(the key frame for frame \d+\))?, {when}", described)
    assert not page["meta"][0]["rollup"] and page["mapping"][0]["rows"]


@pytest.mark.parametrize("kind", ["no rollups", "rollups without the split"])
def test_the_system_table_of_a_kernel_before_5_9_is_what_smem_prints(tmp_path, kind):
    """A board's kernel before 5.9 (no Pss_Anon in smaps_rollup) or before 4.14 (no rollup; C
    smemcap's captures): -w --breakdown estimates the processes' PSS split per mapping, but the
    page, which sums each process's smaps by name, had no mappings to estimate it from: its
    System table and top bar showed "process memory (PSS)" and one "anon, page cache, shmem not
    mapped" of no known cache, under "Same numbers as: smem ... -w --breakdown", which splits them."""
    import io
    import tarfile
    capture = tmp_path / "unsplit.tar"
    with tarfile.open(CAPTURE) as tin, tarfile.open(capture, "w") as tout:
        for m in tin:
            data = tin.extractfile(m).read() if m.isreg() else None
            if data is not None and m.name.endswith("/smaps_rollup"):
                if kind == "no rollups":
                    continue
                data = b"".join(line for line in data.splitlines(True) if not line.startswith(b"Pss_"))
                m.size = len(data)
            tout.addfile(m, io.BytesIO(data) if data is not None else None)
    document, attrs = embedded(write_page("-S", capture, path=str(tmp_path / "page.html")))["system"]
    printed = json.loads(run_smem(*shlex.split(attrs["data-command"])[1:], check=True).stdout)
    assert document == printed
    assert "process anon (PSS)" in [row["area"] for row in document["rows"]]


def test_the_compared_system_table_keeps_the_tables_order(pages):
    """The compared page's System table had Source second (Area Source Status OldUsed ...), as smem
    diff had: it is last, where the page's own System table (and -w --breakdown) has it."""
    plain, compared = (embedded(pages[name][1])["system"] for name in ("plain", "compared"))
    own, changes = (shlex.split(attrs["data-command"])[-1].split() for _, attrs in (plain, compared))
    assert own[-1] == "source" and changes[0] == own[0] and changes[-1] == own[-1], changes
    assert list(compared[0]["rows"][0])[-1] == "source"


def test_the_page_keeps_what_smem_warned_of_as_it_read(tmp_path):
    """A capture taken without root left processes out, and smem html said so on stderr only: the
    page, which is kept and shared, showed their totals as the machine's without a word."""
    import io
    import tarfile
    taken = tmp_path / "unprivileged.tar"
    with tarfile.open(CAPTURE) as src, tarfile.open(taken, "w") as out:
        for m in src:
            data = src.extractfile(m).read() if m.isfile() else None
            if m.name.endswith("capture-info"):
                data += b"unreadable_processes=42\n"
                m.size = len(data)
            out.addfile(m, io.BytesIO(data) if data is not None else None)
    said = f"capture {taken} left out 42 processes its writer could not read (a writer not root reads only its own user's)"
    page = run_smem("html", "-S", taken, "-o", tmp_path / "page.html")
    assert page.returncode == 0 and said in page.stderr.decode()
    meta = embedded((tmp_path / "page.html").read_text(encoding="utf-8"))["meta"][0]
    assert meta["warnings"] == [said]
