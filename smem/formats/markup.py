"""What each markup style of tabulate needs escaped so that a cell stays text when rendered.

A command line, a mapping, a user or a cgroup is named by whoever runs the process: in a table
meant to be rendered (Markdown, reStructuredText, MediaWiki, ...) it must come out as the same
characters, never as markup, a link, raw HTML or a cell boundary.  tabulate escapes its html and
latex styles itself; latex_raw, which by design does not, is not offered (smem.formats).  The
styles drawn for people to read as they are (plain, simple, grid, psql, ...) need nothing.

Each style's own escape, applied to every character that can begin markup there:

* Markdown (pipe, github): a backslash before ASCII punctuation (CommonMark 0.31, 2.4), ``:``
  among it, which keeps a URL with a scheme from being made a link (GitHub still links a bare
  ``www.`` name and an e-mail address: the same text, a link).
* reStructuredText (rst): a backslash before inline-markup characters, ``:`` and ``@`` (a
  standalone URI or e-mail address is made a link), and before a cell's first character where
  it is punctuation (an explicit markup start such as ``..``; docutils' reStructuredText Markup
  Specification, "Escaping Mechanism").
* MediaWiki, MoinMoin, Textile, AsciiDoc: a numeric character reference (``&#124;``), which each
  renders as the character and never parses as markup.
* Jira and YouTrack wiki markup: a backslash before the special character; a backslash itself
  as a character reference (two are a line break there).
* Org (orgtbl): ``\\vert{}`` for ``|`` (an Org entity), and a zero-width space inside ``[[``, ``@@``
  and ``{{{``, which would begin a link, an export snippet or a macro (Org manual, "Escape
  Character"); emphasis, subscripts and entities are left to Org, which has no escape for them.
"""

import re

__all__ = ["escaper"]

#: ASCII punctuation that may begin markup in the styles escaped with references or backslashes;
#: / . , : ( ) and space are not in it, so paths and command lines stay readable (the reference
#: styles add ":", "(", ")" and dots beside dots: _REFERENCE)
_ACTIVE = "!\"#$%&'*+-;<=>?@[\\]^_`{|}~"

_MARKDOWN = re.compile(r"([\\`*_\[\]<>|~&!#:])")
_RST = re.compile(r"([\\`*_|:@])")
#: what starts a body element at the start of a cell: punctuation (not "/": a path), an enumerator
_RST_FIRST = re.compile(r"^([!-.:-@\[-`{-~]|(\d+|[A-Za-z]|[ivxlcdmIVXLCDM]+)[.)](\s|$))")
#: with ":" (a bare URL is made a link), "(" and ")" (AsciiDoc's index terms, (C) and (TM) made
#: symbols) and a dot beside another (an ellipsis made one character)
_REFERENCE = re.compile("[" + re.escape(_ACTIVE + ":()") + r"]|\.(?=\.)|(?<=\.)\.")
_BACKSLASH = re.compile("[" + re.escape(_ACTIVE) + "]")
_ORG = re.compile(r"(\[\[|@@|\{\{\{)")


def _markdown(text):
    return _MARKDOWN.sub(r"\\\1", text)


def _rst(text):
    escaped = _RST.sub(r"\\\1", text)
    return "\\" + escaped if _RST_FIRST.match(text) and not escaped.startswith("\\") else escaped


def _reference(text):
    return _REFERENCE.sub(lambda m: f"&#{ord(m.group())};", text)


def _backslash(text):
    return _BACKSLASH.sub(lambda m: "&#92;" if m.group() == "\\" else "\\" + m.group(), text)  # ("\\\\": a line break)


def _org(text):
    return _ORG.sub(lambda m: m.group()[0] + "\u200b" + m.group()[1:], text.replace("|", "\\vert{}"))


_ESCAPERS = {
    "pipe": _markdown, "github": _markdown,
    "rst": _rst,
    "mediawiki": _reference, "moinmoin": _reference, "textile": _reference, "asciidoc": _reference,
    "jira": _backslash, "youtrack": _backslash,
    "orgtbl": _org,
}


def escaper(style):
    """The function that makes a cell's text literal in ``style``, or None where it needs nothing."""
    return _ESCAPERS.get(style)
