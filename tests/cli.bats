#!/usr/bin/env bats
# The command-line convention every tool and script shares (lib/cli/cli.h,
# scripts/common.bash): --help and --version in one shape, and a short flag
# that means one thing in every tool that has it.

bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
}

TOOLS=(bench forward ppl quantize sample serve st-inspect tok)
SCRIPTS=(bench-tok chat deps download-qwen fuzz generate plot-bench valgrind-check viz)

@test "--version: 'NAME (qwenpipe) VERSION' from the VERSION file, for every tool and script" {
	local v
	v=$(cat "$ROOT/VERSION")
	for t in "${TOOLS[@]}"; do
		run -0 "$t" --version
		assert_output "$t (qwenpipe) $v"
	done
	for s in "${SCRIPTS[@]}"; do
		run -0 "$ROOT/scripts/$s" --version
		assert_output "$s (qwenpipe) $v"
	done
}

@test "--help and -h: usage line, blank line, description, options, on stdout" {
	for t in "${TOOLS[@]}"; do
		run -0 --separate-stderr "$t" --help
		[ -z "$stderr" ]
		[[ ${lines[0]} == "usage: $t "* ]] || { echo "$t: ${lines[0]}"; false; }
		# bats drops empty lines from $lines: the blank line is in $output
		[[ $output == "usage: "*$'\n\n'[A-Z]* ]] || { echo "$t: no blank line then description"; false; }
		assert_line "Options:"
		assert_line --regexp '^  -h, --help +this text$'
		assert_line --regexp '^      --version +the version$'
		assert_line --regexp '^      --options +'
		local long=$output
		run -0 "$t" -h
		assert_equal "$output" "$long"
		# every other spelling the help lists is one the tool takes
		local a
		for a in $(sed -n 's/^ *(also \(.*\))$/\1/p' <<<"$long"); do
			"$t" --options | cut -f1,3 | tr '\t, ' '\n\n\n' | grep -qx -- "$a" ||
				{ echo "$t: --help lists $a, --options does not"; false; }
		done
	done
	for s in "${SCRIPTS[@]}"; do
		run -0 "$ROOT/scripts/$s" --help
		[[ ${lines[0]} == "usage: "*"$s"* ]] || { echo "$s: ${lines[0]}"; false; }
		[[ $output == "usage: "*$'\n\n'[A-Za-z]* ]] || { echo "$s: no blank line then description"; false; }
	done
}

@test "--options: one line per flag, long name, value or switch, other spellings" {
	for t in "${TOOLS[@]}"; do
		run -0 "$t" --options
		assert_line "$(printf -- '--help\tswitch\t-h')"
		assert_line "$(printf -- '--version\tswitch\t-')"
		run -0 awk -F'\t' 'NF != 3 || $1 !~ /^--[a-z0-9-]+$/ || ($2 != "value" && $2 != "switch") ||
			$3 !~ /^(-|(-[a-zA-Z]|--[a-z0-9-]+)( (-[a-zA-Z]|--[a-z0-9-]+))*)$/' <("$t" --options)
		assert_output ""
	done
}

@test "a short flag means the same in every tool that has it, and follows llama.cpp's" {
	declare -A meaning where
	for t in "${TOOLS[@]}"; do
		while IFS=$'\t' read -r long kind others; do
			# ppl's chunk is the context of each of its runs, as
			# llama-perplexity's -c is
			[ "$t $long" != "ppl --chunk" ] || long=--ctx
			for o in $others; do
				[[ $o == -? ]] || continue
				if [ -n "${meaning[$o]-}" ] && [ "${meaning[$o]}" != "$long $kind" ]; then
					echo "$o: $t has $long $kind, ${where[$o]} has ${meaning[$o]}"
					false
				fi
				meaning[$o]="$long $kind" where[$o]=$t
			done
		done < <("$t" --options)
	done
	# llama.cpp's: -t threads, -c context, -n tokens to generate, -s seed
	[ "${meaning[-t]}" = "--threads value" ]
	[ "${meaning[-c]}" = "--ctx value" ]
	[ "${meaning[-n]}" = "--tokens value" ]
	[ "${meaning[-s]}" = "--seed value" ]
}

@test "llama.cpp's long spellings are aliases" {
	run -0 sample --options
	assert_line "$(printf -- '--temperature\tvalue\t--temp')"
	assert_line "$(printf -- '--tokens\tvalue\t-n --max-tokens --n-predict --predict')"
	run -0 forward --options
	assert_line "$(printf -- '--ctx\tvalue\t-c --ctx-size')"
	run -0 ppl --options
	assert_line "$(printf -- '--chunk\tvalue\t-c --ctx-size')"
	assert_line "$(printf -- '--threads\tvalue\t-t')"
	# an alias is the same flag: its errors name it as the flag
	run -2 sample --temp 200 </dev/null
	assert_line --index 0 "sample: --temperature: 200 is out of range [0, 100]"
}

@test "flag errors: unknown, missing value, value given to a switch" {
	run -2 --separate-stderr forward --frob
	assert_equal "${stderr_lines[0]}" "forward: unknown option '--frob'"
	run -2 --separate-stderr forward -q
	assert_equal "${stderr_lines[0]}" "forward: unknown option '-q'"
	run -2 --separate-stderr forward "$TINY" -t
	assert_equal "${stderr_lines[0]}" "forward: --threads: missing value"
	run -2 --separate-stderr sample --greedy=1
	assert_equal "${stderr_lines[0]}" "sample: --greedy: takes no value"
	[[ ${stderr_lines[1]} == "usage: sample "* ]]
}

@test "docs/tools.md quotes each tool's --help word for word" {
	# every ```text block that opens with a usage line: one file per block
	local dir=$BATS_TEST_TMPDIR/blocks n=0
	mkdir -p "$dir"
	awk -v dir="$dir" '
		/^```text$/ { open = 1; next }
		open == 1 && /^usage: / { f = sprintf("%s/%03d", dir, ++n); open = 2 }
		open == 1 { open = 0 }
		open == 2 && /^```$/ { close(f); open = 0; next }
		open == 2 { print > f }' "$ROOT/docs/tools.md"
	for f in "$dir"/*; do
		local name
		name=$(sed -n '1s|^usage: \(scripts/\)\{0,1\}\([a-z-]*\).*|\2|p' "$f")
		local exe=$BIN/$name
		[ -x "$exe" ] || exe=$ROOT/scripts/$name
		run -0 diff -u "$f" <("$exe" --help)
		n=$((n + 1))
	done
	[ "$n" -ge 8 ]  # the eight tools at least
}

@test "make install: tools, scripts beside them, man pages, data; generate runs from there" {
	command -v help2man > /dev/null || skip "help2man is not installed (scripts/deps)"
	local d=$BATS_TEST_TMPDIR/inst build
	build=$(dirname "$BIN")  # build/ for bin/, build/san for make check's
	[ -f "$build/libcommon.a" ] || build=$ROOT/build
	run -0 make -s -C "$ROOT" install DESTDIR="$d" PREFIX=/usr BIN="$BIN" BUILD="$build"
	for t in "${TOOLS[@]}" generate chat viz; do
		[ -x "$d/usr/bin/$t" ] || { echo "no $t"; false; }
		[ -s "$d/usr/share/man/man1/$t.1" ] || { echo "no man page for $t"; false; }
	done
	[ -f "$d/usr/share/qwenpipe/common.bash" ]
	# What is installed names itself as installed: no scripts/ in the help
	# of generate and chat or in their man pages.
	for t in generate chat; do
		run -0 env PATH=/usr/bin:/bin "$d/usr/bin/$t" --help
		assert_line --index 0 --regexp "^usage: $t "
		refute_output --partial "scripts/"
		run -1 grep -F "scripts/" "$d/usr/share/man/man1/$t.1"
	done
	run -0 env PATH=/usr/bin:/bin "$d/usr/bin/generate" --version
	assert_output "generate (qwenpipe) $(cat "$ROOT/VERSION")"
	# the installed script finds the installed tools and data, nothing of
	# the checkout: the same greedy tokens as the checkout's pipeline
	local want
	want=$("$ROOT/scripts/generate" "$TINY" "ROMEO:" -n 6 --greedy)
	run -0 env PATH=/usr/bin:/bin "$d/usr/bin/generate" \
		"$d/usr/share/qwenpipe/shakespeare-tiny" "ROMEO:" -n 6 --greedy
	assert_output "$want"
	[ -n "$want" ]
}
