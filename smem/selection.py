"""Selection: the -P, -U, -M and --pid filters, each regex match bounded in time.

A pattern that backtracks without end is refused, never left to hang (smem 1.5 hangs);
:func:`own_invocation` keeps smem's own command line (and its wrappers') out of -P's matches.
"""

import copy
import os
import re

from .errors import UsageError
from .parsers.cmdline import parse_cmdline
from .parsers.stat import parse_stat
from .sources.base import OWN_PID

__all__ = ["Selection", "own_invocation", "MATCH_SECONDS", "MAX_REPEAT"]


#: The time one match of a filter may take (-P, -U, -M), seconds: a pattern that
#: backtracks without end ('(a+)+$' against a long command line) is stopped and refused
#: rather than left to run for ever (smem 1.5 hangs).  Per match, not for all of them: a
#: sane -M over a million mappings takes longer in all, each match microseconds.
MATCH_SECONDS = 1.0


#: how many texts a filter keeps its verdict on (-M: a machine's distinct mapping names)
MATCHES_KEPT = 65536


class _Pattern:
    """A compiled filter each of whose matches is bounded in time.

    The ``regex`` module (re's syntax, plus a ``timeout`` it checks while it
    backtracks) does the matching; without it, ``re``, unbounded.
    """

    __slots__ = ("pattern", "option", "_compiled", "_timed", "_found")

    def __init__(self, pattern, option):
        self.pattern = pattern
        self.option = option
        try:
            import regex
        except ImportError:  # pragma: no cover - a dependency; re works, unbounded
            regex = None
        errors = (re.error, OverflowError, RecursionError, ValueError, TypeError, MemoryError)
        if regex is not None:
            errors += (regex.error,)
        try:
            re.compile(pattern)  # re's syntax first: regex builds a{99999999} out in memory
            _check_repeats(pattern, option)
            self._compiled = (regex or re).compile(pattern)
        except errors as e:
            why = str(e) or type(e).__name__
            if isinstance(e, RecursionError):
                why = "nested too deeply"
            raise UsageError(f"invalid regular expression for {option} {_shown(pattern)}: {why}") from None
        self._timed = regex is not None
        self._found = {}  # text -> whether it matches (matches())

    def matches(self, text):
        """Whether the pattern is found in ``text``, each distinct text searched once: -M's
        mapping names repeat in process after process (libc's in all of them), and a search
        bounded in time costs far more than a dict lookup.  At most :data:`MATCHES_KEPT` kept."""
        found = self._found.get(text)
        if found is None:
            if len(self._found) >= MATCHES_KEPT:
                self._found.clear()
            found = self._found[text] = self.search(text) is not None
        return found

    def search(self, text):
        if not self._timed:
            return self._compiled.search(text)
        try:
            return self._compiled.search(text, timeout=MATCH_SECONDS)
        except TimeoutError:
            raise UsageError(f"{self.option} {_shown(self.pattern)}: matching took more than "
                             f"{MATCH_SECONDS:g} s (a pattern that backtracks without end?): simplify it") from None


#: The largest repeat count a filter may ask for ({n} or {m,n}): regex unrolls counted repeats
#: when it compiles them, and a{99999999} takes gigabytes.
MAX_REPEAT = 10000


def _regex_parser():
    """The re module's own parser of patterns: re._parser, sre_parse before Python 3.11."""
    try:
        from re import _parser as parser
    except ImportError:  # (Python 3.9, 3.10)
        import sre_parse as parser
    return parser


def _nodes(parsed, parser):
    """Every (op, value) of a pattern ``parser`` parsed, at any depth: inside repeats, groups
    (atomic ones too), alternatives, lookarounds and a conditional group's two branches."""
    repeats = (parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None))
    atomic = getattr(parser, "ATOMIC_GROUP", None)  # (Python 3.11+)
    todo = [parsed]
    while todo:
        for op, value in todo.pop():
            yield op, value
            if op in repeats:
                todo.append(value[2])
            elif op == parser.SUBPATTERN:
                todo.append(value[-1])
            elif op == atomic and atomic is not None:
                todo.append(value)
            elif op == parser.BRANCH:
                todo.extend(value[1])
            elif op in (parser.ASSERT, parser.ASSERT_NOT):
                todo.append(value[1])
            elif op == parser.GROUPREF_EXISTS:  # (?(1)yes|no): no is None where there is none
                todo.extend(branch for branch in value[1:] if branch is not None)


def _check_repeats(pattern, option):
    """UsageError if ``pattern`` counts a repeat past MAX_REPEAT (an unbounded + or * is fine)."""
    if "{" not in pattern:
        return  # (no count without a brace: a long pattern is not parsed twice)
    parser = _regex_parser()
    unbounded = parser.MAXREPEAT
    repeats = (parser.MAX_REPEAT, parser.MIN_REPEAT, getattr(parser, "POSSESSIVE_REPEAT", None))
    for op, value in _nodes(parser.parse(pattern), parser):
        if op in repeats:
            low, high, _ = value
            if max(low, 0 if high == unbounded else high) > MAX_REPEAT:
                raise UsageError(f"invalid regular expression for {option} {_shown(pattern)}: "
                                 f"a repeat count over {MAX_REPEAT}")


def _names_colon(pattern):
    """Whether ``pattern`` names a colon (a literal ':', or one in a set): one that can match a
    label ``name:uid`` only by its colon or the uid after it (\\W, .) is left to names."""
    parser = _regex_parser()
    colon = ord(":")
    for op, value in _nodes(parser.parse(pattern), parser):
        if op == parser.LITERAL and value == colon:
            return True
        if op == parser.IN and (parser.NEGATE, None) not in value and any(
                o == parser.LITERAL and v == colon or o == parser.RANGE and v[0] <= colon <= v[1] for o, v in value):
            return True
    return False


def _shown(pattern):
    return repr(pattern if len(pattern) <= 60 else pattern[:57] + "...")


class Selection:
    """The -P / -U / -M filters, compiled once (a bad regex is a usage error).

    Each filter's matching is bounded in time (MATCH_SECONDS): a runaway pattern is a
    usage error too, never a hang.
    """

    def __init__(self, process=None, user=None, mapping=None, pids=None):
        self.process = self._compile(process, "-P")
        self.user = self._compile(user, "-U")
        self._user_labels = self.user is not None and _names_colon(user)
        self.mapping = self._compile(mapping, "-M")
        self.pids = frozenset(pids) if pids else None  # --pid: only these processes

    @property
    def selects(self):
        """Whether --pid, -P, -U or -M leaves processes, or their mappings, out of what is read
        (the breakdown's rows then say the rest is of those not selected)."""
        return self.process is not None or self.user is not None or self.pids is not None or self.mapping is not None

    def without_user(self):
        """This selection but -U (decided later, where the user's name comes late)."""
        other = copy.copy(self)
        other.user = None
        return other

    def only_pids(self, pids):
        """This selection, of ``pids`` only (what a collection re-reads: smem.incremental)."""
        other = copy.copy(self)
        other.pids = frozenset(pids)
        return other

    def wants_pid(self, pid):
        """--pid: the process is one of those named (all are, without --pid)."""
        return self.pids is None or pid in self.pids

    def wants_process(self, name, cmdline):
        """-P: the regex is found in the name (from stat) or the command line."""
        return self.process is None or bool(self.process.search(name) or self.process.search(cmdline))

    def wants_user(self, user, uid):
        """-U: the regex is found in the user name or, for a pattern that names a colon, in
        ``name:uid``, the label -u gives a uid that shares its name (NIS or LDAP duplicates), and
        ``name:?`` where the uid is unknown (None), as -u labels that one.  A name holds no colon
        (passwd's separator), so what a pattern without one matches is as it was."""
        if self.user is None or self.user.search(user):
            return True
        return self._user_labels and bool(self.user.search(f"{user}:{'?' if uid is None else uid}"))

    def wants(self, name, cmdline, user, pid=None, uid=None):
        """Whether --pid, -P and -U all select a process."""
        return (pid is None or self.wants_pid(pid)) and self.wants_process(name, cmdline) and self.wants_user(user, uid)

    @staticmethod
    def _compile(pattern, option):
        if pattern is None:
            return None
        return _Pattern(pattern, option)


def own_invocation(source, selection):
    """Pids whose command line holds our -P pattern only because they run us.

    smem itself, and the wrappers that started it with the option in their own
    command line (``sh -c 'smem -P x'``, ``timeout 5 smem -P x``): the
    ancestors whose command line holds "-P x" (or --processfilter) as typed.
    An interactive shell named like the pattern (``bash`` for ``-P bash``) is
    not one of them.
    """
    if not source.has(OWN_PID) or selection.process is None:
        return frozenset()
    mine = {os.getpid()}
    option = re.compile(r"(?:-P\s*|--processfilter[=\s])" + re.escape(selection.process.pattern))
    pid = os.getppid()
    while pid > 1 and pid not in mine:
        cmdline = source.read_optional(f"{pid}/cmdline")
        stat = source.read_optional(f"{pid}/stat")
        if cmdline is None or stat is None:
            break
        if option.search(parse_cmdline(cmdline)):
            mine.add(pid)
        try:
            pid = parse_stat(stat).ppid
        except ValueError:
            break
    return frozenset(mine)
