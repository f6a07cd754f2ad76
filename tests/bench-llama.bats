#!/usr/bin/env bats
# bench --llama-bench: an external llama-bench inside bench's repetitions.
# The llama-bench here is tests/fixtures/llama-bench-stub, which prints
# fixed tokens/s (the k-th -m file: k x 1e6 on odd calls, k x 0.001 on even
# ones), so llama.cpp's side, the pairing, the ratios and the wins are
# closed forms; bench's own timings are never asserted. Nothing here needs
# llama.cpp itself.

bats_require_minimum_version 1.5.0

load test_helper

setup() {
	load_assert
	REC="$BATS_TEST_TMPDIR/results.jsonl"
	STUB="$ROOT/tests/fixtures/llama-bench-stub"
	export STUB_STATE="$BATS_TEST_TMPDIR/calls" STUB_LOG="$BATS_TEST_TMPDIR/log"
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	Q8="$BATS_TEST_TMPDIR/tiny.q8"
	A="$BATS_TEST_TMPDIR/a.gguf" B="$BATS_TEST_TMPDIR/b.gguf"
	: > "$A"
	: > "$B"
}

q8() { quantize "$TINY" -o "$Q8" --level int8 2>/dev/null; }

# Three repetitions at 1 and 2 threads, two models, two GGUF files.
two() {
	q8
	bench "$TINY" "$Q8" --llama-bench "$STUB" --gguf "$A" --gguf "$B" \
		--reps 3 --tokens 2 --prompt 4 --threads 1,2 --membw-mib 16 --no-sgemm \
		--record "$REC" "$@"
}

@test "llama-bench runs once per repetition and thread count, with bench's sizes" {
	run -0 two -o jsonl
	# One call per repetition (each with -r 1, which the stub checks), all
	# GGUF files in each, in --gguf order.
	run -0 cat "$STUB_LOG"
	assert_output "$(printf -- '-p 4 -n 2 -t 1 %s %s\n' "$A" "$B" "$A" "$B" "$A" "$B"
		printf -- '-p 4 -n 2 -t 2 %s %s\n' "$A" "$B" "$A" "$B" "$A" "$B")"
}

@test "llama records: the stub's tokens/s per repetition, in order, and their median" {
	two > /dev/null
	# Calls 1-3 are the 1-thread repetitions, 4-6 the 2-thread ones.
	run -0 jq -c 'select(.bench == "llama") | [.model == $a or .model == $b,
		.threads, .prefill_tok_s_reps, .decode_tok_s_reps, .decode_tok_s.median,
		.model_type, .llama_bench == $stub]' --arg a "$A" --arg b "$B" --arg stub "$STUB" "$REC"
	assert_output "$(cat <<-EOF
		[true,1,[1000000,0.001,1000000],[1000000,0.001,1000000],1000000,"stub Q1",true]
		[true,1,[2000000,0.002,2000000],[2000000,0.002,2000000],2000000,"stub Q2",true]
		[true,2,[0.001,1000000,0.001],[0.001,1000000,0.001],0.001,"stub Q1",true]
		[true,2,[0.002,2000000,0.002],[0.002,2000000,0.002],0.002,"stub Q2",true]
		EOF
	)"
}

@test "vs_llama: the n-th MODEL pairs with the n-th --gguf" {
	two > /dev/null
	run -0 jq -r 'select(.bench == "vs_llama") | [.precision, (.gguf | split("/") | last),
		.threads] | @tsv' "$REC"
	assert_output "$(printf 'bf16\ta.gguf\t1\nint8\tb.gguf\t1\nbf16\ta.gguf\t2\nint8\tb.gguf\t2')"
}

@test "vs_llama: each ratio is ours / llama.cpp's in that repetition; wins count ours ahead" {
	two > /dev/null
	# Every figure is rounded to 4 significant digits (relative error at most
	# 5e-4 each): a ratio recomputed from the rounded tokens/s agrees within
	# 1.5e-3 relative. The stub's 1e6 tok/s beats any run of the tiny model
	# and its 0.001 tok/s loses to any, so ours wins exactly the stub's even
	# calls: 1 of 3 at 1 thread (call 2), 2 of 3 at 2 threads (calls 4, 6).
	run -0 jq -r 'select(.bench == "vs_llama") | . as $r
		| [range(.reps) | . as $i | ["prefill", "decode"][] as $k
		   | ($r["ours_" + $k + "_tok_s_reps"][$i] / $r["llama_" + $k + "_tok_s_reps"][$i]) as $want
		   | ($r[$k + "_ratio_reps"][$i] - $want | fabs) / $want <= 1.5e-3] | all' "$REC"
	assert_output "$(printf 'true\ntrue\ntrue\ntrue')"
	run -0 jq -r 'select(.bench == "vs_llama") | [.threads, .prefill_wins, .decode_wins,
		.reps, (.decode_ratio.median == (.decode_ratio_reps | sort | .[1]))] | @tsv' "$REC"
	assert_output "$(printf '1\t1\t1\t3\ttrue\n1\t1\t1\t3\ttrue\n2\t2\t2\t3\ttrue\n2\t2\t2\t3\ttrue')"
}

@test "the model records sidebyside reads are still there, unchanged" {
	run -0 two -o jsonl
	run -0 jq -s -c 'map(.bench) | group_by(.) | map([.[0], length])' <<<"$output"
	assert_output '[["kernel",2],["llama",4],["membw",2],["model",4],["vs_llama",4]]'
	run -0 jq -r 'select(.bench == "model") | [.precision, .int8_activations, .threads,
		(.prefill_tok_s.median > 0), (.decode_tok_s.median > 0)] | @tsv' "$REC"
	assert_output "$(printf 'bf16\tfalse\t1\ttrue\ttrue\nint8\ttrue\t1\ttrue\ttrue\nbf16\tfalse\t2\ttrue\ttrue\nint8\ttrue\t2\ttrue\ttrue')"
}

@test "--f32-activations: the +f32 twin pairs with its container's GGUF file" {
	q8
	run -0 bench "$TINY" "$Q8" --f32-activations --llama-bench "$STUB" --gguf "$A" \
		--gguf "$B" --reps 1 --tokens 2 --prompt 4 --threads 1 --membw-mib 16 --no-sgemm \
		--no-record -o jsonl
	run -0 jq -r 'select(.bench == "vs_llama") | [.name, .int8_activations,
		(.gguf | split("/") | last)] | @tsv' <<<"$output"
	assert_output "$(printf 'shakespeare-tiny bf16\tfalse\ta.gguf\ntiny.q8 int8\ttrue\tb.gguf\ntiny.q8 int8+f32\tfalse\tb.gguf')"
}

@test "-o md: a table of both engines, ratios and wins" {
	run -0 two
	assert_line --partial "against llama.cpp ($STUB, -mmp 0), in the same repetitions"
	# The ratios themselves are checked above; here only the table: our
	# median against the stub's, and the wins (closed forms). A ratio's
	# digits depend on how fast the tiny model ran (7804 tok/s / 1e6 prints
	# 0.01x), so they are not asserted here.
	assert_line --regexp '^\| shakespeare-tiny bf16 \| a\.gguf \(stub Q1\) \| 1 \| [0-9.]+ / 1000000\.0 \| [0-9.]+x \(1/3\) \| [0-9.]+ / 1000000\.0 \| [0-9.]+x \(1/3\) \|$'
	assert_line --regexp '^\| tiny\.q8 int8 \| b\.gguf \(stub Q2\) \| 2 \| [0-9.]+ / 0\.0 \| [0-9.]+x \(2/3\) \|'
}

@test "plot-bench draws llama-decode.svg and llama-prefill.svg from the run" {
	two > /dev/null
	mkdir "$BATS_TEST_TMPDIR/out"
	run -0 "$ROOT/scripts/plot-bench" --results "$REC" -o "$BATS_TEST_TMPDIR/out"
	assert_line "$BATS_TEST_TMPDIR/out/llama-decode.svg"
	assert_line "$BATS_TEST_TMPDIR/out/llama-prefill.svg"
	for f in llama-decode llama-prefill; do
		grep -q '<svg' "$BATS_TEST_TMPDIR/out/$f.svg"
		grep -q 'a.gguf' "$BATS_TEST_TMPDIR/out/$f.svg"
		grep -q 'b.gguf' "$BATS_TEST_TMPDIR/out/$f.svg"
	done
	# A run without llama records draws no llama pictures.
	rm "$BATS_TEST_TMPDIR"/out/*
	bench "$TINY" -r 1 -n 2 -p 4 -t 1 --membw-mib 16 --no-sgemm --record "$BATS_TEST_TMPDIR/plain.jsonl" > /dev/null
	run -0 "$ROOT/scripts/plot-bench" --results "$BATS_TEST_TMPDIR/plain.jsonl" -o "$BATS_TEST_TMPDIR/out"
	refute_line --partial llama
}

@test "usage errors: --gguf and --llama-bench go together, one file per MODEL" {
	run -2 bench "$TINY" --llama-bench "$STUB" --no-record
	assert_line --index 0 "bench: --llama-bench: needs the models' GGUF files (--gguf FILE, one per MODEL)"
	run -2 bench "$TINY" --gguf "$A" --no-record
	assert_line --index 0 "bench: --gguf: needs --llama-bench PATH"
	run -2 bench "$TINY" --llama-bench "$STUB" --gguf "$A" --gguf "$B" --no-record
	assert_line --index 0 "bench: --gguf: 2 files for 1 model (one per MODEL, in order; --synthetic's three first)"
	run -2 bench --membw --llama-bench "$STUB" --gguf "$A" --no-record
	assert_line --index 0 "bench: --membw: measures bandwidth only, without --llama-bench"
}

@test "a missing llama-bench or GGUF file is an error naming it" {
	run -1 bench "$TINY" --llama-bench "$BATS_TEST_TMPDIR/nope" --gguf "$A" --no-record
	assert_output "bench: --llama-bench: $BATS_TEST_TMPDIR/nope: No such file or directory"
	run -1 bench "$TINY" --llama-bench "$STUB" --gguf "$BATS_TEST_TMPDIR/x.gguf" --no-record
	assert_output "bench: --gguf: $BATS_TEST_TMPDIR/x.gguf: No such file or directory"
}

@test "llama-bench failing, or printing no result, stops bench with one line and no records" {
	q1() {
		bench "$TINY" --llama-bench "$STUB" --gguf "$A" -r 1 -n 2 -p 4 -t 1 \
			--membw-mib 16 --no-sgemm --record "$REC"
	}
	STUB_MODE=fail run -1 --separate-stderr q1
	assert_equal "$stderr" "bench: $STUB: exit status 1: main: error: failed to load model '$A'"
	STUB_MODE=nodecode run -1 --separate-stderr q1
	assert_equal "$stderr" "bench: $STUB: no decode result for $A at 1 thread in its output"
	STUB_MODE=garbage run -1 --separate-stderr q1
	assert_equal "$stderr" "bench: $STUB: output line 1: not a JSON object (-o jsonl)"
	[ ! -s "$REC" ]
}
