"""How the command line chooses a view: each view's flags, and the rules between them.

The registry (smem.views) gives every view a :class:`ChosenBy`; the command line makes a click
option of each :class:`ViewFlag` and asks :func:`choose` which view the given ones name.  These
records are declared in the registry, not in the views' modules, because every invocation builds
its options from them and a report imports only the view it shows.
"""

from typing import Mapping, NamedTuple, Optional, Sequence, Tuple

from ..errors import UsageError

__all__ = ["ViewFlag", "ChosenBy", "by", "choose", "flags_of"]


class ViewFlag(NamedTuple):
    """One option that chooses a view: ``-m/--mappings``, or ``--group KEY`` (``values``)."""

    decls: Tuple[str, ...]             # its spellings, the one errors name first
    dest: str                          # the parameter's name
    help: str
    values: Tuple[str, ...] = ()       # a valued option's choices; () for a flag
    metavar: Optional[str] = None
    compared_help: Optional[str] = None  # its help in smem diff, where it says more than ``help``


class ChosenBy(NamedTuple):
    """How the command line chooses a view: any of ``flags`` given (no flags: the default view).

    A view chosen by its flags alone excludes every other (``choose one view``); one that is
    ``alone`` excludes them too, with its own reason (--shared-with lists processes); one
    ``within`` another is that view refined, its flag meaningful only with the other's
    (--breakdown with -w).  ``why`` words the reason ("accounts for all of MemTotal").
    ``compared``: ``smem diff`` offers the flags too (the view's rows can be matched).
    """

    flags: Tuple[ViewFlag, ...] = ()
    within: Optional[str] = None
    alone: bool = False
    why: str = ""
    compared: bool = True


def by(*flags: ViewFlag, **rules) -> ChosenBy:
    """A view's ChosenBy: ``by(flag, ...)``; no flags for the default view."""
    return ChosenBy(flags, **rules)


def _named(choices, name):
    return choices[name].flags[0].decls[0]


def choose(choices: Mapping[str, ChosenBy], given: Mapping[str, object]) -> str:
    """The name of the view the options ``given`` (parameter name -> value) choose among
    ``choices`` (name -> ChosenBy, in the order errors list them); a UsageError for a
    combination that names none or several."""
    def on(choice):
        return any(given.get(flag.dest) for flag in choice.flags)

    plain = [name for name, c in choices.items() if c.flags and c.within is None and not c.alone]
    picked = [name for name in plain if on(choices[name])]
    if len(picked) > 1:
        listed = [_named(choices, name) for name in plain]
        raise UsageError(f"choose one view: {', '.join(listed[:-1])} or {listed[-1]} "
                         f"({' and '.join(_named(choices, name) for name in picked)} given)")
    for name, choice in choices.items():
        if choice.alone and on(choice):
            if picked:
                raise UsageError(f"{_named(choices, name)} {choice.why}: it does not combine with "
                                 f"{_named(choices, picked[0])}")
            picked = [name]
    chosen = picked[0] if picked else next(name for name, c in choices.items() if not c.flags)
    for name, choice in choices.items():
        if choice.within is not None and on(choice):
            if chosen != choice.within:
                raise UsageError(f"{_named(choices, name)} {choice.why}: use it with {_named(choices, choice.within)}")
            chosen = name
    return chosen


def flags_of(choices: Mapping[str, ChosenBy], compared: bool = False) -> Sequence[ViewFlag]:
    """Every view's flags, in the registry's order (``compared``: those smem diff offers)."""
    return [flag for c in choices.values() if c.compared or not compared for flag in c.flags]
