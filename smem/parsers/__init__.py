"""Pure parsers, one module per kernel file, named after it.

They take bytes and return plain data; none of them touches the filesystem.
"""
