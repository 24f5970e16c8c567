"""Terminal text, the one job of this file: the width of the terminal and a wrap that never
cuts a word, for every command that prints for a person (the reports, watch, the mutants' table,
the hints). It imports nothing of labkit, so anything may use it. Python 3 standard library."""
from __future__ import annotations

import shutil
import textwrap


def terminal_width() -> int:
    """The terminal's width (COLUMNS, else 100 when the output is not a terminal)."""
    return max(60, shutil.get_terminal_size((100, 24)).columns)


def wrapped(text: str, first: str, indent: int, width: int | None = None) -> str:
    """`first` followed by `text`, wrapped (never cut) at the terminal width, the lines after the
    first indented by `indent` spaces; a line of the text stays a line."""
    width = width or terminal_width()
    out, lead = [], first
    for line in text.splitlines() or [""]:
        out.append(textwrap.fill(line, width=max(width, len(lead) + 20), initial_indent=lead,
                                 subsequent_indent=" " * indent, break_long_words=False,
                                 break_on_hyphens=False) or lead.rstrip())
        lead = " " * indent
    return "\n".join(out)
