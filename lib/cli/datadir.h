/* datadir: the bundled data (data/ in a checkout, share/qwenpipe after
 * `make install`), found from the running executable, so that a tool's
 * defaults work from any directory.
 */
#ifndef DATADIR_H
#define DATADIR_H

#include <stddef.h>

/* The path of the bundled file rel (e.g. "shakespeare-tiny/heldout.txt"),
 * written into buf[cap]: D/../share/qwenpipe/rel, else the first of
 * D/data/rel, D/../data/rel, ... up to four levels up (bin/ and
 * build/san/bin/ in a checkout), D the executable's directory. NULL when
 * none exists. */
const char *datadir_find(const char *rel, char *buf, size_t cap);

#endif
