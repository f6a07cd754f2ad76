#!/usr/bin/env bats
# scripts/chat: one forward for the whole conversation (each turn computes
# only its own tokens), the context kept within its size, the commands; and
# in a real terminal (tmux): line editing, history, Ctrl-C, Ctrl-D.
bats_require_minimum_version 1.5.0
load test_helper

setup() {
	load_assert
	private_tmpdir
	CHAT="$ROOT/scripts/chat"
}

# The ChatML text between an answer and the next message, written out here
# (the chat takes it from tok chat): an independent check of what it sends.
turn_ids() { printf '<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n' "$1" | tok encode; }
count() { wc -w < "$1"; }

@test "each turn computes only its own tokens; the answers are those of a fresh pipeline given the whole sequence" {
	d=$BATS_TEST_TMPDIR
	gen() { forward "$TINY" | sample --greedy --ignore-eos -n 12; }
	# Turn 1: the rendered message, 12 tokens of which 11 are fed back.
	tok chat --user "Who art thou?" > "$d/p1"
	gen < "$d/p1" > "$d/a1"
	# Turn 2: the 12th token (never fed back), then the next message.
	turn_ids "Whence comest thou?" > "$d/t2"
	cat "$d/p1" "$d/a1" "$d/t2" | gen > "$d/a2"
	# (--draft 0: drafting computes more positions, the turn line says how
	# many; the terminal test below has it on)
	run --separate-stderr -0 bash -c "printf 'Who art thou?\nWhence comest thou?\n' | '$CHAT' '$TINY' --greedy --ignore-eos -n 12 -v --draft 0"
	assert_output "$(tok decode < "$d/a1"; echo; tok decode < "$d/a2"; echo)"
	[ "${stderr_lines[0]}" = "chat: a context of 4096 positions" ]
	p1=$(count "$d/p1") t2=$(count "$d/t2")
	[ "${stderr_lines[1]}" = "chat: turn 1: $((p1 + 11)) positions ($p1 for the message, 11 for the answer); the context holds $((p1 + 11)) of 4096" ]
	[ "${stderr_lines[2]}" = "chat: turn 2: $((1 + t2 + 11)) positions ($((1 + t2)) for the message, 11 for the answer); the context holds $((p1 + 12 + t2 + 11)) of 4096" ]
	tmpdir_empty
}

@test "a full context drops the oldest turns, keeps the system message, and the chat goes on" {
	run --separate-stderr -0 bash -c "printf 'hello\nagain\nmore\nand more\n' | '$CHAT' '$TINY' --ctx 80 -n 15 --seed 1 -v"
	[ "${#lines[@]}" -ge 4 ]
	run -0 grep -c '^chat: the context is full: the oldest turn is dropped' <<<"$stderr"
	[ "$output" -ge 1 ]
	# Each turn fits: a context never holds more than 80.
	run -0 bash -c "grep -o 'holds [0-9]* of 80' <<<'$stderr' | awk '\$2 > 80' | wc -l"
	assert_output 0
	[ "$(grep -c '^chat: turn ' <<<"$stderr")" = 4 ]
	# With a system message: it is what the kept conversation starts with.
	printf 'hello\nagain\nmore\nand more\n/save %s\n' "$BATS_TEST_TMPDIR/conv.json" |
		"$CHAT" "$TINY" --ctx 90 -n 15 --seed 1 --system "Thou art a king." > /dev/null 2>&1
	run -0 jq -r '.[0].role + ": " + .[0].content' "$BATS_TEST_TMPDIR/conv.json"
	assert_output "system: Thou art a king."
	[ "$(jq length "$BATS_TEST_TMPDIR/conv.json")" -lt 9 ]  # some turns dropped
	tmpdir_empty
}

@test "an answer the context cuts short says so after its text, and sample never warns" {
	# --ctx 80 and the default limit of 200: each answer gets what the
	# context has left, and stops there with a notice of its own.
	run --separate-stderr -0 bash -c "printf 'hello\nagain\n' | '$CHAT' '$TINY' --ctx 80 --seed 1 --ignore-eos --draft 0 -v"
	refute_output --partial "sample:"
	[[ $stderr != *"sample: warning"* ]]
	[ "${#lines[@]}" -ge 2 ]
	# Turn 1: the message's positions, then the answer up to the 80th.
	p1=$(tok chat --user hello | wc -w)
	[ "${stderr_lines[1]}" = "chat: the answer stopped at $((80 - p1)) tokens: the context is full (80 positions, --ctx)" ]
	[ "${stderr_lines[2]}" = "chat: turn 1: 79 positions ($p1 for the message, $((80 - p1 - 1)) for the answer); the context holds 79 of 80" ]
	[ "$(grep -c '^chat: the answer stopped at' <<<"$stderr")" = 2 ]
	tmpdir_empty
}

@test "a message that cannot fit says so and the chat goes on" {
	run --separate-stderr -0 bash -c "printf '%s\nhi\n' \"\$(printf 'word %.0s' \$(seq 60))\" | '$CHAT' '$TINY' --ctx 40 -n 4 --greedy"
	[[ "${stderr_lines[0]}" = "chat: this message does not fit in the context: "*" positions with the system message, of 40 (--ctx)" ]]
	[ "${#lines[@]}" = 1 ]  # the answer to "hi"
}

@test "/reset starts over, /system sets the system message, /save writes what tok chat reads, /load goes on from it" {
	d=$BATS_TEST_TMPDIR
	printf 'Who art thou?\n/reset\nWho art thou?\n/save %s\n' "$d/c.json" |
		"$CHAT" "$TINY" --greedy -n 6 -v > "$d/out" 2> "$d/err"
	# After /reset the same message gets the same answer and the same work.
	[ "$(sed -n 1p "$d/out")" = "$(sed -n 2p "$d/out")" ]
	run -0 grep '^chat: turn' "$d/err"
	[ "$(sed 's/turn [0-9]*//' <<<"${lines[0]}")" = "$(sed 's/turn [0-9]*//' <<<"${lines[1]}")" ]
	grep -qx 'chat: a new conversation' "$d/err"
	run -0 jq -c '[.[].role]' "$d/c.json"
	assert_output '["user","assistant"]'
	tok chat < "$d/c.json" > /dev/null
	# /load: the next turn computes the loaded conversation and the message.
	printf '/load %s\nWhence comest thou?\n' "$d/c.json" | "$CHAT" "$TINY" --greedy -n 6 -v > "$d/out2" 2> "$d/err2"
	grep -qx "chat: loaded 2 messages from $d/c.json" "$d/err2"
	n=$(jq --arg q "Whence comest thou?" '. + [{role: "user", content: $q}]' "$d/c.json" | tok chat | wc -l)
	run -0 grep '^chat: turn 1:' "$d/err2"
	assert_output --partial "($n for the message, 5 for the answer)"
	# /system: the next turn is computed again with the new system message.
	printf 'Hi\n/system Speak as a king.\nHi\n/save %s\n' "$d/s.json" | "$CHAT" "$TINY" --greedy -n 6 > /dev/null 2>&1
	run -0 jq -c '[.[].role]' "$d/s.json"
	assert_output '["system","user","assistant","user","assistant"]'
	[ "$(jq -r '.[0].content' "$d/s.json")" = "Speak as a king." ]
	tmpdir_empty
}

@test "/help lists the commands; an unknown command is a notice; // sends a message that begins with /" {
	run --separate-stderr -0 bash -c "printf '/help\n/bogus x\n//slash\n/quit\nnot read\n' | '$CHAT' '$TINY' --greedy -n 4 -v"
	[[ "${stderr_lines[1]}" = "  /help "* ]]
	grep -q '^  /quit ' <<<"$stderr"
	grep -qx 'chat: unknown command /bogus (/help lists them)' <<<"$stderr"
	[ "${#lines[@]}" = 1 ]
	want=$(tok chat --user /slash | forward "$TINY" | sample --greedy -n 4 | tok decode)
	assert_output "$want"
}

@test "a last message without its newline is answered; blanks are no message; /quit may have words after it; /system alone is its usage" {
	want=$(tok chat --user "Who art thou?" | forward "$TINY" | sample --greedy -n 4 | tok decode)
	run --separate-stderr -0 bash -c "printf '  \t \nWho art thou?' | '$CHAT' '$TINY' --greedy -n 4 -v --draft 0"
	assert_output "$want"
	# one turn: the blank line was not sent
	run -0 grep -c '^chat: turn' <<<"$stderr"
	assert_output 1
	run --separate-stderr -0 bash -c "printf '/system\n/quit now\nWho art thou?\n' | '$CHAT' '$TINY' --greedy -n 4"
	assert_output ""
	[ "$stderr" = "chat: usage: /system TEXT" ]
}

@test "/save and /load: ~/ is the home directory, no file gives the usage, a broken file is named" {
	export HOME=$BATS_TEST_TMPDIR/home
	mkdir -p "$HOME"
	echo '[{"role": "user"}]' > "$BATS_TEST_TMPDIR/bad.json"
	run --separate-stderr -0 bash -c "printf 'Hi\n/save ~/c.json\n/save\n/load\n/load %s\n/load ~/c.json\n' '$BATS_TEST_TMPDIR/bad.json' | '$CHAT' '$TINY' --greedy -n 4"
	[ "${stderr_lines[0]}" = "chat: saved 2 messages to $HOME/c.json" ]
	[ "${stderr_lines[1]}" = "chat: usage: /save FILE" ]
	[ "${stderr_lines[2]}" = "chat: usage: /load FILE" ]
	[ "${stderr_lines[3]}" = "tok: $BATS_TEST_TMPDIR/bad.json: messages[0]: content is not a string or an array of text parts" ]
	[ "${stderr_lines[4]}" = "chat: loaded 2 messages from $HOME/c.json" ]
	[ "$(jq -r '.[0].content' "$HOME/c.json")" = Hi ]
}

@test "--seed S seeds turn N with S + N - 1" {
	d=$BATS_TEST_TMPDIR
	printf 'Hi\nHi\n' | "$CHAT" "$TINY" --seed 3 -n 8 --ignore-eos > "$d/a"
	printf 'Hi\nHi\n' | "$CHAT" "$TINY" --seed 3 -n 8 --ignore-eos > "$d/b"
	cmp "$d/a" "$d/b"
	tok chat --user Hi > "$d/p1"
	forward "$TINY" < "$d/p1" | sample --seed 3 -n 8 --ignore-eos > "$d/a1"
	{ cat "$d/p1" "$d/a1"; turn_ids Hi; } | forward "$TINY" | sample --seed 4 -n 8 --ignore-eos > "$d/a2"
	[ "$(cat "$d/a")" = "$(tok decode < "$d/a1"; echo; tok decode < "$d/a2"; echo)" ]
}

@test "usage errors exit 2; a model without weights says how to get them" {
	run -2 "$CHAT"
	assert_line --index 0 "chat: expected one model, got 0 operand(s)"
	assert_line --index 1 "usage: chat MODEL [--system TEXT] [-v] [FLAGS...]"
	run -2 "$CHAT" "$TINY" --copy
	assert_line --index 0 "chat: unknown option '--copy'"
	run -2 "$CHAT" "$TINY" --emit-eos
	assert_line --index 0 "chat: --emit-eos: the chat ends each answer itself"
	run -1 "$CHAT" "$DATA/qwen2.5-0.5b-instruct" < /dev/null
	assert_output "chat: $DATA/qwen2.5-0.5b-instruct has no weights (model.safetensors, 988 MB): scripts/download-qwen fetches them"
	run -1 "$CHAT" "$BATS_TEST_TMPDIR/none" < /dev/null
	assert_output "forward: $BATS_TEST_TMPDIR/none: No such file or directory"
	run -0 "$CHAT" --version
	assert_output "chat (qwenpipe) $(cat "$ROOT/VERSION")"
}

# ---- in a terminal: tmux on a private socket, one pane per test ----

tmux_start() {
	command -v tmux > /dev/null || skip "tmux is not installed (scripts/deps)"
	SOCK="chat-$BATS_TEST_NUMBER-$$"
	tmux -L "$SOCK" -f /dev/null new-session -d -x 150 -y 50 -s t \
		"cd '$ROOT' && PATH='$BIN:$PATH' TMPDIR='$TMPDIR' bash --norc --noprofile"
	tmux -L "$SOCK" send-keys -t t "PS1='$ '; clear" Enter
}
teardown() {
	[ -z "${SOCK-}" ] || tmux -L "$SOCK" kill-server 2>/dev/null || true
}
keys() { tmux -L "$SOCK" send-keys -t t "$@"; }
pane() { tmux -L "$SOCK" capture-pane -p -J -S - -t t; }
# wait_for N REGEX: until at least N lines of the pane match (at most 60
# s, polling: the machine may be loaded).
wait_for() {
	local i
	for ((i = 0; i < 600; i++)); do
		[ "$(pane | grep -cE -- "$2")" -ge "$1" ] && return 0
		sleep 0.1
	done
	echo "timed out waiting for $1 x '$2'; the pane:" >&2
	pane >&2
	return 1
}

@test "terminal: typing with the arrow keys, history, Ctrl-D ends the chat" {
	tmux_start
	keys "scripts/chat data/shakespeare-tiny --greedy -n 4; echo status=\$?" Enter
	wait_for 1 "^> "
	# "Who art hou", three left, "t": the message is "Who art thou".
	keys "Who art hou" Left Left Left "t" Enter
	wait_for 2 "^> "
	keys Up Enter  # the same message again, from the history
	wait_for 3 "^> "
	keys "/save $BATS_TEST_TMPDIR/c.json" Enter
	wait_for 1 "chat: saved 4 messages"
	run -0 jq -r '.[] | select(.role == "user") | .content' "$BATS_TEST_TMPDIR/c.json"
	assert_output "Who art thou
Who art thou"
	# No escape sequence reached the model.
	run -1 grep -q $'\x1b' "$BATS_TEST_TMPDIR/c.json"
	keys C-d
	wait_for 1 "^status=0"
}

@test "terminal: Ctrl-C stops an answer and the chat goes on; Ctrl-C at the prompt ends it" {
	tmux_start
	keys "scripts/chat data/shakespeare-tiny --ignore-eos -n 100000 --seed 1 -v; echo status=\$?" Enter
	wait_for 1 "^> "
	keys "Tell me a long tale" Enter
	# Some of the answer, then Ctrl-C: a turn line, and the prompt again.
	for _ in $(seq 300); do [ "$(pane | sed '1,/Tell me a long tale/d' | wc -w)" -ge 20 ] && break; sleep 0.1; done
	keys C-c
	wait_for 1 "^chat: turn 1:"
	wait_for 2 "^> "
	keys "and then?" Enter
	for _ in $(seq 300); do [ "$(pane | sed '1,/and then?/d' | wc -w)" -ge 20 ] && break; sleep 0.1; done
	keys C-c
	wait_for 1 "^chat: turn 2:"
	wait_for 3 "^> "
	# The second turn computed its message and its answer only: the first
	# answer, stopped, was all fed back, so nothing of it is computed again.
	line=$(pane | grep '^chat: turn 2:')
	[[ "$line" =~ ^"chat: turn 2: "([0-9]+)" positions ("([0-9]+)" for the message, "([0-9]+)" for the answer"(", "([0-9]+)" for drafts not taken")?")" ]]
	[ "${BASH_REMATCH[2]}" = "$(turn_ids 'and then?' | wc -l)" ]
	[ "${BASH_REMATCH[1]}" = $((BASH_REMATCH[2] + BASH_REMATCH[3] + ${BASH_REMATCH[5]:-0})) ]
	keys C-c
	wait_for 1 "^status=0"
	tmpdir_empty
}

@test "terminal: Ctrl-C just after Enter withdraws the message, and the prompt starts a new line" {
	# A jq that takes a second to render a message (the one call with
	# --arg q), so that Ctrl-C lands before the answer begins.
	local slow=$BATS_TEST_TMPDIR/slow jq
	jq=$(command -v jq)
	mkdir -p "$slow"
	printf '#!/bin/sh\ncase " $* " in *" --arg q "*) sleep 1;; esac\nexec %s "$@"\n' "$jq" >"$slow/jq"
	chmod +x "$slow/jq"
	tmux_start
	keys "PATH='$slow':\$PATH scripts/chat data/shakespeare-tiny --greedy -n 4; echo status=\$?" Enter
	wait_for 1 "^> "
	keys "Who art thou" Enter
	sleep 0.3
	keys C-c
	wait_for 1 "^chat: the message is withdrawn \(Ctrl-C before its answer began\)$"
	wait_for 2 "^> "
	run -1 grep -q '\^C> ' <<<"$(pane)"
	keys "/save $BATS_TEST_TMPDIR/c.json" Enter
	wait_for 1 "chat: saved 0 messages"
	keys C-d
	wait_for 1 "^status=0"
}

@test "terminal: a full context and /reset, with notices" {
	tmux_start
	keys "scripts/chat data/shakespeare-tiny --ctx 80 -n 15 --seed 2; echo status=\$?" Enter
	wait_for 1 "^> "
	for m in hello again more "and more"; do
		n=$(($(pane | grep -c '^> ') + 1))
		keys "$m" Enter
		wait_for "$n" "^> "
	done
	wait_for 1 "chat: the context is full"
	keys "/reset" Enter
	wait_for 1 "chat: a new conversation"
	keys "/quit" Enter
	wait_for 1 "^status=0"
}
