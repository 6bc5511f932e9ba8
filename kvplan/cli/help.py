"""``kvplan COMMAND --help`` as plain text that fits the terminal (``$COLUMNS``, 100 when piped).

Rich's option tables cut long flag names at 80 columns ("--num-gpu-blocks-ov…"); this writer
never cuts: a flag list that does not fit beside its help gets a line of its own and the help
wraps below it. Options keep their sections (``rich_help_panel``, one per option in
``kvplan.options``).
"""

from __future__ import annotations

import inspect
import textwrap


HELP_COLUMN = 30  # where help text starts when the flags fit before it
INDENT = 2


def _width() -> int:
    from kvplan.report.terminal import terminal_width

    return terminal_width()


def wrap(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """``text`` wrapped to ``width`` at spaces (flags, numbers and ids stay whole). A word
    wider than a line (a 50-character VLLM_* name in a 40-column terminal) breaks after an
    underscore, else where the line ends; a flag never breaks."""
    width = max(20, width - 1)
    room = width - max(len(first), len(rest))
    if room > 0 and any(len(w) > room and not w.startswith("-") for w in text.split()):
        text = " ".join(p for w in text.split(" ")
                        for p in (_pieces(w, room) if len(w) > room and not w.startswith("-") else [w]))
    return textwrap.wrap(text, width=width, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [first.rstrip()]


def _pieces(word: str, room: int) -> list[str]:
    out = []
    while len(word) > room:
        cut = word.rfind("_", 0, room) + 1 or room
        out.append(word[:cut])
        word = word[cut:]
    return out + [word]


def _is_argument(param) -> bool:
    return getattr(param, "param_type_name", "") == "argument"


def _metavar(param, ctx) -> str:
    if getattr(param, "is_flag", False):
        return ""
    if param.metavar:
        return param.metavar
    if hasattr(param, "display_type_rich"):  # typer >= 0.29
        shown = param.display_type_rich(ctx=ctx)
    else:
        try:
            shown = param.make_metavar(ctx)
        except TypeError:  # click < 8.2
            shown = param.make_metavar()
    return {None: "", "<str>": "TEXT", "<bool>": "", "BOOLEAN": ""}.get(shown, shown)


def _flags(param, ctx) -> str:
    if _is_argument(param):
        return param.metavar or (param.name or "").upper()
    opts = sorted(param.opts, key=lambda o: o.startswith("--"))  # short spellings first
    text = ", ".join(opts)
    if param.secondary_opts:
        text += " / " + ", ".join(param.secondary_opts)
    mv = _metavar(param, ctx)
    return f"{text} {mv}" if mv else text


def _extra(param) -> str:
    bits = []
    if getattr(param, "show_default", False) and param.default not in (None, "", ()):
        default = param.default
        if isinstance(default, bool):
            if param.secondary_opts:
                default = param.opts[-1] if default else param.secondary_opts[-1]
            else:
                default = str(default).lower()
        elif hasattr(default, "value"):  # an Enum choice
            default = default.value
        bits.append(f"[default: {default}]")
    if param.required:
        bits.append("[required]")
    return " ".join(bits)


def entry_lines(flags: str, help_text: str, width: int, column: int = HELP_COLUMN) -> list[str]:
    """One option: ``flags`` then its help, side by side when the flags fit before ``column``,
    else the flags on a line of their own and the help indented below."""
    pad = " " * column
    lead = " " * INDENT + flags
    longest = max((len(w) for w in help_text.split()), default=0)
    if len(lead) + 2 <= column and width - column >= max(30, longest + 1):
        return wrap(help_text, width, lead.ljust(column), pad) if help_text else [lead]
    hang = INDENT + 4 if INDENT + 4 + max(len(w) for w in flags.split()) < width else INDENT
    lines = wrap(flags, width, " " * INDENT, " " * hang)
    if help_text:
        deep = " " * (min(column, INDENT + 8) if INDENT + 8 + longest < width else INDENT)
        lines += wrap(help_text, width, deep, deep)
    return lines


def _usage_pieces(command, ctx) -> list[str]:
    """``[OPTIONS]``, then each argument: ``{name}`` when required, ``[name]`` when not (its metavar when it
    has one), ``...`` after one that takes several values. kvplan's own, so the line does not change with
    Typer's or click's release (Typer 0.28 with click < 8.5 left the ``...`` out)."""
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    pieces = ["[OPTIONS]"] if any(not _is_argument(p) for p in params) else []
    for p in params:
        if _is_argument(p):
            shown = p.metavar or p.name or ""
            shown = f"{{{shown}}}" if p.required else f"[{shown}]"
            pieces.append(shown + ("..." if getattr(p, "nargs", 1) != 1 else ""))
    return pieces


def format_command_help(command, ctx, width: int | None = None) -> str:
    width = width or _width()
    out: list[str] = []
    pieces = _usage_pieces(command, ctx)
    out += wrap(f"Usage: {ctx.command_path} {' '.join(pieces)}", width, "", "  ")
    doc = inspect.cleandoc(command.help or "")
    for para in [p for p in doc.split("\n\n") if p.strip()]:
        out.append("")
        out += wrap(" ".join(para.split()), width, "", "")
    sections: dict[str, list[str]] = {}
    for param in command.get_params(ctx):
        if getattr(param, "hidden", False):
            continue
        if _is_argument(param):
            title = "Arguments"
        else:
            title = getattr(param, "rich_help_panel", None) or "Options"
        help_text = " ".join(x for x in (" ".join((getattr(param, "help", None) or "").split()),
                                          _extra(param)) if x)
        sections.setdefault(title, []).extend(entry_lines(_flags(param, ctx), help_text, width))
    order = ["Arguments", "Options"] + [t for t in sections if t not in ("Arguments", "Options")]
    for title in order:
        if title in sections:
            out += ["", *wrap(f"{title}:", width), *sections[title]]
    return "\n".join(out) + "\n"
