// The head explorer in a real browser: headless Chromium (Debian's /usr/bin/chromium) driven by
// playwright-core. Run by tests/browser/explorer_test.sh, which trains the checkpoints and writes
// the pages; this file only reads them.
//
//   node explorer_test.js CASES.json SCREENSHOT.png
//
// CASES.json: [{"name", "page": explorer HTML, "heads_dir": the `headlab heads` output on the same
// input (heads.csv, attention_maps.svg), "config": the run's config.ini, "prune": true when the run
// holds prune results}]. For each page it checks, against numbers headlab wrote by another path
// (heads.csv and attention_maps.svg of `headlab heads`, the run's config.ini):
//   1. no console error, no page error, no request that leaves the file;
//   2. one map per (layer, head): as many as the embedded JSON says, as heads.csv lists, and as the
//      config's layers x heads gives;
//   3. choosing a head and hovering / clicking a query token colours the keys with that token's row
//      of the head's attention matrix (data-weight of each key = attention_maps.svg's cell, to the
//      digits the SVG prints; = the embedded JSON exactly), and a different token gives its own row;
//   4. the scores table shows heads.csv's scores (the gate mean of a gated model) and
//      prune/importance.csv's importance, and sorts when a header is clicked;
//   5. the pruning and training curves are drawn when the run holds them.
// Exit status 0 when every check passes, 1 otherwise (each failure printed).
'use strict';

const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

const [casesFile, screenshotFile] = process.argv.slice(2);
const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8'));
let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures++;
    console.log(`FAIL ${what}`);
  }
  return ok;
}

// ---- What headlab wrote by other paths ---------------------------------------------------------
function readCsv(file) {
  const [header, ...lines] = fs.readFileSync(file, 'utf8').trim().split('\n');
  const names = header.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [names[i], v])));
}
function readConfig(file) {
  const entries = {};
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = line.match(/^\s*([a-z_]+)\s*=\s*(.*?)\s*$/);
    if (m) entries[m[1]] = m[2];
  }
  return entries;
}
// The cells of attention_maps.svg in drawing order (site, head, query, key), each with the value
// its tooltip prints and how far that text may be from the true value: half a unit in its last
// significant digit, counting at least 3 (%g drops trailing zeros: "1" may be 0.99996).
function readSvgCells(file) {
  const svg = fs.readFileSync(file, 'utf8');
  const cells = [];
  for (const m of svg.matchAll(/<rect class="cell[^"]*"[^>]*><title>([^<]*)<\/title>/g)) {
    const text = m[1].slice(m[1].lastIndexOf(': ') + 2).trim();
    const value = Number(text);
    const digits = Math.max(3, text.toLowerCase().split('e')[0].replace(/[^0-9]/g, '').replace(/^0+/, '').length);
    const tolerance = value === 0 ? 1e-6 : 0.5 * 10 ** (Math.floor(Math.log10(Math.abs(value))) - digits + 1) + 1e-7;
    cells.push({ value, tolerance });
  }
  return cells;
}
// The SVG's cells as [site][head][query][key], the shapes taken from the page's data.
function svgMatrices(cells, sites) {
  let at = 0;
  return sites.map((s) => Array.from({ length: s.heads }, () =>
    Array.from({ length: s.queries.length }, () =>
      Array.from({ length: s.keys.length }, () => cells[at++]))));
}

// ---- One page ------------------------------------------------------------------------------------
async function checkPage(browser, c, takeScreenshot) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  const pageUrl = 'file://' + path.resolve(c.page);
  page.on('request', (r) => { if (r.url() !== pageUrl && !r.url().startsWith('data:')) problems.push(`request: ${r.url()}`); });
  page.setDefaultTimeout(5000);  // a missing element fails in 5 s, not 30
  const started = Date.now();
  await page.goto(pageUrl);
  await page.waitForSelector('#focus .key-token');
  const loadMs = Date.now() - started;
  const data = await page.evaluate(() => JSON.parse(document.getElementById('headlab-data').textContent));
  const name = c.name;

  // 2. One panel per (layer, head).
  const config = readConfig(c.config);
  const headsCsv = readCsv(path.join(c.heads_dir, 'heads.csv'));
  const panels = await page.$$eval('.head-panel', (ps) => ps.map((p) => [Number(p.dataset.site), Number(p.dataset.head)]));
  const jsonHeads = data.sites.reduce((n, s) => n + s.heads, 0);
  const layers = Number(config.layers), heads = Number(config.heads);
  const modulesPerLayer = data.task === 'copy' || data.task === 'translate' ? 3 : 1;  // enc self; dec self, cross
  check(panels.length === jsonHeads, `${name}: ${panels.length} panels, the page's data has ${jsonHeads} heads`);
  check(panels.length === headsCsv.length, `${name}: ${panels.length} panels, heads.csv has ${headsCsv.length} heads`);
  check(panels.length === layers * heads * modulesPerLayer,
        `${name}: ${panels.length} panels, config.ini gives ${layers} layers x ${heads} heads x ${modulesPerLayer} modules`);
  check(new Set(panels.map((p) => p.join(','))).size === panels.length, `${name}: panels repeat a (site, head)`);
  const csvSites = [...new Set(headsCsv.map((r) => r.site))];
  check(JSON.stringify(csvSites) === JSON.stringify(data.sites.map((s) => s.name)),
        `${name}: the page's sites ${data.sites.map((s) => s.name)} are not heads.csv's ${csvSites}`);

  // 3. Hover and click a query token: the keys show that row of the real matrix.
  const svg = svgMatrices(readSvgCells(path.join(c.heads_dir, 'attention_maps.svg')), data.sites);
  const picks = [[0, 0], [data.sites.length - 1, data.sites[data.sites.length - 1].heads - 1]];
  let rowsChecked = 0;
  for (const [s, h] of picks) {
    if (!check(await page.$(`#panel-${s}-${h}`) !== null, `${name}: no panel for site ${s} head ${h}`)) continue;
    await page.click(`#panel-${s}-${h}`);
    const focus = await page.$eval('#focus', (f) => [Number(f.dataset.site), Number(f.dataset.head)]);
    check(focus[0] === s && focus[1] === h, `${name}: clicking panel ${s}/${h} enlarged ${focus}`);
    const L = data.sites[s].queries.length;
    const seen = [];
    for (const [i, how] of [[0, 'click'], [Math.floor(L / 2), 'hover'], [L - 1, 'click']]) {
      const token = `#query-tokens .query-token[data-index="${i}"]`;
      if (how === 'hover') await page.hover(token);
      else await page.click(token);
      const shown = await page.$$eval('#key-tokens .key-token', (ts) => ts.map((t) => Number(t.dataset.weight)));
      const expected = svg[s][h][i];
      check(shown.length === data.sites[s].keys.length, `${name}: ${shown.length} key tokens for ${data.sites[s].keys.length} keys`);
      const off = shown.map((w, j) => Math.abs(w - expected[j].value) > expected[j].tolerance ? j : -1).filter((j) => j >= 0);
      check(off.length === 0, `${name}: site ${s} head ${h} query ${i} (${how}): keys ${off.slice(0, 5)} show ` +
            `${off.slice(0, 5).map((j) => shown[j])}, attention_maps.svg has ${off.slice(0, 5).map((j) => expected[j].value)}`);
      check(shown.every((w, j) => w === data.sites[s].weights[h][i][j]), `${name}: query ${i}: the keys differ from the page's data`);
      seen.push(shown.join(' '));
      rowsChecked++;
    }
    // Rows of a real head differ (a causal row 0 is one-hot, the last is spread).
    check(new Set(seen).size > 1, `${name}: site ${s} head ${h}: every query shows the same weights`);
  }

  // 4. The scores table: heads.csv's numbers, and sorting.
  const table = await page.$$eval('#scores tbody tr', (rows) => rows.map((r) => ({
    site: r.querySelector('td[data-key="site"]').textContent, head: Number(r.querySelector('td[data-key="head"]').textContent),
    entropy: Number(r.querySelector('td[data-key="entropy"]').dataset.value),
    induction: Number(r.querySelector('td[data-key="induction"]').dataset.value),
    gate: r.querySelector('td[data-key="gate_mean"]') && Number(r.querySelector('td[data-key="gate_mean"]').dataset.value),
    importance: r.querySelector('td[data-key="importance"]') &&
                Number(r.querySelector('td[data-key="importance"]').dataset.value) })));
  check(table.length === headsCsv.length, `${name}: the table has ${table.length} rows, heads.csv ${headsCsv.length}`);
  for (const row of headsCsv) {
    const t = table.find((r) => r.site === row.site && r.head === Number(row.head));
    if (!check(t !== undefined, `${name}: no table row for ${row.site} head ${row.head}`)) continue;
    check(Math.abs(t.entropy - Number(row.entropy)) < 2e-6 && Math.abs(t.induction - Number(row.induction)) < 2e-6,
          `${name}: ${row.site} head ${row.head}: entropy ${t.entropy} / induction ${t.induction}, heads.csv ${row.entropy} / ${row.induction}`);
  }
  // The gate column when the model is gated (heads.csv's gate_mean), the importance when prune ran
  // (prune/importance.csv's normalised importance).
  check(data.gated === (config.gate !== undefined && config.gate !== 'none'), `${name}: gated ${data.gated}, config.ini gate=${config.gate}`);
  if (data.gated) {
    for (const row of headsCsv) {
      const t = table.find((r) => r.site === row.site && r.head === Number(row.head));
      check(t && t.gate !== null && Math.abs(t.gate - Number(row.gate_mean)) < 2e-6,
            `${name}: ${row.site} head ${row.head}: gate ${t && t.gate}, heads.csv ${row.gate_mean}`);
    }
  }
  if (c.prune) {
    const importance = readCsv(path.join(path.dirname(c.config), 'prune', 'importance.csv'));
    check(importance.length === table.length, `${name}: importance.csv has ${importance.length} heads, the table ${table.length}`);
    for (const row of importance) {
      const t = table.find((r) => r.site === row.site && r.head === Number(row.head));
      check(t && t.importance !== null && Math.abs(t.importance - Number(row.importance_normalised)) < 1e-5 * Math.max(1, Math.abs(t.importance)),
            `${name}: ${row.site} head ${row.head}: importance ${t && t.importance}, importance.csv ${row.importance_normalised}`);
    }
  }
  const column = async (key) => page.$$eval(`#scores tbody td[data-key="${key}"]`, (tds) => tds.map((td) => Number(td.dataset.value)));
  await page.click('#scores th[data-key="entropy"]');
  const up = await column('entropy');
  check(up.every((v, k) => k === 0 || up[k - 1] <= v), `${name}: entropy not ascending after one click: ${up}`);
  await page.click('#scores th[data-key="entropy"]');
  const down = await column('entropy');
  check(down.every((v, k) => k === 0 || down[k - 1] >= v), `${name}: entropy not descending after two clicks: ${down}`);
  check(table.length < 2 || JSON.stringify(up) !== JSON.stringify(down) || new Set(up).size === 1, `${name}: sorting changed nothing`);
  // A row selects its head's map.
  const last = await page.$('#scores tbody tr:last-child');
  const [rs, rh] = await last.evaluate((r) => [Number(r.dataset.site), Number(r.dataset.head)]);
  await last.click();
  const after = await page.$eval('#focus', (f) => [Number(f.dataset.site), Number(f.dataset.head)]);
  check(after[0] === rs && after[1] === rh, `${name}: clicking the table row of ${rs}/${rh} enlarged ${after}`);

  // 5. Curves.
  const curves = await page.$$eval('#curves-chart polyline.series', (ls) => ls.length);
  check(curves === 2, `${name}: ${curves} training-curve series drawn, expected 2 (training and validation)`);
  if (c.prune) {
    const prune = await page.$$eval('#prune-charts svg', (s) => s.length);
    const bands = await page.$$eval('#prune-charts polygon.band', (s) => s.length);
    check(prune === 2, `${name}: ${prune} pruning charts, expected 2 (metric and loss)`);
    check(bands === (c.random_orders > 1 ? 2 : 0), `${name}: ${bands} random-order bands for ${c.random_orders} random orders`);
  }

  // 6. Circuits: the patching grid holds patch_heads.csv's shares in its order, a cell opens its
  // head's map, the bars are attribution.csv's largest terms; no view where the task has no rule.
  const shown = await page.$eval('#circuits-section', (e) => !e.hidden);
  check(shown === Boolean(c.patch_csv), `${name}: circuits view ${shown ? 'shown' : 'hidden'}`);
  if (c.patch_csv) {
    const csv = readCsv(c.patch_csv);
    const cells = await page.$$eval('#patch-grid td.patch-cell', (ts) => ts.map((t) => [Number(t.dataset.site), Number(t.dataset.head), Number(t.dataset.value)]));
    check(cells.length === csv.length, `${name}: ${cells.length} patching cells, patch_heads.csv has ${csv.length}`);
    csv.forEach((row, k) => check(cells[k] && Math.abs(cells[k][2] - Number(row.recovered)) < 2e-6 && cells[k][1] === Number(row.head),
                                  `${name}: patching cell ${k} is ${cells[k]}, patch_heads.csv ${row.module} ${row.head} ${row.recovered}`));
    const [ps, ph] = cells[cells.length - 1];
    await page.click(`#patch-grid td.patch-cell[data-site="${ps}"][data-head="${ph}"]`);
    const opened = await page.$eval('#focus', (f) => [Number(f.dataset.site), Number(f.dataset.head)]);
    check(opened[0] === ps && opened[1] === ph, `${name}: clicking patching cell ${ps}/${ph} enlarged ${opened}`);
    check(data.sites[ps].name === csv[csv.length - 1].module.replace(/^blocks\./, 'layers.').replace(/\.attn$/, '.self_attn')
            .replace(/^(encoder|decoder)\.(\d+)\.self_attn$/, '$1.layers.$2.self_attn').replace(/^decoder\.(\d+)\.cross_attn$/, 'decoder.layers.$1.multihead_attn')
            .replace(/^(encoder|decoder)\.(\d+)\.attn$/, '$1.layers.$2.self_attn'),
          `${name}: the last patching row is site ${data.sites[ps].name}, patch_heads.csv's ${csv[csv.length - 1].module}`);
  }
  const bars = await page.$$eval('#attribution-bars rect.term-bar', (rs) => rs.map((r) => [r.dataset.name, Number(r.dataset.value)]));
  if (c.attribution_csv) {
    const terms = readCsv(c.attribution_csv).filter((r) => r.component !== 'constant' && r.component !== 'logit');
    check(bars.length === Math.min(12, terms.length), `${name}: ${bars.length} attribution bars for ${terms.length} terms`);
    const largest = Math.max(...terms.map((t) => Math.abs(Number(t.mean))));
    check(bars.length > 0 && Math.abs(Math.abs(bars[0][1]) - largest) < 2e-6, `${name}: the first bar ${bars[0]} is not the largest term ${largest}`);
    for (const [n, v] of bars) {
      const t = terms.find((r) => r.component === n);
      check(t && Math.abs(Number(t.mean) - v) < 2e-6, `${name}: bar ${n} = ${v}, attribution.csv ${t && t.mean}`);
    }
  } else {
    check(bars.length === 0, `${name}: ${bars.length} attribution bars on a page without attribution`);
  }

  check(problems.length === 0, `${name}: ${problems.join('; ')}`);
  if (takeScreenshot && await page.$('#panel-0-0')) {  // the first head enlarged, a middle query token hovered
    await page.click('#panel-0-0');
    const L = data.sites[0].queries.length;
    await page.hover(`#query-tokens .query-token[data-index="${Math.floor(L / 2) + 1}"]`);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: screenshotFile, fullPage: false });
  }
  console.log(`${name}: ${panels.length} panels, ${data.sites[0].queries.length} tokens, ${rowsChecked} rows ` +
              `checked against attention_maps.svg, loaded in ${loadMs} ms`);
  await page.close();
}

// ---- Gold links (explore --align-data) -------------------------------------------------------------
// The toy's pair links source word i to target word i (one piece each), so with the decoder step
// that predicts a word the gold cells are (i, i) for i < gold_words; the AER column must be what
// `headlab align` wrote; the enlarged cross-attention map must show the orange marker in a gold cell.
async function checkGoldPage(browser, c) {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.goto('file://' + path.resolve(c.page));
  await page.waitForSelector('#focus .key-token');
  const data = await page.evaluate(() => JSON.parse(document.getElementById('headlab-data').textContent));
  const expected = JSON.stringify(Array.from({ length: c.gold_words }, (_, i) => [i, i]));
  const cross = data.sites.map((s, k) => [s, k]).filter(([s]) => s.kind === 'cross');
  check(cross.length > 0, 'gold: no cross-attention site');
  for (const [s] of cross) check(JSON.stringify(s.gold) === expected, `gold: ${s.name} gold cells ${JSON.stringify(s.gold)}, expected ${expected}`);
  for (const s of data.sites.filter((x) => x.kind !== 'cross')) check(s.gold.length === 0, `gold: ${s.name} has gold cells`);
  const align = readCsv(c.align_csv).filter((r) => r.head !== 'mean');
  const table = await page.$$eval('#scores tbody tr', (rows) => rows.map((r) => ({
    site: r.querySelector('td[data-key="site"]').textContent, head: Number(r.querySelector('td[data-key="head"]').textContent),
    aer: r.querySelector('td[data-key="aer"]') && r.querySelector('td[data-key="aer"]').dataset.value })));
  check(align.length === cross.reduce((n, [s]) => n + s.heads, 0), `gold: alignment.csv has ${align.length} heads`);
  for (const row of align) {
    const t = table.find((x) => x.site === row.site && x.head === Number(row.head));
    check(t && t.aer !== null && t.aer !== undefined && Math.abs(Number(t.aer) - Number(row.aer)) < 1e-5,
          `gold: ${row.site} head ${row.head}: the table's AER ${t && t.aer}, alignment.csv ${row.aer}`);
  }
  const [site, k] = cross[0];
  await page.click(`#panel-${k}-0`);
  check(await page.$('#gold-legend') !== null, 'gold: no legend under the enlarged cross-attention map');
  // The marker's outline: orange pixels on the left edge of gold cell (0, 0) of the canvas.
  const orange = await page.$eval('#focus canvas', (canvas, L) => {
    const cell = canvas.height / L;
    const px = canvas.getContext('2d').getImageData(1, Math.floor(cell / 2), 1, 1).data;
    return px[0] > 200 && px[1] > 60 && px[1] < 140 && px[2] < 60;
  }, site.queries.length);
  check(orange, 'gold: no orange marker in the gold cell (0, 0) of the enlarged map');
  check(problems.length === 0, `gold: ${problems.join('; ')}`);
  console.log(`gold: ${cross.length} cross-attention sites with ${c.gold_words} gold cells, ${align.length} AERs as align wrote them`);
  await page.close();
}

(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  try {
    for (const [k, c] of cases.entries()) await (c.align_csv ? checkGoldPage(browser, c) : checkPage(browser, c, k === 0));
  } finally {
    await browser.close();
  }
  console.log(failures ? `${failures} checks failed` : `all checks passed on ${cases.length} pages; screenshot ${screenshotFile}`);
  process.exit(failures ? 1 : 0);
})().catch((e) => {
  console.log(`FAIL ${e.stack || e}`);
  process.exit(1);
});
