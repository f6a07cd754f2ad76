# Shared setup for the bats tests: the tools under test come from $BIN
# (bin/ by default, build/san/bin under `make check`), fixtures and golden
# files from the repository.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
[ -f "$ROOT/Makefile" ] || ROOT="$(cd "$ROOT/.." && pwd)"  # tests/long/
BIN="${BIN:-$ROOT/bin}"
PATH="$BIN:$PATH"
DATA="$ROOT/data"
GOLDEN="$ROOT/tests/golden"
FIXTURES="$ROOT/tests/fixtures"
TINY="$DATA/shakespeare-tiny"
SHAPES="$FIXTURES/qwen-shapes"
export ROOT BIN DATA GOLDEN FIXTURES TINY SHAPES

load_assert() {
	load /usr/lib/bats/bats-support/load
	load /usr/lib/bats/bats-assert/load
}

# A private $TMPDIR for one test (forward makes its FIFO directory there),
# and the check that nothing was left in it (needs load_assert).
private_tmpdir() {
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
}
tmpdir_empty() {
	run ls -A "$TMPDIR"
	assert_output ""
}

# A container of the tiny model whose tokenizer.json lacks the merge "h i"
# (so "hi" is 2 tokens, not 6023), with no model directory beside it: what
# tok reads is the copy the container embeds (lib/format/modelfile.h).
container_without_hi() {
	C=$BATS_TEST_TMPDIR/m
	mkdir -p "$C"
	cp "$TINY/config.json" "$TINY/generation_config.json" "$TINY/model.safetensors" "$C/"
	sed '/^      "h i",$/d' "$TINY/tokenizer.json" >"$C/tokenizer.json"
	quantize "$C" -o "$BATS_TEST_TMPDIR/m.q8" --level int8 2>/dev/null
	rm -r "$C"
}
