#!/usr/bin/env bats
# ppl over the whole held-out text (32,523 tokens; each pass runs the
# 151,936-row LM head for every token, a minute or more): fp32 at chunks
# 64, 128, 256 and 512 and the int8 and int4 levels (float activations,
# and int4 with its default int8 ones) at 256,
# against tests/golden/ppl-shakespeare-tiny.json. Run by `make test-long`
# (and CI), not `make test`; tests/ppl.bats checks every level on its first
# 8 chunks.
bats_require_minimum_version 1.5.0
load ../test_helper

setup() {
	load_assert
	PPL_GOLDEN="$GOLDEN/ppl-shakespeare-tiny.json"
}

@test "the whole text: fp32 at chunks 64 to 512 within 1e-4 of the golden" {
	run -0 --separate-stderr ppl "$TINY" --level fp32 --chunk 64,128,256,512 --no-compare --json
	run -0 jq -r --slurpfile g "$PPL_GOLDEN" '
		[.levels[] | . as $r | $g[0].levels.fp32[] | select(.chunk == $r.chunk) |
		 "\(.chunk) \($r.scored == .scored) \((($r.ppl - .ppl) / .ppl | fabs) < 1e-4)"] | .[]' <<<"$output"
	assert_output "$(printf '64 true true\n128 true true\n256 true true\n512 true true')"
}

@test "the whole text: int8, int8+embed within 1e-4; int4 below the round-to-nearest baseline" {
	# float activations (+f32), as the golden computes; then the default
	# (int8 activations) int4 levels against the same baseline
	run -0 --separate-stderr ppl "$TINY" --level int8+f32,int8+embed+f32,int4+f32,int4+embed+f32,int4,int4+embed \
		--no-compare --json
	run -0 jq -r --slurpfile g "$PPL_GOLDEN" '
		def rel($a; $b): (($a - $b) / $b | fabs);
		.levels[] | . as $r | (.level | sub("\\+f32$"; "")) as $l |
		if $l == "int8" or $l == "int8+embed" then "\(.level) \(rel(.ppl; $g[0].levels[$l][0].ppl) < 1e-4)"
		elif $l == "int4" then "\(.level) \(.ppl < $g[0].levels.int4g32[0].ppl)"
		else "\(.level) \(.ppl < $g[0].levels["int4g32+embed"][0].ppl)" end' <<<"$output"
	assert_output "$(printf 'int8+f32 true\nint8+embed+f32 true\nint4+f32 true\nint4+embed+f32 true\nint4 true\nint4+embed true')"
}
