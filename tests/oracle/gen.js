// A seeded corpus for the differential tokenizer test: tok against
// HuggingFace tokenizers on strings built to probe what the bundled golden
// corpus (oracle/tok_corpus.py) weighs less: every White_Space character and
// its look-alikes at the ends of runs, case folding in contractions (U+017F
// folds to 's'), NFC on decomposed text, Hangul jamo and singleton
// decompositions, every general category (including letters and numbers
// added in recent Unicode versions), digits of many scripts, emoji
// sequences, added tokens in every position, and long runs.
// Usage: node gen.js SEED N > corpus.jsonl   (one {"kind", "text"} per line)
'use strict';

// mulberry32: small, seeded, reproducible across node versions
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const seed = Number(process.argv[2] || 1), n = Number(process.argv[3] || 3000);
const R = rng(seed);
const int = (lo, hi) => lo + Math.floor(R() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(R() * xs.length)];
const cp = (c) => String.fromCodePoint(c);
const range = (lo, hi) => { for (;;) { const c = int(lo, hi); if (c < 0xd800 || c > 0xdfff) return cp(c); } };
const rep = (f, lo, hi) => { let s = ''; for (let k = int(lo, hi); k > 0; k--) s += f(); return s; };

const WHITE = [0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002,
  0x2003, 0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000];
const NOT_WHITE = [0x1c, 0x1d, 0x1e, 0x1f, 0x200b, 0x180e, 0xfeff, 0x2060, 0x00, 0x7f, 0x200c, 0x200d];
const WORDS = ['the', 'Queen', 'naïve', 'Straße', 'œuvre', 'İstanbul', 'ǅemal', 'Ωmega', 'слово',
  'λόγος', 'מילה', 'كلمة', 'शब्द', '単語', '단어', 'ฅำ', 'x', 'I', 'don', 'we', 'y\u2019all'];
const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|box_start|>', '<|video_pad|>',
  '<tool_call>', '</tool_call>', '<|fim_middle|>', '<|repo_name|>', '<|file_sep|>',
  '<|im_start|', '|im_end|>', '<<|im_end|>>', '<|im_start|><|im_end|>', '<|endoftext|>\n'];
// general categories by sample ranges: Lm, Lo, Lt, Nl, No, Mn, Mc, Me, Pc, Pd, Ps, Pe, Pi, Pf,
// Po, Sm, Sc, Sk, So, Cf, Co, Cn, and Unicode 13..15.1 additions
const CATS = [[0x02b0, 0x02ff], [0x3041, 0x3096], [0x01c5, 0x01c5], [0x2160, 0x2188], [0x00b2, 0x00b3],
  [0x2150, 0x215f], [0x0300, 0x036f], [0x0903, 0x0903], [0x20dd, 0x20e0], [0x203f, 0x2040],
  [0x2010, 0x2015], [0x2045, 0x2046], [0x00ab, 0x00bb], [0x2018, 0x201f], [0x00a1, 0x00bf],
  [0x2200, 0x22ff], [0x20a0, 0x20c0], [0x02c2, 0x02c5], [0x2600, 0x26ff], [0x200e, 0x200f],
  [0xe000, 0xe0ff], [0x0378, 0x0379], [0x1e030, 0x1e06d], [0x11f00, 0x11f59], [0x1fae0, 0x1fae8],
  [0x2ebf0, 0x2ebf9], [0x31350, 0x31360], [0x10d40, 0x10d65], [0x1d2c0, 0x1d2d3], [0x1f10d, 0x1f10f]];
const DIGITS = [0x30, 0x660, 0x6f0, 0x966, 0x9e6, 0xe50, 0xff10, 0x1d7ce, 0x104a0, 0x1e950];

const gen = {
  ws_edges: () => rep(() => pick([
    () => rep(() => cp(pick(WHITE)), 1, 4),
    () => cp(pick(NOT_WHITE)),
    () => pick(WORDS),
    () => pick(['.', '!?', '--', '(', '"', '\'']),
    () => cp(pick(DIGITS) + int(0, 9)),
  ])(), 1, 12),
  contractions: () => rep(() => pick([
    () => '\'' + pick(['s', 'S', 'ſ', 't', 'T', 're', 'RE', 'rE', 've', 'VE', 'm', 'M', 'll', 'LL', 'lL',
      'd', 'D', 'k', 'K', 'ß', 'ſt', 'st']),
    () => pick(WORDS), () => ' ', () => '\u2019s', () => '\'\'', () => pick(['\n', '\t', '  ']),
  ])(), 2, 10),
  nfc: () => rep(() => pick([
    () => pick(['a', 'e', 'o', 'A', 'u', 'n', 'c', 'ω', 'ι', 'и']) + rep(() => range(0x300, 0x36f), 1, 3),
    () => cp(int(0x1100, 0x1112)) + cp(int(0x1161, 0x1175)) + (R() < 0.5 ? cp(int(0x11a8, 0x11c2)) : ''),
    () => range(0xf900, 0xfa6d), () => cp(pick([0x212b, 0x2126, 0x212a, 0x0344, 0x0374, 0x037e, 0x1f71])),
    () => cp(pick([0x0958, 0x095f, 0x09dc, 0x0b5c, 0xfb1d, 0x2adc])),
    () => pick(WORDS), () => ' ',
  ])(), 1, 8),
  categories: () => rep(() => (R() < 0.2 ? pick([' ', '\n', '  ']) : '') + range(...pick(CATS)), 1, 24),
  numbers: () => rep(() => pick([
    () => rep(() => cp(pick(DIGITS) + int(0, 9)), 1, 8), () => pick(WORDS), () => pick([',', '.', ' ', '-', '/']),
    () => String(int(0, 1e9)) + pick(['', 'th', 'px', '%', 'e-3']),
  ])(), 1, 10),
  emoji: () => rep(() => pick([
    () => range(0x1f600, 0x1f64f), () => range(0x1f300, 0x1f5ff) + '\ufe0f',
    () => '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}', () => '\u{1f44d}' + range(0x1f3fb, 0x1f3ff),
    () => range(0x1f1e6, 0x1f1ff) + range(0x1f1e6, 0x1f1ff), () => ' ', () => pick(WORDS),
  ])(), 1, 10),
  specials: () => rep(() => pick([
    () => pick(SPECIAL), () => pick(WORDS), () => pick([' ', '\n', '\r\n', '\t', '   ']),
    () => pick(['<', '|', '>', '<|', '|>']),
  ])(), 1, 10),
  code: () => rep(() => pick([
    () => pick(['    ', '\t', '  ']) + pick(['if', 'for', 'return', 'x', 'fn']) + pick(['(', ' = ', ': ', '++', '->']),
    () => pick(['{\n', '}\n', ');\n', '\r\n', '\n\n\n', ' \n ', '\\n', '"\'"', '/* */', '#!']),
    () => String(int(0, 99999)), () => pick(WORDS),
  ])(), 2, 20),
  long: () => pick([
    () => rep(() => pick(WORDS), 200, 600),
    () => rep(() => range(0x61, 0x7a), 2000, 20000),
    () => rep(() => pick(['!', '?', '.', '-', '=', '*']), 500, 3000),
    () => rep(() => cp(pick(WHITE)), 500, 3000),
    () => rep(() => range(0xac00, 0xd7a3), 500, 3000),
    () => rep(() => pick(WORDS) + pick([' ', ' ', '\n', ', ']), 500, 2000),
  ])(),
  anything: () => rep(() => range(1, 0x10ffff), 1, 20),
};
const kinds = Object.keys(gen);
const out = [];
for (let i = 0; i < n; i++) {
  const kind = i % 100 === 99 ? 'long' : pick(kinds.filter((k) => k !== 'long'));
  out.push(JSON.stringify({ kind, text: gen[kind]() }));
}
process.stdout.write(out.join('\n') + '\n');
