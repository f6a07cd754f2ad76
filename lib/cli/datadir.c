/* datadir: see datadir.h. */
#include "cli/datadir.h"

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

const char *datadir_find(const char *rel, char *buf, size_t cap)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return NULL;
	exe[n] = 0;
	char *dir = dirname(exe);
	snprintf(buf, cap, "%s/../share/qwenpipe/%s", dir, rel);
	if (access(buf, R_OK) == 0)
		return buf;
	char up[64] = "";
	for (int i = 0; i <= 4; i++, strcat(up, "../")) {
		snprintf(buf, cap, "%s/%sdata/%s", dir, up, rel);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}
