#!/usr/bin/env bats
# forward: modes, the stream it writes, errors, and no FIFO left behind.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper
	load_assert
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
}

# No forward.* directory may be left in $TMPDIR.
no_fifo_dir() {
	run find "$TMPDIR" -name 'forward.*'
	assert_output ""
}

@test "--score writes one frame for the last position, readable by --dump" {
	printf '1235 3234\n395 593 771\n2995 475\n' | forward "$SHAPES" --score > "$BATS_TEST_TMPDIR/out"
	run forward --dump --top 3 < "$BATS_TEST_TMPDIR/out"
	assert_success
	assert_line --index 0 "# vocab 4096, eos 1, ctx 4096, score"
	# rand7 in the golden set: the argmax at its last position is 2602.
	assert_line --index 1 --regexp '^pos=6 token=475 argmax=2602 top=2602:[0-9.]+,[0-9]+:[0-9.]+,[0-9]+:[0-9.]+$'
	assert_equal "${#lines[@]}" 2
}

@test "--score --all writes a frame for every position with the argmax of transformers" {
	printf '1235 3234 395 593 771 2995 475\n' | forward "$SHAPES" --score --all > "$BATS_TEST_TMPDIR/out"
	run forward --dump < "$BATS_TEST_TMPDIR/out"
	assert_success
	got=$(printf '%s\n' "${lines[@]:1}" | sed 's/.*argmax=\([0-9]*\).*/\1/' | paste -sd,)
	want=$(jq -c '.argmax | join(",")' -r "$GOLDEN/qwen-shapes/rand7.json")
	assert_equal "$got" "$want"
}

@test "stdout a regular file means --score" {
	echo 5 6 | forward "$SHAPES" > "$BATS_TEST_TMPDIR/out"
	run forward --dump < "$BATS_TEST_TMPDIR/out"
	assert_line --index 1 --partial "pos=1 token=6 "
	echo 5 6 | forward "$SHAPES" --all > "$BATS_TEST_TMPDIR/out"
	run forward --dump < "$BATS_TEST_TMPDIR/out"
	assert_line --index 1 --partial "pos=0 token=5 "
	assert_line --index 2 --partial "pos=1 token=6 "
	no_fifo_dir
}

@test "a model given as its .safetensors file finds config.json beside it" {
	echo 5 | forward "$SHAPES/model.safetensors" --score > "$BATS_TEST_TMPDIR/a"
	echo 5 | forward "$SHAPES" --score > "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "thread counts, --mmap, --f32 and the scalar kernels agree" {
	echo 1 2 3 4 5 | forward "$SHAPES" --score --threads 1 > "$BATS_TEST_TMPDIR/a"
	echo 1 2 3 4 5 | forward "$SHAPES" --score --threads 2 --mmap > "$BATS_TEST_TMPDIR/b"
	echo 1 2 3 4 5 | QWENPIPE_SIMD=scalar forward "$SHAPES" --score > "$BATS_TEST_TMPDIR/c"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
	echo 1 2 3 4 5 | forward "$SHAPES" --score --f32 --mmap > "$BATS_TEST_TMPDIR/d"
	run forward --dump < "$BATS_TEST_TMPDIR/d"
	want=$(forward --dump < "$BATS_TEST_TMPDIR/a" | sed -n 2p | cut -d' ' -f1-3)
	assert_line --index 1 --partial "$want"
}

@test "--trace writes the residual stream of the last position as JSON lines" {
	echo 1235 3234 395 | forward "$SHAPES" --score --trace "$BATS_TEST_TMPDIR/t.jsonl" > /dev/null
	run jq -r '"\(.index) \(.what) \(.pos) \(.h | length)"' "$BATS_TEST_TMPDIR/t.jsonl"
	assert_output "0 embedding 2 256
1 block 2 256
2 block 2 256
3 final_norm 2 256"
	run find "$BATS_TEST_TMPDIR" -name 't.jsonl.*'
	assert_output ""
}

@test "generation: forward answers each id on the FIFO with a frame, then ends when it closes" {
	dir="$BATS_TEST_TMPDIR"
	mkfifo "$dir/p"  # stdout a pipe, not a file: generation
	(printf '1 2 3\n' | forward "$SHAPES" --ctx 16 > "$dir/p"; echo "status $?" > "$dir/status") &
	# A sampler in shell: read the header, then a frame per id sent.
	(
		head -c 4240 > "$dir/hdr"
		fifo=$(dd if="$dir/hdr" bs=1 skip=144 count=4096 2>/dev/null | tr -d '\0')
		head -c $((16 + 3 * 4 + 4096 * 4)) > "$dir/f0"
		exec 7> "$fifo"
		echo 7 >&7
		head -c $((16 + 4 + 4096 * 4)) > "$dir/f1"
		echo 8 >&7
		head -c $((16 + 4 + 4096 * 4)) > "$dir/f2"
		exec 7>&-
		cat > "$dir/rest"
	) < "$dir/p"
	wait
	run cat "$dir/status"
	assert_output "status 0"
	cat "$dir/hdr" "$dir/f0" "$dir/f1" "$dir/f2" > "$dir/all"
	run forward --dump < "$dir/all"
	assert_line --index 0 "# vocab 4096, eos 1, ctx 16, generation"
	assert_line --index 1 --partial "pos=2 token=3 "
	assert_line --index 2 --partial "pos=3 token=7 "
	assert_line --index 3 --partial "pos=4 token=8 "
	# then the end record: 5 positions in the context, 5 computed, of 16
	[ "$(head -c 4 "$dir/rest")" = ENDG ]
	run -0 od -An -tu4 -j4 "$dir/rest"
	assert_output --regexp "^ +5 +5 +16$"
	no_fifo_dir
}

@test "generation: a reader that is not a sampler ends with an error, not a hang" {
	run bash -c "set -o pipefail; echo 1 | forward '$SHAPES' | cat > /dev/null"
	assert_failure 1
	assert_output "forward: no sampler connected to the feedback channel within 10 s"
	no_fifo_dir
}

@test "generation: a reader that goes away ends forward quietly and removes the FIFO" {
	# 141 when forward was writing (SIGPIPE), 0 when it was waiting for the
	# sampler and saw its stdout close: either way, quietly (docs/style.md).
	run bash -c "echo 1 | forward '$SHAPES' 2> '$BATS_TEST_TMPDIR/err' | head -c 10 > /dev/null; echo \${PIPESTATUS[1]}"
	assert_success
	assert_output --regexp '^(0|141)$'
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	no_fifo_dir
}

@test "generation: SIGTERM removes the FIFO directory and the unfinished trace" {
	mkfifo "$BATS_TEST_TMPDIR/p"
	echo 1 > "$BATS_TEST_TMPDIR/ids"
	forward "$SHAPES" --trace "$BATS_TEST_TMPDIR/t.jsonl" < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/p" &
	pid=$!
	exec 4< "$BATS_TEST_TMPDIR/p"
	head -c 4240 <&4 > /dev/null
	run find "$TMPDIR" -name 'forward.*'
	refute_output ""
	kill -TERM $pid
	status=0
	wait $pid || status=$?
	assert_equal "$status" 143  # died of SIGTERM, after the cleanup
	no_fifo_dir
	run find "$BATS_TEST_TMPDIR" -name 't.jsonl*'
	assert_output ""
	exec 4<&-
}

@test "an id outside the vocabulary is an error naming the id and its line" {
	run -1 bash -c "printf '1 2\n3 4096\n' | forward '$SHAPES' --score > '$BATS_TEST_TMPDIR/out'"
	assert_output "forward: <stdin>: line 2: id 4096 is outside the vocabulary (0..4095)"
}

@test "text that is not an id is an error naming the line" {
	run -1 bash -c "printf '1 2\n\n3 -4\n' | forward '$SHAPES' --score > /dev/null"
	assert_output "forward: <stdin>: line 3: '-4' is not a token id"
}

@test "no ids is an error" {
	run -1 bash -c "forward '$SHAPES' --score < /dev/null > /dev/null"
	assert_output "forward: <stdin>: no token ids"
}

@test "more ids than the context holds is an error" {
	run -1 bash -c "echo 1 2 3 | forward '$SHAPES' --score --ctx 2 > /dev/null"
	assert_output "forward: <stdin>: 3 ids do not fit in the context of 2 positions (--ctx)"
}

@test "the ids from a file or - (stdin) after the model; a third operand is a usage error" {
	printf '1235 3234\n395 593\n' > "$BATS_TEST_TMPDIR/ids"
	forward "$SHAPES" --score < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/want"
	forward "$SHAPES" - --score < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/dash"
	forward "$SHAPES" "$BATS_TEST_TMPDIR/ids" --score < /dev/null > "$BATS_TEST_TMPDIR/file"
	cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/dash"
	cmp "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/file"
	# The file is named in messages, as stdin is <stdin>.
	echo 1 2 3 > "$BATS_TEST_TMPDIR/ids"
	run -1 bash -c "forward '$SHAPES' '$BATS_TEST_TMPDIR/ids' --score --ctx 2 > /dev/null"
	assert_output "forward: $BATS_TEST_TMPDIR/ids: 3 ids do not fit in the context of 2 positions (--ctx)"
	run -1 bash -c "forward '$SHAPES' '$BATS_TEST_TMPDIR/none' --score > /dev/null"
	assert_output "forward: $BATS_TEST_TMPDIR/none: No such file or directory"
	run -2 --separate-stderr forward "$SHAPES" - -
	assert_equal "${stderr_lines[0]}" "forward: one model and one ids file only"
}

@test "forward --help says it takes a GGUF file" {
	run -0 forward --help
	assert_line --partial "GGUF file (.gguf"
}

@test "a model that does not exist is an error naming it" {
	run -1 bash -c "echo 1 | forward /nonexistent --score > /dev/null"
	assert_output "forward: /nonexistent: No such file or directory"
}

@test "a file missing a tensor is an error naming the tensor" {
	cp "$SHAPES/config.json" "$BATS_TEST_TMPDIR/"
	jq '.num_hidden_layers = 3' "$SHAPES/config.json" > "$BATS_TEST_TMPDIR/config.json"
	cp "$SHAPES/model.safetensors" "$BATS_TEST_TMPDIR/"
	run -1 bash -c "echo 1 | forward '$BATS_TEST_TMPDIR' --score > /dev/null"
	assert_output "forward: $BATS_TEST_TMPDIR/model.safetensors: tensor 'model.layers.2.input_layernorm.weight': missing (12 differences from config.json)"
}

@test "binary to a terminal is refused" {
	command -v script > /dev/null || skip "no script(1)"
	run script -qec "echo 1 | $BIN/forward $SHAPES --score" /dev/null
	assert_output --partial "forward: refusing to write binary to a terminal"
}

@test "usage errors exit 2" {
	run -2 forward
	assert_line --index 0 "forward: no model given"
	run -2 forward "$SHAPES" --threads 0
	assert_line --index 0 "forward: --threads: 0 is out of range [1, 256]"
	run -2 bash -c "set -o pipefail; forward '$SHAPES' --all | cat"
	assert_line --index 0 "forward: --all needs --score (or stdout a file)"
	run -2 forward --bogus
	assert_line --index 0 "forward: unknown option '--bogus'"
}

@test "--dump refuses what is not a logits stream" {
	run -1 bash -c "echo hello | forward --dump"
	assert_output "forward: <stdin>: not a logits stream (bad magic)"
}

@test "forward | sample --greedy reproduces transformers' greedy decoding through the cache" {
	jq -r '.ids | join(" ")' "$GOLDEN/qwen-shapes/rand7.json" > "$BATS_TEST_TMPDIR/ids"
	run bash -c "forward '$SHAPES' < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 48 --ignore-eos | paste -sd,"
	assert_success
	assert_output "$(jq -r '.greedy_48 | join(",")' "$GOLDEN/qwen-shapes/rand7.json")"
	no_fifo_dir
}

@test "generation ends cleanly when the context is full" {
	run --separate-stderr bash -c "set -o pipefail; echo 1 2 3 | forward '$SHAPES' --ctx 4 | sample --greedy -n 10 --ignore-eos | wc -l"
	assert_success
	assert_output 2  # drawn at positions 2 and 3
	[ "$stderr" = "sample: warning: the context is full (4 positions; forward --ctx sets it): generation stopped" ]
	no_fifo_dir
}

@test "--int8-activations: a model with no integer weights is a usage error" {
	run -2 bash -c "echo 1 2 | forward '$TINY' --int8-activations --score"
	assert_line --index 0 "forward: --int8-activations: $TINY has no int8 or int4 weights (quantize it first)"
	assert_equal "${#lines[@]}" 2  # the message, then the usage line
}

# forward MODEL FLAG: other logits than without FLAG, the same bits for 1
# and 2 threads and the scalar kernels.
other_logits_same_bits() {
	ids="$BATS_TEST_TMPDIR/ids"
	jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/citizen.json" > "$ids"
	forward "$1" --score --all < "$ids" > "$BATS_TEST_TMPDIR/float"
	forward "$1" --score --all "$2" --threads 1 < "$ids" > "$BATS_TEST_TMPDIR/a"
	forward "$1" --score --all "$2" --threads 2 < "$ids" > "$BATS_TEST_TMPDIR/b"
	QWENPIPE_SIMD=scalar forward "$1" --score --all "$2" < "$ids" > "$BATS_TEST_TMPDIR/c"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
	cmp "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/c"
	run -1 cmp -s "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/float"
}

@test "--f32-activations: other logits, the same bits for any threads and SIMD level" {
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/t.q4" --level int4 --embeddings 2>/dev/null
	other_logits_same_bits "$BATS_TEST_TMPDIR/t.q4" --f32-activations
}

@test "int8 activations are the default of an int model: --int8-activations changes no bit" {
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/t.q4" --level int4 --embeddings 2>/dev/null
	ids="$BATS_TEST_TMPDIR/ids"
	jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/citizen.json" > "$ids"
	forward "$BATS_TEST_TMPDIR/t.q4" --score --all < "$ids" > "$BATS_TEST_TMPDIR/d"
	forward "$BATS_TEST_TMPDIR/t.q4" --score --all --int8-activations < "$ids" > "$BATS_TEST_TMPDIR/a"
	QWENPIPE_SIMD=avx2 forward "$BATS_TEST_TMPDIR/t.q4" --score --all --threads 1 < "$ids" > "$BATS_TEST_TMPDIR/v"
	cmp "$BATS_TEST_TMPDIR/d" "$BATS_TEST_TMPDIR/a"
	cmp "$BATS_TEST_TMPDIR/d" "$BATS_TEST_TMPDIR/v"
	run -0 bash -c "forward '$BATS_TEST_TMPDIR/t.q4' --score -v < '$ids' 2>&1 >/dev/null"
	assert_output --regexp "int8 activations \((VNNI|AVX2|scalar)\)"
	run -2 bash -c "echo 1 | forward '$BATS_TEST_TMPDIR/t.q4' --int8-activations --f32-activations"
	assert_line --index 0 "forward: --int8-activations and --f32-activations: pick one"
}

@test "--bf16-activations: a model with no bf16 weights is a usage error" {
	run -2 bash -c "echo 1 2 | forward '$TINY' --f32 --bf16-activations --score"
	assert_line --index 0 "forward: --bf16-activations: $TINY has no bf16 weights (--f32 widened them)"
	assert_equal "${#lines[@]}" 2  # the message, then the usage line
}

@test "--bf16-activations: other logits, the same bits for any threads and SIMD level" {
	other_logits_same_bits "$TINY" --bf16-activations
}
