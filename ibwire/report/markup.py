"""Small HTML pieces: plots (Plotly, its script inlined once), cards, sections."""

from __future__ import annotations

import html
from typing import Any

import plotly.io as pio

CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": False,
          "modeBarButtonsToRemove": ["select2d", "lasso2d"]}


class Plots:
    """Renders figures as divs; the first one carries plotly.js (include_plotlyjs)."""

    def __init__(self) -> None:
        self.count = 0

    def div(self, fig: Any, pid: str, file: str, caption: str = "") -> str:
        first = self.count == 0
        self.count += 1
        body = pio.to_html(fig, full_html=False, include_plotlyjs=first, div_id=pid,
                           config=CONFIG, post_script="ibwireAttach(document."
                           "getElementById('{plot_id}'));")
        cap = f'<p class="note">{esc(caption)}</p>' if caption else ""
        return f'<div class="plot" data-file="{esc(file)}">{cap}{body}</div>'


def esc(text: object) -> str:
    return html.escape(str(text))


def card(label: str, value: object, key: str, bad: bool = False, shown: str | None = None
         ) -> str:
    """A headline number; `data-key`/`data-value` let tests read it back exactly."""
    cls = "card bad" if bad else "card"
    return (f'<div class="{cls}"><div class="v" data-key="{esc(key)}" data-value="{esc(value)}">'
            f'{esc(shown if shown is not None else value)}</div><div class="k">{esc(label)}'
            "</div></div>")


def section(sid: str, title: str, body: str) -> str:
    return f'<section id="{esc(sid)}"><h2>{esc(title)}</h2>{body}</section>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'
