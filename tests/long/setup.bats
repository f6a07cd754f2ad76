#!/usr/bin/env bats
# The README's first command on a fresh clone: `make run` installs what is
# missing (nothing, on a machine that ran it), builds, and generates the
# text the README's generate example gives. Run by `make test-long`.
bats_require_minimum_version 1.5.0
load ../test_helper

@test "a fresh clone: make run builds and generates with the bundled model" {
	local c=$BATS_TEST_TMPDIR/clone
	git clone -q "$ROOT" "$c"
	cd "$c"
	# (the tests export BIN, which the Makefile would take for its own,
	# and the MAKEFLAGS and MAKELEVEL of a make that runs the tests: make
	# would print its directory around the output)
	run -0 --separate-stderr env -u BIN -u MAKEFLAGS -u MAKELEVEL make run
	want=$("$ROOT/scripts/generate" "$DATA/shakespeare-tiny" "ROMEO:" --seed 42 -n 40)
	[ -n "$want" ]
	[[ $output == *$'\n'"$want" ]]  # after the build's lines
	[ -x bin/forward ]
}
