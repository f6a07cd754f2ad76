# common.bash: what every script shares, sourced (not run) by each of
# them as
#
#   here=$(cd "$(dirname "$0")" && pwd)
#   . "$here/common.bash" 2>/dev/null || . "$here/../share/qwenpipe/common.bash"
#
# In a checkout the scripts are in scripts/ with this file; `make install`
# puts them in PREFIX/bin beside the tools and this file in
# PREFIX/share/qwenpipe. It sets $here (the script's directory) if the
# script has not, and puts the tools first on PATH: the checkout's bin/
# when built, else the directory of the installed script (where `make
# install` puts the tools), else PATH as it is.

here=${here:-$(cd "$(dirname "$0")" && pwd)}
if [ -x "$here/../bin/tok" ] && [ -f "$here/../Makefile" ]; then
	PATH="$here/../bin:$PATH"
elif [ -x "$here/tok" ]; then
	PATH="$here:$PATH"
fi

# The path of a bundled file (e.g. shakespeare-tiny/heldout.txt): the
# installed copy in PREFIX/share/qwenpipe, else the checkout's data/. Fails
# (status 1, no output) when neither exists.
qp_data() {
	local f
	for f in "$here/../share/qwenpipe/$1" "$here/../data/$1"; do
		[ -e "$f" ] && { echo "$f"; return 0; }
	done
	return 1
}

# --help and --version, the same shape as the tools': qp_flags USAGE "$@"
# answers them when they are the first argument and exits 0. The help is
# "usage: USAGE", a blank line, then the script's header comment (from its
# second line to the first line that is not a comment), unprefixed.
qp_flags() {
	local usage=$1
	shift
	case "${1-}" in
	-h | --help)
		echo "usage: $usage"
		echo
		sed -n '2,/^[^#]/p' "$0" | sed '/^[^#]/d; s/^# \{0,1\}//'
		exit 0 ;;
	--version)
		local v
		v=$(cat "$here/../VERSION" 2>/dev/null || cat "$here/../share/qwenpipe/VERSION")
		echo "$(basename "$0") (qwenpipe) $v"
		exit 0 ;;
	esac
}
