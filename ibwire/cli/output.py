"""Terminal handling: colour on a TTY, plain text in a pipe, progress, closed pipes.

Why one place: every other CLI module produces plain strings (or a style name),
so the output of `ibwire dump ... | cmp` never depends on the terminal, and the
escape codes, progress bar and broken-pipe rules live in one small file.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any

# Summary-line styles by kind; the kinds come from columns.line_style().
STYLES = {
    "error": "bold red", "warn": "yellow", "mad": "cyan", "link": "magenta",
    "ack": "green", "other": "dim", "cm": "blue",
}


def _want_color(stream: IO[str]) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Output:
    """Where text goes. Plain writes when piped; rich (colour, styles) on a TTY."""

    def __init__(self, stream: IO[str] | None = None, color: bool | None = None,
                 flush_each: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.color = _want_color(self.stream) if color is None else color
        self.flush_each = flush_each
        self._console: Any = None
        if self.color:
            from rich.console import Console
            self._console = Console(file=self.stream, highlight=False, soft_wrap=True,
                                    force_terminal=True)

    @property
    def is_tty(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def line(self, text: str, style: str | None = None) -> None:
        """One line of output; `style` is a key of STYLES (ignored when plain)."""
        if self._console is not None and style:
            from rich.text import Text
            self._console.print(Text(text, style=STYLES.get(style, style)))
        else:
            self.stream.write(text + "\n")
        if self.flush_each:
            self.stream.flush()

    def write(self, text: str) -> None:
        self.stream.write(text)
        if self.flush_each:
            self.stream.flush()

    def flush(self) -> None:
        self.stream.flush()


class Progress:
    """A progress bar on stderr for long reads: only on a TTY, only after a second.

    It stays off while packet lines go to the same terminal (they scroll, which is
    progress enough, and a live bar would tear them)."""

    DELAY = 1.0

    def __init__(self, total_bytes: int, enabled: bool) -> None:
        self.total = total_bytes
        self.enabled = enabled and total_bytes > 0 and _stderr_tty()
        self.start = time.monotonic()
        self._bar: Any = None
        self._task: Any = None
        self._tick = 0

    def update(self, offset: int, now: bool = False) -> None:
        """`offset` bytes read; the bar redraws every 64 calls, or `now` (a chunk)."""
        if not self.enabled:
            return
        self._tick += 1
        if self._tick & 63 and not now:
            return
        if self._bar is None:
            if time.monotonic() - self.start < self.DELAY:
                return
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress
            self._bar = RichProgress(TextColumn("reading"), BarColumn(), DownloadColumn(),
                                     TimeRemainingColumn(),
                                     console=Console(file=sys.stderr), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("read", total=self.total)
        self._bar.update(self._task, completed=min(offset, self.total))

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _stderr_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def silence_stdout() -> None:
    """After EPIPE: point stdout at /dev/null so the interpreter's final flush is quiet."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def error(message: str) -> None:
    """One-line error on stderr, `ibwire: ...` like tshark's `tshark: ...`."""
    sys.stderr.write(f"ibwire: {message}\n")
    sys.stderr.flush()


def failed(message: str) -> int:
    """`error(message)`, then the exit status of a command that failed (1)."""
    error(message)
    return 1


def duration(ns: float | None, spec: str = ".3g", micro: str = "µs", small: str = ".0f") -> str:
    """`ns` in the largest of s, ms and `micro` it reaches (the number formatted by
    `spec`), else in ns (by `small`); None is "-"."""
    if ns is None:
        return "-"
    for unit, div in (("s", 1e9), ("ms", 1e6), (micro, 1e3)):
        if abs(ns) >= div:
            return f"{ns / div:{spec}} {unit}"
    return f"{ns:{small}} ns"
