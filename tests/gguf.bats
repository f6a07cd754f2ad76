#!/usr/bin/env bats
# GGUF files (llama.cpp's format): st-inspect on llama.cpp's own files of
# the bundled model (tests/golden/gguf/, with what llama.cpp's reader read
# in them beside each), and the malformed ones of
# tests/fixtures/make-gguf.sh refused with one line each.
bats_require_minimum_version 1.5.0
load test_helper

GG="$GOLDEN/gguf"

setup_file() {
	export G="$BATS_FILE_TMPDIR/gguf"
	"$FIXTURES/make-gguf.sh" "$G"
}

setup() {
	load_assert
}

# rejects NAME MESSAGE: st-inspect refuses $G/NAME.gguf with exit 1, one
# line naming the file, and nothing on stdout.
rejects() {
	run --separate-stderr -1 st-inspect "$G/$1.gguf"
	[ "$output" = "" ]
	[ "$stderr" = "st-inspect: $G/$1.gguf: $2" ] ||
		{ echo "got: $stderr" >&2; return 1; }
}

@test "st-inspect: llama.cpp's bf16 file matches the config of its own keys" {
	run -0 st-inspect "$GG/shakespeare-tiny.bf16.gguf"
	assert_line "format        GGUF v3"
	assert_line "tensors       50"
	assert_line "dtypes        BF16 (29 tensors), F32 (21 tensors)"
	assert_line "config        embedded: matches"
	assert_line "data offset   5,933,792"
	assert_line --partial 'tokenizer.ggml.tokens = [151936 x STRING] "!", "\x22", "#", "$", ...'
}

@test "st-inspect --json: offsets, bytes, types and shapes are those llama.cpp's reader read" {
	for q in bf16 q4_0 q4_k_m iq4_xs iq4_nl; do
		run -0 st-inspect --json "$GG/shakespeare-tiny.$q.gguf"
		mine=$(jq -c '[.tensors[] | [.name, .dtype, .offset, .bytes, (.shape | reverse)]] | sort' <<<"$output")
		theirs=$(jq -c '[.tensors[] | [.name, .type, .offset, .n_bytes, .ne]] | sort' \
			"$GG/shakespeare-tiny.$q.json")
		[ "$mine" = "$theirs" ]
		[ "$(jq .config.match <<<"$output")" = true ]
		[ "$(jq -r '.metadata["general.architecture"]' <<<"$output")" = '"qwen2"' ]
		[ "$(jq .data_offset <<<"$output")" = "$(jq .data_offset "$GG/shakespeare-tiny.$q.json")" ]
	done
}

@test "st-inspect --list shows GGUF names and types; --tensor takes either name" {
	run -0 st-inspect --list "$GG/shakespeare-tiny.q4_k_m.gguf"
	assert_line --regexp '^blk\.0\.ffn_down\.weight +Q4_K +\[64, 256\] +16,274,944$'
	assert_line --regexp '^token_embd\.weight +Q8_0 +\[151936, 64\] +5,934,080$'
	run -0 st-inspect --json --tensor blk.3.ffn_down.weight "$GG/shakespeare-tiny.q4_k_m.gguf"
	[ "$(jq -r .dtype <<<"$output")" = Q6_K ]
	a=$output
	run -0 st-inspect --json --tensor model.layers.3.mlp.down_proj.weight "$GG/shakespeare-tiny.q4_k_m.gguf"
	[ "$output" = "$a" ]
}

@test "st-inspect --tensor: the mean of dequantized values is llama.cpp's sum / count" {
	# the .json's sum is gguf-py's float64 sum of the dequantized values
	for t in token_embd.weight blk.0.attn_q.weight blk.0.ffn_down.weight blk.3.ffn_down.weight; do
		run -0 st-inspect --json --tensor "$t" "$GG/shakespeare-tiny.q4_k_m.gguf"
		mean=$(jq .mean <<<"$output")
		want=$(jq --arg t "$t" '.tensors[] | select(.name == $t) | .sum / (.ne | .[0] * (.[1] // 1))' \
			"$GG/shakespeare-tiny.q4_k_m.json")
		# float64 sums in two orders: equal to ~1e-12 relative
		awk -v a="$mean" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * (b < 0 ? -b : b) + 1e-15) }'
	done
}

@test "st-inspect --check reads every tensor of every type" {
	for q in bf16 q4_0 q4_k_m iq4_xs iq4_nl; do
		run -0 st-inspect --check "$GG/shakespeare-tiny.$q.gguf"
		assert_output "checked 50 tensors, 9,970,752 values: 0 NaN, 0 Inf"
	done
}

@test "st-inspect: a GGUF of another architecture is shown without a config" {
	run -0 st-inspect "$G/llama.gguf"
	assert_line 'metadata      general.architecture = "llama"'
	assert_line "config        none"
}

@test "malformed GGUF files are refused with one line naming the file and the key or tensor" {
	rejects empty 'not a GGUF file (no "GGUF" magic)'
	rejects bad-magic 'not a GGUF file (no "GGUF" magic)'
	rejects version1 'GGUF version 1 is not supported (2 or 3)'
	rejects version4 'GGUF version 4 is not supported (2 or 3)'
	rejects big-endian 'GGUF version 50331648 is not supported (2 or 3; a big-endian file?)'
	rejects cut-counts 'truncated (needs 8 bytes, 4 left)'
	rejects kv-count-huge '1099511627776 key/value pairs cannot fit in 0 bytes'
	rejects tensor-count-huge '1099511627776 tensors cannot fit in 0 bytes'
	rejects key-cut 'key 0: truncated (needs 100 bytes, 7 left)'
	rejects empty-key 'key 0: empty key'
	rejects bad-utf8-key 'key 0: key is not valid UTF-8'
	rejects unknown-value-type "key 'general.x': value type 13 is unknown"
	rejects bool-2 "key 'general.x': bool is 2, not 0 or 1"
	rejects nested-array "key 'general.x': arrays of arrays are not supported"
	rejects array-huge "key 'general.x': array of 1152921504606846976 UINT32 is truncated (0 bytes left)"
	rejects string-array-cut "key 'general.x': string 1 of 2 is truncated"
	rejects duplicate-key "key 'general.x': given twice"
	rejects alignment-48 "key 'general.alignment': 48 is not a power of two"
	rejects alignment-u64 "key 'general.alignment': type UINT64, expected UINT32"
	rejects name-64 "tensor 0: name '$(printf 'x%.0s' {1..64})' is 64 bytes (at most 63)"
	rejects duplicate-tensor "tensor 'a': given twice"
	rejects zero-dims "tensor 'a': 0 dimensions (1 to 4)"
	rejects five-dims "tensor 'a': 5 dimensions (1 to 4)"
	rejects zero-ne "tensor 'a': ne[1] is 0 (must be 1 to 2^63-1)"
	rejects ne-overflow "tensor 'a': element count overflows 63 bits"
	rejects unknown-type "tensor 'a': type 99 is unknown"
	rejects iq-type "tensor 'a': type IQ2_XXS is not supported"
	rejects q4_0-ne0-16 "tensor 'a': ne[0] = 16 is not a multiple of Q4_0's block of 32"
	rejects q4_k-ne0-64 "tensor 'a': ne[0] = 64 is not a multiple of Q4_K's block of 256"
	rejects q6_k-cut "tensor 'a': its 210 bytes at offset 0 run past the end of the data section (100 bytes)"
	rejects offset-unaligned "tensor 'a': offset 4 is not a multiple of the alignment 32"
	rejects overlap "tensor 'b': offset 32 overlaps tensor 'a' (which ends at 64)"
	rejects hole "tensor 'b': offset 64 leaves a hole after 'a' (expected 32)"
	rejects data-cut "tensor 'a': its 32 bytes at offset 0 run past the end of the data section (16 bytes)"
	rejects trailing "64 bytes after the last tensor (the data section ends at 128)"
	rejects no-data "truncated: the data section would start at 96, past the end (92 bytes)"
	rejects qwen2-no-blocks "key 'qwen2.feed_forward_length': missing"
}

@test "llama.cpp's files cut anywhere in the header are refused, never read past" {
	F=$BATS_TEST_TMPDIR/cut.gguf
	for n in 3 4 8 23 24 100 5000 100000 1000000 5933791 5933800; do
		head -c "$n" "$GG/shakespeare-tiny.q4_0.gguf" >"$F"
		run --separate-stderr -1 st-inspect "$F"
		[[ $stderr == "st-inspect: $F: "* ]]
		[ "${#stderr_lines[@]}" -eq 1 ]
	done
}

# ---- the model from the file alone ----

@test "forward: llama.cpp's bf16 file gives the safetensors model's logits, bitwise" {
	ids=$(jq -r '.ids | map(tostring) | join(" ")' "$GOLDEN/shakespeare-tiny/mixed.json")
	forward "$TINY" --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/st"
	forward "$GG/shakespeare-tiny.bf16.gguf" --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/gg"
	# the 4240-byte header differs only in what the files' configs say
	# (generation defaults, eos); every frame after it is the same bytes
	cmp -i 4240 "$BATS_TEST_TMPDIR/st" "$BATS_TEST_TMPDIR/gg"
}

@test "forward -v says what loading converted" {
	run --separate-stderr -0 forward -v "$GG/shakespeare-tiny.q4_0.gguf" --score <<<"1 2 3"
	[[ $stderr == *"GGUF: 28 Q4_0 matrices repacked as int4 (exact), 1 Q8_0 matrix repacked as int8 (exact)"* ]]
	run --separate-stderr -0 forward -v "$GG/shakespeare-tiny.q4_k_m.gguf" --score <<<"1 2 3"
	[[ $stderr == *"GGUF: 3 Q8_0 matrices repacked as int8 (exact), 22 Q5_0 matrices repacked as 5-bit tiles (exact), 2 Q4_K matrices repacked as K-quant tiles (exact), 2 Q6_K matrices repacked as K-quant tiles (exact)"* ]]
	run --separate-stderr -0 forward -v "$GG/shakespeare-tiny.q4_k_m.gguf" --score --f32 <<<"1 2 3"
	[[ $stderr == *"GGUF: 22 Q5_0 dequantized to float32 (exact), 3 Q8_0 dequantized to float32 (exact), 2 Q4_K dequantized to float32 (exact), 2 Q6_K dequantized to float32 (exact)"* ]]
	run --separate-stderr -0 forward -v "$GG/shakespeare-tiny.iq4_xs.gguf" --score <<<"1 2 3"
	[[ $stderr == *"GGUF: 1 Q4_0 matrix repacked as int4 (exact), 24 IQ4_NL matrices repacked as 4-bit tiles (exact), 4 IQ4_XS matrices repacked as 4-bit tiles (exact)"* ]]
}

@test "a GGUF file without general.sampling.* samples with Qwen2.5's or llama.cpp's defaults" {
	# llama.cpp's files of the bundled model have no sampling keys and
	# Qwen2.5's vocabulary: the values of Qwen2.5's own
	# generation_config.json, and -v says whose they are.
	local q=$DATA/qwen2.5-0.5b-instruct/generation_config.json
	want="temperature $(jq .temperature "$q"), top-k $(jq .top_k "$q"), top-p $(jq .top_p "$q"), min-p 0, repeat-penalty $(jq .repetition_penalty "$q")"
	run --separate-stderr -0 bash -c "echo 1 | forward -v '$GG/shakespeare-tiny.q4_0.gguf' | sample -v -n 1 --seed 1"
	[[ $stderr == *"sampling defaults: Qwen2.5's generation_config.json (no general.sampling.* in the file; the vocabulary is Qwen2.5's)"* ]]
	[[ $stderr == *"sample: seed 1, $want"$'\n'* ]]
	# Another vocabulary (one special token renamed), no sampling keys:
	# llama.cpp's defaults (common/common.h).
	local m=$BATS_TEST_TMPDIR/m
	mkdir "$m"
	cp "$TINY/config.json" "$TINY/model.safetensors" "$TINY/tokenizer_config.json" "$m/"
	sed 's/<tool_call>/<tool-call>/g' "$TINY/tokenizer.json" >"$m/tokenizer.json"
	quantize "$m" -o "$m.gguf" --format gguf --level bf16 2>/dev/null
	run --separate-stderr -0 bash -c "echo 1 | forward -v '$m.gguf' | sample -v -n 1 --seed 1"
	[[ $stderr == *"sampling defaults: llama.cpp's defaults (no general.sampling.* in the file)"* ]]
	[[ $stderr == *"sample: seed 1, temperature 0.8, top-k 40, top-p 0.95, min-p 0.05, repeat-penalty 1"$'\n'* ]]
	# A file with the keys keeps its own values, and -v names no defaults.
	cp "$TINY/generation_config.json" "$m/"
	quantize "$m" -o "$m.2.gguf" --format gguf --level bf16 2>/dev/null
	run --separate-stderr -0 bash -c "echo 1 | forward -v '$m.2.gguf' | sample -v -n 1 --seed 1"
	[[ $stderr != *"sampling defaults"* ]]
	[[ $stderr == *"sample: seed 1, temperature 0.8, top-k 40, top-p 0.9, min-p 0, repeat-penalty 1"$'\n'* ]]
}

@test "tok --tokenizer FILE.gguf: the file's own tokenizer and chat template" {
	text=$'ROMEO: But soft! what light\n<|im_start|>user  \t42 caf\xc3\xa9'
	want=$(tok encode <<<"$text")
	[ "$(tok encode --tokenizer "$GG/shakespeare-tiny.q4_0.gguf" <<<"$text")" = "$want" ]
	want=$(tok chat --user hi)
	[ "$(tok chat --tokenizer "$GG/shakespeare-tiny.bf16.gguf" --user hi)" = "$want" ]
	run -0 bash -c "tok decode --tokenizer '$GG/shakespeare-tiny.bf16.gguf' <<<'$(tr '\n' ' ' <<<"$want")'"
	assert_output --partial '<|im_start|>user'
}

# swapped DIR: the tiny model written as DIR.gguf with a tokenizer whose
# tokens "ROM" and " I" trade ids (3361 and 358), so that the file encodes
# "ROMEO:" as 358 6760 25 where the bundled tokenizer gives 3361 6760 25,
# and decodes 358 as "ROM": a script that used the bundled tokenizer with
# this file would feed the model other ids and print other text.
swapped() {
	cp -r "$TINY" "$1"
	jq -c '.model.vocab.ROM as $a | .model.vocab["\u0120I"] as $b
		| .model.vocab.ROM = $b | .model.vocab["\u0120I"] = $a' "$TINY/tokenizer.json" > "$1/tokenizer.json"
	quantize "$1" -o "$1.gguf" --format gguf --level bf16 2> /dev/null
	[ "$(printf 'ROMEO:' | tok encode --tokenizer "$1.gguf" | tr '\n' ' ')" = "358 6760 25 " ]
}

@test "scripts/generate and scripts/chat read a GGUF file's own tokenizer and template" {
	d=$BATS_TEST_TMPDIR/swapped
	swapped "$d"
	G1=(--tokenizer "$d.gguf")
	want=$(printf 'ROMEO:' | tok encode "${G1[@]}" | forward "$d.gguf" | sample --greedy -n 8 |
		tok decode "${G1[@]}")
	run -0 "$ROOT/scripts/generate" "$d.gguf" "ROMEO:" --greedy -n 8
	[ "$output" = "$want" ]
	[ "$want" != "$(printf 'ROMEO:' | tok encode | forward "$d.gguf" | sample --greedy -n 8 | tok decode)" ]
	# One chat turn: the message in the file's template, the answer decoded
	# by the file's tokenizer (special tokens skipped, as the chat does).
	want=$(tok chat "${G1[@]}" --user "ROMEO:" | forward "$d.gguf" | sample --greedy -n 8 |
		tok decode "${G1[@]}" --skip-special)
	run -0 bash -c "printf 'ROMEO:\n' | '$ROOT/scripts/chat' '$d.gguf' --greedy -n 8"
	[ "$output" = "$want" ]
}

@test "a GGUF of another architecture, a broken tokenizer or a bad file is refused by name" {
	run --separate-stderr -1 forward "$G/llama.gguf" --score <<<"1"
	[ "$stderr" = "forward: $G/llama.gguf: architecture 'llama' is not supported (qwen2)" ]
	run --separate-stderr -1 forward "$G/overlap.gguf" --score <<<"1"
	[ "$stderr" = "forward: $G/overlap.gguf: tensor 'b': offset 32 overlaps tensor 'a' (which ends at 64)" ]
	run --separate-stderr -1 tok encode --tokenizer "$G/llama.gguf" <<<"x"
	[ "$stderr" = "tok: $G/llama.gguf: key 'tokenizer.ggml.model': missing" ]
}

# ---- writing ----

@test "quantize --format gguf: the file st-inspect, forward and tok read back" {
	mkdir -p "$BATS_TEST_TMPDIR/out"
	O=$BATS_TEST_TMPDIR/out/t.q4_0.gguf
	run --separate-stderr -0 quantize "$TINY" -o "$O" --format gguf --level q4_0
	[ "$stderr" = "quantize: $O: GGUF, q4_0 matrices" ]
	run -0 st-inspect "$O"
	assert_line "dtypes        Q8_0 (1 tensor), F32 (21 tensors), Q4_0 (28 tensors)"
	assert_line "config        embedded: matches"
	assert_line '              general.sampling.top_k = 40'
	# llama-quantize's Q4_0 of the same weights, tensor for tensor
	# (test_gguf compares the values; here the types and shapes)
	mine=$(st-inspect --json "$O" | jq -c '[.tensors[] | [.name, .dtype, .bytes, (.shape | reverse)]] | sort')
	theirs=$(jq -c '[.tensors[] | [.name, .type, .n_bytes, .ne]] | sort' "$GG/shakespeare-tiny.q4_0.json")
	[ "$mine" = "$theirs" ]
	[ "$(tok encode --tokenizer "$O" <<<"to be or not")" = "$(tok encode <<<"to be or not")" ]
	forward "$O" --score <<<"1 2 3" >/dev/null
	[ "$(ls -A "$BATS_TEST_TMPDIR/out")" = t.q4_0.gguf ]  # no temporary file left
}

@test "quantize --format gguf: q4_k_m, q5_k_m and q6_k are llama-quantize's mixes" {
	for l in q4_k_m q5_k_m q6_k; do
		O=$BATS_TEST_TMPDIR/t.$l.gguf
		run --separate-stderr -0 quantize "$TINY" -o "$O" --format gguf --level $l
		[ "$stderr" = "quantize: $O: GGUF, $l matrices" ]
		# llama-quantize's file of the same weights, tensor for tensor:
		# types, shapes and sizes here, the bytes in test_gguf
		mine=$(st-inspect --json "$O" | jq -c '[.tensors[] | [.name, .dtype, .bytes, (.shape | reverse)]] | sort')
		theirs=$(jq -c '[.tensors[] | [.name, .type, .n_bytes, .ne]] | sort' \
			"$GG/shakespeare-tiny.$l.bytes.json")
		[ "$mine" = "$theirs" ]
	done
	run -0 st-inspect "$BATS_TEST_TMPDIR/t.q4_k_m.gguf"
	assert_line "dtypes        Q8_0 (3 tensors), F32 (21 tensors), Q4_K (2 tensors), Q5_0 (22 tensors), Q6_K (2 tensors)"
	assert_line "              general.file_type = 15"
	forward "$BATS_TEST_TMPDIR/t.q4_k_m.gguf" --score <<<"1 2 3" >/dev/null
}

@test "quantize: a GGUF source is refused plainly, saying what reads it" {
	run -1 --separate-stderr quantize "$GG/shakespeare-tiny.q4_0.gguf" -o "$BATS_TEST_TMPDIR/t.q8" --level int8
	[ "$output" = "" ]
	[ "$stderr" = "quantize: $GG/shakespeare-tiny.q4_0.gguf: GGUF input is not supported (quantize reads a safetensors model: a directory or its model.safetensors); forward, generate and chat run a GGUF file as it is" ]
	[ ! -e "$BATS_TEST_TMPDIR/t.q8" ]
}

@test "quantize --format gguf: bf16 gives the safetensors model's logits, bitwise" {
	O=$BATS_TEST_TMPDIR/t.bf16.gguf
	quantize "$TINY" -o "$O" --format gguf --level bf16 2>/dev/null
	ids=$(jq -r '.ids | map(tostring) | join(" ")' "$GOLDEN/shakespeare-tiny/citizen.json")
	forward "$TINY" --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/st"
	forward "$O" --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/gg"
	cmp "$BATS_TEST_TMPDIR/st" "$BATS_TEST_TMPDIR/gg"  # its config is the directory's: the header too
}

@test "F16 matrices run as stored, on the f16 kernels: the float32 path's logits, bitwise" {
	O=$BATS_TEST_TMPDIR/t.f16.gguf
	quantize "$TINY" -o "$O" --format gguf --level f16 2>/dev/null
	run --separate-stderr -0 forward -v "$O" --score <<<"1 2 3"
	[[ $stderr == *"GGUF: every matrix as stored"* ]]
	ids=$(jq -r '.ids | map(tostring) | join(" ")' "$GOLDEN/shakespeare-tiny/citizen.json")
	forward "$O" --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/f16"
	# --f32 widens every matrix exactly to float32 at load
	forward "$O" --f32 --score --all <<<"$ids" >"$BATS_TEST_TMPDIR/f32"
	cmp "$BATS_TEST_TMPDIR/f16" "$BATS_TEST_TMPDIR/f32"
}

@test "quantize --format gguf: usage errors" {
	run --separate-stderr -2 quantize "$TINY" -o x.gguf --format gguf --level int8
	[ "${stderr_lines[0]}" = "quantize: --level: 'int8' is not bf16, f16, q8_0, q4_0, q4_k_m, q5_k_m or q6_k (--format gguf)" ]
	run --separate-stderr -2 quantize "$TINY" -o x.gguf --format gguf --level q4_0 --embeddings
	[ "${stderr_lines[0]}" = "quantize: --format gguf takes no --group-size, --embeddings, --report or --dry-run" ]
	run --separate-stderr -2 quantize "$TINY" -o x.gguf --format ggml --level q4_0
	[ "${stderr_lines[0]}" = "quantize: --format: 'ggml' is not container or gguf" ]
	[ ! -e x.gguf ]
}

@test "ppl: a GGUF file is one more level; llama.cpp's bf16 file scores as the bf16 level, exactly" {
	run -0 --separate-stderr ppl "$TINY" --level bf16 "$GG/shakespeare-tiny.bf16.gguf" \
		--max-chunks 4 --no-compare --json
	# the same weights through the same kernels: the same float64 sums
	[ "$(jq '[.levels[].ppl] | unique | length' <<<"$output")" = 1 ]
	[ "$(jq '.levels | length' <<<"$output")" = 2 ]
}

@test "ppl: FILE.gguf+f32 is the file with float32 activations" {
	q=$GG/shakespeare-tiny.q4_k_m.gguf
	run -0 --separate-stderr ppl "$TINY" --level fp32 "$q" "$q+f32" --max-chunks 1 --no-compare --json
	local j=$output
	run -0 jq -r '.levels[] | .level' <<<"$j"
	assert_output "$(printf 'fp32\n%s\n%s+f32' "$q" "$q")"
	# the same weights, other products: another perplexity
	[ "$(jq '[.levels[1:][].ppl] | unique | length' <<<"$j")" = 2 ]
}
