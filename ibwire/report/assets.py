"""The page's own style and script (Plotly's script is inlined beside them).

The script: sortable, paginated tables from the JSON each `.tbl` holds; a click on
a table row or a plot point shows the `ibwire dump -Y` command for those packets
(a trace's `meta` is the display filter, `{0}`, `{1}` standing for its customdata).
"""

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#222;
 background:#f6f7f9}
header{background:#1f2a44;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:20px} header .sub{opacity:.8;font-size:13px}
main{padding:8px 24px 120px}
section{background:#fff;border:1px solid #dde;border-radius:6px;margin:14px 0;padding:8px 16px}
h2{font-size:17px;margin:8px 0} h3{font-size:15px;margin:14px 0 4px} h4{margin:10px 0 4px}
.cards{display:flex;flex-wrap:wrap;gap:10px}
.card{border:1px solid #dde;border-radius:6px;padding:6px 12px;min-width:110px;background:#fafbfc}
.card .v{font-size:20px;font-weight:600} .card .k{font-size:12px;color:#666}
.card.bad .v{color:#c62828}
ol.findings li{margin:4px 0} .ok{color:#2e7d32}
.note{color:#666;font-size:12px;margin:2px 0}
.plot{width:100%}
table{border-collapse:collapse;font-size:12px;width:100%}
th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:right;white-space:nowrap}
th{cursor:pointer;background:#f0f2f5;position:sticky;top:0}
th.asc:after{content:" ▲"} th.desc:after{content:" ▼"}
td.s{text-align:left}
tr.f:hover{background:#fff4e0;cursor:pointer}
.pager{font-size:12px;margin:4px 0} .pager button{margin:0 4px}
.tblwrap{max-height:520px;overflow:auto}
#dumpbox{position:fixed;left:0;right:0;bottom:0;background:#1f2a44;color:#fff;
 padding:8px 16px;font-size:13px;display:none}
#dumpbox code{background:#000;color:#9f9;padding:3px 6px;border-radius:3px;user-select:all}
#dumpbox button{float:right}
nav a{margin-right:12px;font-size:13px}
"""

JS = r"""
(function(){
const PAGE = 25;
function q(s){return "'" + String(s).replace(/'/g, "'\\''") + "'";}
window.ibwireShowDump = function(file, filter){
  const box = document.getElementById('dumpbox');
  const cmd = 'ibwire dump -r ' + q(file) + ' -Y ' + q(filter);
  box.querySelector('code').textContent = cmd;
  box.style.display = 'block';
};
function fill(meta, cd){
  const v = Array.isArray(cd) ? cd : [cd];
  return meta.replace(/\{(\d)\}/g, (m, i) => v[+i]);
}
window.ibwireAttach = function(div){
  div.on('plotly_click', function(ev){
    const p = ev.points[0]; if(!p) return;
    const meta = p.data.meta;
    if(typeof meta === 'string' && p.customdata !== undefined && p.customdata !== null)
      ibwireShowDump(div.closest('[data-file]').dataset.file, fill(meta, p.customdata));
  });
};
function cmp(a, b){
  if(a === null || a === undefined) return 1; if(b === null || b === undefined) return -1;
  if(typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a).localeCompare(String(b), undefined, {numeric: true});
}
function table(el){
  const d = JSON.parse(el.querySelector('script').textContent);
  let order = d.rows.map((_, i) => i), page = 0, key = -1, dir = 1;
  const wrap = document.createElement('div'); wrap.className = 'tblwrap';
  const t = document.createElement('table'); wrap.appendChild(t);
  const pager = document.createElement('div'); pager.className = 'pager';
  el.appendChild(wrap); el.appendChild(pager);
  const head = t.createTHead().insertRow();
  d.columns.forEach((c, i) => {
    const th = document.createElement('th'); th.textContent = c; head.appendChild(th);
    th.onclick = () => {
      dir = key === i ? -dir : 1; key = i;
      order.sort((a, b) => dir * cmp(d.rows[a][i], d.rows[b][i]));
      head.querySelectorAll('th').forEach(x => x.className = '');
      th.className = dir > 0 ? 'asc' : 'desc'; page = 0; draw();
    };
  });
  const body = t.createTBody();
  function draw(){
    body.innerHTML = '';
    const pages = Math.max(1, Math.ceil(order.length / PAGE));
    order.slice(page * PAGE, page * PAGE + PAGE).forEach(r => {
      const tr = body.insertRow();
      d.rows[r].forEach(v => { const td = tr.insertCell();
        td.textContent = v === null ? '-' : v;
        if(typeof v === 'string') td.className = 's'; });
      const f = d.filters[r];
      if(f){ tr.className = 'f'; tr.title = f;
             tr.onclick = () => ibwireShowDump(el.dataset.file, f); }
    });
    pager.innerHTML = '';
    if(pages > 1){
      const mk = (label, p) => { const b = document.createElement('button');
        b.textContent = label; b.disabled = p < 0 || p >= pages || p === page;
        b.onclick = () => { page = p; draw(); }; pager.appendChild(b); };
      mk('«', 0); mk('‹', page - 1);
      pager.appendChild(document.createTextNode('page ' + (page + 1) + ' of ' + pages));
      mk('›', page + 1); mk('»', pages - 1);
    }
  }
  draw();
}
document.addEventListener('DOMContentLoaded', () => {
  document.querySelectorAll('.tbl').forEach(table);
  document.getElementById('dumpbox').querySelector('button').onclick =
    () => { document.getElementById('dumpbox').style.display = 'none'; };
});
})();
"""
