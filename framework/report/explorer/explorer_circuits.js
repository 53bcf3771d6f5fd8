// The head explorer's circuits view (loaded after explorer.js, whose helpers and `data` it uses):
// the recovered share of each head under activation patching, a grid of module x head whose cells
// open that head's map, and the direct logit attribution as a bar chart
// (headlab/lab/patching.hpp, headlab/lab/logit_attribution.hpp).
'use strict';

// White (0) to green (1) for a positive share, to red for a negative one; |v| clipped at 1.
function shareColour(v) {
  if (v === null) return '#eee';
  const t = Math.min(1, Math.abs(v));
  const [r, g, b] = v >= 0 ? [27, 120, 55] : [178, 24, 43];
  const mix = (c) => Math.round(255 - t * (255 - c));
  return `rgb(${mix(r)}, ${mix(g)}, ${mix(b)})`;
}

function buildPatchGrid(c) {
  const table = document.getElementById('patch-grid');
  const heads = Math.max(...c.patching.map((m) => m.shares.length));
  const header = element('tr');
  header.appendChild(element('th', {}, 'attention module'));
  for (let h = 0; h < heads; h++) header.appendChild(element('th', {}, 'head ' + h));
  table.appendChild(header);
  for (const m of c.patching) {
    const s = data.sites.findIndex((site) => site.name === m.site);
    const row = element('tr');
    row.appendChild(element('th', { class: 'text' }, m.site));
    m.shares.forEach((v, h) => {
      const td = element('td', { class: 'patch-cell', 'data-site': s, 'data-head': h, 'data-value': String(v),
                                 title: `${m.site}, head ${h}: recovered share ${formatNumber(v)}; click to see its map` },
                         v === null ? 'n/a' : v.toFixed(2));
      td.style.background = shareColour(v);
      td.addEventListener('click', () => {
        select(s, h);
        document.getElementById('focus').scrollIntoView({ block: 'nearest' });
      });
      row.appendChild(td);
    });
    table.appendChild(row);
  }
}

// Horizontal bars: the terms with the largest |mean|, at most 12, positive to the right.
function attributionChart(a) {
  const terms = [...a.terms].sort((x, y) => Math.abs(y.mean) - Math.abs(x.mean)).slice(0, 12);
  const width = 640, bar = 18, left = 190, top = 28, height = top + terms.length * bar + 30;
  const largest = Math.max(1e-9, ...terms.map((t) => Math.abs(t.mean)));
  const x0 = left + (width - left - 20) / 2, scale = (width - left - 110) / 2 / largest;  // room for the values
  const svg = svgElement('svg', { class: 'chart', id: 'attribution-bars', width, height });
  svg.appendChild(svgElement('text', { x: left, y: 16 },
                             `terms of the answer's logit (${formatNumber(a.logit)} = the terms + constant ${formatNumber(a.constant)})`));
  svg.appendChild(svgElement('line', { class: 'frame', x1: x0, x2: x0, y1: top - 4, y2: height - 26 }));
  terms.forEach((t, k) => {
    const y = top + k * bar, w = Math.abs(t.mean) * scale;
    const rect = svgElement('rect', { class: 'term-bar', x: t.mean >= 0 ? x0 : x0 - w, y: y + 2, width: Math.max(1, w),
                                      height: bar - 4, fill: t.mean >= 0 ? '#2166ac' : '#b2182b', 'data-name': t.name,
                                      'data-value': String(t.mean) });
    rect.appendChild(svgElement('title', {}, `${t.name}: ${formatNumber(t.mean)}`));
    svg.appendChild(rect);
    svg.appendChild(svgElement('text', { x: left - 6, y: y + bar - 5, 'text-anchor': 'end' }, t.name));
    svg.appendChild(svgElement('text', { x: t.mean >= 0 ? x0 + w + 4 : x0 - w - 4, y: y + bar - 5,
                                         'text-anchor': t.mean >= 0 ? 'start' : 'end' }, formatNumber(t.mean)));
  });
  svg.appendChild(svgElement('text', { x: x0, y: height - 8, 'text-anchor': 'middle' }, 'logit'));
  return svg;
}

function buildCircuits() {
  const c = data.circuits;
  if (!c) return;
  document.getElementById('circuits-section').hidden = false;
  document.getElementById('circuits-help').textContent =
    `Clean and corrupted inputs made by rule (${c.rule}; ${c.rows} rows, seed ${c.seed}), read at ` +
    (c.position === null ? 'each row\'s own position: ' : `position ${c.position}: `) +
    `the logit difference LD = logit(clean answer) - logit(corrupted answer) is ${formatNumber(c.clean_difference)} clean and ` +
    `${formatNumber(c.corrupted_difference)} corrupted. Each cell runs the corrupted rows with that head's output taken from ` +
    'the clean run: recovered share = (LD patched - LD corrupted) / (LD clean - LD corrupted), 1 = as clean, 0 = as ' +
    'corrupted. Click a cell to see the head\'s map.' +
    (c.attribution ? ` The bars split the answer's logit on the clean rows into each component's direct term (the final ` +
                     `norm's scale frozen; largest gap to the logit ${formatNumber(c.attribution.max_sum_error)}).` : '');
  buildPatchGrid(c);
  if (c.attribution) document.getElementById('attribution-chart').appendChild(attributionChart(c.attribution));
}

buildCircuits();
