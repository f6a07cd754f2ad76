#!/usr/bin/env bats
# Every ```sh block of README.md runs as shown, from the repository root,
# with the bundled data. Blocks fenced as ```console or ```text (chat,
# download, the full-size model) are not run.
#
# Each block runs under `bash -e -o pipefail` in a scratch directory whose
# data/, tests/, scripts/ and Makefile are links to the repository's and
# whose bin/ is $BIN (so `make check` runs the examples on the sanitizer
# build), with PATH as the user's: not $BIN, so an example that names a
# tool without bin/ fails as it would when pasted. The blocks run in order in that one directory, so a block
# may use a file an earlier one wrote (tiny.q4); nothing lands in the
# checkout, and there is no bench/ to append records to. A failing block is
# reported by the README line its fence opens on.
bats_require_minimum_version 1.5.0
load test_helper

README="$ROOT/README.md"

# The sh blocks as "LINE<TAB>one command line" records, blocks separated by
# a line holding only LINE: awk keeps the block's opening line number.
sh_blocks() {
	awk '
		/^```sh[[:space:]]*$/ { inblock = 1; start = NR; next }
		inblock && /^```/ { inblock = 0; print start; next }
		inblock { print start "\t" $0 }
	' "$README"
}

# Runs the block that opens on LINE in the scratch directory; output and
# status as bats `run` leaves them.
run_block() {
	local line=$1 body
	body=$(sh_blocks | awk -F '\t' -v l="$line" 'NF == 2 && $1 == l { print $2 }')
	[ -n "$body" ] || { echo "README.md:$line: no sh block opens here" >&2; return 1; }
	PATH=$USER_PATH run bash -e -o pipefail -c "cd '$SCRATCH' && $body"
}

setup() {
	private_tmpdir
	SCRATCH="$BATS_TEST_TMPDIR/root"
	mkdir -p "$SCRATCH"
	for d in data tests scripts Makefile; do ln -s "$ROOT/$d" "$SCRATCH/$d"; done
	# PATH without the $BIN (and bin/) that test_helper.bash put first.
	local d IFS=:
	USER_PATH=
	for d in $PATH; do
		[ "$d" = "$BIN" ] || [ "$d" = "$ROOT/bin" ] || USER_PATH=${USER_PATH:+$USER_PATH:}$d
	done
	ln -s "$BIN" "$SCRATCH/bin"
	export BIN
}

@test "README.md: every sh block runs as shown" {
	local lines failed=0 n=0
	lines=$(sh_blocks | awk -F '\t' 'NF == 1')
	# The README has examples; an extraction that finds none is a bug here.
	[ -n "$lines" ]
	for line in $lines; do
		n=$((n + 1))
		run_block "$line"
		if [ "$status" -ne 0 ]; then
			echo "README.md:$line: sh block failed with status $status:"
			printf '%s\n' "$output" | tail -n 5 | sed 's/^/  /'
			failed=$((failed + 1))
		fi
	done
	echo "# $n sh blocks, $failed failed"
	[ "$failed" -eq 0 ]
}

@test "readme.bats: a block that fails is reported by its line" {
	# The harness itself must be able to fail: a copy of the README with one
	# example broken (a flag no tool has) fails on that block's line only.
	README="$BATS_TEST_TMPDIR/README.md"
	awk '/^```sh/ && !done { print; print "bin/tok encode --no-such-flag < /dev/null"; done = 1; next } { print }' \
		"$ROOT/README.md" > "$README"
	first=$(sh_blocks | awk -F '\t' 'NF == 1' | head -n 1)
	run_block "$first"
	[ "$status" -eq 2 ]
}

@test "README.md: the --stop example's output shows the stop" {
	# The example must stop early: its text is the start of the same
	# command's without --stop, which goes on to the stop string.
	local cmd stop
	cmd=$(sh_blocks | awk -F '\t' 'NF == 2 && /scripts\/generate .*--stop "/ { print $2; exit }')
	[ -n "$cmd" ]
	stop=$(sed 's/.*--stop "\([^"]*\)".*/\1/' <<<"$cmd")
	PATH=$USER_PATH run -0 bash -c "cd '$SCRATCH' && $cmd"
	local with=$output
	PATH=$USER_PATH run -0 bash -c "cd '$SCRATCH' && ${cmd% --stop *}"
	[[ $with != *"$stop"* ]]
	[[ $output == "$with"*"$stop"* ]]
}

@test "every build or environment switch the docs name exists in the code" {
	# QWENPIPE_* variables and FWD_* build switches named in README.md or
	# docs/ must appear in lib/, tools/, scripts/ or the Makefile.
	local v missing=
	for v in $(grep -ohE '\b(QWENPIPE|FWD)_[A-Z0-9_]+' "$ROOT/README.md" "$ROOT"/docs/*.md | sort -u); do
		grep -rqw -- "$v" "$ROOT/lib" "$ROOT/tools" "$ROOT/scripts" "$ROOT/Makefile" ||
			missing="$missing $v"
	done
	[ -z "$missing" ] || { echo "named in the docs, not in the code:$missing"; false; }
}

@test "README.md and docs/ cite nothing outside the repository's tree (../shared)" {
	run -1 grep -n '\.\./shared' "$ROOT/README.md" "$ROOT"/docs/*.md
}

@test "docs/architecture.md lists every file of lib/ in its layer's row" {
	# Each lib/LAYER/NAME.c or .h is named in the LAYER row's file list:
	# `NAME`, `NAME.h`, or a `PREFIX*` pattern.
	local f layer name row missing=
	for f in "$ROOT"/lib/*/*.[ch]; do
		layer=$(basename "$(dirname "$f")") name=$(basename "$f")
		name=${name%.[ch]}
		row=$(grep -m1 "^| \`$layer/\`" "$ROOT/docs/architecture.md" | awk -F'|' '{ print $4 }')
		[[ $row == *"\`$name\`"* || $row == *"\`$name.h\`"* ]] && continue
		local ok=0 pat
		for pat in $(grep -o '`[a-z_]*\*`' <<<"$row" | tr -d '`*'); do
			[[ $name == "$pat"* ]] && ok=1
		done
		[ $ok = 1 ] || missing="$missing $layer/$name"
	done
	[ -z "$missing" ] || { echo "not in docs/architecture.md:$missing"; false; }
}
