"""kvplan's terminal output: styled text, word wrapping and fixed-width tables.

Rich used to do this; importing and running it cost about 80 ms of every table-printing run
(issue 10's start-up target is 0.30 s), while kvplan needs only a sliver of it: the table
widths are kvplan's own decision (``width.fit_columns``), there is one table style, and a
handful of styles. This module renders exactly that, and its piped output is the same text
Rich printed with an ASCII header rule (``tests/test_console.py`` renders random tables and
paragraphs with both):

- text wraps at spaces to the console width; a word wider than the width folds; the spaces
  after the last word of a line stay, except those past the width;
- a table has no outer edge: columns two apart, a ``-`` rule under the header (ASCII: a
  rule of box-drawing characters is three bytes a column in logs and byte-counting tools), headers
  aligned to the bottom of their row and cells to the top, every line as wide as the table;
- ``[style]…[/style]`` markup is read only for the style words below (anything else in
  brackets, ``[proposal, not shipped vLLM behaviour]``, stays text, which Rich swallowed);
- styles become ANSI codes only on a terminal (not with ``NO_COLOR`` or ``TERM=dumb``;
  ``FORCE_COLOR`` forces them).
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
from typing import Iterable, Sequence

_SGR = {"bold": "1", "dim": "2", "italic": "3", "underline": "4", "red": "31", "green": "32", "yellow": "33",
        "blue": "34", "magenta": "35", "cyan": "36"}
_WORD = re.compile(r"\s*\S+\s*")
_TRAILING_SPACE = re.compile(r"\s+$")
_TAG = re.compile(r"\[(/?)([a-z ]*)\]")


def cell_len(text: str) -> int:
    """Terminal cells ``text`` takes: 2 for East Asian wide characters, else 1."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _chop(text: str, width: int) -> list[str]:
    """``text`` cut into pieces of at most ``width`` cells (one character when it is wider)."""
    pieces, current, used = [], "", 0
    for ch in text:
        w = cell_len(ch)
        if current and used + w > width:
            pieces.append(current)
            current, used = "", 0
        current += ch
        used += w
    return pieces + [current] if current or not pieces else pieces


class Text:
    """A string with styled spans: ``Text("yes", style="green")``, ``t.append("x", style="dim")``."""

    __slots__ = ("plain", "style", "spans")

    def __init__(self, text: str = "", style: str | None = None):
        self.plain = text
        self.style = style
        self.spans: list[tuple[int, int, str]] = []

    def append(self, text: "str | Text", style: str | None = None) -> "Text":
        start = len(self.plain)
        if isinstance(text, Text):
            self.plain += text.plain
            if text.style:
                self.spans.append((start, len(self.plain), text.style))
            self.spans += [(start + a, start + b, s) for a, b, s in text.spans]
        else:
            self.plain += text
        if style and len(self.plain) > start:
            self.spans.append((start, len(self.plain), style))
        return self

    def __str__(self) -> str:
        return self.plain

    def __len__(self) -> int:
        return len(self.plain)

    def __repr__(self) -> str:
        return f"Text({self.plain!r}, style={self.style!r})"

    def _slice(self, start: int, end: int) -> "Text":
        t = Text(self.plain[start:end], self.style)
        t.spans = [(max(a, start) - start, min(b, end) - start, s) for a, b, s in self.spans if a < end and b > start]
        return t

    def lines(self, width: int, justify: str | None = None) -> list["Text"]:
        """Word-wrapped to ``width`` cells (see the module docstring); ``justify`` "left" pads
        each line to ``width``, "right" right-aligns it, None leaves it as wrapped."""
        out: list[Text] = []
        start = 0
        for para in self.plain.split("\n"):
            end = start + len(para)
            cuts = [start + c for c in _breaks(para, width)]
            bounds = [start] + cuts + [end]
            for a, b in zip(bounds, bounds[1:]):
                line = self._slice(a, b)
                excess = cell_len(line.plain) - width
                if excess > 0:
                    m = _TRAILING_SPACE.search(line.plain)
                    if m:
                        line = line._slice(0, len(line.plain) - min(len(m.group(0)), excess))
                out.append(_justified(line, width, justify))
            start = end + 1
        return out


def _breaks(text: str, width: int) -> list[int]:
    """Offsets where ``text`` breaks into lines of at most ``width`` cells: before a word that
    does not fit what is left of the line; a word wider than a line is folded."""
    cuts: list[int] = []
    used = 0
    for m in _WORD.finditer(text):
        start, word = m.start(), m.group(0)
        length = cell_len(word.rstrip())
        if length <= width - used:
            used += cell_len(word)
        elif length > width:
            pieces = _chop(word, width)
            for n, piece in enumerate(pieces):
                if start:
                    cuts.append(start)
                if n == len(pieces) - 1:
                    used = cell_len(piece)
                else:
                    start += len(piece)
        elif used and start:
            cuts.append(start)
            used = cell_len(word)
    return cuts


def _justified(line: Text, width: int, justify: str | None) -> Text:
    if justify == "right":
        stripped = line.plain.rstrip()
        line = line._slice(0, len(stripped))
        n = cell_len(stripped)
        if n > width:
            return _cropped(line, width)
        padded = Text(" " * (width - n))
        return padded.append(line)
    if cell_len(line.plain) > width:
        return _cropped(line, width)
    if justify == "left":
        line.plain += " " * (width - cell_len(line.plain))
    return line


def _cropped(line: Text, width: int) -> Text:
    """The first ``width`` cells of ``line``."""
    n = used = 0
    for ch in line.plain:
        used += cell_len(ch)
        if used > width:
            break
        n += 1
    return line._slice(0, n)


def from_markup(text: str) -> Text:
    """``[bold red]…[/bold red]``/``[/]`` tags of the known style words become spans; any
    other bracketed text stays as it is."""
    out = Text()
    stack: list[str] = []
    pos = 0
    for m in _TAG.finditer(text):
        closing, name = m.group(1), m.group(2).strip()
        if not (closing and not name) and not (name and all(w in _SGR for w in name.split())):
            continue
        if closing and (not stack or (name and stack[-1] != name)):
            continue
        out.append(text[pos:m.start()], " ".join(stack) or None)
        if closing:
            stack.pop()
        else:
            stack.append(name)
        pos = m.end()
    out.append(text[pos:], " ".join(stack) or None)
    return out


class Group:
    """Renderables printed one after the other."""

    def __init__(self, *renderables):
        self.renderables = renderables


class Column:
    __slots__ = ("header", "justify", "width", "style")

    def __init__(self, header: str, justify: str, width: int, style: str | None):
        self.header, self.justify, self.width, self.style = header, justify, width, style


class Table:
    """Columns of fixed widths two cells apart, no outer edge, a ``-`` rule under the header."""

    GAP = 2  # characters between two columns

    def __init__(self, show_header: bool = True):
        self.show_header = show_header
        self.columns: list[Column] = []
        self.rows: list[tuple[list[Text], str | None]] = []

    def add_column(self, header: str = "", *, justify: str = "left", width: int = 1, style: str | None = None) -> None:
        self.columns.append(Column(header, justify, width, style))

    def add_row(self, *cells: "Text | str", style: str | None = None) -> None:
        self.rows.append(([c if isinstance(c, Text) else Text(c) for c in cells], style))

    @classmethod
    def overhead(cls, n: int) -> int:
        """Characters the table adds around ``n`` columns."""
        return cls.GAP * max(n - 1, 0)

    def _row(self, cells: Sequence[Text], style: str | None, bottom: bool) -> list[list[Text]]:
        blocks = []
        for col, cell in zip(self.columns, cells):
            lines = cell.lines(col.width, justify=col.justify)
            base = " ".join(s for s in (col.style, style) if s) or None
            if base:
                for line in lines:
                    line.spans.insert(0, (0, len(line.plain), base))
            blocks.append(lines)
        height = max((len(b) for b in blocks), default=0)
        for col, b in zip(self.columns, blocks):
            blank = [Text(" " * col.width) for _ in range(height - len(b))]
            b[:] = blank + b if bottom else b + blank
        return [[b[i] for b in blocks] for i in range(height)]

    def render(self) -> list[Text]:
        out: list[Text] = []
        gap = " " * self.GAP
        if self.show_header:
            for parts in self._row([Text(c.header) for c in self.columns], None, bottom=True):
                out.append(_joined(parts, gap))
            total = sum(c.width for c in self.columns) + self.overhead(len(self.columns))
            out.append(Text("-" * total))
        for cells, style in self.rows:
            for parts in self._row(cells, style, bottom=False):
                out.append(_joined(parts, gap))
        return out


def _joined(parts: Iterable[Text], sep: str) -> Text:
    line = Text()
    for i, p in enumerate(parts):
        if i:
            line.append(sep)
        line.append(p)
    return line


def color_wanted(stream) -> bool:
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _styled(line: Text, color: bool) -> str:
    spans = ([(0, len(line.plain), line.style)] if line.style else []) + line.spans
    if not color or not spans:
        return line.plain
    cuts = sorted({0, len(line.plain), *(p for a, b, _ in spans for p in (a, b))})
    out = []
    for a, b in zip(cuts, cuts[1:]):
        words = [w for s0, s1, s in spans if s0 <= a and b <= s1 for w in s.split()]
        codes = ";".join(dict.fromkeys(_SGR[w] for w in words if w in _SGR))
        out.append(f"\x1b[{codes}m{line.plain[a:b]}\x1b[0m" if codes else line.plain[a:b])
    return "".join(out)


class Console:
    """Prints strings (with markup), ``Text``, ``Table`` and ``Group`` wrapped to ``width``."""

    def __init__(self, width: int = 100, file=None, color: bool | None = None):
        self.width = width
        self.file = file
        self._color = color

    def _out(self):
        return self.file or sys.stdout

    def lines(self, obj, markup: bool = True, soft_wrap: bool = False) -> list[Text]:
        if isinstance(obj, Group):
            return [line for r in obj.renderables for line in self.lines(r, markup, soft_wrap)]
        if isinstance(obj, Table):
            return obj.render()
        text = obj if isinstance(obj, Text) else (from_markup(str(obj)) if markup else Text(str(obj)))
        if soft_wrap:
            return [text]
        return text.lines(self.width)

    def print(self, obj="", *, markup: bool = True, soft_wrap: bool = False, style: str | None = None) -> None:
        out = self._out()
        color = color_wanted(out) if self._color is None else self._color
        lines = self.lines(obj, markup, soft_wrap)
        if style:
            for line in lines:
                line.spans.insert(0, (0, len(line.plain), style))
        out.write("".join(_styled(line, color) + "\n" for line in lines))
