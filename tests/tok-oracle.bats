#!/usr/bin/env bats
# tok against the reference itself: HuggingFace tokenizers 0.23.2 (pinned in
# tests/oracle/package.json, installed by `npm ci` there, as .ci/run does) on
# a seeded corpus of our own (tests/oracle/gen.js), different from the
# bundled golden one. Skipped, saying so, when the oracle is not installed.
bats_require_minimum_version 1.5.0
load test_helper

oracle_or_skip() {
	[ -d "$ROOT/tests/oracle/node_modules/tokenizers" ] ||
		skip "the oracle is not installed (tests/oracle/node_modules); run: cd tests/oracle && npm ci"
	command -v node >/dev/null || skip "node is not installed"
}

@test "tok encode, encode --no-special and decode agree with HuggingFace on 3,000 fresh strings" {
	oracle_or_skip
	run node "$ROOT/tests/oracle/differential.js" "$BIN/tok" \
		"$DATA/qwen2.5-0.5b-instruct/tokenizer.json" 7 3000 "$BATS_TEST_TMPDIR"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "encode: 3000/3000 exact" ]
	[ "${lines[1]}" = "encode --no-special: 3000/3000 exact" ]
	[[ "${lines[2]}" == "decode: exact "* ]]
}
