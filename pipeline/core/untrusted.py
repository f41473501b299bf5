"""Text the pipeline does not control, made safe for the medium it reaches.

Names typed by restaurant staff in the POS back office (products, payment types, payment
groups), ids and types a POS sends, and the bodies of its error answers are untrusted:
each medium gets them in a form that cannot run or forge anything there.

- a terminal: escape sequences and control characters removed (``for_terminal``);
- Markdown in the Dagster UI: every character Markdown would act on escaped
  (``markdown``), so an image or a link is shown as text;
- a spreadsheet: a CSV field that Excel, LibreOffice or Sheets would run as a formula is
  prefixed with ``'`` (``FORMULA_PREFIX``, OWASP's CSV injection advice); xlsx cells are
  strings, never formulas, and characters Excel rejects are replaced (``for_excel``);
- anything a person or a file may see: keys and URL credentials redacted (``Redactor``).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

REDACTED = "<API_KEY>"
KEY_RUN = 8
"""A run of this many characters of a key, in any case, is redacted wherever it appears
(a key echoed in part, or masked in part, still gives most of it away)."""

_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]*@")


def redact_url(text: str) -> str:
    """``text`` with the credentials part of every URL in it (``user:pass@``) replaced."""
    return _URL_CREDENTIALS.sub(r"\1***@", text)


def _char_forms(char: str) -> str:
    """A regex for one character of a key as a server may echo it: itself, URL-encoded
    (``%6B``, ``%6b``) or JSON-escaped (``\\u006b``, once or more); the caller matches
    ignoring case."""
    code = ord(char)
    forms = [re.escape(char), f"%{code:02x}"] if code < 0x100 else [re.escape(char)]
    forms.append(f"\\\\+u{code:04x}")  # (escaped again, JSON in JSON: two backslashes)
    return "(?:" + "|".join(forms) + ")"


def _base64_forms(secret: str) -> set[str]:
    """The key as it shows inside base64 text, at each of the three offsets it can start
    at: the characters made of its bits alone (those shared with its neighbours
    dropped), standard and URL-safe."""
    raw = secret.encode()
    forms = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        body = encoded[-(-8 * offset // 6):8 * (offset + len(raw)) // 6]
        for form in (body, body.replace("+", "-").replace("/", "_")):
            if len(form) >= KEY_RUN:
                forms.add(form)
    return forms


class Redactor:
    """Removes secrets from text: each key case-insensitively, any run of ``KEY_RUN`` or
    more of its characters, the key URL-encoded (either case), JSON-escaped (any of its
    characters as ``\\uXXXX``, mixed or not) and base64-encoded (standard or URL-safe, at
    any offset in a longer text), and the credentials of every URL."""

    def __init__(self, secrets: Iterable[str]):
        secrets = [s for s in secrets if s]
        runs = {s[i:i + KEY_RUN].lower() for s in secrets
                for i in range(max(len(s) - KEY_RUN + 1, 1))}
        encoded = ["".join(_char_forms(c) for c in s) for s in secrets]
        encoded += [re.escape(f) for s in secrets for f in sorted(_base64_forms(s))]
        alternatives = [re.escape(r) for r in sorted(runs)] + encoded
        self.pattern = "|".join(alternatives) if alternatives else None
        """The secrets' forms as one regex, matched ignoring case (RE2's syntax too)."""
        # a lookahead matches at every position, so overlapping runs are all found
        self._pattern = re.compile("(?=(" + self.pattern + "))", re.IGNORECASE) \
            if alternatives else None

    def __call__(self, text: str) -> str:
        text = redact_url(text)
        if self._pattern is None:
            return text
        spans: list[list[int]] = []
        for m in self._pattern.finditer(text):
            start, end = m.start(), m.start() + len(m.group(1))
            if spans and start <= spans[-1][1]:  # overlapping or adjacent: one span
                spans[-1][1] = max(spans[-1][1], end)
            else:
                spans.append([start, end])
        if not spans:
            return text
        out, at = [], 0
        for start, end in spans:
            out += [text[at:start], REDACTED]
            at = end
        return "".join(out) + text[at:]


_ESCAPE_SEQUENCE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|[@-Z\\-_])|\x9b[0-?]*[ -/]*[@-~]")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def one_line(text: str) -> str:
    """An error's text as one line: delta-rs spreads its errors over several lines, with
    terminal colours and arrows (each line's text kept, in order)."""
    return " ".join(ANSI.sub("", text).replace("\u21b3", " ").split())


def for_terminal(text: str) -> str:
    """``text`` as a terminal may show it: escape sequences (colours, cursor moves,
    screen clears, window titles) removed, other control characters (a carriage return
    that would overwrite the line, a bell) shown as ``?``; newlines and tabs kept."""
    return _CONTROL.sub("?", _ESCAPE_SEQUENCE.sub("", text))


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~=&:])")


def markdown(value: object) -> str:
    """``value`` as literal text in Markdown (a table cell, say): every character Markdown
    or its HTML would act on is escaped, line breaks become spaces, so ``![x](http://...)``
    shows as those characters and fetches nothing."""
    text = for_terminal(str(value)).replace("\n", " ").replace("\t", " ")
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text)


FORMULA_PREFIX = "'"
"""What a spreadsheet-bound field that would run as a formula is prefixed with: the
apostrophe Excel and LibreOffice read as "text follows" (OWASP)."""

_FORMULA_START = r"^([=+@\t\r\n]|-(?!\d+([.,]\d+)?$))"
"""A field a spreadsheet would run: starting with ``=``, ``+``, ``@``, tab, CR or LF, or
with ``-`` unless the whole field is a plain negative number."""


def neutralise_formula(text: str) -> str:
    """``text`` made inert for a spreadsheet: prefixed with ``'`` if it would run."""
    return FORMULA_PREFIX + text if re.match(_FORMULA_START, text) else text


def neutralise_formula_sql(column: str) -> str:
    """A DuckDB expression of the string ``column`` neutralised as ``neutralise_formula``
    does it."""
    return (f"case when regexp_matches({column}, '^[=+@\\t\\r\\n]') or "
            f"(starts_with({column}, '-') and not regexp_full_match({column}, "
            f"'-[0-9]+([.,][0-9]+)?')) then '{FORMULA_PREFIX * 2}' || {column} "
            f"else {column} end")


_EXCEL_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def for_excel(text: str) -> str:
    """``text`` as an xlsx cell may hold it: the control characters Excel rejects
    replaced by U+FFFD (the rest of the value kept)."""
    return _EXCEL_ILLEGAL.sub("\ufffd", text)
