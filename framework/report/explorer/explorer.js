// The head explorer's script: reads the JSON in #headlab-data (headlab/lab/explorer.hpp describes
// it) and draws the page from it. Plain DOM, no library. Tokens are always set as textContent, never
// as HTML. Only the selected head's token view is built; the small maps are canvases drawn once.
'use strict';

const data = JSON.parse(document.getElementById('headlab-data').textContent);
const state = { site: 0, head: 0, query: null };  // the enlarged head and its chosen query row
const SVG = 'http://www.w3.org/2000/svg';

// ---- Small helpers ---------------------------------------------------------------------------
function element(tag, attributes = {}, text = null) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== null) e.textContent = text;
  return e;
}
function svgElement(tag, attributes = {}, text = null) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, v);
  if (text !== null) e.textContent = text;
  return e;
}
// 3 significant digits; '' for a missing value (JSON null).
function formatNumber(v) { return v === null || v === undefined ? '' : Number(v).toPrecision(3); }
// White (0) to dark blue (1): the colour of an attention weight w in [0, 1].
function blue(w) {
  const t = Math.min(1, Math.max(0, w));
  return [Math.round(255 - t * (255 - 8)), Math.round(255 - t * (255 - 48)), Math.round(255 - t * (255 - 107))];
}
// A token as shown: a space as ␣ and a line break as ⏎, so that every token can be seen.
function visible(text) { return text.replace(/ /g, '\u2423').replace(/\n/g, '\u23ce').replace(/\t/g, '\u21e5'); }
// Which tokens the queries and keys of a kind of site are: [query side, key side].
const KIND_SIDES = {
  'encoder self': ['source', 'source'], 'decoder self': ['target', 'target'], 'cross': ['target', 'source'],
  'self': ['', ''],
};
function sideLabel(word, kind, k) {
  const side = (KIND_SIDES[kind] || ['', ''])[k];
  return side ? `${word} (${side})` : word;
}
const KIND_TITLES = {
  'encoder self': 'Encoder self-attention (source tokens attend to source tokens)',
  'decoder self': 'Decoder self-attention (target tokens attend to earlier target tokens)',
  'cross': 'Cross-attention (target tokens attend to source tokens)',
  'self': 'Self-attention (tokens attend to earlier tokens)',
};

// ---- Maps on canvas ----------------------------------------------------------------------------
// Draws matrix (L rows x S columns) into `canvas` with `cell` pixels a token, shown scaled to fit
// a box of `box` x `box` CSS pixels; each [row, column] of `gold` gets an orange square outline.
function drawMap(canvas, matrix, cell, box, gold = []) {
  const L = matrix.length, S = matrix[0].length;
  canvas.width = S * cell;
  canvas.height = L * cell;
  const ctx = canvas.getContext('2d');
  const image = ctx.createImageData(S, L);  // one pixel per weight, then scaled up
  for (let i = 0; i < L; i++) {
    for (let j = 0; j < S; j++) {
      const [r, g, b] = blue(matrix[i][j]);
      const at = 4 * (i * S + j);
      image.data[at] = r; image.data[at + 1] = g; image.data[at + 2] = b; image.data[at + 3] = 255;
    }
  }
  const small = document.createElement('canvas');
  small.width = S; small.height = L;
  small.getContext('2d').putImageData(image, 0, 0);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(small, 0, 0, S * cell, L * cell);
  ctx.strokeStyle = '#f60';
  ctx.lineWidth = Math.max(1, Math.floor(cell / 6));
  for (const [i, j] of gold) {
    if (i < L && j < S) ctx.strokeRect(j * cell + ctx.lineWidth / 2, i * cell + ctx.lineWidth / 2,
                                       cell - ctx.lineWidth, cell - ctx.lineWidth);
  }
  const scale = box / Math.max(L, S);
  canvas.style.width = `${Math.round(S * scale)}px`;
  canvas.style.height = `${Math.round(L * scale)}px`;
}
function cellSize(matrix, pixels) {
  return Math.max(1, Math.floor(pixels / Math.max(matrix.length, matrix[0].length)));
}

// The roles a head meets by the thresholds of `headlab heads` (score > 0.4).
function rolesOf(score) {
  const roles = [];
  for (const [key, name] of [['induction', 'induction'], ['previous_token', 'previous-token'], ['sink_mass', 'sink']]) {
    if (score[key] !== null && score[key] > data.thresholds[key]) roles.push(name);
  }
  return roles;
}
function scoreOf(site, head) {
  return data.scores.find((s) => s.site === data.sites[site].name && s.head === head);
}

// ---- The layer x head grids, one per kind of site --------------------------------------------------
function buildGrids() {
  const groups = document.getElementById('site-groups');
  const kinds = [...new Set(data.sites.map((s) => s.kind))];
  for (const kind of kinds) {
    const group = element('div', { class: 'site-group', 'data-kind': kind });
    group.appendChild(element('h3', {}, KIND_TITLES[kind] || kind));
    const first = data.sites.find((s) => s.kind === kind);
    const side = (KIND_SIDES[kind] || ['', ''])[0];
    group.appendChild(tokenLine(kind === 'cross' ? sideLabel('queries', kind, 0) : side || 'tokens', first.queries));
    if (kind === 'cross') group.appendChild(tokenLine(sideLabel('keys', kind, 1), first.keys));
    const table = element('table', { class: 'head-grid' });
    const maxHeads = Math.max(...data.sites.filter((s) => s.kind === kind).map((s) => s.heads));
    const header = element('tr', {}, null);
    header.appendChild(element('th'));
    for (let h = 0; h < maxHeads; h++) header.appendChild(element('th', {}, 'head ' + h));
    table.appendChild(header);
    data.sites.forEach((site, s) => {
      if (site.kind !== kind) return;
      const row = element('tr');
      row.appendChild(element('th', {}, 'layer ' + site.layer));
      for (let h = 0; h < site.heads; h++) {
        const td = element('td');
        td.appendChild(smallPanel(s, h));
        row.appendChild(td);
      }
      table.appendChild(row);
    });
    group.appendChild(table);
    const focus = element('div', { class: 'focus', hidden: '' });
    group.appendChild(focus);
    groups.appendChild(group);
  }
}
function tokenLine(label, tokens) {
  const line = element('div', { class: 'token-line' });
  line.appendChild(element('span', { class: 'line-label' }, label));
  line.appendChild(document.createTextNode(tokens.map(visible).join(' ')));
  return line;
}
function smallPanel(s, h) {
  const site = data.sites[s];
  const panel = element('div', { class: 'head-panel', id: `panel-${s}-${h}`, 'data-site': s, 'data-head': h,
                                 title: `${site.name}, head ${h}: click to enlarge` });
  const canvas = element('canvas');
  drawMap(canvas, site.weights[h], cellSize(site.weights[h], 64), 72, site.gold || []);
  panel.appendChild(canvas);
  panel.appendChild(element('span', { class: 'panel-label' }, `L${site.layer} H${h}`));
  panel.appendChild(element('span', { class: 'panel-role' }, rolesOf(scoreOf(s, h) || {}).join(', ')));
  panel.addEventListener('click', () => select(s, h));
  return panel;
}

// ---- The enlarged head -------------------------------------------------------------------------
function select(s, h, query = null) {
  state.site = s;
  state.head = h;
  const queries = data.sites[s].queries.length;
  state.query = query === null ? queries - 1 : query;
  document.querySelectorAll('.head-panel.selected').forEach((p) => p.classList.remove('selected'));
  document.getElementById(`panel-${s}-${h}`).classList.add('selected');
  document.querySelectorAll('#scores tr.selected').forEach((r) => r.classList.remove('selected'));
  const row = document.querySelector(`#scores tr[data-site="${s}"][data-head="${h}"]`);
  if (row) row.classList.add('selected');
  buildFocus();
}
function buildFocus() {
  document.querySelectorAll('.focus').forEach((f) => { f.hidden = true; f.replaceChildren(); f.removeAttribute('id'); });
  const site = data.sites[state.site], matrix = site.weights[state.head];
  const focus = document.querySelector(`.site-group[data-kind="${site.kind}"] .focus`);
  focus.hidden = false;
  focus.id = 'focus';
  focus.setAttribute('data-site', state.site);
  focus.setAttribute('data-head', state.head);
  const score = scoreOf(state.site, state.head);
  const roles = score ? rolesOf(score) : [];
  focus.appendChild(element('h3', {}, `${site.name}, head ${state.head}` + (roles.length ? ' (' + roles.join(', ') + ')' : '')));
  const body = element('div', { class: 'focus-body' });
  // The big map: rows are queries, columns keys.
  const mapBox = element('div', { class: 'focus-map' });
  mapBox.appendChild(element('div', { class: 'axis-title' }, 'columns = keys (the first token at the left)'));
  const canvas = element('canvas', { title: 'click a row to choose its query' });
  const cell = Math.max(2, cellSize(matrix, 320));
  drawMap(canvas, matrix, cell, 320, site.gold || []);
  canvas.addEventListener('click', (event) => {
    const rect = canvas.getBoundingClientRect();
    const i = Math.floor((event.clientY - rect.top) / (rect.height / matrix.length));
    showQuery(Math.min(matrix.length - 1, Math.max(0, i)));
  });
  mapBox.appendChild(canvas);
  mapBox.appendChild(element('div', { class: 'axis-title' }, 'rows = queries (the first token at the top)'));
  if (site.gold && site.gold.length && data.alignment) {
    mapBox.appendChild(element('div', { class: 'axis-title', id: 'gold-legend' },
      `orange squares: gold links, on the row of the step that ${data.alignment.query_step === 'read' ? 'reads' : 'predicts'} ` +
      `the target word` + (data.alignment.query_step === 'read' ? '' : ' (the row of the token before it)')));
  }
  body.appendChild(mapBox);
  // The tokens: queries to choose from, keys coloured by the chosen query's weights.
  const tokens = element('div', { class: 'focus-tokens' });
  const queryLine = element('div', { class: 'token-line', id: 'query-tokens' });
  queryLine.appendChild(element('span', { class: 'line-label' }, sideLabel('query', site.kind, 0)));
  site.queries.forEach((text, i) => {
    const t = element('span', { class: 'token query-token', 'data-index': i, title: `query ${i}` }, visible(text));
    t.addEventListener('mouseenter', () => showQuery(i, false));
    t.addEventListener('click', () => showQuery(i));
    queryLine.appendChild(t);
  });
  queryLine.addEventListener('mouseleave', () => showQuery(state.query));
  tokens.appendChild(queryLine);
  const keyLine = element('div', { class: 'token-line', id: 'key-tokens' });
  keyLine.appendChild(element('span', { class: 'line-label' }, sideLabel('key', site.kind, 1)));
  site.keys.forEach((text, j) => keyLine.appendChild(element('span', { class: 'token key-token', 'data-index': j }, visible(text))));
  tokens.appendChild(keyLine);
  tokens.appendChild(element('div', { class: 'selected-weight', id: 'selected-weight' }));
  body.appendChild(tokens);
  focus.appendChild(body);
  showQuery(state.query);
}
// Colours the key tokens by row i of the enlarged head; keep = a click (stays), else a hover.
function showQuery(i, keep = true) {
  if (keep) state.query = i;
  const site = data.sites[state.site], weights = site.weights[state.head][i];
  document.querySelectorAll('#query-tokens .query-token').forEach((t) => {
    t.classList.toggle('selected', Number(t.dataset.index) === i);
  });
  document.getElementById('focus').setAttribute('data-query', i);
  document.querySelectorAll('#key-tokens .key-token').forEach((t) => {
    const w = weights[Number(t.dataset.index)];
    const [r, g, b] = blue(w);
    t.style.background = `rgb(${r}, ${g}, ${b})`;
    t.style.color = w > 0.5 ? '#fff' : '#222';
    t.setAttribute('data-weight', String(w));
    t.title = `key ${t.dataset.index} "${t.textContent}": ${w.toFixed(3)}`;
  });
  let best = 0;
  weights.forEach((w, j) => { if (w > weights[best]) best = j; });
  document.getElementById('selected-weight').textContent =
    `query ${i} "${visible(site.queries[i])}" attends most to key ${best} "${visible(site.keys[best])}" (${weights[best].toFixed(3)})`;
}

// ---- The scores table ------------------------------------------------------------------------------
function buildScores() {
  const columns = [
    { key: 'site', label: 'site', text: true }, { key: 'layer', label: 'layer' }, { key: 'head', label: 'head' },
    { key: 'entropy', label: 'entropy (nats)' },
    { key: 'sink_mass', label: 'sink mass', threshold: data.thresholds.sink_mass },
    { key: 'sink_uniform', label: 'sink if uniform' },
    { key: 'previous_token', label: 'previous token', threshold: data.thresholds.previous_token },
    { key: 'induction', label: 'induction', threshold: data.thresholds.induction },
  ];
  if (data.gated) columns.push({ key: 'gate_mean', label: 'gate mean' });
  if (data.scores.some((s) => s.importance !== null)) columns.push({ key: 'importance', label: 'importance' });
  if (data.scores.some((s) => s.aer !== null)) columns.push({ key: 'aer', label: 'AER (gold links)' });
  columns.push({ key: 'roles', label: 'role', text: true });
  document.getElementById('scores-help').textContent =
    `Scores on ${data.probe.sequences} probe sequences <s> r1..r${data.probe.block} r1..r${data.probe.block} ` +
    `(seed ${data.probe.seed}). A head "is" a sink, previous-token or induction head when that score is above ` +
    `${data.thresholds.induction} (highlighted cells). Entropy runs from 0 (one key) to about ` +
    `${data.entropy_max.toFixed(2)} (uniform over the probe). "Sink if uniform" is the sink mass uniform attention ` +
    `over the same visible keys would give: a head is a sink only well above it. Click a header to sort, a row to see its map.` +
    (data.alignment ? ` AER: alignment error rate of the head's argmax links against the gold links of the first ` +
                      `${data.alignment.pairs} pairs of ${data.alignment.file} (0 = perfect).` : '');
  const rows = data.scores.map((score) => {
    const s = data.sites.findIndex((site) => site.name === score.site);
    return Object.assign({}, score, { siteIndex: s, roles: rolesOf(score).join(', ') });
  });
  const head = document.querySelector('#scores thead'), body = document.querySelector('#scores tbody');
  const headerRow = element('tr');
  columns.forEach((c) => {
    const th = element('th', { 'data-key': c.key }, c.label + (c.threshold !== undefined ? ` (> ${c.threshold})` : ''));
    th.addEventListener('click', () => {
      const ascending = th.getAttribute('aria-sort') !== 'ascending';
      headerRow.querySelectorAll('th').forEach((h) => h.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
      rows.sort((a, b) => compare(a[c.key], b[c.key]) * (ascending ? 1 : -1));
      fill();
    });
    headerRow.appendChild(th);
  });
  headerRow.appendChild(element('th', { class: 'link' }, ''));  // over the links to the maps
  head.appendChild(headerRow);
  function compare(a, b) {  // missing values last
    if (a === null) return b === null ? 0 : 1;
    if (b === null) return -1;
    return typeof a === 'string' ? a.localeCompare(b) : a - b;
  }
  function fill() {
    body.replaceChildren();
    for (const r of rows) {
      const tr = element('tr', { 'data-site': r.siteIndex, 'data-head': r.head });
      if (r.siteIndex === state.site && r.head === state.head) tr.classList.add('selected');
      for (const c of columns) {
        const v = r[c.key];
        const td = element('td', { 'data-key': c.key }, c.text || c.key === 'layer' || c.key === 'head' ? String(v) : formatNumber(v));
        if (c.text) td.classList.add('text');
        if (!c.text && v !== null) td.setAttribute('data-value', String(v));
        if (c.threshold !== undefined && v !== null && v > c.threshold) td.classList.add('over-threshold');
        tr.appendChild(td);
      }
      const link = element('a', { href: `#panel-${r.siteIndex}-${r.head}` }, 'map');
      const td = element('td', { class: 'text' });
      td.appendChild(link);
      tr.appendChild(td);
      tr.addEventListener('click', () => select(r.siteIndex, r.head));
      body.appendChild(tr);
    }
  }
  fill();
}

// About 5 round tick values in [lo, hi] (steps of 1, 2 or 5 x 10^k), each with its label.
function niceTicks(lo, hi) {
  const raw = (hi - lo) / 5, power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const decimals = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9 * step; v += step) ticks.push([v, v.toFixed(decimals)]);
  return ticks;
}

// ---- Line charts (inline SVG) --------------------------------------------------------------------------
// series: [{name, colour, points: [[x, y]], band: [[x, lo, hi]] (optional)}]; null y values are skipped.
function lineChart(options) {
  const W = 440, H = 280, left = 58, right = 16, top = 28, bottom = 44;
  const svg = svgElement('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: 'img' });
  const xs = [], ys = [];
  for (const s of options.series) {
    for (const [x, y] of s.points) if (y !== null) { xs.push(x); ys.push(y); }
    for (const [x, lo, hi] of s.band || []) { xs.push(x); ys.push(lo, hi); }
  }
  if (!xs.length) return svg;
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)], [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { y0 -= 1; y1 += 1; }
  const padX = 0.03 * (x1 - x0), padY = 0.06 * (y1 - y0);  // end points inside the frame
  x0 -= padX; x1 += padX; y0 -= padY; y1 += padY;
  const px = (x) => left + (x - x0) / (x1 - x0) * (W - left - right);
  const py = (y) => H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom);
  svg.appendChild(svgElement('text', { x: left, y: 16, 'font-weight': 'bold' }, options.title));
  for (const [xv, text] of niceTicks(x0, x1)) {
    svg.appendChild(svgElement('text', { x: px(xv), y: H - bottom + 14, 'text-anchor': 'middle' }, text));
  }
  for (const [yv, text] of niceTicks(y0, y1)) {
    svg.appendChild(svgElement('line', { class: 'grid', x1: left, x2: W - right, y1: py(yv), y2: py(yv) }));
    svg.appendChild(svgElement('text', { x: left - 4, y: py(yv) + 4, 'text-anchor': 'end' }, text));
  }
  svg.appendChild(svgElement('rect', { class: 'frame', x: left, y: top, width: W - left - right, height: H - top - bottom }));
  svg.appendChild(svgElement('text', { x: (left + W - right) / 2, y: H - 8, 'text-anchor': 'middle' }, options.xLabel));
  svg.appendChild(svgElement('text', { x: 14, y: (top + H - bottom) / 2, 'text-anchor': 'middle',
                                       transform: `rotate(-90 14 ${(top + H - bottom) / 2})` }, options.yLabel));
  options.series.forEach((s, k) => {
    if (s.band && s.band.length) {
      const upper = s.band.map(([x, , hi]) => `${px(x)},${py(hi)}`);
      const lower = s.band.slice().reverse().map(([x, lo]) => `${px(x)},${py(lo)}`);
      svg.appendChild(svgElement('polygon', { class: 'band', points: upper.concat(lower).join(' '), fill: s.colour,
                                              'fill-opacity': 0.18, stroke: 'none' }));
    }
    const points = s.points.filter(([, y]) => y !== null).map(([x, y]) => `${px(x)},${py(y)}`).join(' ');
    svg.appendChild(svgElement('polyline', { class: 'series', 'data-name': s.name, points, fill: 'none',
                                             stroke: s.colour, 'stroke-width': 2 }));
    svg.appendChild(svgElement('line', { x1: left + 10, x2: left + 30, y1: top + 14 + 16 * k, y2: top + 14 + 16 * k,
                                         stroke: s.colour, 'stroke-width': 2 }));
    svg.appendChild(svgElement('text', { x: left + 34, y: top + 18 + 16 * k }, s.name));
  });
  return svg;
}

// The pruning curves: importance order, and the mean +- sd band of every order named random*.
function buildPrune() {
  if (!data.prune) return;
  document.getElementById('prune-section').hidden = false;
  const charts = document.getElementById('prune-charts');
  const rows = data.prune.rows;
  const ranked = rows.filter((r) => r.order === 'importance');
  const random = rows.filter((r) => r.order.startsWith('random'));
  const orders = new Set(random.map((r) => r.order)).size;
  for (const [key, label] of [['metric', data.prune.metric], ['loss', 'evaluation loss']]) {
    const byPruned = new Map();  // pruned -> values of the random orders
    for (const r of random) {
      if (!byPruned.has(r.pruned)) byPruned.set(r.pruned, { fraction: [], value: [] });
      byPruned.get(r.pruned).fraction.push(r.fraction);
      if (r[key] !== null) byPruned.get(r.pruned).value.push(r[key]);
    }
    const mean = (v) => v.reduce((a, b) => a + b, 0) / v.length;
    const sd = (v) => v.length < 2 ? 0 : Math.sqrt(v.reduce((a, b) => a + (b - mean(v)) ** 2, 0) / (v.length - 1));
    const stats = [...byPruned.entries()].sort((a, b) => a[0] - b[0]).filter(([, g]) => g.value.length)
      .map(([, g]) => ({ x: mean(g.fraction), m: mean(g.value), s: sd(g.value) }));
    charts.appendChild(lineChart({
      title: `${label} against the fraction of heads pruned`, xLabel: 'fraction of heads pruned', yLabel: label,
      series: [
        { name: 'by importance', colour: '#b2182b', points: ranked.map((r) => [r.fraction, r[key]]) },
        { name: `random order${orders > 1 ? `s (mean \u00b1 sd of ${orders})` : ''}`, colour: '#2166ac',
          points: stats.map((p) => [p.x, p.m]), band: orders > 1 ? stats.map((p) => [p.x, p.m - p.s, p.m + p.s]) : [] },
      ],
    }));
  }
}

function buildCurves() {
  if (!data.curves.length) return;
  document.getElementById('curves-section').hidden = false;
  const points = (key) => data.curves.filter((p) => p[key] !== null).map((p) => [p.step, p[key]]);
  document.getElementById('curves-chart').appendChild(lineChart({
    title: 'loss during training', xLabel: 'step', yLabel: 'loss (nats per token)',
    series: [{ name: 'training', colour: '#2166ac', points: points('loss') },
             { name: 'validation', colour: '#b2182b', points: points('valid_loss') }],
  }));
}

// ---- The page ------------------------------------------------------------------------------------------
function buildHeader() {
  document.getElementById('title').textContent = `Head explorer: ${data.title}`;
  const heads = data.sites.reduce((n, s) => n + s.heads, 0);
  document.getElementById('summary').textContent =
    `${data.task} task, step ${data.step}: ${data.sites.length} attention modules, ${heads} heads` +
    (data.gated ? ', gated' : '') + '.';
}

buildHeader();
buildGrids();
buildScores();
buildPrune();
buildCurves();
if (data.sites.length) select(0, 0);
