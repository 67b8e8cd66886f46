/*
 * src/console/graph.js - the console's program graph (docs/lineage.md, "In
 * the console"; docs/manager.md, "The web console"): the tables and views
 * of the running program as boxes listing their columns, an arrow from
 * every relation a view reads to the view, drawn from the pipeline's GET
 * /lineage (sql/lineage.h: per view "columns", "rows", "reads"; "tables").
 *
 * Layout (no library): tables in the first layer, each view one layer
 * right of the deepest relation it reads; within a layer, boxes ordered by
 * the mean position of their neighbours (a few barycentre sweeps down and
 * up, starting from program order), so arrows cross less. Plain SVG built
 * as text; styled by console.css (the Content-Security-Policy allows no
 * inline style, so colours are classes or presentation attributes).
 *
 * Clicking
 *   - a view column shows where its values come from: the table columns
 *     listed for it, marked by kind (identity, transformation,
 *     aggregation) with a line from each, and the table columns that
 *     decide the view's rows (filter, join_key, group_key, order) with a
 *     dashed line to the view's title;
 *   - a view's title shows only the columns that decide its rows;
 *   - a table column shows its impact, the rule of `sluice lineage
 *     --impact`: every view column whose values can change (marked by
 *     kind) and every view whose rows can (dashed);
 *   - anywhere else clears the selection.
 * The relations that carry the columns found to the selection (a view's
 * own ancestors whose lineage lists one of its sources; for an impact, the
 * views changed) are outlined, and the arrows between them drawn darker;
 * the others are dimmed.
 * What is marked is also in data-
 * attributes (data-hl: the kind of a column; data-rows: the row kinds; on
 * the svg: data-selected, data-marked) and said in words under the graph.
 *
 * Exposes SluiceGraph.show(svg, info, lineage) and SluiceGraph.select(what)
 * (what: {view, column} | {view} | {table, column} | null); console.js
 * calls show when /lineage answers something new.
 */
'use strict';

const SluiceGraph = (() => {
    const ROW = 18, HEAD = 24, PAD = 8, GAP_X = 90, GAP_Y = 22, MARGIN = 14;
    const CH = 7.2;            // width of a character of the 12px font, roughly
    const KINDS = ['identity', 'transformation', 'aggregation'];
    const G = {svg: null, info: null, lin: null, text: '', nodes: {}, order: [], size: null,
               sel: null};

    const esc = (s) => String(s).replace(/[&<>"']/g,
        (c) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
    const key = (rel, col) => rel + '\u0000' + col;

    /* {name: {name, table, columns[], reads[], layer, x, y, w, h}} in program
       order (tables first), from the lineage JSON. */
    function model(lin) {
        const nodes = {}, order = [];
        for (const [name, t] of Object.entries(lin.tables || {})) {
            nodes[name] = {name, table: true, columns: t.columns || [], reads: []};
            order.push(name);
        }
        for (const [name, v] of Object.entries(lin.views || {})) {
            nodes[name] = {name, table: false, columns: Object.keys(v.columns || {}),
                           reads: (v.reads || []).filter((r) => r !== name)};
            order.push(name);
        }
        // a view may read a table left out of "tables" (only the errors
        // table is, and only when no view reads it): draw what is read
        for (const n of order.slice()) {
            for (const r of nodes[n].reads) {
                if (!nodes[r]) {
                    nodes[r] = {name: r, table: true, columns: [], reads: []};
                    order.unshift(r);
                }
            }
        }
        return {nodes, order};
    }

    /* Layers and positions of the boxes. */
    function layout(nodes, order) {
        const memo = {};
        const layer = (n, seen) => {
            if (memo[n] !== undefined) return memo[n];
            const d = nodes[n];
            if (d.table) return (memo[n] = 0);
            if (seen.has(n)) return 1; // a cycle cannot happen; be safe anyway
            seen.add(n);
            let l = 1;
            for (const r of d.reads) if (nodes[r]) l = Math.max(l, layer(r, seen) + 1);
            return (memo[n] = l);
        };
        const layers = [];
        for (const n of order) {
            const l = layer(n, new Set());
            nodes[n].layer = l;
            (layers[l] = layers[l] || []).push(n);
        }
        for (let i = 0; i < layers.length; i++) layers[i] = layers[i] || [];
        const succ = {};
        for (const n of order) succ[n] = [];
        for (const n of order) for (const r of nodes[n].reads) if (succ[r]) succ[r].push(n);
        const pos = () => {
            const p = {};
            for (const L of layers) L.forEach((n, i) => { p[n] = i; });
            return p;
        };
        const sweep = (L, nb) => {
            const p = pos();
            const bc = {};
            L.forEach((n, i) => {
                const ns = nb(n).filter((m) => p[m] !== undefined);
                bc[n] = ns.length ? ns.reduce((s, m) => s + p[m], 0) / ns.length : i;
            });
            L.sort((a, b) => bc[a] - bc[b] || order.indexOf(a) - order.indexOf(b));
        };
        for (let it = 0; it < 4; it++) {
            for (let i = 1; i < layers.length; i++) sweep(layers[i], (n) => nodes[n].reads);
            for (let i = layers.length - 2; i >= 0; i--) sweep(layers[i], (n) => succ[n]);
        }
        let x = MARGIN, height = 0;
        for (const L of layers) {
            let w = 120;
            for (const n of L) {
                const d = nodes[n];
                const longest = Math.max((d.table ? 'table ' : 'view ').length + d.name.length,
                                         ...d.columns.map((c) => c.length));
                w = Math.max(w, Math.min(280, Math.ceil(longest * CH) + 2 * PAD));
            }
            let y = MARGIN;
            for (const n of L) {
                const d = nodes[n];
                d.x = x;
                d.y = y;
                d.w = w;
                d.h = HEAD + d.columns.length * ROW + 4;
                y += d.h + GAP_Y;
            }
            height = Math.max(height, y);
            x += w + GAP_X;
        }
        return {width: Math.max(x - GAP_X + MARGIN, 200), height: Math.max(height, 60)};
    }

    /* Where a line meets a box: a column's row, or the title. */
    function anchor(d, col, side) {
        const i = col === null ? -1 : d.columns.indexOf(col);
        const y = i < 0 ? d.y + HEAD / 2 : d.y + HEAD + i * ROW + ROW / 2;
        return {x: side === 'out' ? d.x + d.w : d.x, y};
    }

    function curve(a, b, cls, extra) {
        let d;
        if (b.x > a.x + 10) {
            const dx = Math.max(30, (b.x - a.x) / 2);
            d = 'M' + a.x + ',' + a.y + ' C' + (a.x + dx) + ',' + a.y + ' ' + (b.x - dx) + ',' +
                b.y + ' ' + b.x + ',' + b.y;
        } else { // backwards or in the same layer: loop around
            d = 'M' + a.x + ',' + a.y + ' C' + (a.x + 60) + ',' + a.y + ' ' + (b.x - 60) + ',' +
                b.y + ' ' + b.x + ',' + b.y;
        }
        return '<path class="' + cls + '" d="' + d + '"' + (extra || '') + '></path>';
    }

    function draw() {
        const svg = G.svg;
        const {nodes, order} = G;
        const size = G.size;
        svg.setAttribute('width', size.width);
        svg.setAttribute('height', size.height);
        svg.setAttribute('viewBox', '0 0 ' + size.width + ' ' + size.height);
        const m = marks();
        let g = '<defs><marker id="g-arrow" viewBox="0 0 8 8" refX="8" refY="4" ' +
            'markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
            '<path d="M0,0 L8,4 L0,8 z" class="g-arrowhead"></path></marker></defs>';
        // relations read: behind the boxes
        for (const n of order) {
            for (const r of nodes[n].reads) {
                if (!nodes[r]) continue;
                const on = m.path.has(r + '\u0000' + n);
                g += curve(anchor(nodes[r], null, 'out'), anchor(nodes[n], null, 'in'),
                           'g-read' + (on ? ' on' : ''),
                           ' marker-end="url(#g-arrow)" data-from="' + esc(r) + '" data-to="' +
                           esc(n) + '"');
            }
        }
        for (const n of order) {
            const d = nodes[n];
            const rk = m.rows[key(n, null)];
            g += '<g class="g-node' + (d.table ? ' g-table' : ' g-view') +
                (m.touched.has(n) ? ' touched' : G.sel ? ' dim' : '') + '" data-rel="' +
                esc(n) + '">';
            g += '<rect class="g-box" x="' + d.x + '" y="' + d.y + '" width="' + d.w +
                '" height="' + d.h + '" rx="4"></rect>';
            g += '<g class="g-head' + (rk ? ' g-rowdec' : '') + (m.sel === key(n, null) ?
                ' selected' : '') + '" data-rel="' + esc(n) + '"' +
                (rk ? ' data-rows="' + esc(rk.join(',')) + '"' : '') + '>' +
                '<rect x="' + d.x + '" y="' + d.y + '" width="' + d.w + '" height="' + HEAD +
                '" rx="4"></rect><text x="' + (d.x + PAD) + '" y="' + (d.y + 16) + '">' +
                '<tspan class="g-what">' + (d.table ? 'table' : 'view') + '</tspan> ' +
                esc(d.name) + '</text></g>';
            d.columns.forEach((c, i) => {
                const k = key(n, c);
                const hl = m.kind[k];
                const rows = m.rows[k];
                const y = d.y + HEAD + i * ROW;
                g += '<g class="g-col' + (hl ? ' k-' + hl : '') + (rows ? ' g-rowdec' : '') +
                    (m.sel === k ? ' selected' : '') + '" data-rel="' + esc(n) + '" data-col="' +
                    esc(c) + '"' + (hl ? ' data-hl="' + hl + '"' : '') +
                    (rows ? ' data-rows="' + esc(rows.join(',')) + '"' : '') + '>' +
                    '<rect x="' + (d.x + 2) + '" y="' + (y + 1) + '" width="' + (d.w - 4) +
                    '" height="' + (ROW - 2) + '" rx="2"></rect><text x="' + (d.x + PAD) +
                    '" y="' + (y + 13) + '">' + esc(c) + '</text></g>';
            });
            g += '</g>';
        }
        // the selection's lines: over the boxes, ignoring the pointer
        for (const ln of m.lines) {
            const a = anchor(nodes[ln.from[0]], ln.from[1], 'out');
            const b = anchor(nodes[ln.to[0]], ln.to[1], 'in');
            g += curve(a, b, 'g-line ' + (ln.rows ? 'g-dash' : 'k-' + ln.kind),
                       ' marker-end="url(#g-arrow)"');
        }
        svg.innerHTML = g;
        svg.dataset.selected = G.sel ? (G.sel.view || G.sel.table) +
            (G.sel.column !== undefined ? '.' + G.sel.column : '') : '';
        svg.dataset.marked = String(Object.keys(m.kind).length + Object.keys(m.rows).length);
        svg.dataset.nodes = String(order.length);
        if (G.info) G.info.textContent = m.words;
    }

    /* What the selection marks: kind[rel\0col] (value kinds), rows[rel\0col
       or rel\0null] (row kinds), lines, the relations and read-arrows on the
       paths, and a sentence. */
    function marks() {
        const m = {kind: {}, rows: {}, lines: [], path: new Set(), touched: new Set(),
                   sel: null, words: ''};
        const s = G.sel, lin = G.lin;
        if (!s || !lin) {
            m.words = 'Click a view column to see where it comes from, a table column to see ' +
                'what it can change, a view\u2019s title to see what decides its rows.';
            return m;
        }
        const addRows = (k, kind) => {
            const a = m.rows[k] || (m.rows[k] = []);
            if (!a.includes(kind)) a.push(kind);
        };
        const ends = new Set(); // the table columns found, "table.column"
        let target;
        if (s.view !== undefined) {
            const v = lin.views[s.view];
            if (!v) return marks0();
            target = s.view;
            const srcs = [], decs = [];
            if (s.column !== undefined) {
                m.sel = key(s.view, s.column);
                for (const e of v.columns[s.column] || []) {
                    m.kind[key(e.table, e.column)] = e.kind;
                    m.lines.push({from: [e.table, e.column], to: [s.view, s.column], kind: e.kind});
                    srcs.push(e.table + '.' + e.column + ' (' + e.kind + ')');
                    ends.add(e.table + '.' + e.column);
                }
            } else m.sel = key(s.view, null);
            const byCol = {};
            for (const e of v.rows || []) {
                addRows(key(e.table, e.column), e.kind);
                const c = e.table + '.' + e.column;
                if (!byCol[c]) {
                    byCol[c] = [];
                    m.lines.push({from: [e.table, e.column], to: [s.view, null], rows: true});
                }
                byCol[c].push(e.kind);
                ends.add(c);
            }
            for (const [c, ks] of Object.entries(byCol)) decs.push(c + ' (' + ks.join(', ') + ')');
            const what = s.column !== undefined ? s.view + '.' + s.column : 'view ' + s.view;
            m.words = (s.column !== undefined ? what + ' comes from ' +
                (srcs.length ? srcs.join(', ') : 'no table column (a constant or COUNT(*))') +
                '. ' : '') + 'The rows of ' + s.view + ' are decided by ' +
                (decs.length ? decs.join(', ') : 'no table column') + '.';
            // on the paths: the relations read (directly or not) that carry
            // one of the columns found
            for (const a of ancestors(target)) if (carries(a, ends)) m.touched.add(a);
            m.touched.add(target);
            paths(m);
        } else {
            // impact of table column s.table.s.column: the rule of --impact
            m.sel = key(s.table, s.column);
            const cols = [], views = [];
            for (const [vn, v] of Object.entries(lin.views)) {
                let hit = false;
                for (const [c, es] of Object.entries(v.columns || {})) {
                    for (const e of es) {
                        if (e.table !== s.table || e.column !== s.column) continue;
                        m.kind[key(vn, c)] = e.kind;
                        m.lines.push({from: [s.table, s.column], to: [vn, c], kind: e.kind});
                        cols.push(vn + '.' + c + ' (' + e.kind + ')');
                        hit = true;
                    }
                }
                const ks = (v.rows || []).filter((e) => e.table === s.table &&
                    e.column === s.column).map((e) => e.kind);
                if (ks.length) {
                    for (const k of ks) addRows(key(vn, null), k);
                    m.lines.push({from: [s.table, s.column], to: [vn, null], rows: true});
                    views.push(vn + ' (' + ks.join(', ') + ')');
                    hit = true;
                }
                if (hit) m.touched.add(vn);
            }
            m.words = 'A change of ' + s.table + '.' + s.column + ' can change ' +
                (cols.length ? 'the values of ' + cols.join(', ') : 'no view column\u2019s values') +
                ' and ' + (views.length ? 'the rows of ' + views.join(', ') : 'no view\u2019s rows') +
                '.';
            if (!cols.length && !views.length)
                m.words = 'A change of ' + s.table + '.' + s.column + ' changes nothing.';
            // the paths: a change reaches a view only through views it changes
            m.touched.add(s.table);
            paths(m);
        }
        return m;

        function marks0() {
            G.sel = null;
            return marks();
        }
    }

    function ancestors(n) {
        const out = new Set(), stack = [n];
        while (stack.length) {
            const d = G.nodes[stack.pop()];
            if (!d) continue;
            for (const r of d.reads) if (!out.has(r)) { out.add(r); stack.push(r); }
        }
        return out;
    }

    /* Does relation n carry one of the table columns ends ("table.column"):
       a table that has one, a view whose lineage lists one? */
    function carries(n, ends) {
        const d = G.nodes[n];
        if (!d) return false;
        if (d.table) return d.columns.some((c) => ends.has(n + '.' + c));
        const v = G.lin.views[n];
        const hit = (e) => ends.has(e.table + '.' + e.column);
        return (v.rows || []).some(hit) || Object.values(v.columns || {}).some((es) => es.some(hit));
    }

    /* The read-arrows between the relations marked touched. */
    function paths(m) {
        for (const n of G.order) for (const r of G.nodes[n].reads)
            if (m.touched.has(n) && m.touched.has(r)) m.path.add(r + '\u0000' + n);
    }

    function onClick(ev) {
        const col = ev.target.closest('.g-col');
        const head = ev.target.closest('.g-head');
        if (col) {
            const rel = col.dataset.rel, c = col.dataset.col;
            select(G.nodes[rel] && G.nodes[rel].table ? {table: rel, column: c} :
                {view: rel, column: c});
        } else if (head && G.nodes[head.dataset.rel] && !G.nodes[head.dataset.rel].table) {
            select({view: head.dataset.rel});
        } else select(null);
    }

    /* Draw lin (the /lineage JSON and its text) into svg; the selection
       is kept when what it names still exists. */
    function show(svg, info, lin, text) {
        bind(svg);
        G.info = info;
        if (text !== undefined && text === G.text) return;
        G.text = text;
        G.lin = lin;
        const {nodes, order} = model(lin);
        G.nodes = nodes;
        G.order = order;
        G.size = layout(nodes, order);
        if (G.sel) {
            const s = G.sel;
            const ok = s.view !== undefined ? lin.views[s.view] &&
                (s.column === undefined || s.column in lin.views[s.view].columns) :
                nodes[s.table] && nodes[s.table].columns.includes(s.column);
            if (!ok) G.sel = null;
        }
        draw();
    }

    function select(what) {
        G.sel = what;
        if (G.svg && G.lin) draw();
    }

    function bind(svg) {
        if (G.svg === svg) return;
        svg.addEventListener('click', onClick);
        G.svg = svg;
    }

    /* Nothing to draw (the pipeline does not serve): say why. */
    function clear(svg, info, why) {
        bind(svg);
        G.lin = null;
        G.text = '';
        svg.innerHTML = '';
        svg.setAttribute('width', 0);
        svg.setAttribute('height', 0);
        svg.dataset.nodes = '0';
        if (info) info.textContent = why;
    }

    return {show, select, clear, KINDS};
})();
