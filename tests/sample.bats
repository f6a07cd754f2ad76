#!/usr/bin/env bats
# sample: flags, bad streams. (The generation loop with a stand-in forward
# is tests/c/test_sample_loop.c; with the real forward, tests/pipeline.bats.)
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
}

USAGE="usage: sample [--greedy] [--temperature T] [--top-k K] [--top-p P] [--min-p P] [--repeat-penalty R] [--seed S] [-n N] [--ignore-eos] [--emit-eos] [--logprobs K --logprobs-file FILE] [-v] < logits"

@test "--help prints the usage and the flags on stdout" {
	run -0 sample --help
	assert_line --index 0 "$USAGE"
	assert_line --partial "--top-p P"
}

@test "a flag out of range is a usage error naming the flag and the range" {
	run --separate-stderr -2 sample --top-p 1.5 </dev/null
	[ "$output" = "" ]
	[ "${stderr_lines[0]}" = "sample: --top-p: 1.5 is out of range [0, 1]" ]
	[ "${stderr_lines[1]}" = "$USAGE" ]
	run -2 sample --temperature -1 </dev/null
	assert_line --index 0 "sample: --temperature: -1 is out of range [0, 100]"
	run -2 sample -n x </dev/null
	assert_line --index 0 "sample: --tokens: 'x' is not a whole number"
	run -2 sample --top-k 1.5 </dev/null
	assert_line --index 0 "sample: --top-k: '1.5' is not a whole number"
}

@test "unknown options, missing values and stray arguments are usage errors" {
	run -2 sample --frob </dev/null
	assert_line --index 0 "sample: unknown option '--frob'"
	run -2 sample -x </dev/null
	assert_line --index 0 "sample: unknown option '-x'"
	run -2 sample --seed </dev/null
	assert_line --index 0 "sample: --seed: missing value"
	run -2 sample extra </dev/null
	assert_line --index 0 "sample: unexpected argument 'extra'"
	run -2 sample --logprobs 3 </dev/null
	assert_line --index 0 "sample: --logprobs and --logprobs-file go together"
}

@test "an empty input, a wrong magic and a wrong version are one-line errors" {
	run -1 sample </dev/null
	assert_output "sample: <stdin>: empty input, expected a logits stream"
	run -1 sample < <(printf 'QWLOGITX')
	assert_output "sample: <stdin>: not a logits stream (bad magic)"
	run -1 sample < <(printf 'QWLOGITS\004\000\000\000'; head -c 4228 /dev/zero)
	assert_output "sample: <stdin>: logits stream version 4 is not supported (this reader knows version 3)"
	# version 2: frames without the draft field (before speculative frames)
	run -1 sample < <(printf 'QWLOGITS\002\000\000\000'; head -c 4228 /dev/zero)
	assert_output "sample: <stdin>: logits stream version 2 is not supported (this reader knows version 3)"
	run -1 sample < <(printf 'QWLOGITS\003\000\000\000'; head -c 100 /dev/zero)
	assert_output "sample: <stdin>: truncated logits stream header"
}

@test "a terminal on stdin is refused instead of waiting for binary" {
	run -2 script -qec "'$BIN/sample'" /dev/null
	assert_line --index 0 --partial "sample: <stdin> is a terminal: expected a logits stream (forward MODEL | sample)"
}

@test "--logprobs writes valid JSON: a token of logit -inf (probability 0) has logprob null" {
	# vocabulary 8 (tests/fuzz/make-corpus.sh): logits 2, 1, then -inf for
	# the masked ids 2..7
	S=$ROOT/tests/fuzz/corpus/stream
	{
		head -c 4240 "$S/score-last"
		printf 'FRME\x00\x00\x00\x00\x01\x00\x00\x00\xff\xff\xff\xff\x03\x00\x00\x00'
		printf '\x00\x00\x00\x40\x00\x00\x80\x3f'
		for _ in 1 2 3 4 5 6; do printf '\x00\x00\x80\xff'; done
	} >"$BATS_TEST_TMPDIR/masked"
	lp=$BATS_TEST_TMPDIR/lp.jsonl
	run -0 sample --greedy --ignore-eos --logprobs 4 --logprobs-file "$lp" <"$BATS_TEST_TMPDIR/masked"
	assert_output 0
	# jq parses it (it refuses -inf and nan); log p(0) = 2 - log(e^2 + e^1)
	# and log p(1) = log p(0) - 1 (9 significant digits written)
	run -0 jq -c '[.id, .top[2].logprob, .top[3].logprob, (.logprob + (1 + (-1 | exp) | log) | fabs < 1e-6),
		(.top[1].logprob - .top[0].logprob + 1 | fabs < 1e-6), .after]' "$lp"
	assert_output '[0,null,null,true,true,[{"id":0,"p":1}]]'
}
