/* bigmem: see bigmem.h. */
#include "bigmem.h"

#include <errno.h>
#include <sys/mman.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14; older headers lack it */
#endif

void *bigmem_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	int saved = errno;
	/* Advice only: refused, the pages are small and faulted on first use. */
	madvise(p, bytes, MADV_HUGEPAGE);
	madvise(p, bytes, MADV_POPULATE_WRITE);
	errno = saved;
	return p;
}

void bigmem_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
