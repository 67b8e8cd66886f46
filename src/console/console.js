/*
 * src/console/console.js - the web console's logic (docs/manager.md, "The
 * web console"). Served by `sluice serve` (manager mode: every pipeline
 * through /v0/pipelines, its own API under /v0/pipelines/NAME/...) and by
 * `sluice run --http` (single mode: the pipeline's own endpoints at /).
 * Which one is found by asking for /v0/pipelines at start.
 *
 * Once a second it reads the list and the selected pipeline (state,
 * restarts, pid, the manager's state history), its /stats (a point of the
 * throughput chart: input records/s and steps/s from the counters'
 * differences; of the memory chart: rss and state bytes) and its
 * /checkpoint_status; the log every third second. The same /stats fills
 * the memory panel (memory.relations and memory.operators, the largest
 * first: rows, bytes in memory, bytes on disk). /lineage is read when a
 * pipeline is selected or starts serving and every fifth second after,
 * and graph.js draws it (the program graph; clicking a column shows its
 * lineage) when it changed. While the pipeline is
 * not serving a zero point is drawn and the manager's UNAVAILABLE periods
 * are shaded, so the dip and recovery of a restart show. The editor is a
 * textarea over a highlighted copy (pre); compile errors answered by PUT
 * are marked at their line and column. Change streams are read from
 * /egress with fetch's stream reader; ad-hoc queries from /query as JSON
 * lines. An API key (asked for on a 401) goes in "Authorization: Bearer"
 * and is kept for the browser tab only (sessionStorage). Charts are
 * hand-written SVG; no third-party code.
 */
'use strict';

const S = {
    mode: null,            // 'manager' or 'single'
    key: sessionStorage.getItem('sluice-key') || '',
    list: [],
    sel: null,             // the selected pipeline's name
    info: null,            // its manager record (or a stand-in in single mode)
    pts: [],               // chart points {t, up, rec, steps, rss, mem}
    last: null,            // the previous /stats counters {t, pid, rec, steps}
    history: [],           // manager's state_history
    views: '',
    stream: null,          // AbortController of the change stream
    errors: [],            // compile errors of the last save
    lineage: '',           // the text of the last /lineage drawn ('' none)
    tick: 0,
};
const MAX_PTS = 150;
const KEYWORDS = new Set(('select from where group by having order limit offset as and or not ' +
    'null is in between like case when then else end create table view materialized with ' +
    'join inner left right full outer cross on using natural union all intersect except ' +
    'distinct insert delete primary key int integer bigint smallint tinyint varchar char ' +
    'text boolean bool double float real decimal numeric date time timestamp interval true ' +
    'false count sum min max avg cast exists asc desc local lateral over partition rows ' +
    'range preceding following unbounded current row values').split(' '));

const $ = (sel) => document.querySelector(sel);
const esc = (s) => String(s).replace(/[&<>"']/g,
    (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));

/* ------------------------------------------------------------- the API */

function headers(extra) {
    const h = Object.assign({}, extra || {});
    if (S.key) h.Authorization = 'Bearer ' + S.key;
    return h;
}

/* fetch path; {status, ok, text, json} (json null unless the body is JSON);
   a 401 shows the key bar. */
async function api(path, opts) {
    opts = opts || {};
    let r;
    try {
        r = await fetch(path, {method: opts.method || 'GET', body: opts.body,
                               headers: headers(opts.headers)});
    } catch (e) {
        $('#conn').textContent = 'cannot reach the server: ' + e.message;
        return {status: 0, ok: false, text: '', json: null};
    }
    $('#conn').textContent = '';
    const text = await r.text();
    let json = null;
    if ((r.headers.get('Content-Type') || '').includes('json')) {
        try { json = JSON.parse(text); } catch (e) { json = null; }
    }
    if (r.status === 401) $('#keybar').classList.remove('hidden');
    return {status: r.status, ok: r.ok, text, json};
}

const errText = (r) => (r.json && r.json.error) || r.text || ('HTTP ' + r.status);

/* The selected pipeline's own API. */
function base() {
    return S.mode === 'manager' ? '/v0/pipelines/' + encodeURIComponent(S.sel) : '';
}

/* ---------------------------------------------------------- start-up */

async function detect() {
    const r = await api('/v0/pipelines');
    if (r.status === 401) return false;
    if (r.ok && Array.isArray(r.json)) {
        S.mode = 'manager';
        $('#mode').textContent = 'pipeline manager';
    } else {
        S.mode = 'single';
        $('#mode').textContent = 'single pipeline (sluice run --http)';
        document.querySelectorAll('.manager-only').forEach((e) => e.classList.add('hidden'));
        S.sel = location.host;
        showPipe(true);
    }
    return true;
}

function showPipe(on) {
    $('#pipe').classList.toggle('hidden', !on);
    $('#empty').classList.toggle('hidden', on);
}

/* ------------------------------------------------- list and selection */

function renderList() {
    const tb = $('#pipelines tbody');
    const rows = S.mode === 'manager' ? S.list :
        [{name: S.sel, state: S.info ? S.info.state : '', restart_count: '-'}];
    tb.innerHTML = rows.map((p) =>
        '<tr data-name="' + esc(p.name) + '"' + (p.name === S.sel ? ' class="sel"' : '') +
        '><td>' + esc(p.name) + '</td><td><span class="state ' + esc(p.state) + '">' +
        esc(p.state) + '</span></td><td class="num">' + esc(p.restart_count) + '</td></tr>').join('');
}

async function refreshList() {
    const r = await api('/v0/pipelines');
    if (r.ok && Array.isArray(r.json)) {
        S.list = r.json.sort((a, b) => a.name.localeCompare(b.name));
        renderList();
    }
}

async function select(name) {
    stopStream();
    S.sel = name;
    S.history = [];
    S.pts = [];
    S.last = null;
    S.views = '';
    S.errors = [];
    $('#q-result thead').innerHTML = $('#q-result tbody').innerHTML = '';
    $('#s-changes tbody').innerHTML = '';
    $('#log').textContent = '';
    clearPanels();
    renderList();
    showPipe(true);
    $('#pipe').classList.remove('creating');
    const r = await api(base());
    if (!r.ok) return;
    S.info = r.json;
    S.history = r.json.state_history || [];
    fillEditor(S.info);
    renderHead();
    renderErrors();
    await sample();
    await refreshLineage();
}

/* The memory panel and the program graph, emptied (another pipeline). */
function clearPanels() {
    S.lineage = '';
    SluiceGraph.select(null);
    SluiceGraph.clear($('#graph'), $('#g-info'), 'The graph appears while the pipeline runs.');
    $('#mem-sum').textContent = '-';
    $('#mem-rels tbody').innerHTML = $('#mem-ops tbody').innerHTML = '';
}

function newPipeline() {
    stopStream();
    S.sel = null;
    S.info = null;
    S.history = [];
    S.pts = [];
    clearPanels();
    renderList();
    showPipe(true);
    $('#pipe').classList.add('creating');
    $('#p-name').textContent = '(new pipeline)';
    $('#p-state').textContent = '';
    $('#e-name').value = '';
    $('#e-name').readOnly = false;
    $('#e-sql').value = '';
    S.errors = [];
    renderErrors();
    highlight();
    $('#e-name').focus();
}

/* ---------------------------------------------------------- the head */

function renderHead() {
    const i = S.info || {};
    $('#p-name').textContent = S.sel || '';
    const st = $('#p-state');
    st.textContent = i.state || '';
    st.className = 'state ' + (i.state || '');
    $('#p-restarts').textContent = i.restart_count === undefined ? '-' : i.restart_count;
    $('#p-pid').textContent = i.pid || '-';
    let err = i.last_error ? 'last error: ' + i.last_error : '';
    const h = (i.state_history || []).map((x) => x.state);
    $('#p-error').textContent = err;
    let hist = $('#p-history');
    if (!hist) {
        hist = document.createElement('div');
        hist.id = 'p-history';
        hist.className = 'muted needs-pipe';
        $('#head').appendChild(hist);
    }
    hist.textContent = h.length ? 'states: ' + h.join(' \u2192 ') : '';
}

async function refreshInfo() {
    if (S.mode === 'manager') {
        if (!S.sel) return;
        const r = await api(base());
        if (r.status === 404) { S.sel = null; showPipe(false); return; }
        if (!r.ok) return;
        S.info = r.json;
        S.history = r.json.state_history || [];
    } else {
        const r = await api('/status');
        const st = r.ok && r.json ? String(r.json.state).toUpperCase() : 'UNAVAILABLE';
        S.info = {state: st, restart_count: '-', pid: '', step: r.json && r.json.step};
        renderList();
    }
    renderHead();
}

async function lifecycle(verb) {
    const path = S.mode === 'manager' ? base() + '/' + verb : '/' + verb;
    const r = await api(path, {method: 'POST'});
    $('#p-error').textContent = r.ok ? '' : errText(r);
    await refreshInfo();
}

/* -------------------------------------------------------- the editor */

function fillEditor(p) {
    $('#e-name').value = p.name;
    $('#e-name').readOnly = true;
    $('#e-sql').value = p.program_code || '';
    const rc = p.runtime_config || {};
    $('#e-workers').value = rc.workers || 1;
    $('#e-storage').checked = rc.storage !== false && rc.storage !== null;
    const ft = rc.fault_tolerance || {};
    $('#e-ckpt').value = ft.checkpoint_interval_secs === undefined ? 60 : ft.checkpoint_interval_secs;
    highlight();
}

/* Per-character classes of SQL text: keyword, string, number, comment. */
function classes(text) {
    const cls = new Array(text.length).fill('');
    const re = /(--[^\n]*|\/\*[\s\S]*?(?:\*\/|$))|('(?:[^']|'')*'?)|(\b\d+(?:\.\d+)?\b)|([A-Za-z_][A-Za-z0-9_]*)/g;
    let m;
    while ((m = re.exec(text))) {
        let c = '';
        if (m[1]) c = 'hl-com';
        else if (m[2]) c = 'hl-str';
        else if (m[3]) c = 'hl-num';
        else if (m[4] && KEYWORDS.has(m[4].toLowerCase())) c = 'hl-kw';
        if (c) cls.fill(c, m.index, m.index + m[0].length);
        if (!m[0].length) re.lastIndex++;
    }
    return cls;
}

/* The highlighted copy behind the textarea, with the error lines and
   columns marked. */
function highlight() {
    const text = $('#e-sql').value;
    const cls = classes(text);
    const marks = {};
    for (const e of S.errors) marks[e.line] = e.column;
    const out = [];
    let pos = 0;
    const lines = text.split('\n');
    lines.forEach((line, li) => {
        const ln = li + 1;
        const col = marks[ln];
        let html = '';
        let i = 0;
        while (i < line.length) {
            let j = i + 1;
            const c = cls[pos + i];
            const isErr = col === i + 1;
            if (!isErr) while (j < line.length && cls[pos + j] === c && col !== j + 1) j++;
            const k = (c ? c : '') + (isErr ? ' hl-errcol' : '');
            const t = esc(line.slice(i, j));
            html += k.trim() ? '<span class="' + k.trim() + '">' + t + '</span>' : t;
            i = j;
        }
        if (col !== undefined && col > line.length) html += '<span class="hl-errcol"> </span>';
        out.push(col !== undefined ? '<span class="hl-errline" data-line="' + ln + '">' +
            html + '</span>' : html);
        pos += line.length + 1;
    });
    $('#e-hl').innerHTML = out.join('\n') + '\n ';
    syncScroll();
}

function syncScroll() {
    $('#e-hl').scrollTop = $('#e-sql').scrollTop;
    $('#e-hl').scrollLeft = $('#e-sql').scrollLeft;
}

function renderErrors() {
    $('#e-errors').innerHTML = S.errors.map((e) =>
        '<li data-line="' + e.line + '" data-column="' + e.column + '">line ' + e.line +
        ', column ' + e.column + ': ' + esc(e.kind ? e.kind + ': ' : '') + esc(e.reason) +
        '</li>').join('');
    highlight();
}

/* Put the caret at line:column. */
function gotoPos(line, column) {
    const ta = $('#e-sql');
    const lines = ta.value.split('\n');
    let off = 0;
    for (let i = 0; i < line - 1 && i < lines.length; i++) off += lines[i].length + 1;
    off += Math.max(0, column - 1);
    ta.focus();
    ta.setSelectionRange(off, off);
}

async function save() {
    const name = $('#e-name').value.trim();
    if (!name) { $('#save-msg').textContent = 'give the pipeline a name'; return; }
    const ckpt = Number($('#e-ckpt').value);
    const body = {
        program_code: $('#e-sql').value,
        runtime_config: {
            workers: Number($('#e-workers').value) || 1,
            storage: $('#e-storage').checked,
            fault_tolerance: {model: $('#e-storage').checked ? 'exactly_once' : 'none',
                              checkpoint_interval_secs: isNaN(ckpt) ? 60 : ckpt},
        },
    };
    $('#save-msg').textContent = 'saving...';
    const r = await api('/v0/pipelines/' + encodeURIComponent(name), {
        method: 'PUT', body: JSON.stringify(body), headers: {'Content-Type': 'application/json'}});
    if (r.ok) {
        S.errors = [];
        renderErrors();
        $('#save-msg').textContent = r.status === 201 ? 'created' : 'saved';
        await refreshList();
        await select(name);
        $('#save-msg').textContent = r.status === 201 ? 'created' : 'saved';
        return;
    }
    const d = r.json && r.json.details;
    S.errors = d && Array.isArray(d.errors) ? d.errors : [];
    renderErrors();
    $('#save-msg').textContent = S.errors.length ? 'the program does not compile' : errText(r);
    if (S.errors.length) gotoPos(S.errors[0].line, S.errors[0].column);
}

/* ------------------------------------------------------------ charts */

/* Draw series (each {key, color, label, fmt}) of S.pts into svg, with the
   periods the pipeline was not serving shaded. */
function chart(svg, series) {
    const W = 480, H = 170, L = 52, R = 8, T = 22, B = 18;
    const pts = S.pts;
    svg.dataset.points = String(pts.length);
    let max = 1;
    for (const p of pts) for (const s of series) if (p[s.key] > max) max = p[s.key];
    const t1 = pts.length ? pts[pts.length - 1].t : Date.now();
    const t0 = pts.length ? Math.min(pts[0].t, t1 - 60000) : t1 - 60000;
    const x = (t) => L + (W - L - R) * (t - t0) / Math.max(1, t1 - t0);
    const y = (v) => T + (H - T - B) * (1 - v / max);
    let g = '';
    // periods without service: the manager's record, and points taken while down
    const downs = [];
    for (let i = 0; i < S.history.length; i++) {
        const h = S.history[i];
        if (h.state === 'UNAVAILABLE' || h.state === 'FAILED') {
            const end = i + 1 < S.history.length ? S.history[i + 1].at_ms : t1;
            downs.push([h.at_ms, end]);
        }
    }
    for (let i = 0; i < pts.length; i++) {
        if (!pts[i].up) downs.push([i ? pts[i - 1].t : pts[i].t, pts[i].t]);
    }
    for (const [a, b] of downs) {
        if (b < t0 || a > t1) continue;
        const xa = x(Math.max(a, t0)), xb = x(Math.min(b, t1));
        g += '<rect class="down" x="' + xa.toFixed(1) + '" y="' + T + '" width="' +
            Math.max(2, xb - xa).toFixed(1) + '" height="' + (H - T - B) + '"></rect>';
    }
    g += '<line class="axis" x1="' + L + '" y1="' + (H - B) + '" x2="' + (W - R) + '" y2="' + (H - B) + '"></line>';
    g += '<line class="axis" x1="' + L + '" y1="' + T + '" x2="' + L + '" y2="' + (H - B) + '"></line>';
    const fmt0 = series[0].fmt;
    g += '<text x="2" y="' + (T + 4) + '">' + esc(fmt0(max)) + '</text>';
    g += '<text x="2" y="' + (H - B) + '">0</text>';
    g += '<text x="' + L + '" y="' + (H - 4) + '">' + Math.round((t1 - t0) / 1000) + ' s ago</text>';
    g += '<text x="' + (W - R - 24) + '" y="' + (H - 4) + '">now</text>';
    let lx = L;
    const last = pts.length ? pts[pts.length - 1] : {};
    for (const s of series) {
        let segs = [], cur = [];
        for (const p of pts) {
            const v = p[s.key];
            if (v === null || v === undefined) {
                if (cur.length) segs.push(cur);
                cur = [];
                continue;
            }
            cur.push(x(p.t).toFixed(1) + ',' + y(v).toFixed(1));
        }
        if (cur.length) segs.push(cur);
        for (const c of segs) {
            if (c.length === 1) c.push(c[0]);
            g += '<polyline stroke="' + s.color + '" points="' + c.join(' ') + '"></polyline>';
        }
        const v = last[s.key];
        const label = s.label + ': ' + (v === null || v === undefined ? '-' : s.fmt(v));
        g += '<rect x="' + lx + '" y="6" width="10" height="10" fill="' + s.color + '"></rect>';
        g += '<text x="' + (lx + 14) + '" y="15">' + esc(label) + '</text>';
        lx += 16 + label.length * 5.6;
    }
    svg.innerHTML = g;
    const lv = {};
    for (const s of series) lv[s.key] = last[s.key] === undefined ? null : last[s.key];
    svg.dataset.last = JSON.stringify(lv);
    svg.dataset.max = JSON.stringify(Object.fromEntries(series.map((s) =>
        [s.key, pts.reduce((m, p) => Math.max(m, p[s.key] || 0), 0)])));
}

const num = (v) => v >= 1e6 ? (v / 1e6).toFixed(1) + 'M' : v >= 1e4 ? (v / 1e3).toFixed(1) + 'k' :
    String(Math.round(v * 10) / 10);
const bytes = (v) => v >= 1 << 30 ? (v / (1 << 30)).toFixed(2) + ' GiB' :
    v >= 1 << 20 ? (v / (1 << 20)).toFixed(1) + ' MiB' : v >= 1024 ? (v / 1024).toFixed(0) + ' KiB' :
    Math.round(v) + ' B';

function renderCharts() {
    chart($('#chart-tput'), [
        {key: 'rec', color: '#0b57d0', label: 'input records/s', fmt: num},
        {key: 'steps', color: '#e8710a', label: 'steps/s', fmt: num}]);
    chart($('#chart-mem'), [
        {key: 'rss', color: '#7b1fa2', label: 'rss', fmt: bytes},
        {key: 'mem', color: '#098658', label: 'state', fmt: bytes}]);
}

/* ------------------------------------------------ stats and checkpoints */

function serving() {
    const st = S.info && S.info.state;
    return st === 'RUNNING' || st === 'PAUSED';
}

function pushPoint(p) {
    S.pts.push(p);
    if (S.pts.length > MAX_PTS) S.pts.shift();
}

async function sample() {
    if (!S.sel || !S.info) return;
    const now = Date.now();
    const r = serving() ? await api(base() + '/stats') : null;
    if (!r || !r.ok || !r.json) {
        pushPoint({t: now, up: false, rec: 0, steps: 0, rss: null, mem: null});
        S.last = null;
        renderCharts();
        return;
    }
    const g = r.json.global_metrics || {};
    const pid = S.info.pid || 'self';
    const rec = g.total_input_records || 0, steps = g.total_completed_steps || 0;
    let rrec = 0, rsteps = 0;
    const l = S.last;
    if (l && l.pid === pid && rec >= l.rec && steps >= l.steps && now > l.t) {
        rrec = (rec - l.rec) * 1000 / (now - l.t);
        rsteps = (steps - l.steps) * 1000 / (now - l.t);
    }
    S.last = {t: now, pid, rec, steps};
    pushPoint({t: now, up: true, rec: rrec, steps: rsteps, rss: g.rss_bytes || 0,
               mem: g.state_bytes || 0});
    if (S.mode === 'manager') {
        const s = await api(base() + '/status');
        if (s.ok && s.json) $('#p-step').textContent = s.json.step;
    } else if (S.info.step !== undefined) $('#p-step').textContent = S.info.step;
    renderCharts();
    renderMemory(r.json.memory);
    renderConnectors(r.json);
    renderViews(r.json);
    const c = await api(base() + '/checkpoint_status');
    renderCheckpoint(c);
}

/* A bar of the share of the largest consumer: bytes in memory, then on disk. */
function bar(mem, disk, max) {
    const W = 80, w = (v) => (max > 0 ? W * v / max : 0).toFixed(1);
    return '<svg class="bar" width="' + W + '" height="8"><rect width="' + W +
        '" height="8"></rect><rect class="mem" width="' + w(mem) + '" height="8"></rect>' +
        '<rect class="disk" x="' + w(mem) + '" width="' + w(disk) + '" height="8"></rect></svg>';
}

const MEM_TOP = 10;

/* The memory panel: the budget and the top consumers of /stats' memory
   object (docs/memory.md): per table or view (the operators its definition
   made), and per operator. */
function renderMemory(m) {
    if (!m) return;
    const sum = $('#mem-sum');
    const parts = ['limit ' + (m.limit_bytes ? bytes(m.limit_bytes) + ' (' + m.limit_source + ')' :
        'none'), 'resident ' + bytes(m.rss_bytes || 0), 'state ' + bytes(m.state_bytes || 0) +
        ' in memory + ' + bytes(m.state_on_disk_bytes || 0) + ' on disk',
        'spill cache ' + bytes(m.spill_cache_bytes || 0), 'step arenas ' +
        bytes(m.step_arena_bytes || 0), 'input queues ' + bytes(m.input_queue_bytes || 0),
        'output queues ' + bytes(m.output_queue_bytes || 0)];
    if (m.pressure) parts.push('PRESSURE: ' + m.pressure);
    sum.textContent = parts.join(' \u00b7 ');
    sum.classList.toggle('pressure', !!m.pressure);
    const size = (e) => (e.bytes_in_memory || 0) + (e.bytes_on_disk || 0);
    const rels = (m.relations || []).slice().sort((a, b) => size(b) - size(a)).slice(0, MEM_TOP);
    const max = rels.length ? size(rels[0]) : 0;
    $('#mem-rels tbody').innerHTML = rels.map((e) =>
        '<tr data-name="' + esc(e.name) + '" data-bytes="' + (e.bytes_in_memory || 0) +
        '" data-disk="' + (e.bytes_on_disk || 0) + '" data-rows="' + (e.rows || 0) + '"><td>' +
        esc(e.name) + '</td><td class="num">' + (e.operators || 0) + '</td><td class="num">' +
        (e.rows || 0) + '</td><td class="num">' + bytes(e.bytes_in_memory || 0) +
        '</td><td class="num">' + bytes(e.bytes_on_disk || 0) + '</td><td>' +
        bar(e.bytes_in_memory || 0, e.bytes_on_disk || 0, max) + '</td></tr>').join('');
    const ops = (m.operators || []).slice().sort((a, b) => size(b) - size(a)).slice(0, MEM_TOP);
    $('#mem-ops tbody').innerHTML = ops.map((e) =>
        '<tr data-node="' + e.node + '" data-bytes="' + (e.bytes_in_memory || 0) + '"><td class="num">' +
        e.node + '</td><td>' + esc(e.kind) + '</td><td>' + esc(e.relation) + '</td><td class="num">' +
        (e.rows || 0) + '</td><td class="num">' + bytes(e.bytes_in_memory || 0) +
        '</td><td class="num">' + bytes(e.bytes_on_disk || 0) + '</td></tr>').join('');
}

/* ----------------------------------------------------- program graph */

/* Read /lineage and draw it when it changed (graph.js). */
async function refreshLineage() {
    if (!S.sel || !S.info) return;
    if (!serving()) { // a restart keeps what is drawn: the program is the same
        if (!S.lineage)
            SluiceGraph.clear($('#graph'), $('#g-info'), 'The graph appears while the pipeline runs.');
        return;
    }
    const r = await api(base() + '/lineage');
    if (!r.ok || !r.json || !r.json.views) {
        if (!S.lineage) $('#g-info').textContent = 'no lineage: ' + errText(r);
        return;
    }
    if (r.text === S.lineage) return;
    S.lineage = r.text;
    SluiceGraph.show($('#graph'), $('#g-info'), r.json, r.text);
}

function renderConnectors(st) {
    const rows = [];
    for (const i of st.inputs || []) {
        const m = i.metrics || {};
        const lat = m.processing_latency_ms || {};
        const etl = m.event_time_lag_ms || {};
        const p95 = (x) => (x.p95 === undefined || x.p95 === null ? '-' : x.p95);
        rows.push('<tr data-endpoint="' + esc(i.endpoint_name) + '" data-records="' +
            (m.total_records || 0) + '"><td>' + esc(i.endpoint_name) + '</td><td>' + esc(i.table) +
            '</td><td>' + esc(i.transport || '') + '</td><td class="num">' + (m.total_records || 0) +
            '</td><td class="num">' + ((m.num_parse_errors || 0) + (m.rejected_records || 0)) +
            '</td><td class="num">' + p95(lat) + '</td><td class="num">' + p95(etl) +
            '</td><td class="num">' + (m.lag === undefined || m.lag === null ? '-' :
                m.lag + ' ' + (m.position_unit || '')) +
            '</td></tr>');
    }
    for (const o of st.outputs || []) {
        const m = o.metrics || o;
        rows.push('<tr><td>' + esc(o.endpoint_name || '') + '</td><td>' + esc(o.view || '') +
            '</td><td>' + esc(o.transport || 'output') + '</td><td class="num">' +
            (m.transmitted_records || 0) + '</td><td class="num">' +
            (m.dead_lettered_records || 0) + '</td><td>-</td><td class="num">' +
            (m.end_to_end_lag_ms && m.end_to_end_lag_ms.p95 !== undefined ?
                m.end_to_end_lag_ms.p95 : '-') + '</td><td>-</td></tr>');
    }
    $('#connectors tbody').innerHTML = rows.join('');
}

function renderViews(st) {
    const names = Object.keys(st.views || {}).concat(Object.keys(st.tables || {}));
    const key = names.join(',');
    if (key === S.views) return;
    S.views = key;
    const cur = $('#s-view').value;
    $('#s-view').innerHTML = names.map((n) => '<option>' + esc(n) + '</option>').join('');
    if (names.includes(cur)) $('#s-view').value = cur;
}

function renderCheckpoint(r) {
    const el = $('#ckpt');
    if (!r.ok || !r.json) {
        el.textContent = r.status === 400 ? 'no storage: checkpoints are off' : errText(r);
        return;
    }
    const c = r.json;
    const parts = [];
    parts.push('fault tolerance: ' + (c.fault_tolerance || 'none'));
    if (c.last) {
        parts.push('last checkpoint at step ' + c.last.step + ' took ' + Number(c.last.secs).toFixed(3) + ' s, wrote ' +
            bytes(c.last.bytes_written || 0) + ' (' + c.last.files_written + ' files written, ' +
            c.last.files_reused + ' reused)');
    } else parts.push('no checkpoint yet');
    if (c.in_progress) parts.push('one in progress');
    if (c.success !== undefined && c.success !== null) parts.push('request #' + c.success + ' done');
    if (c.failure) parts.push('failure: ' + JSON.stringify(c.failure));
    el.textContent = parts.join(' \u00b7 ');
    el.dataset.step = c.last ? c.last.step : '';
}

async function checkpointNow() {
    const r = await api(base() + '/checkpoint', {method: 'POST'});
    $('#ckpt-msg').textContent = r.ok ? 'checkpoint #' + r.json.checkpoint_sequence_number +
        ' requested' : errText(r);
}

/* ------------------------------------------------------------- query */

async function runQuery() {
    const sql = $('#q-sql').value;
    const tab = $('#q-result');
    $('#q-error').textContent = '';
    $('#q-msg').textContent = 'running...';
    const t0 = performance.now();
    const r = await api(base() + '/query?format=json&sql=' + encodeURIComponent(sql));
    const ms = Math.round(performance.now() - t0);
    let rows = [];
    if (r.ok) {
        rows = r.text.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
        const cols = rows.length ? Object.keys(rows[0]) : [];
        tab.querySelector('thead').innerHTML = '<tr>' + cols.map((c) => '<th>' + esc(c) + '</th>').join('') + '</tr>';
        tab.querySelector('tbody').innerHTML = rows.map((row) => '<tr>' + cols.map((c) =>
            '<td' + (typeof row[c] === 'number' ? ' class="num"' : '') + '>' +
            esc(row[c] === null ? 'NULL' : row[c]) + '</td>').join('') + '</tr>').join('');
        $('#q-msg').textContent = rows.length + ' row' + (rows.length === 1 ? '' : 's') + ' in ' + ms + ' ms';
    } else {
        tab.querySelector('thead').innerHTML = tab.querySelector('tbody').innerHTML = '';
        $('#q-error').textContent = errText(r);
        $('#q-msg').textContent = '';
    }
    tab.dataset.ok = r.ok ? 'true' : 'false';
    tab.dataset.rows = String(rows.length);
    tab.dataset.runs = String(Number(tab.dataset.runs || 0) + 1);
}

/* ----------------------------------------------------- change stream */

function stopStream() {
    if (S.stream) S.stream.abort();
    S.stream = null;
}

function addChanges(chunk) {
    const tb = $('#s-changes tbody');
    const tab = $('#s-changes');
    let html = '';
    let n = 0;
    for (const ch of chunk.json_data || []) {
        for (const op of ['insert', 'delete']) {
            if (!(op in ch)) continue;
            html += '<tr class="' + (op === 'insert' ? 'ins' : 'del') + '"><td>' +
                chunk.sequence_number + (chunk.snapshot ? ' (snapshot)' : '') + '</td><td>' + op +
                '</td><td>' + esc(JSON.stringify(ch[op])) + '</td></tr>';
            n++;
        }
    }
    if (chunk.text_data) {
        html += '<tr><td>' + chunk.sequence_number + '</td><td>csv</td><td>' + esc(chunk.text_data) + '</td></tr>';
        n++;
    }
    tb.insertAdjacentHTML('afterbegin', html);
    while (tb.rows.length > 300) tb.deleteRow(tb.rows.length - 1);
    tab.dataset.changes = String(Number(tab.dataset.changes || 0) + n);
}

async function follow() {
    stopStream();
    const view = $('#s-view').value;
    if (!view) return;
    const ac = new AbortController();
    S.stream = ac;
    $('#s-changes tbody').innerHTML = '';
    $('#s-changes').dataset.changes = '0';
    $('#s-msg').textContent = 'following ' + view + '...';
    const url = base() + '/egress/' + encodeURIComponent(view) + '?format=json' +
        ($('#s-snapshot').checked ? '&snapshot=true' : '');
    let r;
    try {
        r = await fetch(url, {method: 'POST', headers: headers(), signal: ac.signal});
    } catch (e) {
        $('#s-msg').textContent = e.name === 'AbortError' ? 'stopped' : 'cannot follow: ' + e.message;
        return;
    }
    if (!r.ok) {
        const t = await r.text();
        let msg = t;
        try { msg = JSON.parse(t).error; } catch (e) { /* not JSON */ }
        $('#s-msg').textContent = msg;
        return;
    }
    const rd = r.body.getReader();
    const dec = new TextDecoder();
    let buf = '';
    try {
        for (;;) {
            const {value, done} = await rd.read();
            if (done) break;
            buf += dec.decode(value, {stream: true});
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
                const line = buf.slice(0, i);
                buf = buf.slice(i + 1);
                if (line.trim()) addChanges(JSON.parse(line));
            }
        }
        $('#s-msg').textContent = 'the stream ended (the pipeline stopped or restarted): follow again';
    } catch (e) {
        $('#s-msg').textContent = e.name === 'AbortError' ? 'stopped' : 'the stream broke: ' + e.message;
    }
    if (S.stream === ac) S.stream = null;
}

/* --------------------------------------------------------------- log */

async function refreshLog() {
    if (S.mode !== 'manager' || !S.sel) return;
    const r = await api(base() + '/logs');
    if (!r.ok) return;
    const el = $('#log');
    const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - 4;
    const lines = r.text.split('\n');
    el.textContent = lines.slice(-400).join('\n');
    if (atEnd) el.scrollTop = el.scrollHeight;
}

/* -------------------------------------------------------------- loop */

async function tick() {
    try {
        if (!S.mode) {
            await detect();
        } else {
            if (S.mode === 'manager') await refreshList();
            if (S.sel) {
                await refreshInfo();
                await sample();
                if (!S.lineage || S.tick % 5 === 0) await refreshLineage();
                if (S.tick % 3 === 0) await refreshLog();
            }
        }
    } catch (e) {
        $('#conn').textContent = 'console error: ' + e.message;
    }
    S.tick++;
    document.body.dataset.ticks = String(S.tick);
    setTimeout(tick, 1000);
}

function wire() {
    $('#keybar').addEventListener('submit', (ev) => {
        ev.preventDefault();
        S.key = $('#key').value.trim();
        sessionStorage.setItem('sluice-key', S.key);
        $('#keybar').classList.add('hidden');
    });
    $('#pipelines tbody').addEventListener('click', (ev) => {
        const tr = ev.target.closest('tr');
        if (tr && S.mode === 'manager') select(tr.dataset.name);
    });
    $('#new').addEventListener('click', newPipeline);
    $('#save').addEventListener('click', save);
    $('#start').addEventListener('click', () => lifecycle('start'));
    $('#pause').addEventListener('click', () => lifecycle('pause'));
    $('#stop').addEventListener('click', () => lifecycle('stop'));
    $('#ckpt-now').addEventListener('click', checkpointNow);
    $('#q-run').addEventListener('click', runQuery);
    $('#q-sql').addEventListener('keydown', (ev) => {
        if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) runQuery();
    });
    $('#s-follow').addEventListener('click', follow);
    $('#s-stop').addEventListener('click', stopStream);
    $('#g-clear').addEventListener('click', () => SluiceGraph.select(null));
    const ta = $('#e-sql');
    ta.addEventListener('input', () => {
        if (S.errors.length) { S.errors = []; renderErrors(); } else highlight();
    });
    ta.addEventListener('scroll', syncScroll);
    ta.addEventListener('keydown', (ev) => {
        if (ev.key === 'Tab') {
            ev.preventDefault();
            const s = ta.selectionStart;
            ta.setRangeText('    ', s, ta.selectionEnd, 'end');
            highlight();
        }
    });
    $('#e-errors').addEventListener('click', (ev) => {
        const li = ev.target.closest('li');
        if (li) gotoPos(Number(li.dataset.line), Number(li.dataset.column));
    });
}

wire();
tick();
