// The reference side of scripts/bench-tok: HuggingFace tokenizers (node
// binding) on the same inputs and protocol as bench/tok.c: load time
// (median of RUNS; also its CPU time, all threads), and each input encoded RUNS times on one tokenizer,
// median: train.txt as one text (encode), the corpus texts as one batch
// (encodeBatch, which spares the per-call promise overhead). Pin it to one
// thread with RAYON_NUM_THREADS=1. Prints one JSON line.
// Usage: node bench-ref.js TOKENIZER.json TRAIN.txt CORPUS.jsonl
'use strict';
const { Tokenizer } = require('tokenizers');
const fs = require('fs');

const RUNS = 7;
const [tokPath, trainPath, corpusPath] = process.argv.slice(2);
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0) => Number(process.hrtime.bigint() - t0) / 1e6;

(async () => {
  const loads = [], loadsCpu = [];
  let tok;
  for (let r = 0; r < RUNS; r++) {
    const t0 = process.hrtime.bigint(), c0 = process.cpuUsage();
    tok = Tokenizer.fromFile(tokPath);
    loads.push(ms(t0));
    const c = process.cpuUsage(c0);
    loadsCpu.push((c.user + c.system) / 1e3);
  }
  const train = fs.readFileSync(trainPath, 'utf8');
  const texts = fs.readFileSync(corpusPath, 'utf8').split('\n').filter(Boolean)
    .map((l) => JSON.parse(l).text);
  const bytes = (s) => Buffer.byteLength(s, 'utf8');
  const corpusBytes = texts.reduce((a, s) => a + bytes(s), 0);

  async function bench(f) {
    const times = [];
    let tokens = 0;
    for (let r = 0; r < RUNS; r++) {
      const t0 = process.hrtime.bigint();
      tokens = await f();
      times.push(ms(t0) / 1e3);
    }
    return { secs: median(times), tokens };
  }
  const tr = await bench(async () => (await tok.encode(train)).getIds().length);
  const co = await bench(async () => (await tok.encodeBatch(texts)).reduce((a, e) => a + e.getIds().length, 0));
  const out = {
    bench: 'tok', impl: 'huggingface-tokenizers-node', version: require('tokenizers/package.json').version,
    rayon_threads: process.env.RAYON_NUM_THREADS || 'default', runs: RUNS,
    load_ms_median: +median(loads).toFixed(1), load_ms_best: +Math.min(...loads).toFixed(1),
    load_cpu_ms_median: +median(loadsCpu).toFixed(1),
    train: { bytes: bytes(train), tokens: tr.tokens, mb_s: +(bytes(train) / tr.secs / 1e6).toFixed(2), tok_s: Math.round(tr.tokens / tr.secs) },
    corpus: { texts: texts.length, bytes: corpusBytes, tokens: co.tokens, mb_s: +(corpusBytes / co.secs / 1e6).toFixed(2), tok_s: Math.round(co.tokens / co.secs) },
    max_rss_mb: +(process.resourceUsage().maxRSS / 1024).toFixed(1),
  };
  console.log(JSON.stringify(out));
})();
