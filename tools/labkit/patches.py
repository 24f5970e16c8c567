"""Unified diffs, read and applied without `patch`: what a mutant stores instead of a copy of its
solution. Python 3 standard library only.

A diff is what `diff -u` or difflib.unified_diff writes: `--- file`, `+++ file`, then hunks
`@@ -start,count +start,count @@` of context (' '), removed ('-') and added ('+') lines. A hunk
applies where its old side (context and removed lines) equals the file's lines: at the line it
states, or else at exactly one other place (unrelated lines above it moved). Anything else makes
the diff stale: it was written against a file that has changed since."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
CONTEXT = 3  # lines of context around each change, as diff -u writes them


class PatchError(ValueError):
    """A diff that cannot be read or that changes nothing."""


class StalePatch(PatchError):
    """A diff that no longer fits the file it is applied to: written against an older version."""


@dataclass
class Hunk:
    old_start: int                 # 1-based line of the file where the old side begins
    old_count: int
    new_start: int
    new_count: int
    lines: list[str] = field(default_factory=list)   # each begins with ' ', '-' or '+'

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"

    @property
    def old(self) -> list[str]:
        return [l[1:] for l in self.lines if l[0] in " -"]

    @property
    def new(self) -> list[str]:
        return [l[1:] for l in self.lines if l[0] in " +"]


@dataclass
class Diff:
    old_file: str
    new_file: str
    hunks: list[Hunk]


def parse(lines: list[str], where: str = "the diff") -> Diff:
    """Reads a unified diff of one file from `lines` (without line ends). Raises PatchError
    naming `where` and the line of anything malformed."""
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i + 1 >= len(lines) or not lines[i].startswith("--- ") or \
            not lines[i + 1].startswith("+++ "):
        raise PatchError(f"{where}: the diff must begin with '--- <file>' and '+++ <file>'")
    old_file = lines[i][4:].split("\t")[0].strip()
    new_file = lines[i + 1][4:].split("\t")[0].strip()
    i += 2
    hunks: list[Hunk] = []
    while i < len(lines):
        if not lines[i].strip():
            i += 1
            continue
        m = HUNK_HEADER.match(lines[i])
        if not m:
            raise PatchError(f"{where}: line {i + 1} should begin a hunk ('@@ -a,b +c,d @@'): "
                             f"{lines[i]!r}")
        hunk = Hunk(int(m.group(1)), int(m.group(2) or 1), int(m.group(3)), int(m.group(4) or 1))
        at = i + 1
        i += 1
        old_seen = new_seen = 0
        while old_seen < hunk.old_count or new_seen < hunk.new_count:
            if i >= len(lines):
                raise PatchError(f"{where}: the hunk at line {at} ({hunk.header}) ends early: "
                                 f"{old_seen}/{hunk.old_count} old and {new_seen}/"
                                 f"{hunk.new_count} new lines")
            line = lines[i] if lines[i] else " "  # an editor may strip a blank context line
            kind = line[0]
            if kind == "\\":  # "\ No newline at end of file"
                i += 1
                continue
            if kind not in " -+":
                raise PatchError(f"{where}: line {i + 1} of the hunk at line {at} begins with "
                                 f"{kind!r}, not ' ', '-' or '+'")
            old_seen += kind in " -"
            new_seen += kind in " +"
            if old_seen > hunk.old_count or new_seen > hunk.new_count:
                raise PatchError(f"{where}: the hunk at line {at} ({hunk.header}) holds more "
                                 f"{'old' if old_seen > hunk.old_count else 'new'} lines than "
                                 "its header counts")
            hunk.lines.append(line)
            i += 1
        while i < len(lines) and lines[i].startswith("\\"):
            i += 1
        hunks.append(hunk)
    return Diff(old_file, new_file, hunks)


def _first_difference(expected: list[str], text: list[str], at: int) -> tuple[int, str, str]:
    """(1-based line of `text`, what the hunk expects there, what is there) of the first line
    where `expected` placed at index `at` of `text` does not match."""
    for k, want in enumerate(expected):
        have = text[at + k] if at + k < len(text) else "<end of file>"
        if have != want:
            return at + k + 1, want, have
    return at + len(expected) + 1, "", ""


def locate(hunk: Hunk, text: list[str], number: int, where: str) -> int:
    """The 0-based index of `text` where hunk number `number` (1-based) applies; PatchError
    (StalePatch) when its old side is nowhere, or in several places none of which is the stated
    one."""
    old = hunk.old
    label = f"{where}: hunk {number} ({hunk.header})"
    if not old:
        raise PatchError(f"{label} has no context or removed lines, so where it belongs cannot be "
                         "checked")
    stated = max(hunk.old_start - 1, 0)
    width = len(old)
    if text[stated:stated + width] == old:
        return stated
    places = [p for p in range(len(text) - width + 1) if text[p:p + width] == old]
    if len(places) == 1:
        return places[0]
    if places:
        raise StalePatch(f"{label}: its {width} old lines are not at line {stated + 1} "
                         f"but at {len(places)} other places (lines "
                         f"{', '.join(str(p + 1) for p in places)}), so where it belongs is "
                         "ambiguous")
    # Nowhere: show the first difference where most of the hunk still matches (nearest the
    # stated line on a tie), which is where it used to apply.
    best = max(range(max(len(text) - width + 1, 1)),
               key=lambda p: (sum(a == b for a, b in zip(text[p:p + width], old)),
                              -abs(p - stated)))
    line, want, have = _first_difference(old, text, best)
    raise StalePatch(f"{label} no longer matches the file: line {line} is "
                     f"{have.strip()!r}, the hunk expects {want.strip()!r}")


def apply(diff: Diff, text: str, where: str = "the diff") -> str:
    """`text` with every hunk of `diff` applied. Raises StalePatch for a hunk that no longer fits,
    PatchError for hunks that overlap and for a diff that changes nothing."""
    lines = text.splitlines()
    if not diff.hunks:
        raise PatchError(f"{where}: the diff has no hunks: it changes nothing")
    placed = []
    for number, hunk in enumerate(diff.hunks, start=1):
        placed.append((locate(hunk, lines, number, where), number, hunk))
    placed.sort(key=lambda p: p[0])
    for (a, na, ha), (b, nb, _) in zip(placed, placed[1:]):
        if a + len(ha.old) > b:
            raise PatchError(f"{where}: hunks {na} and {nb} overlap (lines {a + 1}-"
                             f"{a + len(ha.old)} and {b + 1}-...)")
    if all(h.old == h.new for _, _, h in placed):
        raise PatchError(f"{where}: the diff changes nothing (each hunk's new side equals its old)")
    for at, _, hunk in reversed(placed):
        lines[at:at + len(hunk.old)] = hunk.new
    ending = "\n" if text.endswith("\n") or not text else ""
    return "\n".join(lines) + ending


def make(old: str, new: str, name: str) -> list[str]:
    """The unified diff (3 lines of context) that turns `old` into `new`, both called `name`."""
    return list(difflib.unified_diff(old.splitlines(), new.splitlines(), fromfile=name,
                                     tofile=name, n=CONTEXT, lineterm=""))
