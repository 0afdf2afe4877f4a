"""The whole-archive tar index the header reader once served; kept for the tests that compare
smem's tar header reader (smem.sources.tar_index) with tarfile member by member."""

from smem.sources.tar_index import BLOCK, NeedTarfile, data_length, read_header

__all__ = ["index_tar"]


def index_tar(raw):
    """The members of the tar archive ``raw`` and the offset where its headers end.

    The end is where tarfile leaves ``TarFile.offset`` once iterated: the first zero
    block, or the end of the data when the archive has no end marker.
    """
    if not raw:
        raise NeedTarfile  # tarfile's "empty file" error
    members = []
    pos = 0
    while pos < len(raw):
        member = read_header(raw[pos:pos + BLOCK])
        if member is None:
            break
        offset_data = pos + BLOCK
        pos = offset_data + data_length(member)
        if pos > len(raw):
            raise NeedTarfile  # data cut short: tarfile tells which error
        members.append(member._replace(offset_data=offset_data))
    return members, pos
