#!/usr/bin/env bats
# bench: the work it does and the format of what it reports, never its
# timings. Every run uses a small bandwidth buffer (--membw-mib) and writes
# its records into the test's own directory.

bats_require_minimum_version 1.5.0

load test_helper

setup() {
	load_assert
	REC="$BATS_TEST_TMPDIR/results.jsonl"
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
}

quick() {
	bench -r 1 -n 2 -p 4 -t 1 --membw-mib 16 --record "$REC" "$@"
}

@test "a run on shakespeare-tiny emits membw, kernel, model and sgemm records with every key" {
	run -0 quick -o jsonl "$TINY"
	assert_equal "${#lines[@]}" 4
	run -0 jq -s -c 'map(.bench)' <<<"$output"
	assert_output '["membw","kernel","model","sgemm"]'
	run -0 jq -r 'select(.bench == "model") | . as $o | [
		(["date","commit","cpu","cpu_flags","cores","kernels","load1","model",
		  "name","precision","weights","threads","prompt","tokens","reps",
		  "bytes_per_token","open_s","rss_mib","membw_gbs","limit_tok_s",
		  "kernel_gbs","fraction_kernel_bound"]
		 | map(. as $k | $o | has($k)) | all),
		(["prefill_tok_s","ttft_ms","decode_ms","decode_tok_s","sampler_us",
		  "fraction_of_limit"] | map(. as $k | $o[$k] | has("median") and
		  has("min") and has("max")) | all),
		.precision, .weights, .threads, .prompt, .tokens, .reps] | @tsv' "$REC"
	assert_output "$(printf 'true\ttrue\tbf16\tcopied\t1\t4\t2\t1')"
}

@test "the records on stdout are the lines appended to the record file" {
	run -0 quick -o jsonl "$TINY"
	assert_equal "$output" "$(cat "$REC")"
}

@test "the record file is appended to, never rewritten" {
	quick "$TINY" >/dev/null
	quick "$TINY" >/dev/null
	run -0 jq -s -c 'map(.bench)' "$REC"
	assert_output '["membw","kernel","model","sgemm","membw","kernel","model","sgemm"]'
}

@test "bytes per token are the bytes of every matrix (tied: the embedding is the LM head)" {
	want=$(st-inspect --json "$TINY" |
		jq '[.tensors[] | select(.shape | length == 2) | .bytes] | add')
	quick "$TINY" >/dev/null
	run -0 jq 'select(.bench == "model") | .bytes_per_token' "$REC"
	assert_output "$want"
}

@test "untied: the embedding is read one row per token, so it does not count" {
	want=$(st-inspect --json "$SHAPES" | jq '[.tensors[] | select(.shape | length == 2)
		| select(.name != "model.embed_tokens.weight") | .bytes] | add')
	quick "$SHAPES" >/dev/null
	run -0 jq 'select(.bench == "model") | .bytes_per_token' "$REC"
	assert_output "$want"
}

@test "the fraction of the limit is bytes per token x tokens/s / bandwidth" {
	quick "$TINY" >/dev/null
	run -0 jq -r 'select(.bench == "model") |
		(.bytes_per_token * .decode_tok_s.median / (.membw_gbs * 1e9)) /
		.fraction_of_limit.median | . > 0.99 and . < 1.01' "$REC"
	assert_output true
}

@test "two models alternate, and the second is paired against the first" {
	run -0 bench -r 3 -n 2 -p 4 -t 1,2 --membw-mib 16 --no-sgemm --record "$REC" \
		-o jsonl "$TINY" "$SHAPES"
	run -0 jq -r 'select(.bench == "model") | [.threads, .name, .vs // "-",
		(.decode_wins // 0 | . >= 0 and . <= 3), .reps] | @tsv' "$REC"
	assert_output "$(printf '%s\n' \
		"1	shakespeare-tiny bf16	-	true	3" \
		"1	qwen-shapes bf16	shakespeare-tiny bf16	true	3" \
		"2	shakespeare-tiny bf16	-	true	3" \
		"2	qwen-shapes bf16	shakespeare-tiny bf16	true	3")"
}

@test "--weights makes one contender per mode" {
	run -0 quick --no-sgemm -w copied,mapped,f32 -o jsonl "$TINY"
	run -0 jq -r 'select(.bench == "model") | [.precision, .weights] | @tsv' "$REC"
	assert_output "$(printf 'bf16\tcopied\nbf16\tmapped\nf32\twidened')"
}

@test "--synthetic writes the model and containers once, the containers those quantize writes" {
	run -0 quick --no-sgemm --synthetic --config "$SHAPES/config.json"
	assert_output --partial "| synthetic int4 |"
	dir=$(echo "$XDG_CACHE_HOME"/qwenpipe/synthetic-qwen-shapes-*)
	[ -f "$dir/model.safetensors" ]
	run -0 st-inspect "$dir"
	assert_output --partial "config        $dir/config.json: matches"
	quantize "$dir" -o "$BATS_TEST_TMPDIR/q8" --embeddings --level int8 2>/dev/null
	quantize "$dir" -o "$BATS_TEST_TMPDIR/q4" --embeddings --level int4 2>/dev/null
	cmp "$BATS_TEST_TMPDIR/q8" "$dir/model.q8"
	cmp "$BATS_TEST_TMPDIR/q4" "$dir/model.q4"
	run -0 jq -r 'select(.bench == "model") | .precision' "$REC"
	assert_output "$(printf 'bf16\nint8\nint4')"
	# Cached: the second run writes nothing.
	run -0 --separate-stderr quick --no-sgemm --synthetic --config "$SHAPES/config.json"
	refute_output --partial "bench: writing"
	[ -z "$stderr" ]
}

@test "--membw measures the bandwidth at each thread count, alone" {
	run -0 bench --membw --membw-mib 16 -t 1,2 --record "$REC" -o jsonl
	run -0 jq -r '[.bench, .threads, .bytes, .passes, (.gbs.max > 0)] | @tsv' "$REC"
	assert_output "$(printf 'membw\t1\t16777216\t5\ttrue\nmembw\t2\t16777216\t5\ttrue')"
}

@test "-o csv has a header and one row per model and thread count" {
	run -0 quick --no-sgemm -t 1,2 -o csv "$TINY"
	assert_equal "${#lines[@]}" 3
	assert_line --index 0 --regexp '(^|,)decode_ms_median,decode_ms_min,decode_ms_max(,|$)'
	run -0 awk -F, '{ print NF }' <<<"$output"
	assert_equal "${lines[0]}" "${lines[1]}"
	assert_equal "${lines[0]}" "${lines[2]}"
}

@test "-o md prints the bandwidth and a table" {
	run -0 quick "$TINY"
	assert_output --partial "memory read bandwidth, 1 thread:"
	assert_output --partial "bf16 matmul kernel, one thread, 64x64 in cache:"
	assert_output --partial "| model | threads | prefill tok/s |"
	assert_output --partial "| shakespeare-tiny bf16 | 1 |"
	assert_output --regexp "\| OpenBLAS sgemm \([A-Za-z0-9]+\), f32 shapes \| 1 \|"
}

@test "without ./bench/ and --record it says it records nothing" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr bench --membw --membw-mib 16 -t 1
	assert_equal "$stderr" "bench: not recording: no ./bench/ directory here (--record FILE to choose one)"
}

@test "bad flags are usage errors" {
	run -2 bench -o xml "$TINY"
	assert_line --index 0 "bench: --output: 'xml' is not md, jsonl or csv"
	run -2 bench -t 0 "$TINY"
	assert_line --index 0 --partial "bench: --threads: "
	run -2 bench -t 1,x "$TINY"
	assert_line --index 0 --partial "bench: --threads: "
	run -2 bench -w mmap "$TINY"
	assert_line --index 0 "bench: --weights: 'mmap' is not mapped, copied or f32"
	run -2 bench -r 0 "$TINY"
	assert_line --index 0 --partial "bench: --reps: "
	run -2 bench
	assert_line --index 0 "bench: missing MODEL (or --synthetic, --membw)"
	run -2 bench --membw "$TINY"
	assert_line --index 0 "bench: --membw: measures bandwidth only, without MODEL or --synthetic"
	run -2 bench --frobnicate
	assert_line --index 0 "bench: unknown option '--frobnicate'"
	assert_line --index 1 --partial "usage: bench MODEL..."
}

@test "a model that does not open is a runtime error naming it" {
	run -1 quick "$BATS_TEST_TMPDIR/nope"
	assert_output --partial "bench: $BATS_TEST_TMPDIR/nope"
	[ ! -s "$REC" ]
}

@test "plot-bench draws the latest run's decode and bandwidth pictures, and ppl's" {
	bench -r 1 -n 2 -p 4 -t 1,2 --membw-mib 16 --no-sgemm --record "$REC" "$TINY" \
		"$SHAPES" >/dev/null
	cat >"$BATS_TEST_TMPDIR/ppl.json" <<-'EOF2'
	{"text": "heldout.txt", "levels": [
	 {"level": "fp32", "weight_bytes": 4000, "ppl": 285.6},
	 {"level": "bf16", "weight_bytes": 2000, "ppl": 285.7},
	 {"level": "int8", "weight_bytes": 1062, "ppl": 285.7},
	 {"level": "int4", "weight_bytes": 625, "ppl": 286.2}]}
	EOF2
	run -0 "$ROOT/scripts/plot-bench" --results "$REC" --ppl "$BATS_TEST_TMPDIR/ppl.json" \
		-o "$BATS_TEST_TMPDIR"
	assert_output "$(printf '%s\n' "$BATS_TEST_TMPDIR/decode.svg" \
		"$BATS_TEST_TMPDIR/bandwidth.svg" "$BATS_TEST_TMPDIR/ppl.svg")"
	for f in decode bandwidth ppl; do
		grep -q '</svg>' "$BATS_TEST_TMPDIR/$f.svg"
	done
	# Both models, both thread counts: two bars each in the decode picture.
	grep -q 'shakespeare-tiny bf16' "$BATS_TEST_TMPDIR/decode.svg"
	grep -q 'qwen-shapes bf16' "$BATS_TEST_TMPDIR/decode.svg"
	grep -q '2 threads' "$BATS_TEST_TMPDIR/decode.svg"
	grep -q 'int4' "$BATS_TEST_TMPDIR/ppl.svg"
	[ -z "$(ls "$BATS_TEST_TMPDIR" | grep '\.tmp$')" ]
}

@test "plot-bench refuses records without a model run" {
	run -1 "$ROOT/scripts/plot-bench" --results /dev/null -o "$BATS_TEST_TMPDIR"
	assert_output "plot-bench: /dev/null: no model records"
	run -2 "$ROOT/scripts/plot-bench" --frob
	assert_line --index 0 "plot-bench: --frob: unknown argument"
}

@test "one kernel ceiling per precision present, on the first model's hidden x hidden" {
	run -0 bench -r 1 -n 2 -p 4 -t 1 --membw-mib 16 --no-sgemm --record "$REC" \
		--synthetic --config "$SHAPES/config.json"
	run -0 jq -r 'select(.bench == "kernel") | [.precision, .rows, .cols, (.gbs.max > 0)] | @tsv' "$REC"
	assert_output "$(printf 'bf16\t256\t256\ttrue\nint8\t256\t256\ttrue\nint4\t256\t256\ttrue')"
	run -0 jq -r 'select(.bench == "model") | (.fraction_kernel_bound > 0 and
		.fraction_kernel_bound <= 1 and .kernel_gbs > 0)' "$REC"
	assert_output "$(printf 'true\ntrue\ntrue')"
}

@test "GGUF files: f16 and q8_0 run as stored, each kind with its own kernel ceiling and bytes" {
	d=$BATS_TEST_TMPDIR
	for l in f16 q8_0; do quantize "$TINY" -o "$d/t.$l.gguf" --format gguf --level $l 2>/dev/null; done
	run -0 bench -r 1 -n 2 -p 4 -t 1 --membw-mib 16 --no-sgemm --record "$REC" \
		"$d/t.f16.gguf" "$d/t.q8_0.gguf" "$d/t.f16.gguf"
	run -0 jq -r 'select(.bench == "kernel") | .precision' "$REC"
	assert_output "$(printf 'f16\nint8 (groups)')"
	# bytes per token: 2 a weight (f16); 1 a weight and the file's 2-byte
	# half scale per 32 (Q8_0 tiled for int8 activations, the scales kept
	# as halves: lib/kernels/qtile.h), every matrix, the embedding tied
	w=$(st-inspect --json "$TINY" | jq '[.tensors[] | select(.shape | length == 2)
		| .shape[0] * .shape[1]] | add')
	run -0 jq -r 'select(.bench == "model") | [.precision, .bytes_per_token] | @tsv' "$REC"
	assert_output "$(printf 'f16\t%d\nint8\t%d\nf16\t%d' $((2 * w)) $((w + w / 16)) $((2 * w)))"
}

@test "a container runs with int8 activations; --f32-activations adds its exact twin, named +f32" {
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/t.q8" --level int8 2>/dev/null
	run -0 quick -o jsonl --no-sgemm --f32-activations "$BATS_TEST_TMPDIR/t.q8"
	run -0 jq -r 'select(.bench != "membw") | [.bench, .precision, .name // "-",
		(.int8_activations | tostring)] | @tsv' <<<"$output"
	assert_output "$(printf 'kernel\tint8\t-\tnull\nkernel\tint8+f32\t-\tnull\nmodel\tint8\tt.q8 int8\ttrue\nmodel\tint8\tt.q8 int8+f32\tfalse')"
	# --int8-activations, the default, adds nothing (scripts still say it)
	run -0 quick -o jsonl --no-sgemm --int8-activations "$BATS_TEST_TMPDIR/t.q8"
	run -0 jq -r 'select(.bench == "model") | [.name, .int8_activations] | @tsv' <<<"$output"
	assert_output "$(printf 't.q8 int8\ttrue')"
	run -2 quick --f32-activations "$TINY"
	assert_line -n 0 "bench: --f32-activations: no int8 or int4 container or GGUF file among the models (quantize one, or --synthetic)"
}

@test "a q4_k_m GGUF file runs with int8 activations; --f32-activations adds its exact twin" {
	run -0 quick -o jsonl --no-sgemm --f32-activations "$GOLDEN/gguf/shakespeare-tiny.q4_k_m.gguf"
	run -0 jq -r 'select(.bench == "model") | [.name, (.int8_activations | tostring)] | @tsv' <<<"$output"
	assert_output "$(printf 'shakespeare-tiny.q4_k_m.gguf q5_0\ttrue\nshakespeare-tiny.q4_k_m.gguf q5_0+f32\tfalse')"
}
