"""zstd data's frames walked by their headers, and the largest window a decoder is allowed: what
a capture's reader (decompressed.py) and a recording's (recorded_frame.py) both check first."""

__all__ = ["zstd_frames_end", "MAX_ZSTD_WINDOW"]

#: The largest zstd window accepted (zstd's own default limit for decoding, 2**27).
MAX_ZSTD_WINDOW = 1 << 27


def zstd_frames_end(data):
    """Where the zstd frames in ``data`` end, or None if the last one is cut short.

    zstandard's stream reader ends quietly at a frame cut short, so the frames are
    walked first (RFC 8878: frame header, then blocks until the last, then checksum);
    bytes left after the last frame are left to the decoder, which refuses them.
    """
    pos, n = 0, len(data)
    while pos + 4 <= n:
        magic = int.from_bytes(data[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:  # a skippable frame
            pos += 8 + int.from_bytes(data[pos + 4:pos + 8], "little")
            continue
        if magic != 0xFD2FB528 or pos + 5 > n:
            return pos
        descriptor = data[pos + 4]
        single = descriptor >> 5 & 1
        pos += 5 + (not single) + (0, 1, 2, 4)[descriptor & 3] + (single, 2, 4, 8)[descriptor >> 6]
        while True:
            if pos + 3 > n:
                return None
            block = int.from_bytes(data[pos:pos + 3], "little")
            pos += 3 + (1 if block >> 1 & 3 == 1 else block >> 3)
            if block & 1:
                break
        pos += 4 * (descriptor >> 2 & 1)
        if pos > n:
            return None
    return pos
