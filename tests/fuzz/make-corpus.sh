#!/usr/bin/env bash
# Writes the seed corpora of the fuzz targets into tests/fuzz/corpus/<target>/
# (committed; rerun only to change the seeds):
#
#   tests/fuzz/make-corpus.sh        (needs bin/quantize: run `make` first)
#
# Seeds are small valid inputs plus a few near misses, so the fuzzer starts
# from the structure each parser expects. Regression inputs (crashes found
# and fixed) live beside them as crash-*; this script leaves those alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
corpus=tests/fuzz/corpus
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
LC_ALL=C

le() {  # le BYTES N: N as BYTES little-endian bytes
	local i
	for ((i = 0; i < $1; i++)); do
		printf "\\x$(printf %02x $((($2 >> (8 * i)) & 255)))"
	done
}
zeros() { head -c "$1" /dev/zero; }

# ---- config: every bundled config.json and generation_config.json ----
mkdir -p "$corpus/config"
cp data/qwen2.5-0.5b-instruct/config.json "$corpus/config/qwen-config.json"
cp data/qwen2.5-0.5b-instruct/generation_config.json "$corpus/config/qwen-gen.json"
cp data/shakespeare-tiny/config.json "$corpus/config/tiny-config.json"
cp data/shakespeare-tiny/generation_config.json "$corpus/config/tiny-gen.json"
cp tests/fixtures/qwen-shapes/config.json "$corpus/config/shapes-config.json"

# ---- safetensors: the malformed set and a tiny Qwen2 model ----
mkdir -p "$corpus/safetensors"
tests/fixtures/make-malformed.sh "$tmp/mal" >/dev/null
for f in "$tmp"/mal/*.safetensors; do  # (not the 4 GiB sparse one)
	[ "$(stat -c %s "$f")" -gt 65536 ] || cp "$f" "$corpus/safetensors/$(basename "$f")"
done

# A tied one-layer model: vocab 8, hidden 32, 2 heads of 16, 1 KV head,
# intermediate 32 (32 so that int4's group of 32 divides every row), bf16
# weights from a repeating pattern of small values.
model=$tmp/model
mkdir -p "$model"
cat >"$model/config.json" <<'JSON'
{"model_type": "qwen2", "vocab_size": 8, "hidden_size": 32,
 "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
 "num_key_value_heads": 1, "max_position_embeddings": 64,
 "rope_theta": 10000.0, "rms_norm_eps": 1e-6, "tie_word_embeddings": true,
 "bos_token_id": 0, "eos_token_id": [1, 2]}
JSON
printf '{"eos_token_id": 1, "temperature": 0.7, "top_p": 0.8, "top_k": 20}' \
	>"$model/generation_config.json"
printf '{"model": {"type": "BPE", "vocab": {}}}' >"$model/tokenizer.json"
specs=(
	"model.embed_tokens.weight 8,32"
	"model.layers.0.input_layernorm.weight 32"
	"model.layers.0.self_attn.q_proj.weight 32,32"
	"model.layers.0.self_attn.q_proj.bias 32"
	"model.layers.0.self_attn.k_proj.weight 16,32"
	"model.layers.0.self_attn.k_proj.bias 16"
	"model.layers.0.self_attn.v_proj.weight 16,32"
	"model.layers.0.self_attn.v_proj.bias 16"
	"model.layers.0.self_attn.o_proj.weight 32,32"
	"model.layers.0.post_attention_layernorm.weight 32"
	"model.layers.0.mlp.gate_proj.weight 32,32"
	"model.layers.0.mlp.up_proj.weight 32,32"
	"model.layers.0.mlp.down_proj.weight 32,32"
	"model.norm.weight 32"
)
h= pos=0
for s in "${specs[@]}"; do
	read -r name shape <<<"$s"
	n=$((2 * ${shape/,/*}))
	h+="${h:+,}\"$name\":{\"dtype\":\"BF16\",\"shape\":[$shape],\"data_offsets\":[$pos,$((pos + n))]}"
	pos=$((pos + n))
done
h="{$h}"
# 1.0, -0.5, 0.25, -0.375, 0.75, -1.0, 0.125, 0.5 as bf16, repeated
block=$(printf '\\x80\\x3f\\x00\\xbf\\x80\\x3e\\xc0\\xbe\\x40\\x3f\\x80\\xbf\\x00\\x3e\\x00\\x3f')
{
	le 8 "${#h}"
	printf '%s' "$h"
	for ((i = 0; i < pos / 16; i++)); do printf "$block"; done
} >"$model/model.safetensors"
cp "$model/model.safetensors" "$corpus/safetensors/tiny-model.safetensors"

# ---- gguf: a valid file, other architectures and near misses ----
mkdir -p "$corpus/gguf"
tests/fixtures/make-gguf.sh "$tmp/gguf"
for f in ok llama qwen2-no-blocks overlap hole string-array-cut nested-array \
	duplicate-key trailing q2_k-ok q3_k-ok q4_k-ok q5_k-ok q6_k-ok q6_k-cut iq4_nl-ok \
	iq4_xs-ok; do
	cp "$tmp/gguf/$f.gguf" "$corpus/gguf/"
done

# ---- qfile: that model quantized both ways ----
mkdir -p "$corpus/qfile"
bin/quantize "$model" -o "$corpus/qfile/tiny.q8" --level int8 2>/dev/null
bin/quantize "$model" -o "$corpus/qfile/tiny.q4" --level int4 2>/dev/null
bin/quantize "$model" -o "$corpus/qfile/tiny-emb.q8" --level int8 --embeddings 2>/dev/null

# ---- stream: headers and frames (lib/format/stream.h), vocabulary 8 ----
mkdir -p "$corpus/stream"
f32() {  # f32 BITS: a float given by its bit pattern
	le 4 "$1"
}
header() {  # header N_VOCAB FLAGS PATH
	printf 'QWLOGITS'
	le 4 3; le 4 "$1"; le 4 0; le 4 2
	le 4 1; le 4 2; for i in 1 2 3 4 5 6; do le 4 -1; done
	f32 0x3f333333; le 4 20; f32 0x3f4ccccd; f32 0; f32 0x3f8ccccd
	le 4 "$2"; le 4 64; zeros 60
	printf '%s' "$3"; zeros $((4096 - ${#3}))
}
frame() {  # frame POS IDS... : a frame with these ids fed and logits 0..7
	local pos=$1
	shift
	dframe "$pos" -1 "$@"
}
dframe() {  # dframe POS DRAFT IDS... : the same with a draft
	local pos=$1 draft=$2
	shift 2
	printf 'FRME'; le 4 "$pos"; le 4 $#; le 4 "$draft"
	for id in "$@"; do le 4 "$id"; done
	for b in 0 0x3f800000 0x40000000 0x40400000 0xbf800000 0x41200000 0xc1200000 0x3e800000; do
		f32 "$b"
	done
}
header 8 0 '' >"$corpus/stream/header-only"
{ header 8 0 ''; frame 2 3 4 5; } >"$corpus/stream/score-last"
{ header 8 0 ''; frame 2 3 4 5; printf ENDG; le 4 3; le 4 3; le 4 64; } >"$corpus/stream/score-end"
{ header 8 2 ''; frame 0 3; frame 1 4; frame 2 5; } >"$corpus/stream/score-all"
{ header 8 1 /tmp/qwenpipe.XXXX/ids; frame 1 3 4; frame 2 7; frame 3 1; } \
	>"$corpus/stream/generation"
# a batch: 3 fed back and the drafts 4 and 6 guessed after it, then the
# next batch after 4 was taken and 6 was not
{ header 8 1 /tmp/qwenpipe.XXXX/ids; frame 1 3 4; dframe 2 4 3; dframe 3 6 4; frame 4 6
  dframe 4 2 5; frame 5 2; printf ENDG; le 4 4; le 4 6; le 4 64; } >"$corpus/stream/batches"
head -c $((4240 + 20)) "$corpus/stream/score-last" >"$corpus/stream/cut-frame"
head -c 100 "$corpus/stream/header-only" >"$corpus/stream/cut-header"

# ---- tokenizer: small tokenizers cut from the bundled one ----
# The 256 byte tokens, the first N merges and the tokens they make, and the
# added tokens renumbered after them; merges as strings and as pairs.
mkdir -p "$corpus/tokenizer"
qwen=data/qwen2.5-0.5b-instruct/tokenizer.json
small() {  # small N: the tokenizer with N merges
	jq -c --argjson n "$1" '.model.vocab |= with_entries(select(.value < 256 + $n))
		| .model.merges |= .[:$n]
		| .added_tokens |= [to_entries[] | .value.id = 256 + $n + .key | .value]' "$qwen"
}
small 200 >"$corpus/tokenizer/merges-200.json"
small 16 >"$corpus/tokenizer/merges-16.json"
small 16 | jq -c '.model.merges |= map(split(" "))' >"$corpus/tokenizer/merges-pairs.json"
small 0 | jq -c '.normalizer = null | .post_processor = null' >"$corpus/tokenizer/no-merges.json"

# ---- tok_encode: text ----
mkdir -p "$corpus/tok_encode"
printf 'Hello, world! It'"'"'s 2024.\n' >"$corpus/tok_encode/ascii"
printf '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' >"$corpus/tok_encode/chatml"
printf 'caf\xc3\xa9 na\xc3\xafve \xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 \xd0\x9f\xd1\x80\xd0\xb8' \
	>"$corpus/tok_encode/unicode"
printf 'e\xcc\x81 \xea\xb0\x80\xe1\x86\xa8 A\xcc\x8a' >"$corpus/tok_encode/not-nfc"
printf 'ok\xff\xfe \xc3 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 end' >"$corpus/tok_encode/invalid"
printf '    x = [1, 2,   3]\r\n\tif (a && b) { return 42; }\n\n\n' >"$corpus/tok_encode/code"
head -c 2000 data/shakespeare-tiny/heldout.txt >"$corpus/tok_encode/prose"

# ---- tok_decode: id lists, little-endian 32-bit ----
mkdir -p "$corpus/tok_decode"
ids() { for id in "$@"; do le 4 "$id"; done; }
# "<|im_start|>system\nYou are Qwen..." from tests/golden/chat-template.jsonl
ids 151644 8948 198 2610 525 1207 16948 11 3465 553 54364 14817 13 \
	151645 198 151644 872 198 9707 151645 >"$corpus/tok_decode/chat"
ids 0 1 255 256 151642 151643 151664 151665 -1 2147483647 >"$corpus/tok_decode/edges"
# the bytes of one 4-byte character, one token each (F0 9F 98 80)
ids 172 253 246 222 >"$corpus/tok_decode/split-char"

# ---- chat: message lists ----
mkdir -p "$corpus/chat"
jq -c '.messages' tests/golden/chat-template.jsonl | awk '{ print > ("'"$corpus"'/chat/golden-" NR ".json") }'
printf '[{"role": "tool", "content": "42"}, {"role": "tool", "content": "x"}]' >"$corpus/chat/tools.json"
printf '[{"role": "user", "content": "a", "tool_calls": [{"f": 1}]}]' >"$corpus/chat/tool-calls.json"

# ---- api: serve's request bodies ----
mkdir -p "$corpus/api"
printf '{"messages": [{"role": "user", "content": "Hi"}], "stream": true, "seed": 1, "max_tokens": 8, "stop": ["a", "b"], "logprobs": true, "top_logprobs": 2}' >"$corpus/api/chat.json"
printf '{"prompt": "ROMEO:", "logprobs": 2, "temperature": 0.5, "top_k": 3, "stop": "x"}' >"$corpus/api/completion.json"
printf '{"messages": [{"role": "user", "content": "Hi"}], "tools": [{}], "n": 2}' >"$corpus/api/refused.json"

echo "make-corpus: $(find "$corpus" -type f | wc -l) seeds, $(du -sh "$corpus" | cut -f1)" >&2
