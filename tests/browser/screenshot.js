// A picture of a head explorer page (docs/tools/make_explorer_screenshot.sh):
//   node screenshot.js PAGE.html OUT.png [SITE HEAD QUERY]
// enlarges head HEAD of site SITE (default: the last site, head 0), hovers query token QUERY
// (default: the middle one) and writes the top 1400 x 900 pixels of the page.
'use strict';
const path = require('path');
const { chromium } = require('playwright-core');

const [pageFile, out, site, head, query] = process.argv.slice(2);
(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('pageerror', (e) => { console.error(`page error: ${e.message}`); process.exitCode = 1; });
  await page.goto('file://' + path.resolve(pageFile));
  const data = await page.evaluate(() => JSON.parse(document.getElementById('headlab-data').textContent));
  const s = site === undefined ? data.sites.length - 1 : Number(site), h = Number(head || 0);
  await page.click(`#panel-${s}-${h}`);
  const q = query === undefined ? Math.floor(data.sites[s].queries.length / 2) + 1 : Number(query);
  await page.hover(`#query-tokens .query-token[data-index="${q}"]`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: out });
  await browser.close();
  console.log(`wrote ${out}`);
})().catch((e) => { console.error(e); process.exit(1); });
