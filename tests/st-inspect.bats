#!/usr/bin/env bats
# st-inspect: summaries, the config diff, --json, --tensor, --check,
# --manifest, and every kind of malformed file refused with one line.
bats_require_minimum_version 1.5.0
load test_helper

setup_file() {
	export M="$BATS_FILE_TMPDIR/malformed"
	"$FIXTURES/make-malformed.sh" "$M"
}

setup() {
	load_assert
}

# rejects NAME MESSAGE: st-inspect refuses $M/NAME.safetensors with exit 1,
# one line naming the file, and nothing on stdout.
rejects() {
	run --separate-stderr -1 st-inspect "$M/$1.safetensors"
	[ "$output" = "" ]
	[ "$stderr" = "st-inspect: $M/$1.safetensors: $2" ] ||
		{ echo "got: $stderr" >&2; return 1; }
}

@test "the bundled tiny model matches its config: 50 tensors" {
	run -0 st-inspect "$TINY"
	assert_line "tensors       50"
	assert_line "config        $TINY/config.json: matches"
	assert_line "dtypes        BF16 (50 tensors)"
	assert_line "header size   5,360 bytes"
}

@test "qwen-shapes matches its config with its untied lm_head: 27 tensors" {
	run -0 st-inspect --json "$SHAPES/model.safetensors"
	[ "$(jq .tensor_count <<<"$output")" = 27 ]
	[ "$(jq .config.match <<<"$output")" = true ]
	[ "$(jq -r '.tensors[] | select(.name == "lm_head.weight") | .shape | @csv' <<<"$output")" = "4096,256" ]
}

@test "the manifest of the real Qwen2.5-0.5B config has 290 tensors and 494,032,768 parameters" {
	run -0 st-inspect --manifest "$DATA/qwen2.5-0.5b-instruct/config.json"
	assert_line "tensors       290"
	assert_line "parameters    494,032,768"
	refute_line --partial "lm_head.weight"
	run -0 st-inspect --json --manifest "$DATA/qwen2.5-0.5b-instruct"
	[ "$(jq '[.tensor_count, .parameter_count, (.tensors | length)] | @csv' <<<"$output")" = '"290,494032768,290"' ]
}

@test "--json keeps its keys and adds up" {
	run -0 st-inspect --json "$TINY"
	[ "$(jq -c 'keys' <<<"$output")" = '["breakdown","config","data_offset","dtypes","file","file_size","format","header_size","metadata","parameter_count","tensor_count","tensors"]' ]
	[ "$(jq '([.breakdown[].parameters] | add) as $b | $b == .parameter_count' <<<"$output")" = true ]
	[ "$(jq '.file_size == .data_offset + ([.tensors[].bytes] | add)' <<<"$output")" = true ]
}

@test "--tensor prints a tensor's statistics" {
	run -0 st-inspect --tensor model.norm.weight "$TINY"
	assert_output "name          model.norm.weight
dtype         BF16
shape         [64]
offset        19,946,744
bytes         128
parameters    64
min           1.375
max           1.4453125
mean          1.40979004
mean |x|      1.40979004
nan           0
inf           0"
}

@test "a summary of a 4 GiB file maps it without touching its data" {
	run -0 /usr/bin/time -f "maxrss %M" st-inspect "$M/huge/huge.safetensors"
	assert_line "file size     4,294,967,377 bytes"
	# Resident memory stays far below the 4 GiB a read would bring in
	# (even under AddressSanitizer).
	rss=$(sed -n 's/^maxrss //p' <<<"$output")
	(( rss < 262144 )) || { echo "max RSS $rss KiB" >&2; return 1; }
}

@test "--tensor names an absent tensor" {
	run -1 st-inspect --tensor nope "$TINY"
	assert_output "st-inspect: $TINY/model.safetensors: no tensor named 'nope'"
}

@test "--check finds no NaN or Inf in the bundled models" {
	run -0 st-inspect --check "$TINY"
	assert_output "checked 50 tensors, 9,970,752 values: 0 NaN, 0 Inf"
}

@test "--config diffs against another config and exits 3, listing every difference" {
	run -3 st-inspect --config "$TINY/config.json" "$SHAPES"
	assert_line "config        $TINY/config.json: 24 missing, 1 unexpected, 26 wrong shape"
	assert_line "  missing     model.layers.3.mlp.down_proj.weight [64, 256]"
	assert_line "  unexpected  lm_head.weight [4096, 256]"
	assert_line "  wrong shape model.norm.weight [256], expected [64]"
	assert_line "st-inspect: $SHAPES/model.safetensors: does not match $TINY/config.json: 24 missing, 1 unexpected, 26 wrong shape"
}

@test "--help goes to stdout and exits 0" {
	run -0 st-inspect --help
	assert_line --partial "usage: st-inspect"
}

@test "misuse exits 2 with the usage line" {
	run -2 st-inspect
	assert_line "st-inspect: no FILE given"
	assert_line --partial "usage: st-inspect"
	run -2 st-inspect --frobnicate "$TINY"
	assert_line "st-inspect: unknown option '--frobnicate'"
	run -2 st-inspect --tensor
	assert_line "st-inspect: --tensor: missing value"
	run -2 st-inspect --check --tensor x "$TINY"
	assert_line "st-inspect: --tensor, --check and --manifest are exclusive"
}

@test "--tensor reads F32, F16 and I8 values, counting NaN and Inf apart" {
	run -0 st-inspect --json --tensor f32 "$M/values.safetensors"
	[ "$(jq -c '[.min, .max, .mean, .mean_abs, .nan, .inf]' <<<"$output")" = "[-2,1,-0.5,1.5,1,1]" ]
	run -0 st-inspect --json --tensor f16 "$M/values.safetensors"
	[ "$(jq -c '[.min, .max, .mean, .mean_abs]' <<<"$output")" = "[-0.5,1,0.25,0.75]" ]
	run -0 st-inspect --json --tensor i8 "$M/values.safetensors"
	[ "$(jq -c '[.min, .max, .mean, .mean_abs]' <<<"$output")" = "[-3,5,1,4]" ]
}

@test "--check lists the tensors with NaN or Inf and exits 1" {
	run --separate-stderr -1 st-inspect --check "$M/values.safetensors"
	assert_output "f32: 1 NaN, 1 Inf
checked 3 tensors, 8 values: 1 NaN, 1 Inf"
	[ "$stderr" = "st-inspect: $M/values.safetensors: 1 tensor with NaN or Inf values" ]
}

@test "an empty file is refused" { rejects empty "empty file"; }
@test "a 7-byte file is refused" {
	rejects seven-bytes "7 bytes: too short for the 8-byte header length"
}
@test "a header length larger than the file is refused" {
	rejects header-too-long "header length 100 is larger than the 2 bytes after it (a truncated file?)"
}
@test "a header length of 2^63 is refused" {
	rejects header-2p63 "header length 9223372036854775808 is larger than the format's limit (100000000 bytes)"
}
@test "a header that is not JSON is refused" {
	rejects not-json "header: not valid JSON (line 1, column 7): unexpected 'n', expected a JSON value"
}
@test "a header that is not a JSON object is refused" {
	rejects not-object "header: not a JSON object"
}
@test "a tensor entry missing a key is refused" {
	rejects missing-key "tensor 'a': data_offsets: missing"
}
@test "an unknown dtype is refused" {
	rejects unknown-dtype "tensor 'a': dtype: unknown 'F7'"
}
@test "a negative dimension is refused" {
	rejects negative-dim "tensor 'a': shape: dimension -1 is not a non-negative integer"
}
@test "a shape whose element count overflows 64 bits is refused" {
	rejects shape-overflow "tensor 'a': shape: element count overflows 64 bits"
}
@test "a shape whose byte count overflows 64 bits is refused" {
	rejects bytes-overflow "tensor 'a': shape: byte count overflows 64 bits"
}
@test "reversed offsets are refused" {
	rejects offsets-reversed "tensor 'a': data_offsets: [4, 0] are reversed"
}
@test "offsets past the end of the data are refused" {
	rejects offsets-past-end "tensor 'a': data_offsets: end 8 is past the end of the data section (4 bytes)"
}
@test "overlapping tensors are refused" {
	rejects overlap "tensor 'b': data_offsets: [4, 12] overlap tensor 'a'"
}
@test "a hole between tensors is refused" {
	rejects hole "tensor 'b': data_offsets: 4 unused bytes before it, at data offset 4"
}
@test "bytes after the last tensor are refused" {
	rejects trailing "4 unused bytes after the last tensor"
}
@test "a byte length that does not match shape x dtype is refused" {
	rejects length-mismatch "tensor 'a': data_offsets: 4 bytes, but 2 elements of F32 need 8"
}
@test "duplicate tensor names are refused" {
	rejects duplicate-name "header: not valid JSON (line 1, column 55): duplicate key 'a'"
}
@test "a tensor name that is not valid UTF-8 is refused, escaped" {
	rejects bad-utf8-name "header: not valid JSON (line 1, column 4): byte 0xff is not valid UTF-8"
}

# The header is strict JSON (RFC 8259), as the reference reader wants it
# (lib/core/jsonutil.h); integers are read as written.
@test "a raw control character or NUL in a tensor name is refused" {
	rejects raw-newline-name "header: not valid JSON (line 1, column 4): raw control character 0x0a in a string"
	rejects raw-nul-name "header: not valid JSON (line 1, column 4): raw control character 0x00 in a string"
	rejects escaped-nul-name "header: not valid JSON (line 1, column 4): \\u0000 in a string (C strings cannot hold NUL)"
}
@test "a lone surrogate, an overlong or surrogate UTF-8 sequence in a name is refused" {
	rejects lone-surrogate-name "header: not valid JSON (line 1, column 4): lone surrogate \\uD800"
	rejects overlong-utf8-name "header: not valid JSON (line 1, column 4): overlong UTF-8 sequence"
	rejects surrogate-utf8-name "header: not valid JSON (line 1, column 4): UTF-8 encoded surrogate U+D800"
}
@test "offsets and dimensions written as floats or exponents are refused" {
	rejects float-offsets "tensor 'a': data_offsets: not a pair of non-negative integers"
	rejects float-shape "tensor 'a': shape: dimension 1.0 is not a non-negative integer"
	rejects exponent-shape "tensor 'a': shape: dimension 1e0 is not a non-negative integer"
}
@test "numbers outside JSON's grammar or a double's range are refused" {
	rejects leading-zero-shape "header: not valid JSON (line 1, column 30): invalid number"
	rejects huge-number "header: not valid JSON (line 1, column 51): number out of range"
}
@test "trailing bytes, single quotes and deep nesting in the header are refused" {
	rejects trailing-garbage "header: not valid JSON (line 1, column 56): unexpected 'x', expected nothing after the JSON value"
	rejects single-quotes "header: not valid JSON (line 1, column 2): unexpected \"'\", expected a string key"
	rejects deep-metadata "header: not valid JSON (line 1, column 144): nested deeper than 128"
}
@test "a text file is not a safetensors file; a header past the format's limit is refused" {
	rejects text "not a safetensors file (no JSON header after the 8-byte length)"
	rejects header-over-limit "header length 100000001 is larger than the format's limit (100000000 bytes)"
}
@test "packed F4 elements that do not fill whole bytes are refused" {
	rejects f4-odd "tensor 'a': shape: 3 elements of F4 do not fill whole bytes"
}

@test "every dtype of the format is listed, and the 8- and 4-bit floats decoded" {
	run -0 st-inspect --list "$M/all-dtypes.safetensors"
	assert_line --regexp '^tensors +20$'
	for d in BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0 I16 U16 F16 BF16 I32 U32 F32 C64 F64 I64 U64 F6_E2M3 F6_E3M2 F4; do
		assert_line --regexp "^$d +$d +\\["
	done
	# every byte is 0x38 = 0 0111 000: E4M3 (bias 7) 1.0; E5M2 0 01110 00
	# (bias 15) 0.5; E8M0 2^(56 - 127); F4 (E2M1) nibbles 1000 = -0 and
	# 0011 = 1.5
	run -0 st-inspect --json --tensor F8_E4M3 "$M/all-dtypes.safetensors"
	[ "$(jq -c '[.min, .max, .nan, .inf]' <<<"$output")" = "[1,1,0,0]" ]
	run -0 st-inspect --json --tensor F8_E5M2 "$M/all-dtypes.safetensors"
	[ "$(jq -c '[.min, .max]' <<<"$output")" = "[0.5,0.5]" ]
	run -0 st-inspect --json --tensor F8_E8M0 "$M/all-dtypes.safetensors"
	[ "$(jq '.min == pow(2; -71)' <<<"$output")" = true ]
	run -0 st-inspect --json --tensor F4 "$M/all-dtypes.safetensors"
	[ "$(jq -c '[.parameters, .min, .max, .mean]' <<<"$output")" = "[2,-0,1.5,0.75]" ]
	# F6 (bit order left open by the format) and C64 are listed, not decoded
	run -0 st-inspect --tensor F6_E2M3 "$M/all-dtypes.safetensors"
	assert_line --regexp '^values +not decoded \(F6_E2M3\)$'
	run -0 st-inspect --json --tensor C64 "$M/all-dtypes.safetensors"
	[ "$(jq -c '[.parameters, .bytes, .min, .nan]' <<<"$output")" = "[2,16,null,null]" ]
	run -0 st-inspect --check "$M/all-dtypes.safetensors"
	assert_line "checked 17 tensors, 34 values: 0 NaN, 0 Inf"
	assert_line "not checked: 3 tensors whose dtype is not decoded (F6_E2M3, F6_E3M2, C64)"
}

@test "a model directory whose config misses a key is refused, naming file and key" {
	run --separate-stderr -1 st-inspect "$M/no-heads"
	[ "$output" = "" ]
	[ "$stderr" = "st-inspect: $M/no-heads/config.json: num_attention_heads: missing" ]
}

@test "a model directory whose file lacks a tensor exits 3, naming it" {
	run --separate-stderr -3 st-inspect "$M/no-norm"
	assert_line "config        $M/no-norm/config.json: 1 missing, 0 unexpected, 0 wrong shape"
	assert_line "  missing     model.norm.weight [4]"
	[ "$stderr" = "st-inspect: $M/no-norm/model.safetensors: does not match $M/no-norm/config.json: 1 missing, 0 unexpected, 0 wrong shape" ]
	run -3 st-inspect --json "$M/no-norm"
	[ "$(jq -c '.config | [.match, .missing]' <<<"$output")" = '[false,[{"name":"model.norm.weight","shape":[4]}]]' ]
}

@test "a missing file or directory is one line" {
	run -1 st-inspect "$M/nowhere"
	assert_output "st-inspect: $M/nowhere: No such file or directory"
}
