"""smem(1), generated from the command line itself so that it cannot drift.

``python -m smem.manpage > docs/smem.1`` rewrites the committed page; a test
regenerates it and compares.
"""

import inspect

import click

from . import __version__
from .cli import EPILOG, cli, report
from .cli_words import range_text
from .formats import FORMATS
from .formats import TABLE_FORMATS as STYLES
from .sources.remote import DEFAULT_TIMEOUT

__all__ = ["manpage"]


def _roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def _options(command, ctx):
    """Each option's names, argument and help, as smem words them: not click's help records,
    whose layout (arguments listed, ranges and defaults spelt) changes between click releases."""
    lines = []
    for param in command.get_params(ctx):
        if not isinstance(param, click.Option) or param.hidden:
            continue
        names = ", ".join(sorted(param.opts + param.secondary_opts, key=lambda o: o.startswith("--")))
        argument = _argument(param)
        lines += [".TP", f"\\fB{_roff(names + (' ' + argument if argument else ''))}\\fR",
                  _roff(" ".join((param.help or "").split()) + _extra(param))]
    return lines


def _argument(option):
    """What an option takes: its metavar, else its choices, else nothing for a flag."""
    if option.is_flag or option.count:
        return ""
    if option.metavar:
        return option.metavar
    if isinstance(option.type, click.Choice):
        return "[" + "|".join(map(str, option.type.choices)) + "]"
    return option.type.name.upper()


def _extra(option):
    """The shown default and the allowed range, in brackets after the help."""
    extra = []
    if option.show_default and option.default is not None and not option.is_flag:
        extra.append(f"default: {option.default}")
    if isinstance(option.type, (click.IntRange, click.FloatRange)):
        extra.append(range_text(option.type))  # (an open bound too: --timeout 0 is refused)
    return f"  [{'; '.join(extra)}]" if extra else ""


def manpage():
    # with each command's own context settings, so that -h is there as when the command runs
    ctx = click.Context(report, info_name="smem", **report.context_settings)
    paragraphs = [" ".join(p.split()) for p in inspect.cleandoc(report.help).split("\n\n")]
    description = "\n.PP\n".join(_roff(p) for p in paragraphs)
    examples, _, exits = EPILOG.replace("\b\n", "").partition("Exit status:")
    examples = examples.partition("Other commands")[0]
    commands = []
    for name, command in sorted(cli.commands.items()):
        if command is report:
            continue
        commands += [f".SH {name.upper()}", _roff(" ".join(command.help.split())),
                     *_options(command, click.Context(command, info_name=f"smem {name}",
                                                      **command.context_settings))]
    formats = []
    for name, fmt in FORMATS.items():
        if name not in STYLES:
            formats += [".TP", f"\\fB{name}\\fR", _roff(fmt.help)]
    formats += [".TP", "\\fIstyle\\fR", _roff("a table style of tabulate: " + ", ".join(STYLES) + ".")]
    lines = [
        f'.TH SMEM 1 "" "smem {__version__}" "User Commands"',
        ".SH NAME",
        "smem \\- report memory usage with shared memory divided proportionally",
        ".SH SYNOPSIS",
        "\\fBsmem\\fR [\\fIOPTIONS\\fR]",
        *[line for name in sorted(cli.commands) if cli.commands[name] is not report
          for line in (".br", f"\\fBsmem {name}\\fR [\\fIOPTIONS\\fR]" + "".join(
              f" \\fI{p.name.upper()}\\fR" if p.required else f" [\\fI{p.name.upper()}\\fR]"
              for p in cli.commands[name].params if isinstance(p, click.Argument)))],
        ".SH DESCRIPTION",
        description,
        ".PP",
        "USS (unique set size) is the memory only a process maps; PSS (proportional set size) adds",
        "its share of each shared page; RSS counts shared pages in full; VSS is all it maps.",
        ".SH OPTIONS",
        *_options(report, ctx),
        ".SH FORMATS",
        "\\fB\\-F\\fR takes:",
        *formats,
        *commands,
        ".SH EXAMPLES",
        ".nf",
        _roff(examples.replace("Examples:", "").strip("\n")),
        ".fi",
        ".SH EXIT STATUS",
        _roff(" ".join(exits.split())),
        ".SH ENVIRONMENT",
        ".TP", "\\fBCOLUMNS\\fR", "Terminal width for \\fB\\-a\\fR, and for the Source column of "
        "\\fB\\-w \\-\\-breakdown\\fR, which wraps to it (else standard output's terminal's; not a terminal: "
        "nothing is cut or wrapped).",
        ".TP", "\\fBSMEM_SSH\\fR", "The ssh command for \\fBssh://\\fR sources (default \\fBssh\\fR).",
        ".TP", "\\fBSMEM_SSH_TIMEOUT\\fR",
        f"Seconds an \\fBssh://\\fR host may send nothing before it is given up on (default {DEFAULT_TIMEOUT:g}).",
        ".TP", "\\fBSMEM_JOBS\\fR", "Worker processes that read /proc or a capture, as \\fB\\-\\-jobs\\fR (which wins); "
        "not \\fBsmem serve\\fR's, which reads in one process unless \\fB\\-j\\fR says otherwise "
        "(a server forks no worker from a thread of its own unless asked).",
        ".TP", "\\fBSMEM_WSS_METHOD\\fR",
        "How \\fB\\-\\-wss\\fR measures: \\fBpage_idle\\fR (idle page tracking, an error where the kernel "
        "lacks it) or \\fBclear_refs\\fR; unset: idle page tracking where /sys/kernel/mm/page_idle/bitmap can be "
        "written, else clear_refs.",
        ".TP", "\\fBSMEM_PURE_PYTHON\\fR",
        "Set to 1: the pure-Python smaps parser, not the C one (\\fBsmem \\-\\-version\\fR names the one in use).",
        ".TP", "\\fB_SMEM_COMPLETE\\fR", "Shell completion (see SHELL COMPLETION).",
        ".SH SHELL COMPLETION",
        "<Tab> completes commands, options, file names (\\fB\\-S\\fR, \\fB\\-o\\fR, \\fB\\-K\\fR, "
        "\\fBsmem diff\\fR \\fIOLD NEW\\fR) and the fields of the chosen view (\\fB\\-c\\fR, "
        "\\fB\\-s\\fR, \\fB\\-\\-pie\\fR, \\fB\\-\\-bar\\fR). To enable it:",
        ".TP", "bash (in ~/.bashrc)", "\\fBeval \"$(_SMEM_COMPLETE=bash_source smem)\"\\fR",
        ".TP", "zsh (in ~/.zshrc)", "\\fBeval \"$(_SMEM_COMPLETE=zsh_source smem)\"\\fR",
        ".TP", "fish",
        "\\fB_SMEM_COMPLETE=fish_source smem > ~/.config/fish/completions/smem.fish\\fR",
        ".SH SEE ALSO",
        "\\fBps\\fR(1), \\fBtop\\fR(1), \\fBproc\\fR(5)",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(manpage(), end="")
