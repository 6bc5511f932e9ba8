"""kvplan.report.console draws what Rich drew (the renderer kvplan used before, still installed
with typer): random paragraphs and tables rendered by both must be the same text; then exact
cases derived by hand, markup and colour."""

from __future__ import annotations

import io
import random

import pytest

from kvplan.report import console as K
from kvplan.report.width import Col, fitted_table

rich_console = pytest.importorskip("rich.console")
rich_table = pytest.importorskip("rich.table")
rich_text = pytest.importorskip("rich.text")
rich_box = pytest.importorskip("rich.box")

# Rich's SIMPLE_HEAD with an ASCII rule, as kvplan draws it
ASCII_SIMPLE_HEAD = rich_box.Box("    \n    \n -- \n    \n    \n -- \n    \n    \n", ascii=True)

WORDS = ["a", "bb", "ccc", "1,234", "x" * 12, "y" * 30, "-", "0.1435,0.8565", "gemma-3-27b", "(12)", "×", "░░", "—"]


def _rich(obj, width):
    f = io.StringIO()
    rich_console.Console(file=f, width=width, highlight=False, soft_wrap=False, color_system=None).print(obj)
    return f.getvalue()


def _ours(obj, width):
    f = io.StringIO()
    K.Console(width=width, file=f, color=False).print(obj)
    return f.getvalue()


def _paragraph(rng):
    words = [rng.choice(WORDS) for _ in range(rng.randint(0, 25))]
    text = "".join(w + rng.choice([" ", " ", " ", "  ", "\n"]) for w in words)
    text = ("  " if rng.random() < 0.3 else "") + text
    return text.rstrip() if rng.random() < 0.5 else text


@pytest.mark.parametrize("seed", range(4))
def test_paragraphs_wrap_as_rich_wrapped_them(seed):
    rng = random.Random(seed)
    for _ in range(500):
        width, text = rng.randint(5, 60), _paragraph(rng)
        assert _ours(K.Text(text), width) == _rich(rich_text.Text(text), width), (width, text)


@pytest.mark.parametrize("seed", range(4))
def test_tables_draw_as_rich_drew_them(seed):
    rng = random.Random(100 + seed)
    for _ in range(250):
        n = rng.randint(1, 5)
        widths = [rng.randint(1, 20) for _ in range(n)]
        heads = [_paragraph(rng)[:30] for _ in range(n)]
        justify = [rng.choice(["left", "right"]) for _ in range(n)]
        show = rng.random() < 0.8
        rows = [[_paragraph(rng)[:60] for _ in range(n)] for _ in range(rng.randint(0, 4))]
        # the table kvplan asked Rich for: no edge, columns 2 apart, a rule under the header
        theirs = rich_table.Table(box=ASCII_SIMPLE_HEAD, show_header=show, show_edge=False, pad_edge=False,
                                  collapse_padding=True, padding=(0, 1))
        ours = K.Table(show_header=show)
        for h, j, w in zip(heads, justify, widths):
            theirs.add_column(h, justify=j, width=w, overflow="fold")
            ours.add_column(h, justify=j, width=w)
        for r in rows:
            theirs.add_row(*[rich_text.Text(c) for c in r])
            ours.add_row(*[K.Text(c) for c in r])
        width = sum(widths) + K.Table.overhead(n) + rng.randint(0, 10)
        assert _ours(ours, width) == _rich(theirs, width), (widths, heads, justify, show, rows)


def test_a_fitted_table_by_hand():
    # widths: "n" column 3 (its widest cell), "value" 5, two apart -> 10 characters a line;
    # the header of the right-aligned column wraps to 2 lines and sits at the bottom of its row
    table = fitted_table("Title", [Col("n", right=True), Col("a value", right=True)], [["1", "22"], ["333", "4"]],
                         width=10)
    assert _ours(table, 10).split("\n") == [
        "", "Title", "         a", "  n  value", "-" * 10, "  1     22", "333      4", ""]


def test_markup_reads_only_style_words():
    # Rich swallowed "[proposal, not shipped vLLM behaviour]" as an unknown style tag
    text = K.from_markup("policy x  [proposal, not shipped vLLM behaviour] [yellow]Warning: y[/yellow] [1,2]")
    assert text.plain == "policy x  [proposal, not shipped vLLM behaviour] Warning: y [1,2]"
    assert [(text.plain[a:b], s) for a, b, s in text.spans] == [("Warning: y", "yellow")]


def test_colour_only_on_a_terminal(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    f = io.StringIO()
    con = K.Console(width=40, file=f, color=True)
    con.print(K.Text("ok", style="bold green").append(" done"))  # the whole text is bold green
    con.print(K.Text("a ").append("b", style="dim red"))  # one span
    assert f.getvalue() == "\x1b[1;32mok done\x1b[0m\na \x1b[2;31mb\x1b[0m\n"
    assert not K.color_wanted(io.StringIO())  # piped: plain text
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert K.color_wanted(io.StringIO())
