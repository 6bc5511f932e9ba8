"""Tables that fit the terminal without cutting a number.

Rich draws the tables and styled lines; kvplan decides the widths itself (Rich, left to
shrink a too-wide table, folds or truncates cells, "32,…"):

- a number column is never narrower than its widest cell, so digits are never cut or wrapped;
- a text column may wrap at spaces, never inside a word (a word without digits longer than
  ``MAX_WORD`` may fold; a word with digits never does);
- headers wrap at spaces;
- when even the narrowest widths do not fit, the least important columns (highest ``drop``)
  are left out and a note under the table names them (the JSON output has them all);
- when nothing droppable is left and it still does not fit, the rows are printed stacked,
  one ``column: value`` line each.

The width is the terminal's, ``$COLUMNS`` when set (piped output too), else 100 when piped.

Rich's console is set up once (``console``): no markup (flags and notes carry brackets,
``[proposal, not shipped vLLM behaviour]``, which markup would read as a style tag and swallow), no
highlighting or emoji codes, styles only on a terminal (Rich's own rule: not when piped, nor with
``TERM=dumb``; ``FORCE_COLOR`` forces them; with ``NO_COLOR`` no style at all, bold included). A
table has no outer edge, columns two apart, headers bottom-aligned and an ASCII ``-`` rule under
them (a box-drawing rule is three bytes a column in logs and byte-counting tools).
"""

from __future__ import annotations

import os
import textwrap
from typing import Literal, Sequence

from rich.box import Box
from rich.cells import cell_len
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from kvplan.frozen import dataclass
from kvplan.report.terminal import MIN_WIDTH, PIPED_WIDTH, terminal_width  # noqa: F401 - re-exported
from kvplan.units import plural  # noqa: F401 - re-exported for the renderers

MAX_WORD = 32
GAP = 2  # characters between two columns: one cell of padding each side, collapsed
# Rich's SIMPLE_HEAD (no edges, a rule under the header only) with an ASCII rule
RULED_HEAD = Box("    \n    \n -- \n    \n    \n -- \n    \n    \n", ascii=True)


def console(width: int | None = None, file=None) -> Console:
    """Rich's console as kvplan prints with it (see the module docstring)."""
    plain = bool(os.environ.get("NO_COLOR"))  # Rich keeps bold and dim with NO_COLOR; kvplan prints none
    return Console(width=width or terminal_width(), file=file, markup=False, highlight=False, emoji=False,
                   soft_wrap=False, color_system=None if plain else "auto")


def overhead(n: int) -> int:
    """Characters a table adds around ``n`` columns."""
    return GAP * max(n - 1, 0)


def table(show_header: bool = True) -> Table:
    """An empty table as kvplan draws them; columns are added with their width and ``overflow="fold"``."""
    return Table(box=RULED_HEAD, show_header=show_header, show_edge=False, pad_edge=False, collapse_padding=True,
                 padding=(0, 1))


@dataclass(frozen=True)
class Col:
    name: str
    right: bool = False  # a number: right-justified, as wide as its widest cell
    drop: int = 0  # 0: always shown; otherwise the highest is left out first
    style: str | None = None
    justify: Literal["left", "right"] | None = None  # "right": a text column that may wrap yet aligns right
    # (default: by ``right``)


def _plain(cell) -> str:
    if cell is None:
        return ""
    return cell.plain if isinstance(cell, Text) else str(cell)


def _longest_line(s: str) -> int:
    return max((cell_len(line) for line in s.split("\n")), default=0)


def _longest_word(s: str) -> int:
    return max((cell_len(w) for w in s.split()), default=0)


def _narrowest(s: str) -> int:
    """The narrowest a text cell may get: its longest word, but a word without digits longer
    than MAX_WORD may fold (a word with digits, "0.1435,0.8565" or "gemma-3-27b", never does)."""
    return max((cell_len(w) if any(map(str.isdigit, w)) else min(MAX_WORD, cell_len(w))
                for w in s.split()), default=0)


def _bounds(col: Col, cells: list[str]) -> tuple[int, int]:
    """(narrowest, widest) content width of a column."""
    head_min = _longest_word(col.name)
    widest = max([_longest_line(col.name)] + [_longest_line(c) for c in cells])
    if col.right:
        narrowest = max([head_min] + [_longest_line(c) for c in cells])
    else:
        narrowest = max([head_min] + [_narrowest(c) for c in cells])
    return narrowest, max(widest, narrowest)


def fit_columns(cols: Sequence[Col], rows: Sequence[Sequence], width: int) -> tuple[list[int], list[int] | None]:
    """``(kept column indices, their widths)``; widths None when even the kept columns cannot fit."""
    texts = [[_plain(r[i]) for r in rows] for i in range(len(cols))]
    bounds = [_bounds(c, texts[i]) for i, c in enumerate(cols)]
    kept = list(range(len(cols)))

    def avail() -> int:
        return width - overhead(len(kept))

    while sum(bounds[i][0] for i in kept) > avail():
        droppable = [i for i in kept if cols[i].drop > 0]
        if not droppable:
            return kept, None
        kept.remove(max(droppable, key=lambda i: (cols[i].drop, i)))
    widths = {i: bounds[i][1] for i in kept}
    excess = sum(widths.values()) - avail()
    # Narrow one character at a time: first the number columns (only their headers wrap), then
    # the text column with the most room to give.
    while excess > 0:
        shrinkable = [i for i in kept if widths[i] > bounds[i][0]]
        numeric = [i for i in shrinkable if cols[i].right]
        i = max(numeric or shrinkable, key=lambda i: (widths[i] - bounds[i][0], widths[i]))
        widths[i] -= 1
        excess -= 1
    return kept, [widths[i] for i in kept]


def fitted_table(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence], *, width: int | None = None,
                 show_header: bool = True, row_styles: Sequence[str | None] | None = None):
    """A table of ``rows`` fitted to ``width`` (see the module docstring), with a note
    naming the columns left out; or, when it cannot fit, the rows stacked."""
    width = width or terminal_width()
    kept, widths = fit_columns(cols, rows, width)
    if widths is None:
        return stacked(title, cols, rows, width)
    t = table(show_header)
    for i, w in zip(kept, widths):
        c = cols[i]
        t.add_column(c.name, justify=c.justify or ("right" if c.right else "left"), width=w, style=c.style,
                     overflow="fold")
    for n, r in enumerate(rows):
        t.add_row(*(_cell(r[i], w) for i, w in zip(kept, widths)), style=(row_styles[n] if row_styles else None))
    parts: list[Text | Table] = [Text(""), Text(title, style="italic")] if title else []
    parts.append(t)
    dropped = [cols[i].name for i in range(len(cols)) if i not in kept]
    if dropped:
        parts.append(Text(f"(not shown at {width} columns: {', '.join(dropped)}; widen the terminal or use "
                          "--format json)", style="dim"))
    return Group(*parts)


def _cell(value, width: int) -> Text:
    """A cell as Rich draws it. One whose every line fits its column is marked ``no_wrap``: Rich's line breaking
    would leave it as it is, and skipping it is most of the time a table takes to draw."""
    cell = value if isinstance(value, Text) else Text(_plain(value))
    if _longest_line(cell.plain) <= width:
        cell.no_wrap = True
    return cell


def stacked(title: str | None, cols: Sequence[Col], rows: Sequence[Sequence], width: int):
    """Each row as ``column: value`` lines (the layout for a terminal too narrow for the table)."""
    lines: list[Text] = [Text(""), Text(title, style="italic")] if title else []
    for r in rows:
        for c, cell in zip(cols, r):
            value = _plain(cell)
            if value:
                first, *rest = value.split("\n")
                lines.append(Text(f"  {c.name}: {first}"))
                lines += [Text(f"    {more}") for more in rest]
        lines.append(Text(""))
    return Group(*lines)


def key_value_table(title: str | None, rows: Sequence[Sequence], *, width: int | None = None,
                    row_styles: Sequence[str | None] | None = None):
    """A headerless ``what | value`` table (values right-aligned, wrapping at spaces, never cut)."""
    cols = [Col("what"), Col("value", justify="right")] + [Col("source")] * (len(rows[0]) - 2 if rows else 0)
    return fitted_table(title, cols, rows, width=width, show_header=False, row_styles=row_styles)


def fill(text: str, first: str = "", rest: str = "", width: int | None = None) -> str:
    """``text`` wrapped to the terminal width at spaces (numbers, ids and paths stay whole)."""
    return textwrap.fill(text, width=(width or terminal_width()) - 1, initial_indent=first, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False)
