"""/sys/kernel/mm/page_idle/bitmap's words (smem/parsers/page_idle_bitmap.py), as the kernel lays
them out (Documentation/admin-guide/mm/idle_page_tracking.rst): PFN i in bit i % 64 of the
8-byte word i // 64, in the machine's byte order.  The bytes are packed here with struct's
native order, independently of the parser's numpy."""

import struct

import pytest

np = pytest.importorskip("numpy", reason="idle page tracking needs smem[exact] (numpy)")

from smem.parsers.page_idle_bitmap import idle_among, idle_bitmap_words, parse_page_idle_bitmap  # noqa: E402


def _words(*values):
    return struct.pack(f"={len(values)}Q", *values)


def test_each_set_bit_is_the_pfn_of_its_word_and_place():
    data = _words(1 | 1 << 63, 0, 1 << 5 | 1 << 6)
    assert parse_page_idle_bitmap(data).tolist() == [0, 63, 128 + 5, 128 + 6]
    # read from word 1000 on: the PFNs are 64000 further
    assert parse_page_idle_bitmap(data, 1000).tolist() == [64000, 64063, 64128 + 5, 64128 + 6]


def test_no_bit_set_is_no_idle_page_and_nothing_read_is_nothing():
    assert parse_page_idle_bitmap(_words(0, 0)).tolist() == []
    assert parse_page_idle_bitmap(b"").tolist() == []


@pytest.mark.parametrize("size", [1, 7, 9, 15])
def test_a_read_that_is_not_whole_words_is_refused(size):
    with pytest.raises(ValueError, match="whole number of words"):
        parse_page_idle_bitmap(b"\xff" * size)


def test_marking_writes_each_run_of_words_with_only_its_pfns_bits():
    # the kernel ORs what is written: a word must carry no bit but those of the pages to mark
    runs = idle_bitmap_words([70, 3, 64, 3, 640, 641, 703])
    assert runs == [(0, _words(1 << 3, 1 << 0 | 1 << 6)), (10, _words(1 << 0 | 1 << 1 | 1 << 63))]
    assert idle_bitmap_words([]) == []


def test_what_marking_writes_reads_back_as_the_same_pfns():
    pfns = np.array([5, 6, 7, 4095, 4096, 1 << 40, (1 << 40) + 63], dtype=np.uint64)
    back = []
    for word, data in idle_bitmap_words(pfns[::-1]):
        back += parse_page_idle_bitmap(data, word).tolist()
    assert back == pfns.tolist()


def test_idle_among_answers_for_each_pfn_asked_and_not_for_pfns_outside_the_bytes():
    data = _words(0, 1 << 1 | 1 << 2)  # words 10 and 11: PFNs 705 and 706 idle
    asked = np.array([640, 705, 706, 707, 5, 10_000], dtype=np.uint64)
    assert idle_among(asked, data, 10).tolist() == [False, True, True, False, False, False]
    assert idle_among(asked, _words(0), 10).tolist() == [False] * 6
