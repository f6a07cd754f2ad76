# pipeline.bash: what scripts/generate and scripts/chat share beyond
# common.bash, sourced by both after it: the model a user names, the flags
# that go to forward and to sample, and the exit status of a pipeline.
#
# The script sets qp_prog (its name in messages) and qp_usage (its usage
# line) first.

qp_fail() {
	echo "$qp_prog: $*" >&2
	exit 1
}

qp_usage_error() {
	echo "$qp_prog: $*" >&2
	echo "usage: $qp_usage" >&2
	exit 2
}

# ---- the model ----

# qp_model MODEL: refuses a model directory that has a config but no
# weights, saying how to get them, and sets qp_tok to the tok flags for
# the model's tokenizer, decided by content, not by name: a GGUF file's
# own (its tokenizer.ggml.* arrays and chat template) and a container's
# embedded copy, whatever the file is called; the tokenizer.json of a
# directory, or beside a safetensors file, when there is one; else tok's
# default (the bundled Qwen2.5 one). Anything else wrong with MODEL (it
# does not exist, a bad config, a damaged GGUF) forward or tok reports
# itself.
qp_model() {
	local m=$1 bundled magic
	qp_tok=()
	if [ -f "$m" ]; then
		magic=$(head -c 8 -- "$m" 2>/dev/null | tr -d '\0') || magic=
		if [[ $magic = GGUF* || $magic = QWPQUANT ]]; then
			qp_tok=(--tokenizer "$m")
		elif [ -f "$(dirname -- "$m")/tokenizer.json" ]; then
			qp_tok=(--tokenizer "$(dirname -- "$m")/tokenizer.json")
		fi
		return 0
	fi
	[ -d "$m" ] || return 0
	[ -f "$m/tokenizer.json" ] && qp_tok=(--tokenizer "$m")
	if [ -f "$m/config.json" ] && [ ! -e "$m/model.safetensors" ]; then
		bundled=$(qp_data qwen2.5-0.5b-instruct/config.json 2>/dev/null) || bundled=
		if [ -n "$bundled" ] && [ "$m/config.json" -ef "$bundled" ]; then
			qp_fail "$m has no weights (model.safetensors, 988 MB): scripts/download-qwen fetches them"
		fi
		qp_fail "$m has no weights (model.safetensors)"
	fi
}

# ---- flags ----
#
# Every flag reaches the tool that takes it, as the tools' own tables say
# (TOOL --options: "--long TAB value|switch TAB other spellings"). The
# script's own flags come first (qp_own); a flag no table has is a usage
# error of the script. A spelling two tools share goes to both when it is
# the same flag in both (--verbose), and is refused otherwise.

declare -A qp_flag   # spelling -> "TOOL LONG KIND ..." (one triple per tool)
declare -A qp_canon  # "TOOL SPELLING" -> the tool's long name for it

# qp_own LONG KIND [SPELLING...]: a flag of the script itself.
qp_own() {
	local long=$1 kind=$2 s
	shift 2
	for s in "$long" "$@"; do
		qp_flag[$s]="self $long $kind"
	done
}

# qp_tables TOOL...: learns the flags of each tool from TOOL --options.
qp_tables() {
	local tool long kind others s table
	for tool; do
		declare -ga "qp_to_${tool//-/_}=()"
		table=$("$tool" --options) || qp_fail "$tool --options failed"
		while IFS=$'\t' read -r long kind others; do
			case $long in --help | --version | --options) continue ;; esac
			for s in "$long" $others; do
				[ "$s" = - ] && continue
				qp_canon["$tool $s"]=$long
				case ${qp_flag[$s]-} in
				"self "*) ;;  # the script's own flag wins
				*) qp_flag[$s]="${qp_flag[$s]-}${qp_flag[$s]:+ }$tool $long $kind" ;;
				esac
			done
		done <<<"$table"
	done
}

# qp_llama: llama-cli's spellings, which a user of llama.cpp types out of
# habit (after the script's own qp_own --system). Those that mean something
# here become the script's own flags: -m MODEL (--model), -sys TEXT
# (--system), --repeat-last-n N; the common ones that mean nothing here are
# refused, saying what they are in llama.cpp. The script handles --model
# and --repeat-last-n (qp_repeat_last_n).
declare -A qp_llama_why=(
	[-ngl]="number of layers on the GPU" [--n-gpu-layers]="number of layers on the GPU"
	[-fa]="flash attention switch" [--flash-attn]="flash attention switch"
	[-b]="logical batch size" [--batch-size]="logical batch size"
	[-ub]="physical batch size" [--ubatch-size]="physical batch size"
	[--mlock]="switch to lock the model in RAM" [--no-mmap]="switch to read the model (the default here; --mmap maps it)"
	[-cnv]="conversation switch (scripts/chat is the conversation)"
	[--conversation]="conversation switch (scripts/chat is the conversation)"
	[-no-cnv]="switch to turn off conversation mode" [--no-conversation]="switch to turn off conversation mode"
	[-i]="interactive switch (scripts/chat is the conversation)"
	[--interactive]="interactive switch (scripts/chat is the conversation)"
	[--color]="switch to colour the output" [--keep]="count of prompt tokens to keep"
	[--mirostat]="Mirostat sampler" [--grammar]="grammar constraint" [-e]="escape switch"
	[--escape]="escape switch"
)
qp_llama() {
	local f
	qp_own --model value -m
	qp_own --repeat-last-n value
	qp_flag[-sys]="self --system value"
	for f in "${!qp_llama_why[@]}"; do
		qp_flag[$f]="self $f none"
	done
}

# qp_repeat_last_n N: llama.cpp's --repeat-last-n. The repetition penalty
# here covers every id of the context, llama.cpp's -1; 0 turns it off.
qp_repeat_last_n() {
	case $1 in
	-1) ;;
	0) qp_push sample --repeat-penalty 1 ;;
	*) qp_usage_error "--repeat-last-n: $1: the repetition penalty covers the whole context here (-1); 0 turns it off" ;;
	esac
}

# qp_parse ARGS...: sorts the arguments. Sets qp_args (the operands, in
# order), qp_self (the script's own flags as "LONG" or "LONG VALUE"
# pairs, in order: LONG, then the value or "") and, for each tool, the
# array qp_to_TOOL (with - as _: qp_to_forward, qp_to_sample), each flag
# by its long name. "--" ends the flags; "-" alone is an operand.
qp_parse() {
	qp_args=() qp_self=()
	local a name val have_val entry tool long kind longs i
	while [ $# -gt 0 ]; do
		a=$1
		shift
		case $a in
		--)
			qp_args+=("$@")
			return ;;
		--*=*) name=${a%%=*} val=${a#*=} have_val=1 ;;
		--* | -? | -sys | -ngl | -fa | -ub | -cnv | -no-cnv) name=$a val= have_val=0 ;;
		-?*)  # -n5: a short flag with its value attached
			name=${a:0:2} val=${a:2} have_val=1 ;;
		*)
			qp_args+=("$a")
			continue ;;
		esac
		entry=${qp_flag[$name]-}
		[ -n "$entry" ] || qp_usage_error "unknown option '$name'"
		read -ra entry <<<"$entry"
		# one flag, or the same long name in every tool that has it
		longs=" ${entry[0]} ${entry[1]}"
		for ((i = 4; i < ${#entry[@]}; i += 3)); do
			[ "${entry[i]}" = "${entry[1]}" ] || longs="$longs or ${entry[i - 1]} ${entry[i]}"
		done
		[[ "$longs" != *" or "* ]] ||
			qp_usage_error "'$name' is ambiguous:$longs (give the long name)"
		kind=${entry[2]}
		[ "$kind" != none ] ||
			qp_usage_error "'$name' is llama.cpp's ${qp_llama_why[$name]}, which has no meaning here"
		if [ "$kind" = value ] && [ "$have_val" = 0 ]; then
			[ $# -gt 0 ] || qp_usage_error "$name: missing value"
			val=$1 have_val=1
			shift
		elif [ "$kind" = switch ] && [ "$have_val" = 1 ]; then
			qp_usage_error "$name takes no value"
		fi
		for ((i = 0; i < ${#entry[@]}; i += 3)); do
			tool=${entry[i]} long=${entry[i + 1]}
			if [ "$tool" = self ]; then
				qp_self+=("$long" "$val")
			elif [ "$kind" = value ]; then
				qp_push "$tool" "$long" "$val"
			else
				qp_push "$tool" "$long"
			fi
		done
	done
}

qp_push() {  # qp_push TOOL ARG...: appends to qp_to_TOOL
	local -n _to="qp_to_${1//-/_}"
	shift
	_to+=("$@")
}

# qp_drop ARRAY LONG: removes every LONG (and its value) from ARRAY.
qp_drop() {
	local -n arr=$1
	local i out=()
	for ((i = 0; i < ${#arr[@]}; i++)); do
		if [ "${arr[i]}" = "$2" ]; then
			i=$((i + 1))  # and its value
		else
			out+=("${arr[i]}")
		fi
	done
	arr=("${out[@]}")
}

# qp_value ARRAY LONG: the value of the last LONG in the flags of ARRAY
# (a qp_to_TOOL array); status 1 when it is not there.
qp_value() {
	local -n arr=$1
	local i found=1
	for ((i = 0; i < ${#arr[@]}; i++)); do
		[ "${arr[i]}" = "$2" ] && { qp_found=${arr[i + 1]-}; found=0; }
	done
	return $found
}

# ---- exit status ----

# qp_status STATUS... -- ERRFILE...: the status of a pipeline of tools
# from PIPESTATUS, and the stderr each wrote to ERRFILE ("" for a tool
# whose stderr went straight to the terminal). The first tool that failed
# gives the status, and only the messages of the tools up to it are shown:
# those after it failed because it did (`sample: <stdin>: empty input`
# after a forward failure). A tool ended by a closed pipe (141) did not
# fail, unless it is the last one (then the script's reader went away).
qp_status() {
	local st=() errs=() i n first=-1 rc=0
	while [ "$1" != -- ]; do st+=("$1"); shift; done
	shift
	errs=("$@")
	n=${#st[@]}
	for ((i = 0; i < n; i++)); do
		if [ "${st[i]}" != 0 ] && [ "${st[i]}" != 141 ]; then
			first=$i
			rc=${st[i]}
			break
		fi
	done
	[ "$first" = -1 ] && [ "${st[n - 1]}" = 141 ] && rc=141
	for ((i = 0; i < n; i++)); do
		[ "$first" != -1 ] && [ "$i" -gt "$first" ] && break
		[ -n "${errs[i]-}" ] && [ -s "${errs[i]}" ] && cat "${errs[i]}" >&2
	done
	return "$rc"
}
