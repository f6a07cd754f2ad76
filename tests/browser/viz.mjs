// Opens a page that scripts/viz wrote in Debian's Chromium (driven by
// playwright-core; no browser is ever downloaded) and checks it:
//
//   node tests/browser/viz.mjs PAGE.html TRACES_DIR SCREENSHOT.png
//
// TRACES_DIR is what `scripts/viz --keep DIR` left: the bars are checked
// against its cached.logprobs.jsonl, not against the data in the page.
// Exit status: 0 every check passed; 1 a check failed or the browser could
// not start (the message says which).
import { chromium } from "playwright-core";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const [page_path, traces, shot] = process.argv.slice(2);
if (!shot) {
  console.error("usage: node tests/browser/viz.mjs PAGE.html TRACES_DIR SCREENSHOT.png");
  process.exit(2);
}
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures++;
}

const profile = mkdtempSync(join(tmpdir(), "viz-chromium-"));
let browser;  // a persistent context on a fresh profile: --user-data-dir
try {
  browser = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1200, height: 900 },
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
} catch (e) {
  console.error(`viz.mjs: the browser could not start (${CHROMIUM}): ${e.message.split("\n")[0]}`);
  console.error("hint: scripts/deps --browser installs Debian's chromium");
  rmSync(profile, { recursive: true, force: true });
  process.exit(1);
}
try {
  const page = await browser.newPage();
  page.setDefaultTimeout(10000);
  const errors = [], requests = [];
  page.on("console", m => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", e => errors.push(e.message));
  page.on("request", r => { if (!r.url().startsWith("file:")) requests.push(r.url()); });
  await page.goto("file://" + resolve(page_path));

  // Every view renders.
  const steps = readFileSync(join(traces, "cached.logprobs.jsonl"), "utf8").trim().split("\n").map(JSON.parse);
  check(await page.locator("#tokens .tok.gen").count() === steps.length, `${steps.length} generated tokens in the candidates view`);
  check(await page.locator("#bars-before .bar").count() > 0, "candidate bars drawn");
  check(await page.locator("#heatmap rect.cell").count() > 0, "attention heatmap drawn");
  check(await page.locator("#race-chart polyline.series").count() === 2, "two lines in the cache race chart");
  check((await page.locator("#race-check").textContent()).startsWith("\u2713"), "the cache race says the tokens agree");

  // Selecting a token shows that step's probabilities from the trace.
  const i = Math.min(3, steps.length - 1), s = steps[i];
  await page.locator(`.tok.gen[data-step="${i}"]`).click();
  const bars = async sel => page.locator(sel).evaluateAll(gs => gs.map(g => ({ id: Number(g.dataset.id), p: Number(g.dataset.p) })));
  const before = await bars("#bars-before .bar"), after = await bars("#bars-after .bar");
  const close = (a, b) => Math.abs(a - b) < 1e-6;
  // scripts/viz draws --top (default 10) bars of the candidates it recorded.
  check(before.length === Math.min(10, s.top.length) && before.every((b, j) => b.id === s.top[j].id && close(b.p, Math.exp(s.top[j].logprob))),
        `step ${i + 1}: bars before the chain are the trace's most probable ${before.length}`);
  check(after.length === Math.min(10, s.after.length) && after.every((b, j) => b.id === s.after[j].id && close(b.p, s.after[j].p)),
        `step ${i + 1}: bars after the chain are the trace's`);
  check(await page.locator(`#bars-after .bar.drawn[data-id="${s.id}"]`).count() === (s.after.slice(0, 10).some(a => a.id === s.id) ? 1 : 0),
        `step ${i + 1}: the drawn token is marked`);

  // At the run's settings (the model's top-k 40 is within the 64 candidates
  // recorded), the sliders' chain gives what sample's chain gave.
  const rr0 = await bars("#bars-rerank .bar");
  check(rr0.length === after.length && rr0.every((b, j) => b.id === after[j].id && Math.abs(b.p - after[j].p) < 1e-4),
        `step ${i + 1}: at the run's settings the re-ranked bars are the chain's`);

  // A slider re-ranks: temperature 0 leaves one bar at 100%.
  await page.locator("#s-temperature").fill("0");
  const rr = await bars("#bars-rerank .bar");
  check(rr.length === 1 && rr[0].id === s.top[0].id && rr[0].p === 1, "temperature 0 re-ranks to the most probable token");

  // Changing layer and head changes the heatmap.
  const cells = () => page.locator("#heatmap rect.cell").evaluateAll(rs => rs.map(r => r.dataset.w).join(" "));
  const h0 = await cells();
  const layers = await page.locator("#a-layer option").count();
  await page.locator("#a-layer").selectOption(String(layers - 1));
  const h1 = await cells();
  check(h1 !== h0, "another layer gives another heatmap");
  await page.locator("#a-head").selectOption("1");
  const h2 = await cells();
  check(h2 !== h1, "another head gives another heatmap");
  await page.locator("#a-head").selectOption("avg");
  check(await cells() !== h2, "the head average is its own heatmap");

  // Token text is text: the prompt's markup shows, none of it runs.
  const prompt = readFileSync(join(traces, "prompt.txt"), "utf8");
  check(await page.locator("#prompt").textContent() === prompt, "the prompt shows as the text it is");
  check(await page.locator("#tokens b, #tokens script, #tokens img, header b, header img").count() === 0,
        "no element made from token text");
  check(await page.evaluate(() => window.pwned === undefined), "no script from the prompt ran");

  await page.locator("#a-layer").selectOption("0");
  await page.locator("#a-head").selectOption("0");
  await page.locator("#s-reset").click();
  await page.locator(`.tok.gen[data-step="${i}"]`).click();
  await page.screenshot({ path: shot, fullPage: true });
  check(errors.length === 0, "no console errors" + (errors.length ? ": " + errors.join("; ") : ""));
  check(requests.length === 0, "no network requests" + (requests.length ? ": " + requests.join(" ") : ""));
} catch (e) {
  check(false, `the page: ${e.message.split("\n")[0]}`);
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failures ? 1 : 0);
