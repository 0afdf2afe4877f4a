"""click's parsing in smem's words: the command, group, choice and path types the command line uses,
and click's usage errors reworded as smem's one-liners (lowercase, what was expected, the close
ones suggested), so that every wrong word on the command line reads alike.
"""

import math
import re
import sys

import click

from .errors import SmemError, UsageError
from .options import MAX_SECONDS

__all__ = ["SmemCommand", "DefaultGroup", "Choice", "FiniteRange", "range_text", "seconds", "PATH", "DIRECTORY", "usage_message",
           "one_line", "command_suggestion", "option_suggestion"]


_UNBROKEN = "\u2011"  # a non-breaking hyphen, which textwrap does not break a line at


class _HelpFormatter(click.HelpFormatter):
    """click's help, its lines never broken at a hyphen: "--all-frames" wrapped as "--all-" and
    "frames" reads as another option."""

    def write_text(self, text):
        self._unbroken(super().write_text, text.replace("-", _UNBROKEN))

    def write_dl(self, rows, col_max=30, col_spacing=2):
        rows = [tuple(cell.replace("-", _UNBROKEN) for cell in row) for row in rows]
        self._unbroken(super().write_dl, rows, col_max, col_spacing)

    def _unbroken(self, write, *args):
        start = len(self.buffer)
        write(*args)
        self.buffer[start:] = [part.replace(_UNBROKEN, "-") for part in self.buffer[start:]]


class _Context(click.Context):
    formatter_class = _HelpFormatter


class SmemCommand(click.Command):
    """A command whose stray arguments are refused in smem's words, not click's -- with --help or
    --version too: click runs those (eager) before it looks at what is left, so "smem --version x"
    printed the version and exit 0, while "smem --help --bogus" was refused."""

    context_class = _Context

    def parse_args(self, ctx, args):
        ctx.allow_extra_args = True
        try:
            if not ctx.resilient_parsing:
                self._refuse_stray_beside_eager(ctx, args)
            rest = super().parse_args(ctx, args)
        except click.UsageError as e:  # the parser's own errors (an option's missing value) lack it
            e.ctx = e.ctx or ctx
            raise
        except BrokenPipeError:
            raise  # (read by head: quiet, as the report is)
        except OSError as e:  # --help or --version, the only writes while parsing, to a full disk
            raise SmemError(f"cannot write to standard output: {e.strerror or e}") from None
        if ctx.args and not ctx.resilient_parsing:
            self._refuse_stray(ctx, ctx.args)
        return rest

    def _refuse_stray_beside_eager(self, ctx, args):
        """A dry parse (values unconverted, no callback run): a stray argument beside an eager
        option is refused before that option prints anything, and so is --help or --version with
        standard output closed (click's echo drops what it cannot write: nothing said, exit 0)."""
        if not any(a.startswith("-") for a in args):
            return  # (no option, so no eager one)
        eager = {p.name for p in self.get_params(ctx) if p.is_eager}
        given, stray, _ = self.make_parser(ctx).parse_args(args=list(args))
        if stray and eager & given.keys():
            self._refuse_stray(ctx, stray)
        if sys.stdout is None and eager & given.keys():
            raise SmemError("cannot write to standard output: standard output is closed")

    def _refuse_stray(self, ctx, stray):
        self._refuse_option_taken_as_value(ctx)
        raise click.UsageError(f"unexpected argument {stray[0]!r}: {ctx.command_path} takes "
                               f"{_arguments(self) or 'options only'}", ctx)

    def _refuse_option_taken_as_value(self, ctx):
        """An option whose value was forgotten takes the next option as it ("--bar -o x.png": bar
        is "-o"), and the stray word left ("x.png") is not what was wrong: say the option's."""
        names = {o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}
        for param in self.get_params(ctx):
            value = ctx.params.get(param.name)
            if isinstance(param, click.Option) and isinstance(value, str) and value in names:
                raise click.UsageError(f"{param.opts[-1]} takes {param.metavar or 'a value'}: "
                                       f"not the option {value}", ctx)


class DefaultGroup(click.Group):
    """A group that runs ``report`` when the first word is not one of its commands."""

    command_class = SmemCommand
    context_class = _Context
    default_command = "report"

    def parse_args(self, ctx, args):
        if args and args[0] in self.commands:
            return super().parse_args(ctx, args)
        if not args and ctx.resilient_parsing:
            return super().parse_args(ctx, args)  # completing the first word: offer the commands
        return super().parse_args(ctx, [self.default_command, *args])

    def shell_complete(self, ctx, incomplete):
        """The first word completes to a command, or to the report's options."""
        items = super().shell_complete(ctx, incomplete)
        if incomplete.startswith("-"):
            report_ctx = self.commands[self.default_command].make_context(
                self.default_command, [], parent=ctx, resilient_parsing=True)
            items += self.commands[self.default_command].shell_complete(report_ctx, incomplete)
        return items


class Choice(click.Choice):
    """click.Choice refusing in smem's words, with the close ones suggested; ``aliases`` maps
    other names people know (the program's, zstd) to a choice (zst)."""

    def __init__(self, choices, aliases=None):
        super().__init__(choices)
        self.aliases = dict(aliases or {})

    def convert(self, value, param, ctx):
        value = self.aliases.get(value, value)
        if value in self.choices:
            return value
        import difflib  # only for a mistake: not on every run
        name = _option_names(param)
        close = ([c for c in self.choices if c.lower() == str(value).lower()]  # JSON: difflib finds no json
                 or difflib.get_close_matches(str(value), self.choices, n=3, cutoff=0.6))
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        if len(self.choices) == 1:
            raise UsageError(f"{name} takes {self.choices[0]}, not {value!r}{hint}")
        if len(self.choices) <= 6:
            raise UsageError(f"{name} takes {', '.join(self.choices[:-1])} or {self.choices[-1]}, "
                             f"not {value!r}{hint}")
        raise UsageError(f"{name}: no such value {value!r}" + (hint or f"; the values: {', '.join(self.choices)}"))


class FiniteRange(click.FloatRange):
    """click.FloatRange that refuses nan and inf: click's range checks let nan through (every
    comparison with it is false), and a timer or a rate given either ends in a traceback."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)  # (finite first: inf past a maximum says so too)
        if not math.isfinite(number):
            raise UsageError(f"{_option_names(param)} takes a finite number, not {value!r}")
        return super().convert(number, param, ctx)

    def _describe_range(self):  # (--help's "[0<x<=10000000]": click's own says 0.0 and 1000000.0)
        return range_text(self)


class Percent(FiniteRange):
    """A FiniteRange of percent that takes "20%" as 20: --recommend's answer says "+20%", and
    a user writes the headroom so."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().endswith("%") and value.strip() != "%":
            value = value.strip()[:-1]
        return super().convert(value, param, ctx)


def range_text(kind):
    """A range type's bounds as --help and the man page show them: "0<x<=10000000", "x>=1"."""
    low = f"{_number(kind.min)}{'<' if kind.min_open else '<='}" if kind.min is not None else ""
    high = f"{'<' if kind.max_open else '<='}{_number(kind.max)}" if kind.max is not None else ""
    if low and not high:
        return f"x{'>' if kind.min_open else '>='}{_number(kind.min)}"
    return f"{low}x{high}"


def seconds(min=0.0, min_open=False):
    """A time in seconds from ``min`` to options.MAX_SECONDS: a timer given 1e12 overflows."""
    return FiniteRange(min=min, min_open=min_open, max=MAX_SECONDS)


class _Path(click.ParamType):
    """A file (or directory) name, taken as given: smem opens it and says what is wrong (click.Path
    would stat it first, and a NUL in it is a traceback); <Tab> offers the shell's names."""

    name = "path"

    def __init__(self, kind):
        self.kind = kind  # "file" or "dir": what <Tab> offers

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem  # (as click imports it: only for <Tab>)
        return [CompletionItem(incomplete, type=self.kind)]


PATH = _Path("file")
DIRECTORY = _Path("dir")


class _Size(click.ParamType):
    """A memory size ("2G"), as bytes (or, ``given``, as a units.GivenSize: bytes and whether
    it was a bare number); a bad one is refused naming the option it was given to."""

    name = "size"

    def __init__(self, given=False):
        self.given = given

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        from .units import read_size
        try:
            size = read_size(value)
        except UsageError as e:
            raise UsageError(f"{_option_names(param)}: {e}") from None
        return size if self.given else size.bytes


SIZE = _Size()
GIVEN_SIZE = _Size(given=True)


def _option_names(param):
    return "/".join(sorted(param.opts, key=lambda o: o.startswith("--"))) if param is not None else "an option"


def _arguments(command):
    return " ".join(p.human_readable_name for p in command.params if isinstance(p, click.Argument))


def usage_message(error):
    """click's usage ``error`` in smem's words: lowercase, one line, naming what was expected."""
    if isinstance(error, click.MissingParameter) and isinstance(error.param, click.Argument):
        return (f"missing {error.param.human_readable_name}: "
                f"{error.ctx.command_path} takes {_arguments(error.ctx.command)}")
    if isinstance(error, click.MissingParameter) and error.param is not None and error.ctx is not None:
        what = error.param.metavar or error.param.type.name.upper()
        return f"{error.ctx.command_path} needs {_option_names(error.param)} {what}"
    if isinstance(error, click.BadOptionUsage) and error.ctx is not None:
        option = next((p for p in error.ctx.command.params if error.option_name in getattr(p, "opts", ())), None)
        if option is not None:
            if option.is_flag:
                return f"{error.option_name} takes no value"
            what = option.metavar or option.type.name.upper()
            return f"{error.option_name} takes a value: {error.option_name} {what}"
    if isinstance(error, click.BadParameter) and isinstance(getattr(error.param, "type", None),
                                                            (click.IntRange, click.FloatRange)):
        out_of_range = re.match(r"(\S+) is not in the range", error.message)
        if out_of_range:
            return _range_message(error.param, _number(out_of_range.group(1)))
        not_a_number = re.match(r"('.*') is not a valid", error.message)  # ("'2.5' is not a valid integer range")
        if not_a_number:
            return _range_message(error.param, not_a_number.group(1))
    if isinstance(error, click.BadParameter) and getattr(error.param, "type", None) in (click.FLOAT, click.INT):
        not_a_number = re.match(r"('.*') is not a valid", error.message)  # (its range checked after: validate)
        if not_a_number:
            what = "a number of seconds" if error.param.metavar in ("SECONDS", "S") else "a number"
            return f"{_option_names(error.param)} takes {what} (not {not_a_number.group(1)})"
    if isinstance(error, click.BadParameter) and error.param is not None:
        return f"{_option_names(error.param)}: {one_line(error.message)}"
    return one_line(error.format_message())


def _range_message(param, given):
    """A number out of its option's range, or not a number, in words (click says "0.0 is not in
    the range 0.0<x<=1e7", "'x' is not a valid integer range")."""
    kind, bounds = "a whole number" if isinstance(param.type, click.IntRange) else "a number", []
    if param.type.min is not None:
        bounds.append(f"{'above' if param.type.min_open else 'at least'} {_number(param.type.min)}")
    if param.type.max is not None:
        bounds.append(f"{'below' if param.type.max_open else 'at most'} {_number(param.type.max)}")
    return f"{_option_names(param)} takes {kind} {', '.join(bounds)} (not {given})"


def _number(value):
    """10000000 and 0.001 as written, not 1e+07 and 0.0; 1000000.5 whole, not rounded to 1e+06
    (the bound it passed)."""
    try:
        number = float(value)
    except ValueError:
        return str(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e16 else repr(number)


def one_line(message):
    """A message as smem writes it: one line, lowercase first, no full stop."""
    message = " ".join(message.split()).rstrip(".")
    return message[:1].lower() + message[1:] if message[1:2].islower() else message


def command_suggestion(word, commands):
    """The ``commands`` a misspelt one was probably meant as, else all of them."""
    import difflib
    close = difflib.get_close_matches(word, commands, n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(close)}?" if close else f"; the commands: {', '.join(commands)}"


def option_suggestion(error):
    """The options an unknown one was probably meant as: those it begins, else a close spelling.

    click's own guess is difflib's at a low cutoff, which offers --columns for --bogus.
    """
    import difflib
    typed = error.option_name
    if re.fullmatch(r"-[0-9][0-9.]*", typed or ""):  # (--recommend -5: a value, read as options)
        return ": a negative number is no option, and no option takes one"
    if error.ctx is None:
        return ""
    known = [o for p in error.ctx.command.get_params(error.ctx) for o in p.opts + p.secondary_opts
             if o.startswith("--")]
    close = [o for o in known if o.startswith(typed)] if typed.startswith("--") else []
    if not close:
        names = {o.lstrip("-"): o for o in known}
        close = [names[n] for n in difflib.get_close_matches(typed.lstrip("-"), names, n=3, cutoff=0.75)]
    return f"; did you mean {' or '.join(close)}?" if close else ""
