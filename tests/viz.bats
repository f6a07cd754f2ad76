#!/usr/bin/env bats
# What scripts/viz is built on, without a browser: forward --trace-attn,
# forward --no-cache, sample's candidates after the chain, and the page's
# data and escaping. The page in a browser: tests/browser/ (make browser).

bats_require_minimum_version 1.5.0
load test_helper
load_assert

ids_of() { jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/$1.json"; }

# gen IDS_FILE OUT_IDS [forward flags...]: greedy, 12 tokens.
gen() {
	local in=$1 out=$2; shift 2
	forward "$TINY" "$@" < "$in" | sample --greedy -n 12 > "$out"
}

@test "--trace-attn: every row sums to 1 and equals what one uncached pass over the same ids computes" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	# (--draft 0: a batch's rejected drafts would add rows of their own)
	gen "$BATS_TEST_TMPDIR/ids" "$BATS_TEST_TMPDIR/gen" --threads 2 --draft 0 --trace-attn "$BATS_TEST_TMPDIR/cached.jsonl"
	# The ids forward saw: the prompt and the 11 drawn ids it was fed back.
	{ cat "$BATS_TEST_TMPDIR/ids"; echo; head -n 11 "$BATS_TEST_TMPDIR/gen"; } > "$BATS_TEST_TMPDIR/all"
	n=$(wc -w < "$BATS_TEST_TMPDIR/all")
	forward "$TINY" --score --threads 1 --trace-attn "$BATS_TEST_TMPDIR/one.jsonl" \
		< "$BATS_TEST_TMPDIR/all" > /dev/null
	# 4 layers x n positions, 4 heads each, row p has p + 1 weights.
	run -0 jq -s -c --argjson n "$n" '
		[length == 4 * $n,
		 (map(.w | length) | unique) == [4],
		 all(.[]; . as $l | $l.w | all(length == $l.pos + 1)),
		 (map(.w[] | add - 1 | fabs) | max < 1e-5),
		 (map(.call) | unique | length)]' "$BATS_TEST_TMPDIR/cached.jsonl"
	assert_output "[true,true,true,true,12]"
	run -0 jq -n -c --slurpfile a "$BATS_TEST_TMPDIR/cached.jsonl" \
		--slurpfile b "$BATS_TEST_TMPDIR/one.jsonl" '
		def key: "\(.layer) \(.pos)";
		($b | map({key: key, value: .w}) | from_entries) as $ref
		| [$a[] | . as $r | [.w, $ref[$r | key]] | transpose[] | transpose[]
		   | (.[0] - .[1]) | fabs] | [length, max]'
	n_weights=$(jq -s '[.[].w[][]] | length' "$BATS_TEST_TMPDIR/one.jsonl")
	assert_output "[$n_weights,0]"
}

@test "--trace-attn: the file gets the umask's mode; a path that cannot be written is a one-line error, exit 1" {
	(umask 027 && forward "$TINY" --score --trace-attn "$BATS_TEST_TMPDIR/a.jsonl" <<< 40 > /dev/null)
	[ "$(stat -c %a "$BATS_TEST_TMPDIR/a.jsonl")" = 640 ]
	run -1 forward "$TINY" --score --trace-attn "$BATS_TEST_TMPDIR/no/a.jsonl" <<< 40
	assert_output "forward: $BATS_TEST_TMPDIR/no/a.jsonl: cannot create a temporary file beside it: No such file or directory"
}

@test "--trace-attn and --no-cache change no token: greedy_48 of the golden case" {
	ids_of richard > "$BATS_TEST_TMPDIR/ids"
	expected=$(jq -r '.greedy_48[]' "$GOLDEN/shakespeare-tiny/richard.json")
	for flags in "--trace-attn $BATS_TEST_TMPDIR/a.jsonl" --no-cache; do
		run -0 bash -c "forward '$TINY' $flags < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 48"
		[ "$output" = "$expected" ] || { echo "forward $flags: $output" >&2; return 1; }
	done
}

@test "traced, untraced and uncached runs draw the same sampled tokens from one seed" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	go() {
		forward "$TINY" "${@:2}" < "$BATS_TEST_TMPDIR/ids" |
			sample --seed 7 --temperature 1.2 -n 24 > "$BATS_TEST_TMPDIR/$1"
	}
	go plain
	go traced --trace-attn "$BATS_TEST_TMPDIR/a.jsonl"
	go uncached --no-cache
	[ "$(wc -l < "$BATS_TEST_TMPDIR/plain")" = 24 ]
	cmp "$BATS_TEST_TMPDIR/plain" "$BATS_TEST_TMPDIR/traced"
	cmp "$BATS_TEST_TMPDIR/plain" "$BATS_TEST_TMPDIR/uncached"
}

@test "--no-cache computes n(n+1)/2 positions for n tokens from a one-token prompt; the cache n" {
	echo 40 > "$BATS_TEST_TMPDIR/ids"
	n=20
	for mode in cached uncached; do
		flag='--draft 0'; [ $mode = uncached ] && flag=--no-cache
		forward "$TINY" -v $flag < "$BATS_TEST_TMPDIR/ids" 2> "$BATS_TEST_TMPDIR/$mode.log" |
			sample --greedy -n $n > "$BATS_TEST_TMPDIR/$mode.ids"
	done
	cmp "$BATS_TEST_TMPDIR/cached.ids" "$BATS_TEST_TMPDIR/uncached.ids"
	run -0 grep -h "positions computed" "$BATS_TEST_TMPDIR/cached.log" "$BATS_TEST_TMPDIR/uncached.log"
	assert_output "forward: $n positions computed
forward: $((n * (n + 1) / 2)) positions computed"
	# -v: one line per step, each uncached step one position longer.
	run -0 grep -c " at position 0 in " "$BATS_TEST_TMPDIR/uncached.log"
	assert_output "$n"
	run -0 grep "^forward: $n tokens at position 0 in " "$BATS_TEST_TMPDIR/uncached.log"
}

@test "--logprobs: after top-k 3 at temperature 1 the kept tokens are the top 3 renormalized" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" < "$BATS_TEST_TMPDIR/ids" |
		sample --seed 1 --temperature 1 --top-k 3 --top-p 1 --min-p 0 -n 4 \
			--logprobs 5 --logprobs-file "$BATS_TEST_TMPDIR/lp.jsonl" > /dev/null
	# p_i = exp(lp_i) / sum of the three: from the model's log-probabilities.
	run -0 jq -s -c 'map(
		(.top[:3] | map(.logprob | exp)) as $e | ($e | add) as $z | .id as $drawn
		| [.kept, (.after | map(.id)) == (.top[:3] | map(.id)),
		   ([.after, $e] | transpose | map(.[0].p - .[1] / $z | fabs) | max < 1e-6),
		   (.after | any(.id == $drawn))] ) | unique' "$BATS_TEST_TMPDIR/lp.jsonl"
	assert_output "[[3,true,true,true]]"
}

@test "--logprobs: greedy keeps one token, the one drawn, with probability 1" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" < "$BATS_TEST_TMPDIR/ids" |
		sample --greedy -n 3 --logprobs 4 --logprobs-file "$BATS_TEST_TMPDIR/lp.jsonl" > /dev/null
	run -0 jq -c '[.kept, .after == [{id: .id, p: 1}], .id == .top[0].id]' "$BATS_TEST_TMPDIR/lp.jsonl"
	assert_output "[1,true,true]
[1,true,true]
[1,true,true]"
}

@test "scripts/viz writes one page with the traces in it and the prompt's markup as data" {
	cd "$BATS_TEST_TMPDIR"
	prompt='ROMEO: </script><script>window.pwned=1</script> <b>&amp;'
	run -0 "$ROOT/scripts/viz" --prompt "$prompt" -n 6 --top 4 --seed 3 -o page.html --keep traces
	assert_output --regexp '^viz: wrote page.html \(6 tokens, seed 3\)$'
	# Only the template's own <script> elements, no reference to anything outside.
	[ "$(grep -o '<script' page.html | wc -l)" = 2 ]
	# (run -1: a bare "! grep" never fails a bats test; 2 would be an error)
	run -1 grep -q 'pwned=1</script>' page.html
	# (the SVG namespace URI names, it is never fetched)
	run -1 grep -Eq 'src=|href=|https?:|url\(' <(sed 's#"http://www.w3.org/2000/svg"##' page.html)
	# The data: the prompt back intact, the traces' numbers.
	sed -n '/<script id="data"/,/<\/script>/p' page.html | sed '1d;$d' > data.json
	run -0 jq -r .prompt data.json
	assert_output "$prompt"
	[ "$(jq -c '[.steps[].id]' data.json)" = "$(jq -s -c 'map(.id)' traces/cached.logprobs.jsonl)" ]
	[ "$(jq -c '[.steps[].id]' data.json)" = "$(jq -s -c . traces/cached.ids)" ]
	[ "$(jq -c .race.uncached.ids data.json)" = "$(jq -s -c . traces/uncached.ids)" ]
	p=$(wc -l < traces/prompt.ids)
	[ "$(jq -c '[.race.cached.positions, .race.uncached.positions]' data.json)" = \
	  "[$((p + 5)),$(( (p + 5) * (p + 6) / 2 - (p - 1) * p / 2 ))]" ]
	[ "$(jq '[.attn | length, (.[0] | length), (.[0][0] | length)] | join(" ")' -r data.json)" = "4 $((p + 5)) 4" ]
	# Token texts from tok decode, one id at a time.
	[ "$(jq -r --arg id "$(head -n 1 traces/prompt.ids)" '.texts[$id]' data.json)" = \
	  "$(head -n 1 traces/prompt.ids | tok decode)" ]
}

@test "scripts/viz: usage errors exit 2 with the usage line; a tool's failure exits 1 with its message" {
	run -2 "$ROOT/scripts/viz"
	assert_line --index 0 "viz: no prompt (MODEL PROMPT, or --prompt)"
	assert_line --index 1 --partial "usage: viz [MODEL] PROMPT|- "
	run -2 "$ROOT/scripts/viz" "$TINY" x y
	assert_line --index 0 "viz: one model and one prompt only"
	run -2 "$ROOT/scripts/viz" --prompt x --bogus
	assert_line --index 0 "viz: unknown option '--bogus'"
	run -2 "$ROOT/scripts/viz" --prompt x -n many
	assert_line --index 0 "viz: -n: 'many' is not a whole number >= 0"
	run -2 "$ROOT/scripts/viz" --prompt x -n -4
	assert_line --index 0 "viz: -n: '-4' is not a whole number >= 0"
	run -1 "$ROOT/scripts/viz" --prompt x --model "$BATS_TEST_TMPDIR/none" -o "$BATS_TEST_TMPDIR/p.html"
	assert_output --partial "viz: the cached run failed"
	[ ! -e "$BATS_TEST_TMPDIR/p.html" ]
	run -1 "$ROOT/scripts/viz" --prompt x --temperature -1 -o "$BATS_TEST_TMPDIR/p.html"
	assert_output --partial "sample: --temperature"
	[ -z "$(ls -A "$BATS_TEST_TMPDIR")" ]
	# an -o in no directory: one line, before the model runs
	run -1 --separate-stderr "$ROOT/scripts/viz" --prompt x --model "$BATS_TEST_TMPDIR/none" -o "$BATS_TEST_TMPDIR/no/p.html"
	[ "$stderr" = "viz: $BATS_TEST_TMPDIR/no/p.html: no such directory: $BATS_TEST_TMPDIR/no" ]
}

@test "scripts/viz takes MODEL PROMPT as generate does, the old flags as aliases, and -t, -s, --temp" {
	cd "$BATS_TEST_TMPDIR"
	"$ROOT/scripts/viz" --model "$TINY" --prompt "ROMEO:" -n 5 --seed 4 --threads 1 \
		--temperature 0.5 -o a.html --keep a > /dev/null
	"$ROOT/scripts/viz" "$TINY" "ROMEO:" -n 5 -s 4 -t 1 --temp 0.5 -o b.html --keep b > /dev/null
	printf 'ROMEO:' | "$ROOT/scripts/viz" -m "$TINY" - -n 5 -s 4 --temp 0.5 -o c.html --keep c > /dev/null
	"$ROOT/scripts/viz" "ROMEO:" -n 5 -s 4 --temp 0.5 -o d.html --keep d > /dev/null
	for k in b c d; do
		cmp a/prompt.ids "$k/prompt.ids"
		cmp a/cached.ids "$k/cached.ids"
	done
	# The same draws as the pipeline at that temperature and seed.
	want=$(printf 'ROMEO:' | tok encode | forward "$TINY" | sample --seed 4 --temperature 0.5 -n 5)
	[ "$(cat a/cached.ids)" = "$want" ]
}
