"""The loader completes a process by making a new value, never by changing one it handed out: the
fold (the mapping view's sums) keeps the process it was given, mappings and all, while the reading
holds the process without them."""

from conftest import FIXTURES
from smem.loading import load_reading
from smem.model import Need, Needs
from smem.sources import open_source

CAPTURE = FIXTURES / "captures" / "faithful.tar.gz"


class KeptProcesses:
    """A fold that keeps what it is given (the mapping view's sums would read them)."""

    def __init__(self):
        self.given = []

    def add(self, process):
        self.given.append(process)

    def clear(self):
        self.given.clear()

    def result(self):
        return tuple(self.given)


def test_a_folded_process_is_let_go_of_in_a_new_value():
    for streamed in (False, True):
        fold = KeptProcesses()
        reading = load_reading(open_source(str(CAPTURE), streamed=streamed), jobs=1, fold=fold,
                               needs=Needs().with_kinds(Need.MAPPINGS))
        mapped = [p for p in fold.given if p.mappings]
        assert mapped and all(p.mappings is None for p in reading.processes)
        by_pid = {p.pid: p for p in reading.processes}
        for given in mapped:  # the same process, its mappings let go in the reading's value only
            kept = by_pid[given.pid]
            assert kept is not given and kept.cmdline == given.cmdline and kept.has_memory
