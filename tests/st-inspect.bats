#!/usr/bin/env bats
# st-inspect: summaries, the config diff, --json, --tensor, --check,
# --manifest, and every kind of malformed file refused with one line.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
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
	assert_line "st-inspect: --frobnicate: unknown option"
	run -2 st-inspect --tensor
	assert_line "st-inspect: --tensor: needs a value"
	run -2 st-inspect --check --tensor x "$TINY"
	assert_line "st-inspect: --tensor, --check and --manifest are exclusive"
}
