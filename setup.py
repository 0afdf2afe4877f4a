"""Build the optional C parser for smaps (smem/parsers/_smaps*.c, one extension) and the optional
C step of --exact's frame reading (smem/exact/_frames.c) and the held stat reads of the
incremental collection (smem/sources/_stat_fds.c).

Everything else is in pyproject.toml.  ``optional=True``: where no compiler
(or no Python headers) is found, the build goes on without it and smem uses
its pure-Python parser, which gives the same results (smem.parsers.smaps.IMPLEMENTATION
says which is in use); likewise the numpy code of smem.exact.scanned.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("smem.parsers._smaps",
                             [f"smem/parsers/{name}.c" for name in ("_smaps", "_smaps_text", "_smaps_sums", "_smaps_names")],
                             depends=["smem/parsers/_smaps.h"], optional=True),
                   Extension("smem.exact._frames", ["smem/exact/_frames.c"], optional=True),
                   Extension("smem.sources._stat_fds", ["smem/sources/_stat_fds.c"], optional=True)])
