# Shared setup for the bats tests: the tools under test come from $BIN
# (bin/ by default, build/san/bin under `make check`), fixtures and golden
# files from the repository.
ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
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
