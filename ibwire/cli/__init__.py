"""The `ibwire` command line: tshark's flags over ibwire's decoder.

Only this package touches the terminal (architecture.md). `main.py` parses and
dispatches; `reader.py` reads and decodes; `dump.py` runs tshark's packet loop;
the presentation modules (`columns`, `tree`, `fields_out`, `jsonout`) each turn a
decoded packet into text; `stats/` holds the `-z` collectors; `output.py` owns
colour, progress and broken pipes; `carriers.py`/`madinfo.py` name what the
decoder leaves to presentation (TCP/ARP frames, MAD kinds).

Decisions (where tshark gives no answer, or ibwire differs on purpose):
* `-T fields`/json/ek print exactly tshark's text for every field tshark has; a
  name ibwire does not know prints empty after one warning (tshark refuses to
  start), so lines stay aligned with the capture's frames.
* The Time column is seconds with nine decimals whatever the file's resolution.
* Transport Info is `RC Send First QP=0x000011 PSN=12` (tshark has no PSN), then
  the AETH (` MSN=5`, ` [PSN Sequence Error]`, ` [RNR NAK 0.64 ms]`), CRC and
  malformation notes. MAD Info is tshark's text (`UD Send Only QP=0x000000
  SubnGet(NodeInfo)`, `PERF (PortCounters)`, `CM: ConnectRequest`), except that
  attributes Wireshark does not know get their name or number, not its garbage.
* `-z` collectors see every frame read (tshark does the same); `-Y` decides only
  what is printed and written.
* Unknown link types: fatal at record 0 in pcap/ERF, listed undecoded in pcapng
  (see reader.py).
* Exit status: 0 ok, 1 bad input file, 2 bad usage, 130 after Ctrl-C (with the
  statistics of what was read); a closed stdout pipe ends quietly with 0.
"""
