#!/usr/bin/env bats
# The bad-input catalogue (README, Reliability): each entry gives a tool one
# bad input (a damaged model file, a wrong config, a broken stream, a bad
# flag value, a hostile system) and asserts the exit status and the exact
# one-line message; a usage error (status 2) is that line plus the usage
# line. A crash is a wrong status, so it fails the entry.
#
# With CATALOGUE_LOG=FILE, every entry appends "STATUS<tab>COMMAND" (one
# line) to FILE; the README counts them from it.

bats_require_minimum_version 1.5.0
load test_helper

# bad STATUS MESSAGE COMMAND: runs COMMAND with bash; its status must be
# STATUS and its stderr exactly MESSAGE (then "usage: ..." when STATUS is 2).
bad() {
	local want=$1 msg=$2 cmd=$3
	run --separate-stderr bash -c "$cmd"
	[ -z "${CATALOGUE_LOG:-}" ] || printf '%s\t%s\n' "$status" "${cmd//$'\n'/ }" >>"$CATALOGUE_LOG"
	local ok=1
	[ "$status" -eq "$want" ] || ok=0
	if [ "$want" -eq 2 ]; then
		[ "${#stderr_lines[@]}" -eq 2 ] && [ "${stderr_lines[0]}" = "$msg" ] &&
			[[ ${stderr_lines[1]} == "usage: "* ]] || ok=0
	else
		[ "$stderr" = "$msg" ] || ok=0
	fi
	if [ "$ok" -eq 0 ]; then
		printf 'command: %s\nwant:    %s %s\ngot:     %s %s\n' "$cmd" "$want" "$msg" \
			"$status" "$stderr" >&2
		return 1
	fi
}

setup() {
	load_assert
}

setup_file() {
	# a container of qwen-shapes, and its size
	quantize "$SHAPES" -o "$BATS_FILE_TMPDIR/s.q8" --level int8 2>/dev/null
	# the malformed safetensors files (tests/fixtures/make-malformed.sh)
	"$FIXTURES/make-malformed.sh" "$BATS_FILE_TMPDIR/mal" >/dev/null
}

# A model directory M (in the test's scratch) with qwen-shapes' weights and
# its config changed by the jq filter $1.
config_dir() {
	M=$BATS_TEST_TMPDIR/m
	mkdir -p "$M"
	ln -sf "$SHAPES/model.safetensors" "$M/model.safetensors"
	jq "$1" "$SHAPES/config.json" >"$M/config.json"
}

# ---- model files ----

@test "a safetensors file cut at every structural boundary is refused, naming the file" {
	M=$BATS_TEST_TMPDIR/m
	mkdir -p "$M"
	cp "$SHAPES/config.json" "$M/"
	n=2856  # the header length of qwen-shapes
	size=$(stat -c %s "$SHAPES/model.safetensors")
	cut() { head -c "$1" "$SHAPES/model.safetensors" >"$M/model.safetensors"; }
	F="$M/model.safetensors"
	cut 0
	bad 1 "forward: $F: empty file" "echo 1 | forward '$M' --score"
	cut 4
	bad 1 "forward: $F: 4 bytes: too short for the 8-byte header length" "echo 1 | forward '$M' --score"
	cut 8
	bad 1 "forward: $F: header length $n is larger than the 0 bytes after it (a truncated file?)" "echo 1 | forward '$M' --score"
	cut $((8 + n / 2))
	bad 1 "forward: $F: header length $n is larger than the 1428 bytes after it (a truncated file?)" "echo 1 | forward '$M' --score"
	cut $((8 + n))
	bad 1 "forward: $F: tensor 'lm_head.weight': data_offsets: end 2097152 is past the end of the data section (0 bytes)" \
		"echo 1 | forward '$M' --score"
	cut $((8 + n + 1000))
	bad 1 "st-inspect: $F: tensor 'lm_head.weight': data_offsets: end 2097152 is past the end of the data section (1000 bytes)" \
		"st-inspect '$M'"
	cut $((size - 1))
	bad 1 "quantize: $F: tensor 'model.norm.weight': data_offsets: end 7148032 is past the end of the data section (7148031 bytes)" \
		"quantize '$M' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	[ ! -e "$BATS_TEST_TMPDIR/x.q8" ]
}

@test "a container cut at every structural boundary, or of a future version, is refused" {
	Q=$BATS_FILE_TMPDIR/s.q8
	C=$BATS_TEST_TMPDIR/c.q8
	size=$(stat -c %s "$Q")
	head -c 0 "$Q" >"$C"
	bad 1 "forward: $C: empty file" "echo 1 | forward '$C' --score"
	head -c 64 "$Q" >"$C"
	bad 1 "forward: $C: truncated: 64 bytes, the header alone is 128" "echo 1 | forward '$C' --score"
	# after the header, in config.json, in the tensor index, in the data, one byte short
	for at in 128 300 2000 $((size / 2)) $((size - 1)); do
		head -c "$at" "$Q" >"$C"
		bad 1 "st-inspect: $C: truncated: the header says $size bytes, the file has $at" "st-inspect '$C'"
	done
	cp "$Q" "$C"
	printf '\x03' | dd of="$C" bs=1 seek=8 conv=notrunc 2>/dev/null
	bad 1 "forward: $C: version 3 is not supported (this build reads version 2)" "echo 1 | forward '$C' --score"
	bad 1 "st-inspect: $C: version 3 is not supported (this build reads version 2)" "st-inspect '$C'"
	# a group size of 64 where the int4 scales were written for 32: the
	# scales would be read half as many, the rest taken for padding
	quantize "$SHAPES" -o "$BATS_TEST_TMPDIR/g.q4" --level int4 2>/dev/null
	printf '\x40' | dd of="$BATS_TEST_TMPDIR/g.q4" bs=1 seek=16 conv=notrunc 2>/dev/null
	run --separate-stderr -1 bash -c "echo 1 | forward '$BATS_TEST_TMPDIR/g.q4' --score"
	[[ $stderr =~ ^"forward: $BATS_TEST_TMPDIR/g.q4: tensor '"[a-z_.0-9]+"': data at "[0-9]+", not at "[0-9]+" right after what precedes it (a shape or the group size is not the one written)"$ ]]
}

@test "a K-quant GGUF tensor with a short row, cut short or with an Inf or NaN scale is refused by name, as a Q5_0, Q5_1, IQ4_NL or IQ4_XS one with such a scale or min" {
	G=$BATS_FILE_TMPDIR/gguf
	[ -d "$G" ] || "$FIXTURES/make-gguf.sh" "$G"
	bad 1 "forward: $G/q4_k-ne0-64.gguf: tensor 'a': ne[0] = 64 is not a multiple of Q4_K's block of 256" \
		"echo 1 | forward '$G/q4_k-ne0-64.gguf' --score"
	bad 1 "forward: $G/q6_k-cut.gguf: tensor 'a': its 210 bytes at offset 0 run past the end of the data section (100 bytes)" \
		"echo 1 | forward '$G/q6_k-cut.gguf' --score"
	bad 1 "forward: $G/iq4_xs-ne0-64.gguf: tensor 'a': ne[0] = 64 is not a multiple of IQ4_XS's block of 256" \
		"echo 1 | forward '$G/iq4_xs-ne0-64.gguf' --score"
	# llama.cpp's q4_k_m file (tensor offsets from its .json): the d of
	# super-block 1 of a Q4_K matrix made NaN, of super-block 0 of a Q6_K
	# one Inf (IEEE halves 0x7e00, 0x7c00)
	L=$GOLDEN/gguf/shakespeare-tiny.q4_k_m.gguf
	C=$BATS_TEST_TMPDIR/c.gguf
	cp "$L" "$C"
	printf '\x00\x7e' | dd of="$C" bs=1 seek=$((16316160 + 144)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.1.ffn_down.weight': super-block 1: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score"
	cp "$L" "$C"
	printf '\x00\x7c' | dd of="$C" bs=1 seek=$((16404352 + 208)) conv=notrunc 2>/dev/null
	bad 1 "ppl: $C: tensor 'blk.3.ffn_down.weight': super-block 0: scale is Inf or NaN" \
		"ppl '$C' --max-chunks 1"
	bad 1 "forward: $C: tensor 'blk.3.ffn_down.weight': super-block 0: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score --f32"
	# our q2_k file of llama.cpp's: the dmin of super-block 3 of a Q2_K matrix
	# (84 bytes a super-block, dmin last) made NaN, the d of super-block 2
	# of a Q3_K one (110 bytes, d last) -Inf
	K=$GOLDEN/gguf/shakespeare-tiny.q2_k.gguf
	cp "$K" "$C"
	printf '\x01\x7e' | dd of="$C" bs=1 seek=$((11411456 + 3 * 84 + 82)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.0.ffn_down.weight': super-block 3: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score"
	cp "$K" "$C"
	printf '\x00\xfc' | dd of="$C" bs=1 seek=$((11474944 + 2 * 110 + 108)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.2.ffn_down.weight': super-block 2: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score --f32"
	# and the d of block 1 of its IQ4_NL q (18 bytes a block, d first)
	cp "$K" "$C"
	printf '\x00\x7c' | dd of="$C" bs=1 seek=$((11407872 + 18)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.0.attn_q.weight': scale 1 is not finite" \
		"echo 1 | forward '$C' --score"
	# llama.cpp's iq4_xs file: the d of super-block 1 of an IQ4_XS matrix
	# (136 bytes a super-block, d first) made NaN
	X=$GOLDEN/gguf/shakespeare-tiny.iq4_xs.gguf
	at=$(jq '.tensors[] | select(.name == "blk.1.ffn_down.weight") | .offset' \
		"$GOLDEN/gguf/shakespeare-tiny.iq4_xs.json")
	cp "$X" "$C"
	printf '\x00\x7e' | dd of="$C" bs=1 seek=$((at + 136)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.1.ffn_down.weight': super-block 1: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score"
	bad 1 "forward: $C: tensor 'blk.1.ffn_down.weight': super-block 1: scale is Inf or NaN" \
		"echo 1 | forward '$C' --score --f32"
	# the d of block 2 of a Q5_0 matrix of the q4_k_m file made NaN (22
	# bytes a block)
	cp "$L" "$C"
	printf '\x00\x7e' | dd of="$C" bs=1 seek=$((16270592 + 2 * 22)) conv=notrunc 2>/dev/null
	bad 1 "forward: $C: tensor 'blk.0.attn_q.weight': scale 2 is not finite" \
		"echo 1 | forward '$C' --score"
	# the m of block 1 of a Q5_1 matrix of our q5_k_m file made -Inf (24
	# bytes a block, m after d)
	quantize "$TINY" -o "$C" --format gguf --level q5_k_m 2>/dev/null
	at=$(st-inspect "$C" --tensor blk.2.ffn_up.weight --json | jq .offset)
	printf '\x00\xfc' | dd of="$C" bs=1 seek=$((at + 24 + 2)) conv=notrunc 2>/dev/null
	bad 1 "ppl: $C: tensor 'blk.2.ffn_up.weight': min 1 is not finite" "ppl '$C' --max-chunks 1"
}

@test "a GGUF file cut anywhere, damaged or of another architecture is refused" {
	G=$BATS_FILE_TMPDIR/gguf
	[ -d "$G" ] || "$FIXTURES/make-gguf.sh" "$G"
	L=$GOLDEN/gguf/shakespeare-tiny.q4_0.gguf
	C=$BATS_TEST_TMPDIR/c.gguf
	head -c 0 "$L" >"$C"
	bad 1 "forward: $C: not a GGUF file (no \"GGUF\" magic)" "echo 1 | forward '$C' --score"
	head -c 30 "$L" >"$C"
	bad 1 "forward: $C: 22 key/value pairs cannot fit in 6 bytes" "echo 1 | forward '$C' --score"
	head -c 2000 "$L" >"$C"
	bad 1 "tok: $C: key 'tokenizer.ggml.tokens': array of 151936 strings is truncated (1426 bytes left)" \
		"echo x | tok encode --tokenizer '$C'"
	head -c 3000000 "$L" >"$C"
	bad 1 "st-inspect: $C: key 'tokenizer.ggml.token_type': array of 151936 INT32 is truncated (411131 bytes left)" \
		"st-inspect '$C'"
	head -c 5933000 "$L" >"$C"
	bad 1 "st-inspect: $C: tensor 'blk.2.ffn_gate.weight': truncated (needs 4 bytes, 2 left)" "st-inspect '$C'"
	head -c 16000000 "$L" >"$C"
	bad 1 "forward: $C: tensor 'token_embd.weight': its 10331648 bytes at offset 256 run past the end of the data section (10066176 bytes)" \
		"echo 1 | forward '$C' --score"
	bad 1 "forward: $G/llama.gguf: architecture 'llama' is not supported (qwen2)" "echo 1 | forward '$G/llama.gguf' --score"
	bad 1 "ppl: $G/qwen2-no-blocks.gguf: key 'qwen2.feed_forward_length': missing" "ppl '$G/qwen2-no-blocks.gguf' --max-chunks 1"
	bad 1 "forward: $G/overlap.gguf: tensor 'b': offset 32 overlaps tensor 'a' (which ends at 64)" "echo 1 | forward '$G/overlap.gguf' --score"
	bad 1 "tok: $G/llama.gguf: key 'tokenizer.ggml.model': missing" "echo x | tok encode --tokenizer '$G/llama.gguf'"
}

@test "a config with missing keys, inconsistent heads or another vocabulary is refused" {
	config_dir 'del(.num_attention_heads)'
	bad 1 "forward: $M/config.json: num_attention_heads: missing" "echo 1 | forward '$M' --score"
	config_dir 'del(.vocab_size)'
	bad 1 "quantize: $M/config.json: vocab_size: missing" "quantize '$M' -o '$M/x.q8' --level int8"
	config_dir '.num_key_value_heads = 3'
	bad 1 "forward: $M/config.json: num_attention_heads: 4 is not divisible by num_key_value_heads (3)" \
		"echo 1 | forward '$M' --score"
	config_dir '.num_attention_heads = 3'
	bad 1 "forward: $M/config.json: hidden_size: 256 is not divisible by num_attention_heads (3)" \
		"echo 1 | forward '$M' --score"
	config_dir '.vocab_size = 100'  # smaller than the embedding
	bad 1 "forward: $M/model.safetensors: tensor 'model.embed_tokens.weight': shape [4096, 256], config.json implies [100, 256]" \
		"echo 1 | forward '$M' --score"
	config_dir '.num_hidden_layers = 3'
	bad 1 "forward: $M/model.safetensors: tensor 'model.layers.2.input_layernorm.weight': missing (12 differences from config.json)" \
		"echo 1 | forward '$M' --score"
	config_dir '.num_hidden_layers = 200000000'  # found by fuzz_config
	bad 1 "forward: $M/config.json: num_hidden_layers: 200000000 is out of range [1, 4096]" \
		"echo 1 | forward '$M' --score"
	config_dir '.model_type = "llama"'
	bad 1 "forward: $M/config.json: model_type: 'llama' is not supported (only 'qwen2')" \
		"echo 1 | forward '$M' --score"
	printf '{' >"$M/config.json"
	bad 1 "forward: $M/config.json: not valid JSON (line 1, column 2): unexpected end of text, expected a string key" "echo 1 | forward '$M' --score"
	printf 'not a model' >"$BATS_TEST_TMPDIR/garbage.bin"
	bad 1 "forward: $BATS_TEST_TMPDIR/garbage.bin: not a safetensors file (no JSON header after the 8-byte length)" \
		"echo 1 | forward '$BATS_TEST_TMPDIR/garbage.bin' --score"
}

# Every JSON text a tool reads goes through one strict RFC 8259 validator
# (lib/core/jsonutil.h), and integers are read as written: each class of
# malformed text below, in each kind of file, is refused with the line,
# column and reason.
@test "safetensors headers: raw control characters, NUL, bad UTF-8, surrogates, bad numbers, floats for integers" {
	X=$BATS_FILE_TMPDIR/mal
	f() { echo "echo 1 | forward '$X/$1.safetensors' --score"; }
	bad 1 "forward: $X/raw-newline-name.safetensors: header: not valid JSON (line 1, column 4): raw control character 0x0a in a string" "$(f raw-newline-name)"
	bad 1 "forward: $X/raw-nul-name.safetensors: header: not valid JSON (line 1, column 4): raw control character 0x00 in a string" "$(f raw-nul-name)"
	bad 1 "forward: $X/escaped-nul-name.safetensors: header: not valid JSON (line 1, column 4): \\u0000 in a string (C strings cannot hold NUL)" "$(f escaped-nul-name)"
	bad 1 "forward: $X/lone-surrogate-name.safetensors: header: not valid JSON (line 1, column 4): lone surrogate \\uD800" "$(f lone-surrogate-name)"
	bad 1 "forward: $X/bad-utf8-name.safetensors: header: not valid JSON (line 1, column 4): byte 0xff is not valid UTF-8" "$(f bad-utf8-name)"
	bad 1 "forward: $X/overlong-utf8-name.safetensors: header: not valid JSON (line 1, column 4): overlong UTF-8 sequence" "$(f overlong-utf8-name)"
	bad 1 "forward: $X/surrogate-utf8-name.safetensors: header: not valid JSON (line 1, column 4): UTF-8 encoded surrogate U+D800" "$(f surrogate-utf8-name)"
	bad 1 "forward: $X/float-offsets.safetensors: tensor 'a': data_offsets: not a pair of non-negative integers" "$(f float-offsets)"
	bad 1 "forward: $X/float-shape.safetensors: tensor 'a': shape: dimension 1.0 is not a non-negative integer" "$(f float-shape)"
	bad 1 "forward: $X/exponent-shape.safetensors: tensor 'a': shape: dimension 1e0 is not a non-negative integer" "$(f exponent-shape)"
	bad 1 "forward: $X/leading-zero-shape.safetensors: header: not valid JSON (line 1, column 30): invalid number" "$(f leading-zero-shape)"
	bad 1 "forward: $X/huge-number.safetensors: header: not valid JSON (line 1, column 51): number out of range" "$(f huge-number)"
	bad 1 "st-inspect: $X/trailing-garbage.safetensors: header: not valid JSON (line 1, column 56): unexpected 'x', expected nothing after the JSON value" \
		"st-inspect '$X/trailing-garbage.safetensors'"
	bad 1 "st-inspect: $X/single-quotes.safetensors: header: not valid JSON (line 1, column 2): unexpected \"'\", expected a string key" \
		"st-inspect '$X/single-quotes.safetensors'"
	bad 1 "quantize: $X/deep-metadata.safetensors: header: not valid JSON (line 1, column 144): nested deeper than 128" \
		"quantize '$X/deep-metadata.safetensors' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	bad 1 "st-inspect: $X/f4-odd.safetensors: tensor 'a': shape: 3 elements of F4 do not fill whole bytes" "st-inspect '$X/f4-odd.safetensors'"
	bad 1 "st-inspect: $X/header-over-limit.safetensors: header length 100000001 is larger than the format's limit (100000000 bytes)" \
		"st-inspect '$X/header-over-limit.safetensors'"
	[ ! -e "$BATS_TEST_TMPDIR/x.q8" ]
}

@test "a file that is not a model says so: text, a container given to quantize, a dtype forward lacks" {
	X=$BATS_FILE_TMPDIR/mal
	msg="$X/text.safetensors: not a safetensors file (no JSON header after the 8-byte length)"
	bad 1 "forward: $msg" "echo 1 | forward '$X/text.safetensors' --score"
	bad 1 "st-inspect: $msg" "st-inspect '$X/text.safetensors'"
	bad 1 "quantize: $msg" "quantize '$X/text.safetensors' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	bad 1 "quantize: $ROOT/README.md: not a safetensors file (no JSON header after the 8-byte length)" \
		"quantize '$ROOT/README.md' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	bad 1 "quantize: $BATS_FILE_TMPDIR/s.q8: already a quantized container (quantize reads a safetensors model: a directory or its model.safetensors)" \
		"quantize '$BATS_FILE_TMPDIR/s.q8' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	# --format gguf reads its source the same way, with the same messages
	bad 1 "quantize: $ROOT/README.md: not a safetensors file (no JSON header after the 8-byte length)" \
		"quantize '$ROOT/README.md' -o '$BATS_TEST_TMPDIR/x.gguf' --format gguf --level bf16"
	bad 1 "quantize: $BATS_FILE_TMPDIR/s.q8: already a quantized container (quantize reads a safetensors model: a directory or its model.safetensors)" \
		"quantize '$BATS_FILE_TMPDIR/s.q8' -o '$BATS_TEST_TMPDIR/x.gguf' --format gguf --level bf16"
	[ ! -e "$BATS_TEST_TMPDIR/x.gguf" ]
	mkdir "$BATS_TEST_TMPDIR/empty"
	bad 1 "quantize: $BATS_TEST_TMPDIR/empty/model.safetensors: No such file or directory" \
		"quantize '$BATS_TEST_TMPDIR/empty' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	[ ! -e "$BATS_TEST_TMPDIR/x.q8" ]
	# a valid model file whose final norm is F8_E4M3: st-inspect reads it,
	# forward names the dtype it lacks
	M=$X/f8-norm
	run -0 st-inspect --json --tensor model.norm.weight "$M"
	[ "$(jq -c '[.dtype, .parameters, .bytes]' <<<"$output")" = '["F8_E4M3",256,256]' ]
	bad 1 "forward: $M/model.safetensors: tensor 'model.norm.weight': dtype F8_E4M3 is not supported (BF16 or F32)" \
		"echo 1 | forward '$M' --score"
}

@test "config.json and generation_config.json: the same classes, and integers as written" {
	config_dir '.'
	w() { printf "$1" >"$M/config.json"; }
	w '{"model_type": "qw\x01en2"}'
	bad 1 "forward: $M/config.json: not valid JSON (line 1, column 19): raw control character 0x01 in a string" "echo 1 | forward '$M' --score"
	w '{"model_type": "\\ud800"}'
	bad 1 "forward: $M/config.json: not valid JSON (line 1, column 17): lone surrogate \\uD800" "echo 1 | forward '$M' --score"
	w '{"model_type": "\xff"}'
	bad 1 "forward: $M/config.json: not valid JSON (line 1, column 17): byte 0xff is not valid UTF-8" "echo 1 | forward '$M' --score"
	w '{"model_type": "qwen2\\u0000"}'
	bad 1 "forward: $M/config.json: not valid JSON (line 1, column 22): \\u0000 in a string (C strings cannot hold NUL)" "echo 1 | forward '$M' --score"
	jq . "$SHAPES/config.json" | sed 's/"num_hidden_layers": 2,/"num_hidden_layers": 2.0,/' >"$M/config.json"
	bad 1 "forward: $M/config.json: num_hidden_layers: expected an integer, got 2.0" "echo 1 | forward '$M' --score"
	jq . "$SHAPES/config.json" | sed 's/"vocab_size": 4096/"vocab_size": 4096e0/' >"$M/config.json"
	bad 1 "quantize: $M/config.json: vocab_size: expected an integer, got 4096e0" "quantize '$M' -o '$M/x.q8' --level int8"
	jq . "$SHAPES/config.json" | sed 's/"rope_theta": [0-9.]*/"rope_theta": 1e999/' >"$M/config.json"
	bad 1 "forward: $M/config.json: not valid JSON (line 19, column 17): number out of range" "echo 1 | forward '$M' --score"
	# what the engine would compute otherwise than the model was made for
	jq '. + {rope_scaling: {type: "yarn", factor: 4.0}}' "$SHAPES/config.json" >"$M/config.json"
	bad 1 "forward: $M/config.json: rope_scaling: not supported (only RoPE without scaling: null or absent)" "echo 1 | forward '$M' --score"
	hd=$(jq '.hidden_size / .num_attention_heads' "$SHAPES/config.json")
	jq --argjson h $((hd * 2)) '. + {head_dim: $h}' "$SHAPES/config.json" >"$M/config.json"
	bad 1 "forward: $M/config.json: head_dim: $((hd * 2)) is not hidden_size / num_attention_heads ($hd), the only head size supported" "echo 1 | forward '$M' --score"
	jq --argjson h "$hd" '. + {head_dim: $h, rope_scaling: null}' "$SHAPES/config.json" >"$M/config.json"
	run -0 bash -c "echo 1 | forward '$M' --score > /dev/null"
	config_dir '.'
	printf '{"top_k": 20.0}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: top_k: expected an integer, got 20.0" "echo 1 | forward '$M' --score"
	printf '{"eos_token_id": [1, 2.5]}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: eos_token_id: 2.5 is not an id in [0, 2147483647]" "echo 1 | forward '$M' --score"
	[ ! -e "$M/x.q8" ]
}

@test "tokenizer.json and tokenizer_config.json: the same classes" {
	D=$BATS_TEST_TMPDIR/tk
	mkdir -p "$D"
	printf '{"model": {"type": "BPE", "vocab": {"a\tb": 0}}}' >"$D/tokenizer.json"
	bad 1 "tok: $D/tokenizer.json: not valid JSON (line 1, column 39): raw control character 0x09 in a string" "echo hi | tok encode --tokenizer '$D'"
	printf '{"model": {"type": "BPE", "vocab": {"\\udfff": 0}}}' >"$D/tokenizer.json"
	bad 1 "tok: $D/tokenizer.json: not valid JSON (line 1, column 38): lone surrogate \\uDFFF" "echo hi | tok encode --tokenizer '$D'"
	printf '{"model": {"type": "BPE", "vocab": {"a": 01}}}' >"$D/tokenizer.json"
	bad 1 "tok: $D/tokenizer.json: not valid JSON (line 1, column 42): invalid number" "echo hi | tok encode --tokenizer '$D'"
	sed '7s/"id": 151643,/"id": 151643.0,/' "$DATA/qwen2.5-0.5b-instruct/tokenizer.json" >"$D/tokenizer.json"
	bad 1 "tok: $D/tokenizer.json: added_tokens[0]: needs a content and a whole id" "echo hi | tok encode --tokenizer '$D'"
	ln -sf "$DATA/qwen2.5-0.5b-instruct/tokenizer.json" "$D/tokenizer.json"
	printf '{"chat_template": "{{ m }}\x0b"}' >"$D/tokenizer_config.json"
	bad 1 "tok: $D/tokenizer_config.json: not valid JSON (line 1, column 27): raw control character 0x0b in a string" \
		"tok chat --user hi --tokenizer '$D'"
	printf '{"chat_template": "\xc3"}' >"$D/tokenizer_config.json"
	bad 1 "tok: $D/tokenizer_config.json: not valid JSON (line 1, column 20): byte 0xc3 is not valid UTF-8" \
		"tok chat --user hi --tokenizer '$D'"
}

@test "a tokenizer whose vocabulary does not fit the model is caught at the first id" {
	# qwen-shapes has 4096 ids; the bundled tokenizer's "Hello" is 9707
	bad 1 "forward: <stdin>: line 1: id 9707 is outside the vocabulary (0..4095)" \
		"echo Hello world | tok encode | forward '$SHAPES' --score >/dev/null"
	# and ids from a bigger model than the tokenizer's are caught by tok
	# decode (past the padding rows of its config's 151,936)
	bad 1 "tok: <stdin>: line 1: 151936 is not in the vocabulary (ids 0..151664)" "echo 151936 | tok decode"
}

@test "NaN in the weights: st-inspect --check reports it, forward warns, sample refuses the frame" {
	M=$BATS_TEST_TMPDIR/m
	mkdir -p "$M"
	cp "$SHAPES/config.json" "$SHAPES/model.safetensors" "$M/"
	# a bf16 NaN as the first element of model.norm.weight (at byte 7150384)
	printf '\xc0\x7f' | dd of="$M/model.safetensors" bs=1 seek=7150384 conv=notrunc 2>/dev/null
	run --separate-stderr st-inspect --check "$M"
	[ "$status" -eq 1 ]
	[ "$stderr" = "st-inspect: $M/model.safetensors: 1 tensor with NaN or Inf values" ]
	[ "${lines[0]}" = "model.norm.weight: 1 NaN, 0 Inf" ]
	bad 0 "forward: warning: position 1: logit 0 is nan (NaN or Inf in the weights? st-inspect --check finds them)" \
		"echo 1 2 | forward '$M' --score >/dev/null"
	bad 1 "sample: <stdin>: frame at position 1: logit 0 is nan" "echo 1 2 | forward '$M' --score 2>/dev/null | sample"
}

# ---- streams ----

@test "id streams: not a number, negative, outside the vocabulary, empty" {
	bad 1 "forward: <stdin>: line 1: 'abc' is not a token id" "echo abc | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 1: '-5' is not a token id" "echo -5 | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 2: 'x7' is not a token id" "printf '1 2\n3 x7\n' | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 1: id 151936 is outside the vocabulary (0..151935)" "echo 151936 | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 1: id 99999999999999999999 is outside the vocabulary (0..151935)" \
		"echo 99999999999999999999 | forward '$TINY' --score"
	bad 1 "forward: <stdin>: no token ids" "forward '$TINY' --score </dev/null"
	bad 1 "tok: <stdin>: line 1: 'x' is not a token id" "echo x 12 | tok decode"
	bad 1 "tok: <stdin>: line 1: '-1' is not a token id" "echo -1 | tok decode"
	bad 1 "tok: <stdin>: line 1: '1.5' is not a token id" "echo 1.5 | tok decode"
	bad 1 "tok: <stdin>: line 2: 4294967296 is not in the vocabulary (ids 0..151664)" "printf '1\n4294967296\n' | tok decode"
}

@test "logits streams: empty, garbage, cut mid-header and mid-frame, another version or vocabulary" {
	S=$ROOT/tests/fuzz/corpus/stream  # vocabulary 8 (tests/fuzz/make-corpus.sh)
	bad 1 "sample: <stdin>: empty input, expected a logits stream" "sample </dev/null"
	bad 1 "sample: <stdin>: not a logits stream (bad magic)" "head -c 5000 /dev/urandom | sample"
	bad 1 "sample: <stdin>: not a logits stream (bad magic)" "echo 1 2 3 | sample"
	bad 1 "forward: <stdin>: not a logits stream (bad magic)" "echo 1 2 3 | forward --dump"
	bad 1 "sample: <stdin>: truncated logits stream header" "head -c 100 '$S/header-only' | sample"
	bad 1 "sample: <stdin>: truncated frame header" "head -c 4245 '$S/score-last' | sample"
	bad 1 "sample: <stdin>: truncated frame at position 2" "sample <'$S/cut-frame'"
	bad 1 "sample: <stdin>: logits stream version 1 is not supported (this reader knows version 3)" \
		"printf 'QWLOGITS\x01\x00\x00\x00' | sample"
	# a frame that claims 1,358,954,499 fed ids (found by fuzz_stream)
	bad 1 "sample: <stdin>: truncated frame at position 1358954498" "sample <'$S/regress-oom-n-fed'"
	# the stream of a model with another vocabulary (8 ids, not the
	# tokenizer's 151,665): whatever sample draws, ids stay inside the stream's
	# vocabulary, and a frame shorter than the header's vocabulary is cut
	bad 1 "sample: <stdin>: truncated frame at position 2" \
		"{ head -c 4240 '$S/score-last'; printf 'FRME\x02\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff'; head -c 16 /dev/zero; } | sample"
	# speculative frames (vocabulary 8, greedy draws 5): a draft outside
	# the vocabulary; a taken draft 5 that the next frame does not
	# continue; the end record inside a batch whose draft 4 was not taken
	F="printf 'FRME\x02\0\0\0\x01\0\0\0"
	L="tail -c 32 '$S/score-last'"
	bad 1 "sample: <stdin>: corrupt frame at position 2: draft 8 outside the vocabulary" \
		"{ head -c 4240 '$S/score-last'; $F\x08\0\0\0\x03\0\0\0'; $L; } | sample"
	bad 1 "sample: <stdin>: corrupt logits stream: the frame at position 3 does not continue the draft 5" \
		"{ head -c 4240 '$S/score-last'; $F\x05\0\0\0\x03\0\0\0'; $L; printf 'FRME\x03\0\0\0\x01\0\0\0\xff\xff\xff\xff\x04\0\0\0'; $L; } | sample --greedy > /dev/null"
	bad 1 "sample: <stdin>: corrupt logits stream: the end record inside the batch after position 2" \
		"{ head -c 4240 '$S/score-last'; $F\x04\0\0\0\x03\0\0\0'; $L; tail -c 16 '$S/score-end'; } | sample --greedy > /dev/null"
	# a stream that names a feedback FIFO forward did not make
	bad 1 "sample: /tmp/qwenpipe.XXXX/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" \
		"sample <'$S/generation'"
}

@test "chat messages: not JSON, trailing data, not a list, a bad message" {
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 1): unexpected 'g', expected a JSON value" "echo garbage | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 34): unexpected 'x', expected nothing after the JSON value" "echo '[{\"role\":\"user\",\"content\":\"hi\"}] x' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 29): raw control character 0x0a in a string" \
		"printf '[{\"role\":\"user\",\"content\":\"a\nb\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 28): lone surrogate \\uDC00" \
		"printf '[{\"role\":\"user\",\"content\":\"\\\\udc00\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 28): byte 0xff is not valid UTF-8" \
		"printf '[{\"role\":\"user\",\"content\":\"\xff\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 29): \\u0000 in a string (C strings cannot hold NUL)" \
		"printf '[{\"role\":\"user\",\"content\":\"a\\\\u0000\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 2): unexpected \"'\", expected a JSON value" \
		"echo \"['x']\" | tok chat"
	bad 1 "tok: <stdin>: no messages" "echo '[]' | tok chat"
	bad 1 "tok: <stdin>: expected a JSON array of messages" "echo '{}' | tok chat"
	bad 1 "tok: <stdin>: messages[0]: content is not a string or an array of text parts" "echo '[{\"role\":\"user\"}]' | tok chat"
	bad 1 "tok: <stdin>: messages[0]: role must be system (or developer), user, assistant or tool" \
		"echo '[{\"role\":\"root\",\"content\":\"x\"}]' | tok chat"
}

# ---- flags ----

@test "every numeric flag: not a number, negative, zero where meaningless, out of range" {
	L="sample <'$ROOT/tests/fuzz/corpus/stream/score-all'"
	bad 2 "sample: --temperature: 'x' is not a number" "$L --temperature x"
	bad 2 "sample: --temperature: -1 is out of range [0, 100]" "$L --temperature -1"
	bad 2 "sample: --temperature: 'nan' is not a number" "$L --temperature nan"
	bad 2 "sample: --temperature: 'inf' is not a number" "$L --temperature inf"
	bad 2 "sample: --temperature: '0x10' is not a number" "$L --temperature 0x10"
	bad 2 "sample: --top-p: 1.5 is out of range [0, 1]" "$L --top-p 1.5"
	bad 2 "sample: --top-p: -0.1 is out of range [0, 1]" "$L --top-p -0.1"
	bad 2 "sample: --top-k: -1 is out of range [0, 2147483647]" "$L --top-k -1"
	bad 2 "sample: --top-k: '1.5' is not a whole number" "$L --top-k 1.5"
	bad 2 "sample: --min-p: 2 is out of range [0, 1]" "$L --min-p 2"
	bad 2 "sample: --repeat-penalty: 0 is out of range [0.001, 1000]" "$L --repeat-penalty 0"
	bad 2 "sample: --repeat-penalty: -1 is out of range [0.001, 1000]" "$L --repeat-penalty -1"
	bad 2 "sample: --seed: -2 is out of range [0, 9223372036854775807]" "$L --seed -2"
	bad 2 "sample: --seed: 'x' is not a whole number" "$L --seed x"
	bad 2 "sample: --tokens: -1 is out of range [0, 9223372036854775807]" "$L -n -1"
	bad 2 "sample: --logprobs: 100000 is out of range [0, 100]" "$L --logprobs 100000 --logprobs-file /dev/null"
	bad 2 "sample: --logprobs and --logprobs-file go together" "$L --logprobs 5"
	F="echo 1 | forward '$TINY' --score"
	bad 2 "forward: --threads: 0 is out of range [1, 256]" "$F --threads 0"
	bad 2 "forward: --threads: -1 is out of range [1, 256]" "$F --threads -1"
	bad 2 "forward: --threads: 'x' is not a whole number" "$F --threads x"
	bad 2 "forward: --threads: 100000 is out of range [1, 256]" "$F --threads 100000"
	bad 2 "forward: --ctx: 0 is out of range [1, 16777216]" "$F --ctx 0"
	bad 2 "forward: --ctx: -3 is out of range [1, 16777216]" "$F --ctx -3"
	bad 2 "forward: --ctx: 'abc' is not a whole number" "$F --ctx abc"
	bad 2 "forward: --ctx: 99999999 is out of range [1, 16777216]" "$F --ctx 99999999"
	bad 2 "forward: --top: 0 is out of range [1, 1000]" "forward --dump --top 0 </dev/null"
	bad 2 "forward: --top: 'x' is not a whole number" "forward --dump --top x </dev/null"
	# a flag that would change nothing where it is given is refused
	bad 2 "forward: --top: only with --dump" "echo 1 | forward '$TINY' --score --top 3"
	bad 2 "forward: --dump: --all is for a model's run, not a stream's dump" "forward --dump --all </dev/null"
	bad 2 "forward: --dump: --threads is for a model's run, not a stream's dump" "forward -t 2 --dump </dev/null"
	bad 2 "forward: --dump: --trace is for a model's run, not a stream's dump" "forward --dump --trace x.json </dev/null"
	Q="quantize '$SHAPES' -o '$BATS_TEST_TMPDIR/q.q4' --level int4"
	bad 2 "quantize: --group-size: 0 is out of range [32, 1048576]" "$Q --group-size 0"
	bad 2 "quantize: --group-size: -32 is out of range [32, 1048576]" "$Q --group-size -32"
	bad 2 "quantize: --group-size: 33 is not a multiple of 32" "$Q --group-size 33"
	bad 2 "quantize: --group-size: 'x' is not a whole number" "$Q --group-size x"
	bad 2 "quantize: --level: 'int3' is not int8 or int4" "quantize '$SHAPES' -o '$BATS_TEST_TMPDIR/q.q4' --level int3"
	P="ppl '$TINY'"
	bad 2 "ppl: --chunk: 0 is out of range [2, 1048576]" "$P --chunk 0"
	bad 2 "ppl: --chunk: 1 is out of range [2, 1048576]" "$P --chunk 1"
	bad 2 "ppl: --chunk: 'x' is not a whole number" "$P --chunk x"
	bad 2 "ppl: --chunk: '' is not a number" "$P --chunk 10,,20"
	bad 2 "ppl: --group-size: 33 is not a multiple of 32" "$P --group-size 33"
	bad 2 "ppl: --max-chunks: 0 is out of range [1, 2147483647]" "$P --max-chunks 0"
	bad 2 "ppl: --max-chunks: -1 is out of range [1, 2147483647]" "$P --max-chunks -1"
	bad 2 "ppl: --threads: 0 is out of range [1, 1024]" "$P --threads 0"
	bad 2 "ppl: --level: 'int8,' has an empty entry" "$P --level int8,"
	bad 2 "ppl: --group-size: only with an int4 level" "$P --level fp32,int8 --group-size 64"
	bad 2 "ppl: --level: '' has an empty entry" "$P --level ''"
	# a missing container is said first, before any level runs (one line)
	bad 1 "ppl: $BATS_TEST_TMPDIR/none.q4: No such file or directory" "$P --level int8 '$BATS_TEST_TMPDIR/none.q4'"
	[ ! -e "$BATS_TEST_TMPDIR/q.q4" ]
}

@test "a flag without its value names the flag by its long form, in every tool" {
	bad 2 "forward: --ctx: missing value" "forward '$TINY' --ctx"
	bad 2 "forward: --ctx: missing value" "forward '$TINY' -c"
	bad 2 "forward: --threads: missing value" "forward '$TINY' --threads"
	bad 2 "forward: --threads: missing value" "forward '$TINY' -t"
	bad 2 "sample: --seed: missing value" "sample --seed </dev/null"
	bad 2 "sample: --temperature: missing value" "sample --temp </dev/null"
	bad 2 "ppl: --chunk: missing value" "ppl '$TINY' --chunk"
	bad 2 "quantize: --output: missing value" "quantize '$SHAPES' --level int8 -o"
	bad 2 "st-inspect: --tensor: missing value" "st-inspect '$SHAPES' --tensor"
	bad 2 "bench: --record: missing value" "bench --record"
	bad 2 "tok: --tokenizer: missing value" "tok encode --tokenizer"
	bad 2 "tok: --system: missing value" "tok chat --system"
	# and the other misuses, worded alike
	bad 2 "forward: unknown option '--frob'" "forward '$TINY' --frob"
	bad 2 "forward: unknown option '-Z'" "forward '$TINY' -Z"
	bad 2 "sample: --greedy: takes no value" "sample --greedy=1 </dev/null"
	bad 2 "sample: option '--to' is ambiguous (--top-k, --top-p, --tokens)" "sample --to 3 </dev/null"
}

# ---- the system ----

@test "stdout closed early (| head) ends each tool quietly with 141" {
	# each writes far more than a pipe holds, so the reader is gone first
	mkdir "$BATS_TEST_TMPDIR/tmp"
	for cmd in "tok encode <'$TINY/heldout.txt'" \
		"seq 1000 200000 | tok decode" \
		"echo 1 2 3 | forward '$TINY' --score --all" \
		"seq 10 | forward '$TINY' --score --all | forward --dump --top 1000" \
		"echo 1 2 3 | TMPDIR='$BATS_TEST_TMPDIR/tmp' forward '$TINY' | sample --ignore-eos"; do
		run --separate-stderr bash -c "$cmd | head -c 10 >/dev/null; echo \${PIPESTATUS[-2]}"
		[ -z "${CATALOGUE_LOG:-}" ] || printf '%s\t%s\n' "$output" "$cmd | head" >>"$CATALOGUE_LOG"
		[ "$output" = 141 ] || { echo "$cmd: status $output" >&2; false; }
		[ -z "$stderr" ] || { echo "$cmd: $stderr" >&2; false; }
	done
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/tmp")" ]  # no FIFO left by forward
}

@test "a full disk (> /dev/full) is an error with status 1, one line" {
	S=$ROOT/tests/fuzz/corpus/stream
	bad 1 "tok: write error: No space left on device" "echo hello | tok encode >/dev/full"
	bad 1 "tok: write error: No space left on device" "echo 1 2 3 | tok decode >/dev/full"
	bad 1 "tok: write error: No space left on device" "tok chat --user hi >/dev/full"
	bad 1 "forward: write error: No space left on device" "echo 1 2 3 | forward '$TINY' --score >/dev/full"
	bad 1 "forward: write error: No space left on device" "forward --dump <'$S/score-all' >/dev/full"
	bad 1 "sample: write error: No space left on device" "sample --seed 1 <'$S/score-all' >/dev/full"
	bad 1 "sample: /dev/full: write error: No space left on device" \
		"sample --seed 1 --logprobs 3 --logprobs-file /dev/full <'$S/score-all' >/dev/null"
	bad 1 "st-inspect: write error: No space left on device" "st-inspect '$SHAPES' >/dev/full"
	bad 1 "quantize: /dev/full: write error" \
		"quantize '$SHAPES' -o '$BATS_TEST_TMPDIR/q.q8' --level int8 --report /dev/full 2>&1 |
		 grep -v '^quantize: [0-9][0-9]*/' >&2; exit \${PIPESTATUS[0]}"
	[ ! -e "$BATS_TEST_TMPDIR/q.q8" ]
}

@test "a file size limit (ulimit -f) hit mid-write is a write error, and leaves no file of the tool's own" {
	S=$ROOT/tests/fuzz/corpus/stream
	T=$BATS_TEST_TMPDIR
	bad 1 "tok: write error: File too large" "ulimit -f 1; tok encode <'$TINY/heldout.txt' >'$T/ids'"
	bad 1 "forward: write error: File too large" "ulimit -f 1; echo 1 2 3 | forward '$TINY' --score --all >'$T/logits'"
	bad 1 "st-inspect: write error: File too large" "ulimit -f 1; st-inspect --json --list '$TINY' >'$T/j'"
	bad 1 "sample: $T/lp.json: write error: File too large" \
		"ulimit -f 1; sample --seed 1 --logprobs 100 --logprobs-file '$T/lp.json' <'$S/score-all' >/dev/null"
	[ ! -e "$T/lp.json" ] && [ -z "$(ls "$T" | grep lp.json || true)" ]
	mkdir "$T/out"
	run -1 --separate-stderr bash -c "ulimit -f 100; quantize '$SHAPES' -o '$T/out/m.q8' --level int8"
	[ "${stderr_lines[-1]}" = "quantize: $T/out/m.q8: write error: File too large" ]
	[ -z "$(ls -A "$T/out")" ]
}

@test "a destination directory that cannot be written is refused before any work" {
	# /sys refuses new files even to root (a chmod'ed directory would not)
	run --separate-stderr quantize "$SHAPES" -o /sys/q.q8 --level int8
	[ -z "${CATALOGUE_LOG:-}" ] || printf '%s\t%s\n' "$status" "quantize -o /sys/q.q8" >>"$CATALOGUE_LOG"
	[ "$status" -eq 1 ]
	[[ $stderr =~ ^quantize:\ /sys/q\.q8:\ cannot\ create\ a\ temporary\ file\ beside\ it:\ (Permission\ denied|Read-only\ file\ system)$ ]]
	bad 1 "quantize: $BATS_TEST_TMPDIR/none/q.q8: cannot create a temporary file beside it: No such file or directory" \
		"quantize '$SHAPES' -o '$BATS_TEST_TMPDIR/none/q.q8' --level int8"
	bad 1 "sample: /sys/lp.json: cannot create a temporary file beside it: Permission denied" \
		"sample --logprobs 1 --logprobs-file /sys/lp.json <'$ROOT/tests/fuzz/corpus/stream/score-all' 2>&1 >/dev/null |
		 sed 's/Read-only file system/Permission denied/' >&2; exit \${PIPESTATUS[0]}"
}

@test "SIGINT and SIGTERM at random points of quantize leave a complete file or nothing" {
	T=$BATS_TEST_TMPDIR
	for sig in INT TERM INT TERM INT TERM; do
		rm -rf "$T/out"
		mkdir "$T/out"
		quantize "$TINY" -o "$T/out/m.q4" --level int4 --embeddings 2>/dev/null &
		pid=$!
		# once the temporary file exists, 0 to 0.3 s (it takes about 0.3 s)
		for _ in $(seq 200); do [ -z "$(ls -A "$T/out")" ] || break; sleep 0.01; done
		sleep "$(printf '0.%03d' $((RANDOM % 300)))"
		kill -"$sig" "$pid" 2>/dev/null || true
		rc=0
		wait "$pid" || rc=$?
		[ -z "${CATALOGUE_LOG:-}" ] || printf '%s\t%s\n' "$rc" "quantize, SIG$sig" >>"$CATALOGUE_LOG"
		# done, or killed (128 + signal); either way no temporary file,
		# and the output is absent or complete (a signal after the rename)
		[ "$rc" -eq 0 ] || [ "$rc" -eq $((128 + $(kill -l "$sig"))) ]
		left=$(ls -A "$T/out")
		[ "$left" = m.q4 ] || [ -z "$left" ]
		[ -z "$left" ] || st-inspect "$T/out/m.q4" >/dev/null
		[ "$rc" -ne 0 ] || [ -n "$left" ]
	done
}

@test "SIGINT and SIGTERM at random points of a generation pipeline end every process and leave no FIFO" {
	T=$BATS_TEST_TMPDIR
	mkdir "$T/tmp"
	# each stage records its pid, so that the signal goes to that process;
	# a background job of a non-interactive shell starts with SIGINT
	# ignored, which a terminal's Ctrl-C does not, so env puts it back
	# (without it the "all" case passed only when the 3000 tokens ended
	# within the 30 s below)
	stage() { local name=$1; shift; sh -c 'echo $$ >"$0"; exec env --default-signal=INT "$@"' "$T/$name.pid" "$@"; }
	export -f stage
	for victim in all forward sample all forward sample; do
		rm -f "$T"/*.pid
		TMPDIR=$T/tmp T=$T TINY=$TINY setsid bash -c '
			echo "To be, or not to be" | stage tok tok encode |
			stage forward forward "$TINY" | stage sample sample --seed 1 --ignore-eos -n 3000 |
			stage decode tok decode >/dev/null' &
		group=$!
		for _ in $(seq 100); do [ -s "$T/decode.pid" ] && break; sleep 0.05; done
		sleep "$(printf '0.%03d' $((RANDOM % 1000)))"
		case $victim in
		all) kill -INT -- -"$group" 2>/dev/null || true ;;  # Ctrl-C
		*) [ ! -s "$T/$victim.pid" ] || kill -TERM "$(cat "$T/$victim.pid")" 2>/dev/null || true ;;
		esac
		# every process ends
		for _ in $(seq 300); do kill -0 "$group" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$group" 2>/dev/null; then false; fi  # (a bare "! cmd" never fails)
		[ -z "${CATALOGUE_LOG:-}" ] || printf '%s\t%s\n' 0 "pipeline, signal to $victim" >>"$CATALOGUE_LOG"
		[ -z "$(ls -A "$T/tmp")" ] || { ls -laR "$T/tmp" >&2; false; }
	done
}

@test "files written whole (quantize -o, --trace, --logprobs-file) get the umask's mode" {
	T=$BATS_TEST_TMPDIR
	S=$ROOT/tests/fuzz/corpus/stream
	# mkstemp makes 0600; a file the tools write is 0666 less the umask
	(umask 027
	 quantize "$SHAPES" -o "$T/q.q8" --level int8 2>/dev/null
	 echo 1 2 | forward "$SHAPES" --score --trace "$T/tr.jsonl" >"$T/logits"
	 sample --seed 1 --logprobs 1 --logprobs-file "$T/lp.jsonl" <"$S/score-all" >/dev/null)
	[ "$(stat -c '%a' "$T/q.q8" "$T/tr.jsonl" "$T/lp.jsonl" | tr '\n' ' ')" = "640 640 640 " ]
	[ -z "$(ls -A "$T" | grep tmp || true)" ]
}

# ---- values at the edges, and files that are not what they claim ----

# A logits stream of vocabulary 8 (the header of the fuzz corpus's
# score-last: eos 1 and 2, temperature 0.7, top-k 20, top-p 0.8), then one
# frame at position 0 with the logits $1 (8 little-endian floats, printf
# escapes).
edge_stream() {
	head -c 4240 "$ROOT/tests/fuzz/corpus/stream/score-last"
	printf 'FRME\x00\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\x03\x00\x00\x00'
	printf "$1"
}
F_MAX='\xff\xff\x7f\x7f' F_HALF='\xff\xff\xff\x7e' F_NMAX='\xff\xff\x7f\xff'
F_NINF='\x00\x00\x80\xff' F_ZERO='\x00\x00\x00\x00' F_NAN='\x00\x00\xc0\x7f'
F_INF='\x00\x00\x80\x7f' F_MIN='\x00\x00\x80\x00' F_DENORM='\x01\x00\x00\x00'

@test "sample: a temperature so small that the logits overflow is greedy's limit, at the float range's edges" {
	export -f edge_stream
	export F_MAX F_HALF F_NMAX F_NINF F_ZERO F_NAN F_INF F_MIN F_DENORM
	# FLT_MAX at id 1, the rest below it by at least FLT_MAX / 2: every
	# temperature below 1 makes id 1 certain (exp(-huge) is 0), and every
	# quotient past FLT_MAX must not read as an inf logit
	row='$F_HALF$F_MAX$F_NMAX$F_NINF$F_ZERO$F_HALF$F_NMAX$F_ZERO'
	for t in 0.5 1e-10 1e-38 1.17549435e-38 1e-40 1.4e-45 1e-46; do
		for f in "" "--top-k 0" "--top-k 2" "--top-p 1 --top-k 0" "--top-p 0.5" "--min-p 0.5 --top-k 0" "--repeat-penalty 0.5"; do
			run --separate-stderr -0 bash -c "edge_stream \"$row\" | sample --seed 1 --emit-eos --temperature $t $f"
			[ "$output" = 1 ] || { echo "t $t $f: $output $stderr" >&2; return 1; }
		done
	done
	# all negative, tiny and denormal: every quotient is -inf; the limit is
	# still the largest (id 6), not "no logit is finite"
	row='$F_NMAX$F_NINF$F_NMAX$F_NMAX$F_NINF$F_NMAX\x00\x00\x80\xbf$F_NMAX'
	for t in 1e-38 1.4e-45 0.7 1; do
		run --separate-stderr -0 bash -c "edge_stream \"$row\" | sample --seed 1 --emit-eos --temperature $t --top-k 0"
		[ "$output" = 6 ] || { echo "t $t: $output $stderr" >&2; return 1; }
	done
	row='$F_MIN$F_DENORM$F_ZERO$F_ZERO$F_ZERO$F_ZERO$F_ZERO$F_ZERO'
	run --separate-stderr -0 bash -c "edge_stream \"$row\" | sample --seed 1 --emit-eos --temperature 1e-44 --top-k 0"
	assert_output 0
	# a bad logit is named by its own index, however small the temperature
	row='$F_ZERO$F_ZERO$F_ZERO$F_MAX$F_ZERO$F_ZERO$F_ZERO$F_NAN'
	bad 1 "sample: <stdin>: frame at position 0: logit 7 is nan" "edge_stream \"$row\" | sample --temperature 1e-38 --top-k 0"
	row='$F_ZERO$F_ZERO$F_ZERO$F_MAX$F_ZERO$F_ZERO$F_INF$F_ZERO'
	bad 1 "sample: <stdin>: frame at position 0: logit 6 is inf" "edge_stream \"$row\" | sample --temperature 1e-45 --top-k 5"
	# the real model: a tiny temperature draws greedy's ids, leaving no
	# logprobs temporary file behind
	private_tmpdir
	echo 1 2 3 | forward "$TINY" --score >"$BATS_TEST_TMPDIR/s"
	want=$(sample --greedy <"$BATS_TEST_TMPDIR/s")
	for t in 1e-38 1e-40 1.4e-45; do
		run -0 sample --temperature $t --top-k 0 --seed 1 --logprobs 2 --logprobs-file "$BATS_TEST_TMPDIR/lp" <"$BATS_TEST_TMPDIR/s"
		[ "$output" = "$want" ]
	done
	run -0 ls -A "$BATS_TEST_TMPDIR"
	refute_output --partial ".tmp."
}

@test "sampling settings outside float32 are refused where they are read; a flag wins over the stream header" {
	config_dir '.'
	printf '{"temperature": 1e300}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: temperature: 1e+300 is out of range [0, 3.40282e+38]" "echo 1 | forward '$M' --score"
	bad 1 "quantize: $M/generation_config.json: temperature: 1e+300 is out of range [0, 3.40282e+38]" "quantize '$M' -o '$M/x.q8' --level int8"
	bad 1 "st-inspect: $M/generation_config.json: temperature: 1e+300 is out of range [0, 3.40282e+38]" "st-inspect '$M'"
	printf '{"repetition_penalty": 1e-300}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: repetition_penalty: 1e-300 is out of range [1.4013e-45, 3.40282e+38]" "echo 1 | forward '$M' --score"
	printf '{"repetition_penalty": 1e39}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: repetition_penalty: 1e+39 is out of range [1.4013e-45, 3.40282e+38]" "echo 1 | forward '$M' --score"
	[ ! -e "$M/x.q8" ]
	# GGUF general.sampling.*: a float32 +inf, and the same checks
	G=$BATS_TEST_TMPDIR/g.gguf
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	patch_key() {  # patch_key KEY FLOAT32-BYTES: the FLOAT32 value of KEY
		local at
		at=$(grep -obUa "$1" "$G" | head -1 | cut -d: -f1)
		[ "$(od -An -tu4 -j$((at + ${#1})) -N4 "$G" | tr -d ' ')" = 6 ]
		printf "$2" | dd of="$G" bs=1 seek=$((at + ${#1} + 4)) conv=notrunc 2>/dev/null
	}
	cp "$G" "$G.orig"
	patch_key general.sampling.temp "$F_INF"
	bad 1 "forward: $G: key 'general.sampling.temp': inf is not a finite number" "echo 1 | forward '$G' --score"
	bad 1 "st-inspect: $G: key 'general.sampling.temp': inf is not a finite number" "st-inspect '$G'"
	cp "$G.orig" "$G"
	patch_key general.sampling.penalty_repeat "$F_DENORM"
	run -0 st-inspect "$G"  # a denormal penalty is a positive float32
	patch_key general.sampling.penalty_repeat "$F_ZERO"
	bad 1 "forward: $G: key 'general.sampling.penalty_repeat': 0 is out of range [1.4013e-45, 3.40282e+38]" "echo 1 | forward '$G' --score"
	# the stream header: checked after the flags, so a flag wins
	S=$BATS_TEST_TMPDIR/s
	edge_stream '\x00\x00\x80\x3f\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00' >"$S"
	printf "$F_INF" | dd of="$S" bs=1 seek=56 conv=notrunc 2>/dev/null
	bad 1 "sample: <stdin>: logits stream header: temperature: inf is out of range [0, 3.40282e+38]" "sample <'$S'"
	run -0 sample --greedy --emit-eos <"$S"
	assert_output 0
	run -0 sample --temperature 0.7 --seed 1 --emit-eos <"$S"
	printf "$F_INF" | dd of="$S" bs=1 seek=72 conv=notrunc 2>/dev/null
	bad 1 "sample: <stdin>: logits stream header: temperature: inf is out of range [0, 3.40282e+38]" "sample --repeat-penalty 1 <'$S'"
	bad 1 "sample: <stdin>: logits stream header: repetition_penalty: inf is out of range [1.4013e-45, 3.40282e+38]" "sample --greedy <'$S'"
	run -0 sample --greedy --repeat-penalty 1.1 --emit-eos <"$S"
}

@test "GGUF hyperparameters get the checks of their config.json counterparts" {
	G=$BATS_TEST_TMPDIR/g.gguf
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	cp "$G" "$G.orig"
	patch() {  # patch KEY BYTES
		local at
		cp "$G.orig" "$G"
		at=$(grep -obUa "$1" "$G" | head -1 | cut -d: -f1)
		printf "$2" | dd of="$G" bs=1 seek=$((at + ${#1} + 4)) conv=notrunc 2>/dev/null
	}
	patch qwen2.rope.freq_base "$F_INF"
	bad 1 "forward: $G: key 'qwen2.rope.freq_base': inf is not a finite number" "echo 1 | forward '$G' --score"
	bad 1 "st-inspect: $G: key 'qwen2.rope.freq_base': inf is not a finite number" "st-inspect '$G'"
	patch qwen2.rope.freq_base "$F_NAN"
	bad 1 "forward: $G: key 'qwen2.rope.freq_base': nan is not a finite number" "echo 1 | forward '$G' --score"
	patch qwen2.rope.freq_base "$F_NMAX"
	bad 1 "forward: $G: key 'qwen2.rope.freq_base': -3.40282e+38 is out of range (0, inf]" "echo 1 | forward '$G' --score"
	patch qwen2.attention.layer_norm_rms_epsilon "$F_NAN"
	bad 1 "forward: $G: key 'qwen2.attention.layer_norm_rms_epsilon': nan is not a finite number" "echo 1 | forward '$G' --score"
	patch qwen2.attention.layer_norm_rms_epsilon "$F_ZERO"
	bad 1 "st-inspect: $G: key 'qwen2.attention.layer_norm_rms_epsilon': 0 is out of range (0, 1]" "st-inspect '$G'"
}

@test "duplicate JSON keys are refused in every JSON read, with their line and column" {
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 17): duplicate key 'role'" \
		"echo '[{\"role\":\"user\",\"role\":\"bogus\",\"content\":\"x\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 2, column 1): duplicate key 'content'" \
		"printf '[{\"role\":\"user\",\"content\":\"x\",\n\"content\":\"y\"}]' | tok chat"
	bad 1 "tok: <stdin>: not valid JSON (line 1, column 17): duplicate key 'role'" \
		"echo '[{\"role\":\"user\",\"\\u0072ole\":\"user\",\"content\":\"x\"}]' | tok chat"
	config_dir '.'
	printf '{"top_k": 20,\n  "top_k": 40}' >"$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: not valid JSON (line 2, column 3): duplicate key 'top_k'" "echo 1 | forward '$M' --score"
	jq -c '. + {"x": {"a": 1}}' "$SHAPES/config.json" | sed 's/"a":1/"a":1,"a":2/' >"$M/config.json"
	rm "$M/generation_config.json"
	run --separate-stderr -1 st-inspect "$M"
	[[ $stderr = "st-inspect: $M/config.json: not valid JSON (line 1, column "*"): duplicate key 'a'" ]]
	D=$BATS_TEST_TMPDIR/tk
	mkdir -p "$D"
	printf '{"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "a": 2}}}' >"$D/tokenizer.json"
	bad 1 "tok: $D/tokenizer.json: not valid JSON (line 1, column 53): duplicate key 'a'" "echo hi | tok encode --tokenizer '$D'"
	ln -sf "$DATA/qwen2.5-0.5b-instruct/tokenizer.json" "$D/tokenizer.json"
	printf '{"chat_template": "a", "chat_template": "b"}' >"$D/tokenizer_config.json"
	bad 1 "tok: $D/tokenizer_config.json: not valid JSON (line 1, column 24): duplicate key 'chat_template'" \
		"tok chat --user hi --tokenizer '$D'"
	bad 1 "st-inspect: $BATS_FILE_TMPDIR/mal/duplicate-name.safetensors: header: not valid JSON (line 1, column 55): duplicate key 'a'" \
		"st-inspect '$BATS_FILE_TMPDIR/mal/duplicate-name.safetensors'"
}

@test "a FIFO or a device given as a model, tokenizer or config is refused, not waited on" {
	P=$BATS_TEST_TMPDIR/fifo
	mkfifo "$P"
	bad 1 "st-inspect: $P: is a FIFO, not a regular file" "timeout 10 st-inspect '$P'"
	bad 1 "forward: $P: is a FIFO, not a regular file" "echo 1 | timeout 10 forward '$P' --score"
	bad 1 "tok: $P: is a FIFO, not a regular file" "echo hi | timeout 10 tok encode --tokenizer '$P'"
	bad 1 "quantize: $P: is a FIFO, not a regular file" "timeout 10 quantize '$P' -o '$BATS_TEST_TMPDIR/x.q8' --level int8"
	bad 1 "ppl: $P: is a FIFO, not a regular file" "timeout 10 ppl '$P' --max-chunks 1"
	bad 1 "forward: /dev/zero: is a device, not a regular file" "echo 1 | timeout 10 forward /dev/zero --score"
	config_dir '.'
	rm "$M/config.json"
	mkfifo "$M/config.json"
	bad 1 "forward: $M/config.json: is a FIFO, not a regular file" "echo 1 | timeout 10 forward '$M' --score"
	bad 1 "st-inspect: $M/config.json: is a FIFO, not a regular file" "timeout 10 st-inspect '$M'"
	rm "$M/config.json"
	cp "$SHAPES/config.json" "$M/"
	mkfifo "$M/generation_config.json"
	bad 1 "forward: $M/generation_config.json: is a FIFO, not a regular file" "echo 1 | timeout 10 forward '$M' --score"
	[ ! -e "$BATS_TEST_TMPDIR/x.q8" ]
}

@test "ids after a NUL are not dropped: the NUL is an error, shown escaped" {
	bad 1 "forward: <stdin>: line 1: '2\\x00' is not a token id" \
		"printf '1 2\\0 999999999 foo\\n3\\n' | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 2: '\\x00' is not a token id" "printf '1\\n\\0\\n' | forward '$TINY' --score"
	bad 1 "forward: <stdin>: line 1: 'a\\x1b[31mb' is not a token id" "printf '1 a\\033[31mb\\n' | forward '$TINY' --score"
	printf '1 2 3\0 4\n' >"$BATS_TEST_TMPDIR/ids"
	bad 1 "ppl: $BATS_TEST_TMPDIR/ids: line 1: '3\\x00' is not a token id" \
		"ppl '$TINY' --ids '$BATS_TEST_TMPDIR/ids' --chunk 2"
}

@test "an output through a symbolic link is written beside its target, whole; an output that is an input is refused" {
	d=$BATS_TEST_TMPDIR
	quantize "$SHAPES" -o "$d/real.q8" --level int8 2>/dev/null
	cmp -s "$d/real.q8" "$BATS_FILE_TMPDIR/s.q8"
	ln -s real.q8 "$d/link.q8"
	# killed at random points: the target is the old file or a whole new
	# one, the link stays a link, and no temporary file is left
	for i in 1 2 3 4 5 6; do
		quantize "$SHAPES" -o "$d/link.q8" --level int4 2>/dev/null &
		sleep "0.0$((RANDOM % 9))"
		kill -9 $! 2>/dev/null || true
		wait $! 2>/dev/null || true
		[ -L "$d/link.q8" ]
		st-inspect "$d/real.q8" >/dev/null
	done
	rm -f "$d"/.real.q8.tmp.*  # kill -9 cannot clean up; SIGTERM does
	quantize "$SHAPES" -o "$d/link.q8" --level int4 2>/dev/null &
	sleep 0.05
	kill -TERM $! 2>/dev/null || true
	wait $! 2>/dev/null || true
	[ -L "$d/link.q8" ] && st-inspect "$d/real.q8" >/dev/null
	quantize "$SHAPES" -o "$d/link.q8" --level int4 2>/dev/null
	[ -L "$d/link.q8" ] && [ "$(readlink "$d/link.q8")" = real.q8 ]
	run -0 st-inspect "$d/real.q8"
	assert_line --partial "int4"
	# a chain of links, and a dangling one: the file it names is made
	ln -s link.q8 "$d/chain.q8"
	ln -s nowhere.q8 "$d/dangling.q8"
	quantize "$SHAPES" -o "$d/chain.q8" --level int8 2>/dev/null
	quantize "$SHAPES" -o "$d/dangling.q8" --level int8 2>/dev/null
	cmp "$d/real.q8" "$BATS_FILE_TMPDIR/s.q8"
	cmp "$d/nowhere.q8" "$BATS_FILE_TMPDIR/s.q8"
	[ -L "$d/chain.q8" ] && [ -L "$d/dangling.q8" ]
	[ -z "$(ls -A "$d" | grep tmp)" ]
	# an output that is one of the inputs
	M=$d/m
	mkdir -p "$M"
	cp "$SHAPES/config.json" "$SHAPES/model.safetensors" "$M/"
	bad 2 "quantize: -o: $M/model.safetensors is the input $M/model.safetensors" "quantize '$M' -o '$M/model.safetensors' --level int8"
	ln -s model.safetensors "$M/alias"
	bad 2 "quantize: -o: $M/alias is the input $M/model.safetensors" "quantize '$M' -o '$M/alias' --level int8"
	bad 2 "quantize: --report: $M/config.json is the input $M/config.json" "quantize '$M' -o '$d/x.q8' --level int8 --report '$M/config.json'"
	bad 2 "quantize: -o: $M/config.json is the input $M/config.json" "quantize '$M' -o '$M/config.json' --format gguf --level bf16"
	bad 2 "quantize: -o and --report: both write $d/y.q8" "quantize '$M' -o '$d/y.q8' --level int8 --report '$d/y.q8'"
	bad 2 "quantize: -o: quantize writes a file, not standard output" "quantize '$M' -o - --level int8"
	# forward's traces likewise: the model's files, the ids, each other
	echo 1 > "$d/ids"
	bad 2 "forward: --trace: $M/config.json is the input $M/config.json" "forward '$M' '$d/ids' --trace '$M/config.json'"
	bad 2 "forward: --trace-attn: $M/alias is the input $M/model.safetensors" "forward '$M' '$d/ids' --trace-attn '$M/alias'"
	bad 2 "forward: --trace: $d/ids is the input $d/ids" "forward '$M' '$d/ids' --trace '$d/ids'"
	bad 2 "forward: --trace and --trace-attn: both write $d/t.json" "forward '$M' '$d/ids' --trace '$d/t.json' --trace-attn '$d/t.json'"
	cmp "$M/model.safetensors" "$SHAPES/model.safetensors"
	cmp "$M/config.json" "$SHAPES/config.json"
	[ "$(cat "$d/ids")" = 1 ] && [ ! -e "$d/y.q8" ] && [ ! -e "$d/t.json" ] && [ ! -e -  ]
}

@test "sample writes into and removes only the feedback FIFO forward made" {
	private_tmpdir
	S=$BATS_TEST_TMPDIR/stream
	# name(PATH): the corpus's generation stream, naming PATH as its FIFO
	name() {
		cp "$ROOT/tests/fuzz/corpus/stream/generation" "$S"
		{ printf '%s' "$1"; head -c $((4096 - ${#1})) /dev/zero; } |
			dd of="$S" bs=1 seek=144 conv=notrunc 2>/dev/null
	}
	V=$BATS_TEST_TMPDIR/victim
	mkdir -p "$V"
	mkfifo "$V/ids"
	# someone else's FIFO, with a reader: nothing is written, nothing removed
	exec 7<> "$V/ids"
	# a stream that says it has a channel but names none
	name ""
	bad 1 "sample: the stream's feedback channel has an empty name" "sample <'$S'"
	name "$V/ids"
	bad 1 "sample: $V/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" "sample <'$S'"
	[ -p "$V/ids" ]
	run timeout 1 head -c 1 <&7
	[ "$output" = "" ]
	exec 7<&-
	# forward's shape, but not private, or a link, or not a FIFO
	F=$TMPDIR/forward.abcdef
	mkdir -m 755 "$F"
	mkfifo "$F/ids"
	name "$F/ids"
	bad 1 "sample: $F/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" "sample <'$S'"
	[ -p "$F/ids" ]
	rm -r "$F"
	ln -s "$V" "$F"
	bad 1 "sample: $F/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" "sample <'$S'"
	[ -p "$V/ids" ]
	rm "$F"
	mkdir -m 700 "$F"
	: >"$F/ids"
	bad 1 "sample: $F/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" "sample <'$S'"
	[ -f "$F/ids" ]
	name "$TMPDIR/forward.abcdefg/ids"
	bad 1 "sample: $TMPDIR/forward.abcdefg/ids: not a feedback channel that forward made (a FIFO 'ids' of yours in a private directory forward.XXXXXX)" "sample <'$S'"
	# the right shape, nobody reading
	rm "$F/ids"
	mkfifo "$F/ids"
	name "$F/ids"
	bad 1 "sample: $F/ids: forward is not running (nobody reads the feedback channel)" "sample <'$S'"
	[ -p "$F/ids" ]
}

@test "NaN or Inf in a bias or a block scale: the same on every SIMD level, refused by sample and ppl" {
	M=$BATS_TEST_TMPDIR/m
	mkdir -p "$M"
	cp "$SHAPES/config.json" "$M/"
	seq 1 300 >"$BATS_TEST_TMPDIR/ids"
	# a bf16 NaN, then +Inf, as the first element of
	# model.layers.0.self_attn.q_proj.bias (at byte 5476400): the logits
	# are the same bits on every level, NaN included (Inf - Inf makes
	# x86's default NaN, negative)
	for v in 'nan \xc0\x7f' '-nan \x80\x7f'; do
		cp "$SHAPES/model.safetensors" "$M/"
		printf "${v#* }" | dd of="$M/model.safetensors" bs=1 seek=5476400 conv=notrunc 2>/dev/null
		echo 1 2 | QWENPIPE_SIMD=scalar forward "$M" --score >"$BATS_TEST_TMPDIR/scalar" 2>/dev/null
		for level in scalar avx2 avx512; do
			export QWENPIPE_SIMD=$level
			bad 0 "forward: warning: position 1: logit 0 is ${v%% *} (NaN or Inf in the weights? st-inspect --check finds them)" \
				"echo 1 2 | forward '$M' --score >'$BATS_TEST_TMPDIR/$level.out'"
			cmp "$BATS_TEST_TMPDIR/scalar" "$BATS_TEST_TMPDIR/$level.out"
			bad 1 "sample: <stdin>: frame at position 1: logit 0 is nan" "echo 1 2 | forward '$M' --score 2>/dev/null | sample"
			bad 1 "ppl: fp32: chunk 0: the log-likelihood is nan (NaN or Inf in the weights? st-inspect --check finds them)" \
				"ppl '$M' --ids '$BATS_TEST_TMPDIR/ids' --chunk 64 --max-chunks 1 --no-compare"
		done
	done
	unset QWENPIPE_SIMD
	# a GGUF Q4_0 block whose f16 scale is NaN, then Inf: refused at load
	G=$BATS_TEST_TMPDIR/q.gguf
	quantize "$TINY" -o "$G" --format gguf --level q4_0 2>/dev/null
	at=$(st-inspect "$G" --tensor blk.0.attn_q.weight --json | jq .offset)
	for v in '\x00\x7e' '\x00\x7c' '\x00\xfc'; do
		printf "$v" | dd of="$G" bs=1 seek="$at" conv=notrunc 2>/dev/null
		bad 1 "forward: $G: tensor 'blk.0.attn_q.weight': scale 0 is not finite" "echo 1 2 | forward '$G' --score"
		bad 1 "ppl: $G: tensor 'blk.0.attn_q.weight': scale 0 is not finite" "ppl '$G' --max-chunks 1"
	done
	run -1 st-inspect --check "$G"
	assert_line "blk.0.attn_q.weight: 1 NaN, 31 Inf"  # -inf times a code of 0
	# a NaN weight of a norm, before products on int8 activations: the
	# quantized block carries it (scale NaN) rather than round it away
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	at=$(st-inspect "$G" --tensor output_norm.weight --json | jq .offset)
	printf '\x00\x00\xc0\x7f' | dd of="$G" bs=1 seek="$at" conv=notrunc 2>/dev/null
	for level in scalar avx2 avx512; do
		export QWENPIPE_SIMD=$level
		bad 0 "forward: warning: position 1: logit 0 is nan (NaN or Inf in the weights? st-inspect --check finds them)" \
			"echo 1 2 | forward '$G' --score >'$BATS_TEST_TMPDIR/$level.out'"
		cmp "$BATS_TEST_TMPDIR/scalar.out" "$BATS_TEST_TMPDIR/$level.out"
	done
	unset QWENPIPE_SIMD
	# a NaN in a matrix to be quantized: refused, where its scale and code
	# would hide it (bf16 keeps it, and forward warns of it)
	cp "$TINY"/* "$M/"
	t=model.layers.0.mlp.up_proj.weight
	at=$(st-inspect "$M" --tensor $t --json | jq .offset)
	cols=$(st-inspect "$M" --tensor $t --json | jq '.shape[1]')
	printf '\xc0\x7f' | dd of="$M/model.safetensors" bs=1 seek=$((at + 2 * (3 * cols + 5))) conv=notrunc 2>/dev/null
	for a in "-o '$BATS_TEST_TMPDIR/n.q4' --level int4" "-o '$BATS_TEST_TMPDIR/n.q8' --level int8" \
		 "-o '$BATS_TEST_TMPDIR/n.gguf' --format gguf --level q4_k_m"; do
		# (after the progress lines of the tensors before it)
		run --separate-stderr -1 bash -c "quantize '$M' $a"
		[ "${stderr_lines[-1]}" = "quantize: tensor '$t': row 3, column 5 is nan: quantizing would hide it (st-inspect --check finds such values)" ]
	done
	[ ! -e "$BATS_TEST_TMPDIR/n.q4" ] && [ ! -e "$BATS_TEST_TMPDIR/n.q8" ] && [ ! -e "$BATS_TEST_TMPDIR/n.gguf" ]
}

@test "the scripts use a model file's own tokenizer whatever the file is called" {
	d=$BATS_TEST_TMPDIR
	M=$d/m
	mkdir -p "$M"
	cp "$TINY/config.json" "$TINY/generation_config.json" "$TINY/model.safetensors" "$TINY/tokenizer_config.json" "$M/"
	# the tiny model's tokenizer with the ids of "ROM" and " the" swapped
	a=$(printf 'ROMEO:' | tok encode | head -1) b=$(printf ' the' | tok encode)
	jq --argjson a "$a" --argjson b "$b" '.model.vocab |= with_entries(
		if .value == $a then .value = $b elif .value == $b then .value = $a else . end)' \
		"$TINY/tokenizer.json" >"$M/tokenizer.json"
	quantize "$M" -o "$d/container.bin" --level int8 2>/dev/null
	quantize "$M" -o "$d/gguf.bin" --format gguf --level q8_0 2>/dev/null
	for f in container.bin gguf.bin; do
		F=$d/$f
		run -0 "$ROOT/scripts/generate" "$F" "ROMEO:" --greedy -n 16
		want=$(printf 'ROMEO:' | tok encode --tokenizer "$F" | forward "$F" | sample --greedy -n 16 | tok decode --tokenizer "$F")
		[ "$output" = "$want" ] || { echo "$f: $output / $want" >&2; return 1; }
		# the bundled tokenizer would say otherwise
		[ "$(printf 'ROMEO:' | tok encode --tokenizer "$F")" != "$(printf 'ROMEO:' | tok encode)" ]
	done
	# a safetensors file given as the model: the tokenizer.json beside it
	run -0 "$ROOT/scripts/generate" "$M/model.safetensors" "ROMEO:" --greedy -n 16
	[ "$output" = "$(printf 'ROMEO:' | tok encode --tokenizer "$M" | forward "$M" | sample --greedy -n 16 | tok decode --tokenizer "$M")" ]
}

# jq_shim LINE ARG: $shim/jq runs the shell line (printf format LINE with
# ARG) first, then the real jq; scripts/chat finds it first on PATH.
jq_shim() {
	shim=$BATS_TEST_TMPDIR/shim
	mkdir -p "$shim"
	printf "#!/bin/sh\n$1\nexec %s \"\$@\"\n" "$2" "$(command -v jq)" >"$shim/jq"
	chmod +x "$shim/jq"
}

@test "chat: /save writes whole or not at all, through a link into its target" {
	private_tmpdir
	CHAT="$ROOT/scripts/chat"
	d=$BATS_TEST_TMPDIR
	printf 'hello\n/save %s\n' "$d/c.json" | "$CHAT" "$TINY" -n 4 --seed 1 >/dev/null 2>&1
	cp "$d/c.json" "$d/before"
	# a save that fails midway (jq writes part of the file and fails)
	# leaves the previous file, and no temporary one
	jq_shim 'if [ "$1" = . ] && [ "${2##*/}" = history ]; then printf %s; exit 1; fi' "'[{\"role\"'"
	run --separate-stderr -0 bash -c "printf 'again\n/save %s\n' '$d/c.json' | PATH='$shim:$PATH' '$CHAT' '$TINY' -n 4 --seed 1"
	[ "${stderr_lines[-1]}" = "chat: $d/c.json: cannot write it" ]
	cmp "$d/c.json" "$d/before"
	run -0 ls -A "$d"
	refute_output --partial ".c.json"
	# through a link: the target gets the conversation, the link stays
	ln -s c.json "$d/link.json"
	printf '/load %s\nagain\n/save %s\n' "$d/c.json" "$d/link.json" | "$CHAT" "$TINY" -n 4 --seed 1 >/dev/null 2>&1
	[ -L "$d/link.json" ]
	[ "$(jq length "$d/c.json")" = 4 ]
	tmpdir_empty
}

@test "chat: a long loaded conversation is trimmed to the fewest dropped turns in O(log n) renders" {
	private_tmpdir
	d=$BATS_TEST_TMPDIR
	jq -n '[range(800) | {role: "user", content: "Who art thou, good sir \(.)?"},
		{role: "assistant", content: "I am a man of Verona."}]' >"$d/big.json"
	# count the renders: each is one jq with --argjson k
	jq_shim 'case " $* " in *" --argjson k "*) echo >>%s ;; esac' "$d/renders"
	run --separate-stderr -0 bash -c "printf '/load %s\nhello\n' '$d/big.json' | PATH='$shim:$PATH' '$ROOT/scripts/chat' '$TINY' --ctx 512 -n 4 --seed 1 -v"
	[ "${stderr_lines[1]}" = "chat: loaded 1600 messages from $d/big.json" ]
	[[ ${stderr_lines[2]} =~ ^"chat: the context is full: the oldest "([0-9]+)" turns are dropped, and the "([0-9]+)" positions kept are computed once again"$ ]]
	k=${BASH_REMATCH[1]} p=${BASH_REMATCH[2]}
	# independently: what is kept fits with room for 4 tokens (the answer
	# limit), and keeping one turn more would not
	kept() { jq --argjson k "$1" '.[$k:] + [{role: "user", content: "hello"}]' "$d/big.json" | tok chat | wc -l; }
	[ "$(kept $((2 * k)))" = "$p" ]
	[ $((p + 4)) -le 512 ]
	[ $(($(kept $((2 * k - 2))) + 4)) -gt 512 ]
	# the first render, a binary search over 800 turns (10 steps), the
	# render of what is kept and the trim itself: at most 13 (it was one
	# render per dropped turn, 790)
	n=$(wc -l <"$d/renders")
	[ "$n" -ge 3 ] && [ "$n" -le 13 ] || { echo "$n renders" >&2; return 1; }
}

@test "padding ids (the embedding's rows past the tokenizer's ids) decode to no text; ids past them are refused" {
	# 151,665 ids in the tokenizer, 151,936 rows in the model
	run -0 bash -c "echo 3 151665 151887 151935 5 | tok decode"
	assert_output '$&'
	bad 1 "tok: <stdin>: line 1: 151936 is not in the vocabulary (ids 0..151664)" "echo 151936 | tok decode"
	G=$BATS_TEST_TMPDIR/g.bin
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/c.q8" --level int8 2>/dev/null
	for tk in "$TINY" "$TINY/tokenizer.json" "$G" "$BATS_TEST_TMPDIR/c.q8"; do
		run -0 bash -c "echo 3 151887 5 | tok decode --tokenizer '$tk'"
		assert_output '$&'
		run -1 bash -c "echo 151936 | tok decode --tokenizer '$tk'"
	done
	# a high temperature draws them (the issue's case: id 151887 at 79)
	run -0 "$ROOT/scripts/generate" "$TINY" ROMEO: --temperature 100 --top-k 0 --top-p 1 -n 300 --seed 1
}

@test "messages name what they mean: GGUF hyperparameters, escaped names, no wrapped totals, an embedded config" {
	G=$BATS_TEST_TMPDIR/g.gguf
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	# a tensor name with a newline and an escape sequence: escaped in
	# st-inspect's listing and in forward's message
	at=$(grep -obUa "blk.0.attn_q.weight" "$G" | head -1 | cut -d: -f1)
	printf '\n\033' | dd of="$G" bs=1 seek=$((at + 12)) conv=notrunc 2>/dev/null
	run --separate-stderr -3 st-inspect "$G"
	assert_line "  unexpected  'blk.0.attn_q\\x0a\\x1beight' [64, 64]"
	[ "$stderr" = "st-inspect: $G: does not match its embedded config: 1 missing, 1 unexpected, 0 wrong shape" ]
	bad 1 "forward: $G: tensor 'model.layers.0.self_attn.q_proj.weight': missing (2 differences from its GGUF hyperparameters)" \
		"echo 1 | forward '$G'"
	bad 1 "st-inspect: $G: no tensor named 'a\\x0ab'" "st-inspect '$G' --tensor \"\$(printf 'a\\nb')\""
	# a GGUF tokenizer's problem names its arrays, not a JSON file's lines
	quantize "$TINY" -o "$G" --format gguf --level q8_0 2>/dev/null
	at=$(LC_ALL=C grep -obUa "$(printf '\xc4\xa0the')" "$G" | head -1 | cut -d: -f1)
	printf '\xff' | dd of="$G" bs=1 seek="$at" conv=notrunc 2>/dev/null
	run --separate-stderr -1 tok encode --tokenizer "$G" <<<hi
	[[ $stderr = "tok: $G: tokenizer.ggml.*: "* ]] && [[ $stderr != *line* ]]
	# a config whose parameters do not fit 63 bits
	jq '.hidden_size = 2147483520 | .intermediate_size = 2147483647 | .vocab_size = 2147483647
		| .num_hidden_layers = 4096 | .num_attention_heads = 16 | .num_key_value_heads = 16' \
		"$SHAPES/config.json" >"$BATS_TEST_TMPDIR/huge.json"
	bad 1 "st-inspect: $BATS_TEST_TMPDIR/huge.json: the config's tensors hold more than 2^63 parameters (hidden_size 2147483520, intermediate_size 2147483647, vocab_size 2147483647, num_hidden_layers 4096)" \
		"st-inspect --manifest '$BATS_TEST_TMPDIR/huge.json'"
}
