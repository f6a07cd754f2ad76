#!/usr/bin/env bats
# forward | sample: generation through the feedback loop with the bundled
# shakespeare-tiny model. Greedy against transformers' greedy_48, seeds,
# logprobs, and every way the loop can end: each ends within a bound with
# the documented status and leaves no FIFO directory in a private TMPDIR.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
}

ids_of() { jq -r '.ids | join(" ")' "$GOLDEN/shakespeare-tiny/$1.json"; }
greedy_of() { jq -r '.greedy_48[]' "$GOLDEN/shakespeare-tiny/$1.json"; }

@test "greedy through the pipeline writes transformers' greedy_48 for every golden case" {
	for c in $(jq -r '.[].case' "$GOLDEN/shakespeare-tiny/index.json"); do
		ids_of "$c" > "$BATS_TEST_TMPDIR/ids"
		run -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 48"
		[ "$output" = "$(greedy_of "$c")" ] || { echo "case $c: $output" >&2; return 1; }
	done
	tmpdir_empty
}

@test "a scoring stream (no feedback) gets one token per frame" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" --score --all < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/all"
	run -0 sample --greedy < "$BATS_TEST_TMPDIR/all"
	assert_output "$(jq -r '.argmax[]' "$GOLDEN/shakespeare-tiny/romeo.json")"
}

@test "a seed gives the same tokens across runs, thread counts, prompt layouts and SIMD levels; another seed others" {
	ids_of citizen > "$BATS_TEST_TMPDIR/ids"
	gen() { forward "$TINY" "$@" < "$BATS_TEST_TMPDIR/ids" | sample --seed 42 -n 40 --ignore-eos; }
	a=$(gen --threads 1)
	b=$(gen --threads 1)
	c=$(gen --threads 2)
	tr ' ' '\n' < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/ids1"
	d=$(forward "$TINY" < "$BATS_TEST_TMPDIR/ids1" | sample --seed 42 -n 40 --ignore-eos)
	e=$(forward "$TINY" < "$BATS_TEST_TMPDIR/ids" | sample --seed 43 -n 40 --ignore-eos)
	# Another machine: the scalar kernels, in forward and in sample.
	f=$(export QWENPIPE_SIMD=scalar; gen --threads 2)
	[ "$(wc -l <<<"$a")" = 40 ]
	[ "$a" = "$b" ] && [ "$a" = "$c" ] && [ "$a" = "$d" ] && [ "$a" = "$f" ]
	[ "$a" != "$e" ]
	tmpdir_empty
}

@test "without --seed, the seed -v prints repeats the run" {
	ids_of citizen > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" < "$BATS_TEST_TMPDIR/ids" | sample -v -n 30 --ignore-eos > "$BATS_TEST_TMPDIR/a" 2> "$BATS_TEST_TMPDIR/err"
	seed=$(sed -n 's/^sample: seed \([0-9]*\),.*/\1/p' "$BATS_TEST_TMPDIR/err")
	[ -n "$seed" ]
	run -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --seed $seed -n 30 --ignore-eos"
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/a")" ]
}

@test "greedy: the prompt plus the first tokens generated, fed as one prompt, continues the same way" {
	ids_of tobe > "$BATS_TEST_TMPDIR/ids"
	greedy_of tobe | head -n 8 | tr '\n' ' ' >> "$BATS_TEST_TMPDIR/ids"
	run -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 40"
	assert_output "$(greedy_of tobe | tail -n 40)"
}

@test "-v reports the seed, the stop reason, tokens, time to first token and tokens/s" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	run --separate-stderr -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample -v --seed 7 -n 5"
	[ "${#lines[@]}" = 5 ]
	[ "${stderr_lines[0]}" = "sample: seed 7, temperature 0.8, top-k 40, top-p 0.9, min-p 0, repeat-penalty 1" ]
	[[ "${stderr_lines[1]}" =~ ^"sample: stop: max tokens; 5 tokens, first after "[0-9.]+" s, "[0-9.]+" tokens/s after it"$ ]]
}

@test "generation_config.json is read as transformers reads it: without do_sample true the argmax, top_k 50 when absent" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	m=$BATS_TEST_TMPDIR/m
	mkdir "$m"
	cp "$TINY/config.json" "$TINY/model.safetensors" "$m/"
	want=$(forward "$TINY" < "$BATS_TEST_TMPDIR/ids" | sample --greedy -n 8 | paste -sd,)
	# transformers' GenerationConfig defaults: do_sample false, top_k 50
	for g in '{"do_sample": false, "temperature": 0.8, "top_k": 40}' '{"temperature": 0.8}' none; do
		if [ "$g" = none ]; then rm -f "$m/generation_config.json"; else echo "$g" > "$m/generation_config.json"; fi
		run --separate-stderr -0 bash -c "forward '$m' < '$BATS_TEST_TMPDIR/ids' | sample -v --seed 7 -n 8 | paste -sd,"
		assert_output "$want"
		[[ "${stderr_lines[0]}" = "sample: seed 7, temperature 0, top-k "* ]]
	done
	[ "${stderr_lines[0]}" = "sample: seed 7, temperature 0, top-k 50, top-p 1, min-p 0, repeat-penalty 1" ]
	echo '{"do_sample": true, "temperature": 0.8}' > "$m/generation_config.json"
	run --separate-stderr -0 bash -c "forward '$m' < '$BATS_TEST_TMPDIR/ids' | sample -v --seed 7 -n 8"
	[ "${stderr_lines[0]}" = "sample: seed 7, temperature 0.8, top-k 50, top-p 1, min-p 0, repeat-penalty 1" ]
	[ "$output" = "$(forward "$TINY" < "$BATS_TEST_TMPDIR/ids" | sample --seed 7 -n 8 --temperature 0.8 --top-k 50 --top-p 1)" ]
	echo '{"do_sample": 1}' > "$m/generation_config.json"
	run --separate-stderr -1 forward "$m" --score < "$BATS_TEST_TMPDIR/ids"
	[ "$stderr" = "forward: $m/generation_config.json: do_sample: expected true or false, got 1" ]
}

@test "--logprobs: the chosen token and the best K with their log-probabilities under the model" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	lp="$BATS_TEST_TMPDIR/lp.jsonl"
	run -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 3 --logprobs 5 --logprobs-file '$lp'"
	[ "$(wc -l < "$lp")" = 3 ]
	# First token: transformers' logits at the last prompt position.
	g="$GOLDEN/shakespeare-tiny/romeo.json"
	first=$(head -n 1 "$lp")
	[ "$(jq .id <<<"$first")" = "$(jq '.argmax[-1]' "$g")" ]
	[ "$(jq '[.top[].id]' -c <<<"$first")" = "$(jq '.topk_ids[-1][:5]' -c "$g")" ]
	# logprob = logit - logsumexp, within float rounding.
	jq -e --slurpfile g "$g" -n --argjson f "$first" '
		[range(5)] | all(. as $i |
			($f.top[$i].logprob - ($g[0].topk_logits[-1][$i] - $g[0].logsumexp[-1])) | fabs < 1e-4)' > /dev/null
	[ "$(jq -c '[.pos, .logprob == .top[0].logprob]' <<<"$first")" = "[3,true]" ]
	[ "$(ls "$BATS_TEST_TMPDIR" | grep -c '^lp\.jsonl\.')" = 0 ]  # no temporary left
	tmpdir_empty
}

@test "--logprobs-file through a symbolic link writes the file it points to and keeps the link" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	ln -s target "$BATS_TEST_TMPDIR/link"
	run -0 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --greedy -n 2 --logprobs 1 --logprobs-file '$BATS_TEST_TMPDIR/link'"
	[ -L "$BATS_TEST_TMPDIR/link" ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/target")" = 2 ]
}

# Starts forward (stdout into a FIFO) and sample in the background, with
# generation that would run for a long time; sets fpid and spid.
start_loop() {
	mkfifo "$BATS_TEST_TMPDIR/p"
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/p" 2> "$BATS_TEST_TMPDIR/ferr" &
	fpid=$!
	sample --ignore-eos < "$BATS_TEST_TMPDIR/p" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/serr" &
	spid=$!
	# Until some tokens have come out: the loop is running.
	for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/out" ] && break; sleep 0.1; done
	[ -s "$BATS_TEST_TMPDIR/out" ]
}

# waits_for PID STATUS...: PID ends within 10 s with one of the statuses.
waits_for() {
	local pid=$1 st=0
	shift
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && { echo "process $pid still running" >&2; kill -KILL "$pid"; return 1; }
	wait "$pid" || st=$?
	for want in "$@"; do [ "$st" = "$want" ] && return 0; done
	echo "process $pid ended with $st, want one of $*" >&2
	return 1
}

@test "| head -n 3: three ids; sample exits 141, forward 0, nothing left behind" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	run -0 timeout 30 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --ignore-eos | head -n 3 > '$BATS_TEST_TMPDIR/out'; echo \${PIPESTATUS[@]}"
	assert_output "0 141 0"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/out")" = 3 ]
	tmpdir_empty
}

@test "sample killed: forward ends (0, or 141 if it was writing a frame), nothing left behind" {
	start_loop
	kill -KILL $spid
	waits_for $spid 137
	waits_for $fpid 0 141
	tmpdir_empty
}

@test "forward killed (TERM or KILL): sample ends at the end of the stream, nothing left behind" {
	for sig in TERM KILL; do
		start_loop
		kill -$sig $fpid
		waits_for $fpid 143 137
		# Between frames: a clean end (0); inside a frame: truncated (1).
		waits_for $spid 0 1
		if [ -s "$BATS_TEST_TMPDIR/serr" ]; then
			run cat "$BATS_TEST_TMPDIR/serr"
			assert_output --regexp '^sample: <stdin>: truncated frame'
		fi
		tmpdir_empty
		rm -f "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/out"
	done
}

@test "SIGINT to the whole pipeline ends every process (130), nothing left behind" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	# A process group of its own, as a shell gives a pipeline; SIGINT back
	# to its default (a background job starts with it ignored).
	setsid env --default-signal=INT bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' | sample --ignore-eos > '$BATS_TEST_TMPDIR/out'" &
	pid=$!
	for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/out" ] && break; sleep 0.1; done
	[ -s "$BATS_TEST_TMPDIR/out" ]
	kill -INT -- -$pid
	waits_for $pid 130
	run pgrep -g $pid
	assert_output ""
	tmpdir_empty
}

@test "--ctx filling up: a clean stop with the reason, ctx - prompt + 1 tokens" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"  # 3 ids
	run --separate-stderr -0 timeout 30 bash -c "forward '$TINY' --ctx 16 < '$BATS_TEST_TMPDIR/ids' | sample --ignore-eos -v; echo \${PIPESTATUS[@]}"
	[ "${#lines[@]}" = 15 ]
	[ "${lines[14]}" = "0 0" ]
	[ "${stderr_lines[1]}" = "sample: warning: the context is full (16 positions; forward --ctx sets it): generation stopped" ]
	[[ "${stderr_lines[2]}" = "sample: stop: context full; 14 tokens"* ]]
	tmpdir_empty
}

@test "forward into a file only scores: no sampler is waited for, no FIFO" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	run -0 timeout 30 bash -c "forward '$TINY' < '$BATS_TEST_TMPDIR/ids' > '$BATS_TEST_TMPDIR/scores'"
	run -0 sample --greedy < "$BATS_TEST_TMPDIR/scores"
	assert_output "$(greedy_of romeo | head -n 1)"
	tmpdir_empty
}

@test "a truncated or corrupt frame is a one-line error naming the position" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" --score < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/s"
	head -c 5000 "$BATS_TEST_TMPDIR/s" > "$BATS_TEST_TMPDIR/cut"
	run -1 sample --greedy < "$BATS_TEST_TMPDIR/cut"
	assert_output "sample: <stdin>: truncated frame at position 2"
	# A draft outside the vocabulary (the frame's fourth field).
	{ head -c 4252 "$BATS_TEST_TMPDIR/s"; printf '\377\377\377\177'; tail -c +4257 "$BATS_TEST_TMPDIR/s"; } > "$BATS_TEST_TMPDIR/bad"
	run -1 sample --greedy < "$BATS_TEST_TMPDIR/bad"
	assert_output "sample: <stdin>: corrupt frame at position 2: draft 2147483647 outside the vocabulary"
	# A fed id outside the vocabulary (the first of the frame's ids).
	{ head -c 4256 "$BATS_TEST_TMPDIR/s"; printf '\377\377\377\177'; tail -c +4261 "$BATS_TEST_TMPDIR/s"; } > "$BATS_TEST_TMPDIR/bad"
	run -1 sample --greedy < "$BATS_TEST_TMPDIR/bad"
	assert_output "sample: <stdin>: corrupt frame at position 2: id 2147483647 outside the vocabulary"
	# A NaN logit (token 0: after the header, the frame's 16 bytes and 3 ids).
	{ head -c 4268 "$BATS_TEST_TMPDIR/s"; printf '\000\000\300\177'; tail -c +4273 "$BATS_TEST_TMPDIR/s"; } > "$BATS_TEST_TMPDIR/nan"
	run -1 sample < "$BATS_TEST_TMPDIR/nan"
	assert_output "sample: <stdin>: frame at position 2: logit 0 is nan"
}

# A conversation with one forward: its input and output are FIFOs held on
# fds 5 and 6 (bats has 3), a sampler per prompt reads one stream from fd
# 6, and end_record reads the 16-byte end record that follows each stream
# (lib/format/stream.h) as "ENDG n_past computed ctx".
start_conversation() {
	mkfifo "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	forward "$TINY" -v "$@" < "$BATS_TEST_TMPDIR/in" > "$BATS_TEST_TMPDIR/out" 2> "$BATS_TEST_TMPDIR/ferr" &
	fpid=$!
	exec 5> "$BATS_TEST_TMPDIR/in" 6< "$BATS_TEST_TMPDIR/out"
}
end_record() {
	timeout 30 dd bs=16 count=1 iflag=fullblock <&6 2>/dev/null > "$BATS_TEST_TMPDIR/end"
	echo "$(head -c 4 "$BATS_TEST_TMPDIR/end")" $(od -An -tu4 -j4 "$BATS_TEST_TMPDIR/end")
}

@test "forward keeps its context: each prompt computes only its own positions, @N rewinds, ? reports" {
	start_conversation --draft 0  # drafting computes more positions
	# Prompt 1: "To be, or not to be" (7 ids); 8 greedy tokens, of which
	# sample feeds back the first 7 (it never feeds the one it stops on).
	{ ids_of tobe; echo; } >&5
	run -0 timeout 30 sample --greedy -n 8 <&6
	assert_output "$(greedy_of tobe | head -n 8)"
	run -0 end_record
	assert_output "ENDG 14 14 4096"
	# Prompt 2: the 8th token alone. The context is kept: the next 40 are
	# transformers' greedy continuation of the whole sequence, and only
	# 1 + 39 positions are computed.
	{ greedy_of tobe | sed -n 8p; echo; } >&5
	run -0 timeout 30 sample --greedy -n 40 <&6
	assert_output "$(greedy_of tobe | sed -n 9,48p)"
	run -0 end_record
	assert_output "ENDG 54 40 4096"
	# @7 keeps the prompt only; the first greedy token as prompt 3 gives
	# the same continuation again; then ? answers with an end record alone.
	{ echo @7; greedy_of tobe | head -n 1; echo; echo '?'; } >&5
	run -0 timeout 30 sample --greedy -n 4 <&6
	assert_output "$(greedy_of tobe | sed -n 2,5p)"
	run -0 end_record
	assert_output "ENDG 11 4 4096"
	run -0 end_record
	assert_output "ENDG 11 0 4096"
	exec 5>&- 6<&-
	wait $fpid
	run -0 grep -e "prompt [0-9]*:" -e "positions computed" "$BATS_TEST_TMPDIR/ferr"
	assert_output "forward: prompt 1: 14 positions (7 prompt ids, 7 fed back); the context holds 14 of 4096
forward: prompt 2: 40 positions (1 prompt id, 39 fed back); the context holds 54 of 4096
forward: prompt 3: 4 positions (1 prompt id, 3 fed back); the context holds 11 of 4096
forward: 58 positions computed"
	tmpdir_empty
}

@test "forward --no-cache keeps the conversation too, recomputing it all at every step" {
	start_conversation --no-cache
	{ ids_of tobe; echo; } >&5
	run -0 timeout 30 sample --greedy -n 2 <&6
	assert_output "$(greedy_of tobe | head -n 2)"
	run -0 end_record
	assert_output "ENDG 8 15 4096"  # 7, then 8
	{ greedy_of tobe | sed -n 2p; echo; } >&5
	run -0 timeout 30 sample --greedy -n 2 <&6
	assert_output "$(greedy_of tobe | sed -n 3,4p)"
	run -0 end_record
	assert_output "ENDG 10 19 4096"  # 9, then 10
	exec 5>&- 6<&-
	wait $fpid
}

@test "a one-shot stream ends with its end record; sample stops there" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	forward "$TINY" --score < "$BATS_TEST_TMPDIR/ids" > "$BATS_TEST_TMPDIR/s"
	[ "$(tail -c 16 "$BATS_TEST_TMPDIR/s" | head -c 4)" = ENDG ]
	run -0 bash -c "tail -c 12 '$BATS_TEST_TMPDIR/s' | od -An -tu4"
	assert_output --regexp "^ +3 +3 +4096$"
	# Another stream after it is left unread.
	cat "$BATS_TEST_TMPDIR/s" "$BATS_TEST_TMPDIR/s" > "$BATS_TEST_TMPDIR/two"
	run --separate-stderr -0 sample --greedy -v < "$BATS_TEST_TMPDIR/two"
	assert_output "$(greedy_of romeo | head -n 1)"
	[[ "${stderr_lines[1]}" = "sample: stop: end of stream; 1 token"* ]]
}

@test "bad commands and a prompt that does not fit are one-line errors naming the line" {
	ids_of romeo > "$BATS_TEST_TMPDIR/ids"
	run -1 bash -c "printf '1 2\n@1\n' | forward '$TINY' > /dev/null"
	assert_output "forward: <stdin>: line 2: @1 must come before the prompt's ids"
	run -1 bash -c "printf '1 2\n?\n' | forward '$TINY' > /dev/null"
	assert_output "forward: <stdin>: line 2: '?' inside a prompt (end the prompt with a blank line first)"
	run -1 bash -c "printf '@x\n' | forward '$TINY' > /dev/null"
	assert_output "forward: <stdin>: line 1: '@x' is not a command (@N or ?)"
	run -1 bash -c "printf '@2\n1\n' | forward '$TINY' > /dev/null"
	assert_output "forward: <stdin>: line 1: @2: the context holds only 0 positions"
	run -1 bash -c "printf '1 2\n@1\n' | forward '$TINY' --score > /dev/null"
	assert_output "forward: <stdin>: line 2: '@1': commands are for generation, not scoring"
	# The second prompt does not fit: 3 + 1 fed back + 13 > 16.
	run -1 bash -c "{ cat '$BATS_TEST_TMPDIR/ids'; echo; seq 13; } | forward '$TINY' --ctx 16 | { sample --greedy -n 2 > /dev/null; head -c 16 > /dev/null; cat > /dev/null; }; exit \${PIPESTATUS[1]}"
	assert_output "forward: <stdin>: line 15: 13 more ids do not fit in the context of 16 positions, 4 of them in use (--ctx; @N keeps fewer)"
	tmpdir_empty
}

@test "SIGINT stops sample at the next frame (130): forward keeps every id it wrote and the conversation goes on" {
	start_conversation
	{ ids_of tobe; echo; } >&5
	# A background job starts with SIGINT ignored: give it back its default.
	env --default-signal=INT sample --greedy --ignore-eos <&6 > "$BATS_TEST_TMPDIR/a1" 2> "$BATS_TEST_TMPDIR/serr" &
	spid=$!
	for _ in $(seq 100); do [ "$(wc -l < "$BATS_TEST_TMPDIR/a1")" -ge 3 ] && break; sleep 0.1; done
	kill -INT $spid
	waits_for $spid 130
	run cat "$BATS_TEST_TMPDIR/serr"
	assert_output ""
	# Every id it wrote was fed back: the context holds 7 + that many
	# (and drafting computed more: the greedy tokens of this model repeat).
	w=$(wc -l < "$BATS_TEST_TMPDIR/a1")
	run -0 end_record
	assert_output --regexp "^ENDG $((7 + w)) [0-9]+ 4096$"
	# The next prompt continues that sequence: the same tokens as a fresh
	# forward given all of it.
	{ echo 40; echo; } >&5
	run -0 timeout 30 sample --greedy -n 5 <&6
	want=$({ ids_of tobe; cat "$BATS_TEST_TMPDIR/a1"; echo 40; } | forward "$TINY" | sample --greedy -n 5)
	assert_output "$want"
	exec 5>&- 6<&-
	wait $fpid
	tmpdir_empty
}
