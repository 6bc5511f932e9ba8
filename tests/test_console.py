"""Rich draws kvplan's tables and styled lines as kvplan sets it up (kvplan.report.width): exact
tables derived by hand, brackets kept as text, colour only on a terminal."""

from __future__ import annotations

import io

from rich.text import Text

from kvplan.report.width import Col, console, fitted_table


def _printed(obj, width: int) -> str:
    f = io.StringIO()
    console(width=width, file=f).print(obj)
    return f.getvalue()


def test_a_fitted_table_by_hand():
    # widths: "n" column 3 (its widest cell), "value" 5, two apart -> 10 characters a line;
    # the header of the right-aligned column wraps to 2 lines and sits at the bottom of its row
    table = fitted_table("Title", [Col("n", right=True), Col("a value", right=True)], [["1", "22"], ["333", "4"]],
                         width=10)
    assert _printed(table, 10).split("\n") == [
        "", "Title", "         a", "  n  value", "-" * 10, "  1     22", "333      4", ""]


def test_a_text_column_wraps_at_spaces_and_cells_sit_at_the_top():
    # "what": 4 to 5 wide (its longest word to its longest line), "n": 5 (its widest number); 5 + 2 + 5 = 12
    # is one too many for 11 columns, so "what" gives one: "aa bb" wraps to two lines, padded to 4, and "1"
    # sits on the first of them; every line is as wide as the table
    table = fitted_table(None, [Col("what"), Col("n", right=True)], [["aa bb", "1"], ["what", "12345"]], width=11)
    assert _printed(table, 11).split("\n") == [
        "what      n", "-" * 11, "aa        1", "bb         ", "what  12345", ""]


def test_brackets_are_text_not_markup():
    # Rich's markup would read "[proposal, not shipped vLLM behaviour]" as a style tag and swallow it
    line = "policy x  [proposal, not shipped vLLM behaviour] [yellow]Warning: y[/yellow] [1,2] :warning:"
    assert _printed(line, 200) == line + "\n"


def test_colour_only_on_a_terminal(monkeypatch):
    for k in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")
    piped = _printed(Text("ok", style="bold green"), 40)
    assert piped == "ok\n"  # piped: plain text

    class Tty(io.StringIO):
        def isatty(self):
            return True

    f = Tty()
    console(width=40, file=f).print(Text("ok", style="bold green"))
    assert f.getvalue() == "\x1b[1;32mok\x1b[0m\n"
    monkeypatch.setenv("NO_COLOR", "1")
    f = Tty()
    console(width=40, file=f).print(Text("ok", style="bold green"))
    assert f.getvalue() == "ok\n"
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in _printed(Text("ok", style="bold green"), 40)
