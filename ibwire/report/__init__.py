"""`ibwire report`: one self-contained HTML page of what went wrong in captures.

    from ibwire.report import build_report
    build_report(["a.pcap"], "report.html")

`collect` reads each capture once and runs the analyses behind `ibwire rc`,
`ibwire credits` and `ibwire fabric -T json`; `findings` words the headline;
`rc_figs`, `link_figs` and `fabric_figs` draw Plotly figures (bounded by `sample`);
`tables` and `assets` make the sortable tables; `page` puts it together.
"""

from ibwire.report.page import build_report

__all__ = ["build_report"]
