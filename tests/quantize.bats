#!/usr/bin/env bats
# quantize: the containers it writes, its flags, atomic output; and the
# container reader (lib/format/qfile) refusing malformed files, through st-inspect.

bats_require_minimum_version 1.5.0
load test_helper
load_assert

# A small container of the qwen-shapes model (untied: lm_head is quantized,
# the embeddings are not), made once per test in the scratch directory.
setup() {
	Q8="$BATS_TEST_TMPDIR/s.q8"
	quantize "$SHAPES" -o "$Q8" --level int8 2>/dev/null
}

# Writes bytes (printf escapes) at an offset of a file, in place.
poke() {
	printf "$2" | dd of="$1" bs=1 seek="$3" conv=notrunc status=none
}

# The u64 at an offset.
peek64() {
	od -An -tu8 -j"$2" -N8 "$1" | tr -d ' '
}

@test "an int8 container holds every tensor, with the config embedded" {
	run -0 st-inspect "$Q8"
	assert_line "format        qwenpipe container, int8"
	assert_line "dtypes        INT8 (15 tensors), BF16 (12 tensors)"
	assert_line "config        embedded: matches"
	assert_line "              embeddings = kept"
}

@test "int4 with --embeddings quantizes the embedding matrix too" {
	run -0 quantize "$SHAPES" -o "$BATS_TEST_TMPDIR/s.q4" --level int4 --group-size 64 --embeddings
	run -0 st-inspect --json "$BATS_TEST_TMPDIR/s.q4"
	run -0 jq -r '[.metadata.level, .metadata.group_size, .metadata.embeddings,
		(.tensors[] | select(.name == "model.embed_tokens.weight") | .dtype)] | join(" ")' <<<"$output"
	assert_output "int4 64 quantized INT4"
}

@test "--dry-run writes nothing but the report: one JSON line per tensor" {
	run -0 quantize "$SHAPES" --level int4 --dry-run --report "$BATS_TEST_TMPDIR/r.jsonl"
	[ "$(ls "$BATS_TEST_TMPDIR")" = "$(printf 'r.jsonl\ns.q8')" ]
	run -0 jq -s -r 'length' "$BATS_TEST_TMPDIR/r.jsonl"
	assert_output 27
	# int4 of a [704, 256] matrix: 704*256/2 bytes of codes + 704*8 scales
	# of 2 bytes (halves): 4.5 bits a weight
	run -0 jq -r 'select(.name == "model.layers.0.mlp.up_proj.weight") |
		"\(.type) \(.shape) \(.bytes_before) \(.bytes_after) \(.rel_error < 0.2)"' \
		"$BATS_TEST_TMPDIR/r.jsonl"
	assert_output "int4 [704,256] 360448 101376 true"
}

@test "bad flags are usage errors that name the flag" {
	run -2 quantize "$SHAPES" -o x --level int3
	assert_line -n 0 "quantize: --level: 'int3' is not int8 or int4"
	run -2 quantize "$SHAPES" -o x --level int4 --group-size 48
	assert_line -n 0 "quantize: --group-size: 48 is not a multiple of 32"
	run -2 quantize "$SHAPES" -o x --level int8 --group-size 64
	assert_line -n 0 "quantize: --group-size: only with --level int4"
	run -2 quantize "$SHAPES" -o x --level int4 --group-size 128
	assert_line -n 0 "quantize: --group-size: group size 128 does not divide 704 columns of tensor 'model.layers.0.mlp.down_proj.weight'"
	run -2 quantize "$SHAPES" --level int8
	assert_line -n 0 "quantize: -o OUT is required (or --dry-run)"
	[ ! -e x ]
}

@test "a failed write leaves neither the output nor a temporary file" {
	mkdir "$BATS_TEST_TMPDIR/out"
	# a file size limit makes the write fail part-way, like a full disk
	run -1 bash -c "ulimit -f 1000; quantize '$SHAPES' -o '$BATS_TEST_TMPDIR/out/m.q8' --level int8"
	assert_output "quantize: $BATS_TEST_TMPDIR/out/m.q8: write error: File too large"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/out")" ]
}

@test "SIGINT part-way leaves neither the output nor a temporary file" {
	mkdir "$BATS_TEST_TMPDIR/out"
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/out/m.q4" --level int4 --embeddings 2>/dev/null &
	pid=$!
	# wait for the temporary file to exist, then interrupt
	for _ in $(seq 200); do
		[ -n "$(ls -A "$BATS_TEST_TMPDIR/out")" ] && break
		sleep 0.05
	done
	kill -INT "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 130 ]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/out")" ]
}

@test "a truncated container is refused" {
	head -c 100000 "$Q8" >"$BATS_TEST_TMPDIR/t.q8"
	run -1 st-inspect "$BATS_TEST_TMPDIR/t.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/t.q8: truncated: the header says 4665024 bytes, the file has 100000"
	head -c 50 "$Q8" >"$BATS_TEST_TMPDIR/t.q8"
	run -1 st-inspect "$BATS_TEST_TMPDIR/t.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/t.q8: truncated: 50 bytes, the header alone is 128"
}

@test "a container with a bad magic or another version is refused" {
	cp "$Q8" "$BATS_TEST_TMPDIR/v.q8"
	poke "$BATS_TEST_TMPDIR/v.q8" '\x03' 8
	run -1 st-inspect "$BATS_TEST_TMPDIR/v.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/v.q8: version 3 is not supported (this build reads version 2)"
	run -1 st-inspect --tensor lm_head.weight "$BATS_TEST_TMPDIR/v.q8"
	cp "$Q8" "$BATS_TEST_TMPDIR/m.q8"
	poke "$BATS_TEST_TMPDIR/m.q8" 'X' 7
	# not a container any more: read as safetensors, which refuses it too
	run -1 st-inspect "$BATS_TEST_TMPDIR/m.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/m.q8: not a safetensors file (no JSON header after the 8-byte length)"
}

@test "a container of version 1 (float32 int4 scales) is refused with the command that remakes it" {
	Q4=$BATS_TEST_TMPDIR/old.q4
	quantize "$SHAPES" -o "$Q4" --level int4 --group-size 64 --embeddings 2>/dev/null
	cp "$Q4" "$BATS_TEST_TMPDIR/new.q4"
	poke "$Q4" '\x01' 8
	run -1 forward "$Q4" --score <<<1
	assert_output "forward: $Q4: container version 1 is older than this build's (2, with half int4 scales): remake it with quantize MODEL -o $Q4 --level int4 --embeddings --group-size 64"
	poke "$Q8" '\x01' 8
	run -1 st-inspect "$Q8"
	assert_output "st-inspect: $Q8: container version 1 is older than this build's (2, with half int4 scales): remake it with quantize MODEL -o $Q8 --level int8"
	# the command it gives, with the model for MODEL, makes the file again
	run -0 quantize "$SHAPES" -o "$Q4" --level int4 --embeddings --group-size 64
	cmp "$Q4" "$BATS_TEST_TMPDIR/new.q4"
}

@test "int4 scales are halves: a weight beyond 8 x 65504 is refused, naming the tensor" {
	M=$BATS_TEST_TMPDIR/big
	mkdir "$M"
	cp "$SHAPES/config.json" "$SHAPES/model.safetensors" "$M/"
	# lm_head.weight's first weight (data offset 0, after the 8 + 2856 header
	# bytes) becomes bf16 0x4974 = 999424: its group's scale -124928 has no half
	poke "$M/model.safetensors" '\x74\x49' 2864
	run -1 quantize "$M" -o "$BATS_TEST_TMPDIR/b.q4" --level int4
	assert_output "quantize: $BATS_TEST_TMPDIR/b.q4: tensor lm_head.weight: scale -124928 is not a half: a weight beyond int4's range (8 x 65504); use --level int8"
	[ ! -e "$BATS_TEST_TMPDIR/b.q4" ]
	run -0 quantize "$M" -o "$BATS_TEST_TMPDIR/b.q8" --level int8
}

@test "an int4 container with a half scale of Inf or NaN is refused, naming the tensor and the scale" {
	Q4=$BATS_TEST_TMPDIR/s.q4
	quantize "$SHAPES" -o "$Q4" --level int4 2>/dev/null
	idx=$(peek64 "$Q4" 88)
	for ((i = 0; ; i++)); do  # the first int4 tensor's index entry
		e=$((idx + 128 * i))
		[ "$(od -An -tu4 -j$((e + 80)) -N4 "$Q4" | tr -d ' ')" = 3 ] && break
	done
	name=$(head -c $((e + 80)) "$Q4" | tail -c 80 | tr -d '\0')
	scales=$(peek64 "$Q4" $((e + 120)))
	poke "$Q4" '\x00\x7c' $((scales + 6))  # scale 3: +Inf
	run -1 st-inspect "$Q4"
	assert_output "st-inspect: $Q4: tensor '$name': scale 3 is not finite"
	poke "$Q4" '\x01\xfe' $((scales + 6))  # a NaN
	run -1 forward "$Q4" --score <<<1
	assert_output "forward: $Q4: tensor '$name': scale 3 is not finite"
}

@test "misaligned and out-of-range tensor offsets are refused" {
	idx=$(peek64 "$Q8" 88)
	off=$(peek64 "$Q8" $((idx + 104)))
	cp "$Q8" "$BATS_TEST_TMPDIR/a.q8"
	poke "$BATS_TEST_TMPDIR/a.q8" '\x08' $((idx + 104))
	run -1 st-inspect "$BATS_TEST_TMPDIR/a.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/a.q8: tensor 'lm_head.weight': data offset $(( (off & ~255) | 8 )) is not a multiple of 64"
	cp "$Q8" "$BATS_TEST_TMPDIR/o.q8"
	poke "$BATS_TEST_TMPDIR/o.q8" '\x00\x00\x00\x00\x01' $((idx + 104))
	run -1 st-inspect "$BATS_TEST_TMPDIR/o.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/o.q8: tensor 'lm_head.weight': data [4294967296, +1048576) is outside the file (4665024 bytes)"
}

@test "a scheme that contradicts the tensors is refused" {
	# the flags say the embeddings are quantized; they are bf16
	cp "$Q8" "$BATS_TEST_TMPDIR/e.q8"
	poke "$BATS_TEST_TMPDIR/e.q8" '\x01' 20
	run -1 st-inspect "$BATS_TEST_TMPDIR/e.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/e.q8: tensor 'model.embed_tokens.weight': bf16, but the scheme quantizes it"
	# level 4 (group 32) with int8 tensors
	cp "$Q8" "$BATS_TEST_TMPDIR/l.q8"
	poke "$BATS_TEST_TMPDIR/l.q8" '\x04\x00\x00\x00\x20' 12
	run -1 st-inspect "$BATS_TEST_TMPDIR/l.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/l.q8: tensor 'lm_head.weight': int8 in an int4 container"
	# int8 with a group size
	cp "$Q8" "$BATS_TEST_TMPDIR/g.q8"
	poke "$BATS_TEST_TMPDIR/g.q8" '\x20' 16
	run -1 st-inspect "$BATS_TEST_TMPDIR/g.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/g.q8: int8 with group size 32 (must be 0)"
}

@test "a tensor the config does not have is refused" {
	idx=$(peek64 "$Q8" 88)
	cp "$Q8" "$BATS_TEST_TMPDIR/n.q8"
	poke "$BATS_TEST_TMPDIR/n.q8" 'X' "$idx"
	run -1 st-inspect "$BATS_TEST_TMPDIR/n.q8"
	assert_output "st-inspect: $BATS_TEST_TMPDIR/n.q8: tensor 'lm_head.weight': missing (2 differences from its embedded config.json)"  # and Xm_head.weight unexpected
}

@test "forward runs a container with no other file beside it, mapped or copied" {
	mkdir "$BATS_TEST_TMPDIR/alone"
	quantize "$TINY" -o "$BATS_TEST_TMPDIR/alone/m.q4" --level int4 --embeddings 2>/dev/null
	jq -r '.ids[]' "$GOLDEN/shakespeare-tiny/citizen.json" >"$BATS_TEST_TMPDIR/ids"
	cd "$BATS_TEST_TMPDIR/alone"
	forward m.q4 --score --all <"$BATS_TEST_TMPDIR/ids" >"$BATS_TEST_TMPDIR/a.bin"
	forward m.q4 --score --all --mmap --threads 2 <"$BATS_TEST_TMPDIR/ids" >"$BATS_TEST_TMPDIR/b.bin"
	cmp "$BATS_TEST_TMPDIR/a.bin" "$BATS_TEST_TMPDIR/b.bin"
	run -0 forward --dump <"$BATS_TEST_TMPDIR/a.bin"
	[ "${#lines[@]}" -eq 14 ]  # the header and 13 positions
	run -1 forward m.q4 --f32 --score <"$BATS_TEST_TMPDIR/ids"
	assert_output "forward: m.q4: a quantized container cannot be widened to float32 (--f32 needs a safetensors model)"
}

@test "quantize --help states the int4 scale lib/kernels/quant.h computes" {
	# quant.h: scale = -m / 8 for m the group's weight of largest magnitude;
	# the search for a least-squares scale was dropped.
	run -0 quantize --help
	assert_output --partial "int4: one scale per group along the input, -m/8"
	refute_output --partial "squared error"
}
