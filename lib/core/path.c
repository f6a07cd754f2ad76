/* path: see path.h. */
#include "core/path.h"

#include <string.h>
#include <sys/stat.h>

int path_join(char *out, size_t cap, const char *dir, const char *name, struct err *e)
{
	size_t n = strlen(dir), k = strlen(name);
	int slash = n > 0 && dir[n - 1] != '/';
	if (n + (size_t)slash + k + 1 > cap)
		return err_set(e, "%.200s: path too long", dir);
	memmove(out, dir, n);  /* out may be dir itself */
	if (slash)
		out[n] = '/';
	memcpy(out + n + (size_t)slash, name, k + 1);
	return 0;
}

int path_beside(char *out, size_t cap, const char *file, const char *name,
		struct err *e)
{
	const char *slash = strrchr(file, '/');
	size_t n = slash ? (size_t)(slash - file) + 1 : 0;
	if (!slash)
		return path_join(out, cap, ".", name, e);
	if (n + strlen(name) + 1 > cap)
		return err_set(e, "%.200s: path too long", file);
	memmove(out, file, n);
	strcpy(out + n, name);
	return 0;
}

bool path_is_dir(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}
