"""Build the optional C parser for smaps (smem/parsers/_smaps.c).

Everything else is in pyproject.toml.  ``optional=True``: where no compiler
(or no Python headers) is found, the build goes on without it and smem uses
its pure-Python parser, which gives the same results (smem.parsers.smaps.IMPLEMENTATION
says which is in use).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("smem.parsers._smaps", ["smem/parsers/_smaps.c"], optional=True)])
