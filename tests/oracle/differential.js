// The differential test: tok against HuggingFace tokenizers (the npm package
// pinned in package.json) on a fresh seeded corpus from gen.js. Compares the
// ids of `tok encode` (specials parsed, HuggingFace's default), of
// `tok encode --no-special` (against HuggingFace with the special added
// tokens taken out, so their text is plain text) and the bytes of
// `tok decode`. Prints the counts and the first mismatch; exits 1 on any.
// Usage: node differential.js TOK TOKENIZER.json SEED N SCRATCH_DIR
'use strict';
const { Tokenizer } = require('tokenizers');
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

const [tok, tokenizerPath, seed, n, dir] = process.argv.slice(2);
const corpus = execFileSync('node', [path.join(__dirname, 'gen.js'), seed, n], { maxBuffer: 1 << 30 })
  .toString().split('\n').filter(Boolean).map((l) => JSON.parse(l));

const json = JSON.parse(fs.readFileSync(tokenizerPath, 'utf8'));
const ref = Tokenizer.fromFile(tokenizerPath);
// Without the special tokens: HuggingFace renumbers the added tokens that
// remain, so map them back by content.
const plainJson = { ...json, added_tokens: json.added_tokens.filter((a) => !a.special) };
const plain = Tokenizer.fromString(JSON.stringify(plainJson));
const idOf = new Map(json.added_tokens.map((a) => [a.content, a.id]));
const nVocab = Object.keys(json.model.vocab).length;

function runTok(args) {
  return execFileSync(tok, args, { maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
}

(async () => {
  const files = corpus.map((c, i) => {
    const f = path.join(dir, `${String(i).padStart(5, '0')}.txt`);
    fs.writeFileSync(f, c.text);
    return f;
  });
  const want = [], wantPlain = [], decoded = [];
  for (const c of corpus) {
    const ids = (await ref.encode(c.text)).getIds();
    want.push(ids);
    decoded.push(await ref.decode(ids, false));
    const p = (await plain.encode(c.text)).getIds();
    wantPlain.push(p.map((id) => (id < nVocab ? id : idOf.get(plain.idToToken(id)))));
  }
  let failed = 0;
  for (const [name, flags, expect] of [['encode', [], want], ['encode --no-special', ['--no-special'], wantPlain]]) {
    const got = runTok(['encode', '--json', '--tokenizer', tokenizerPath, ...flags, ...files])
      .toString().split('\n').filter(Boolean).map((l) => JSON.parse(l));
    let ok = 0, first = -1;
    for (let i = 0; i < corpus.length; i++) {
      if (JSON.stringify(got[i]) === JSON.stringify(expect[i])) ok++;
      else if (first < 0) first = i;
    }
    console.log(`${name}: ${ok}/${corpus.length} exact`);
    if (first >= 0) {
      failed = 1;
      console.log(`first mismatch: case ${first} (${corpus[first].kind}) ${JSON.stringify(corpus[first].text).slice(0, 300)}`);
      console.log(`  want ${JSON.stringify(expect[first]).slice(0, 400)}`);
      console.log(`  got  ${JSON.stringify(got[first]).slice(0, 400)}`);
    }
  }
  const idsFile = path.join(dir, 'ids');
  fs.writeFileSync(idsFile, want.map((ids) => ids.join(' ')).join('\n'));
  const text = runTok(['decode', '--tokenizer', tokenizerPath, idsFile]);
  const same = text.equals(Buffer.from(decoded.join(''), 'utf8'));
  console.log(`decode: ${same ? 'exact' : 'DIFFERS'} (${text.length} bytes)`);
  if (!same) failed = 1;
  process.exit(failed);
})();
