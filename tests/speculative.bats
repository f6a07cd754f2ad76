#!/usr/bin/env bats
# Speculative decoding (forward --draft, lib/format/stream.h): the ids are
# the same with drafting on and off, bit for bit, for every sampler
# setting, thread count, weight type and way of stopping. Each run asserts
# from forward's own counts (-v) that drafts were both accepted and
# rejected, so the verification path is exercised both ways.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
	# A passage of the held-out text and its first line again: the model
	# partly copies it, so drafts are often right and often wrong.
	P=$BATS_TEST_TMPDIR/prompt
	{ head -c 700 "$TINY/heldout.txt"; head -c 60 "$TINY/heldout.txt"; } | tok encode > "$P"
}

# same MODEL "FORWARD FLAGS" "SAMPLE FLAGS": generates with --draft 0 and
# --draft 4 and asserts the same ids (and the same --logprobs lines), and
# that the drafting run both accepted and rejected drafts.
same() {
	local d=$BATS_TEST_TMPDIR k
	for k in 0 4; do
		# shellcheck disable=SC2086
		forward "$1" -v --draft $k $2 < "$P" 2> "$d/ferr$k" |
			sample $3 --logprobs 2 --logprobs-file "$d/lp$k" > "$d/ids$k"
	done
	cmp "$d/ids0" "$d/ids4" || { echo "ids differ: forward $2 | sample $3" >&2; return 1; }
	cmp "$d/lp0" "$d/lp4" || { echo "logprobs differ: forward $2 | sample $3" >&2; return 1; }
	[ -s "$d/ids0" ]
	grep -qx 'forward: 0 drafted, 0 accepted' "$d/ferr0" || [ "$(grep -c drafted "$d/ferr0")" = 0 ]
	local counts
	counts=$(sed -n 's/^forward: \([0-9]*\) drafted, \([0-9]*\) accepted$/\1 \2/p' "$d/ferr4")
	read -r drafted accepted <<<"$counts"
	if ! ((accepted > 0 && accepted < drafted)); then
		echo "forward $2 | sample $3: $drafted drafted, $accepted accepted" >&2
		return 1
	fi
}

@test "drafting changes no id: greedy and sampling, seeds, temperatures, top-k/p, min-p, penalties" {
	same "$TINY" "-t 1" "--greedy -n 100"
	same "$TINY" "-t 1" "--seed 2 --temperature 0.4 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--seed 3 --temperature 1.2 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--seed 9 --temperature 0.3 --top-k 0 --top-p 1 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--seed 4 --top-k 3 --temperature 0.6 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--seed 5 --top-k 0 --top-p 0.5 --temperature 0.5 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--seed 6 --min-p 0.2 -n 100 --ignore-eos"
	# the penalty's context is the accepted ids only: a rejected draft in
	# it would change later tokens
	same "$TINY" "-t 1" "--seed 7 --temperature 0.5 --repeat-penalty 1.3 -n 100 --ignore-eos"
	same "$TINY" "-t 1" "--greedy --repeat-penalty 1.3 -n 100 --ignore-eos"
	tmpdir_empty
}

@test "drafting changes no id: 2 threads, int8 and int4 containers, --int8-activations, GGUF" {
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/t.q8" --level int8 2>/dev/null
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/t.q4" --level int4 2>/dev/null
	same "$TINY" "-t 2" "--seed 8 --top-k 5 -n 100 --ignore-eos"
	same "$BATS_TEST_TMPDIR/t.q8" "-t 2" "--seed 9 --top-k 5 -n 100 --ignore-eos"
	same "$BATS_TEST_TMPDIR/t.q8" "-t 1 --int8-activations" "--greedy -n 100 --ignore-eos"
	same "$BATS_TEST_TMPDIR/t.q4" "-t 2 --int8-activations" "--seed 10 --top-k 5 -n 100 --ignore-eos"
	same "$GOLDEN/gguf/shakespeare-tiny.bf16.gguf" "-t 1" "--seed 11 --top-k 5 -n 100 --ignore-eos"
	same "$GOLDEN/gguf/shakespeare-tiny.q4_k_m.gguf" "-t 2" "--greedy -n 100 --ignore-eos"
	tmpdir_empty
}

@test "drafting changes no stop: -n and a full context (the end of sequence: test_sample_loop)" {
	d=$BATS_TEST_TMPDIR
	for k in 0 4; do
		forward "$TINY" --draft $k < "$P" | sample --seed 12 -n 33 -v > "$d/n$k" 2> "$d/nerr$k"
		# a full context: 208 prompt ids, frames at positions 207..267
		forward "$TINY" --draft $k --ctx 268 < "$P" | sample --greedy --ignore-eos > "$d/full$k" 2> "$d/ferr$k"
	done
	cmp "$d/n0" "$d/n4"
	run -0 grep -o "stop: [a-z ]*; [0-9]* tokens" "$d/nerr4"
	assert_output "stop: max tokens; 33 tokens"
	cmp "$d/full0" "$d/full4"
	[ "$(wc -l < "$d/full4")" = 61 ]
	run -0 cat "$d/ferr4"
	assert_output "sample: warning: the context is full (268 positions; forward --ctx sets it): generation stopped"
	tmpdir_empty
}

@test "scripts/generate --stop and a conversation through scripts/chat are the same with drafting on and off" {
	text=$(head -c 200 "$TINY/heldout.txt")
	for k in 0 4; do
		"$ROOT/scripts/generate" "$TINY" "$text$text" --seed 13 --top-k 5 --draft $k -n 80 --stop "Bianca" > "$BATS_TEST_TMPDIR/g$k"
		printf 'Who art thou?\nWho art thou?\nSay again: who art thou?\n' |
			"$ROOT/scripts/chat" "$TINY" --seed 14 --top-k 5 -n 40 --draft $k > "$BATS_TEST_TMPDIR/c$k"
	done
	cmp "$BATS_TEST_TMPDIR/g0" "$BATS_TEST_TMPDIR/g4"
	cmp "$BATS_TEST_TMPDIR/c0" "$BATS_TEST_TMPDIR/c4"
	[ -s "$BATS_TEST_TMPDIR/c4" ]
	tmpdir_empty
}

@test "--draft and --draft-ngram are checked; --no-cache does not draft" {
	run -2 forward "$TINY" --draft 65
	assert_line --index 0 "forward: --draft: 65 is out of range [0, 64]"
	run -2 forward "$TINY" --draft-ngram 0
	assert_line --index 0 "forward: --draft-ngram: 0 is out of range [1, 8]"
	run -2 forward "$TINY" --no-cache --draft 2
	assert_line --index 0 "forward: --draft needs the cache (--no-cache runs one token at a time)"
}

@test "forward --dump shows the drafts of a generation's batches" {
	forward "$TINY" --draft 4 < "$P" | tee "$BATS_TEST_TMPDIR/stream" | sample --greedy -n 40 > /dev/null
	forward --dump --top 1 < "$BATS_TEST_TMPDIR/stream" > "$BATS_TEST_TMPDIR/dump"
	# each frame with a draft is followed by the frame of that id, one
	# position on
	run -0 awk '
		d != "" { if ($1 != "pos=" p + 1 || $2 != "token=" d) bad++; n++ }
		{ d = ""; split($1, a, "="); p = a[2] }
		$3 ~ /^draft=/ { split($3, b, "="); d = b[2] }
		END { print n, bad + 0 }' "$BATS_TEST_TMPDIR/dump"
	[[ "$output" =~ ^[1-9][0-9]*" 0"$ ]]
}
