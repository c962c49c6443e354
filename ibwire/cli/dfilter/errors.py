"""Display-filter errors: `FilterError` and its tshark-style caret display."""

from __future__ import annotations

import re


class FilterError(ValueError):
    """A filter that does not compile. `position` is an index into `text`, or None."""

    def __init__(self, message: str, position: int | None = None, length: int = 1,
                 text: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.length = max(1, length)
        self.text = text

    def caret(self) -> str:
        """The filter, then a line marking the offending token (empty when none)."""
        if self.position is None:
            return ""
        shown = re.sub(r"[\r\n\f\v]", " ", self.text)
        pad = "".join("\t" if c == "\t" else " " for c in shown[:self.position])
        return f"{shown}\n{pad}^{'~' * (self.length - 1)}"

    def format(self, indent: str = "    ") -> str:
        """The message and, indented below it, the caret display (tshark's layout)."""
        lines = [self.message]
        if self.position is not None:
            lines += [indent + line for line in self.caret().split("\n")]
        return "\n".join(lines)


class Bad(Exception):
    """A literal (or pattern) that does not fit its type; the parser adds the position."""
