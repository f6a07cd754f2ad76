/* bigmem: large anonymous buffers backed by transparent huge pages.
 *
 * Decode streams every weight once per token. With 4 KiB pages that is a
 * quarter of a million pages per pass over the 988 MB model, each a TLB
 * miss and a page walk; with 2 MiB pages it is under 500. Here the
 * streaming read bandwidth with two threads rose from 26.5 to 32.5 GB/s
 * with huge pages (README, Performance).
 *
 * The pages are asked for with MADV_HUGEPAGE (this kernel's THP mode is
 * "madvise") and faulted in at once with MADV_POPULATE_WRITE (Linux 5.14):
 * faulting huge pages one by one inside read() took 0.3 to 3 s for the
 * 988 MB model, populating them first 0.3 s. Where either advice is
 * refused (an older kernel, THP disabled) the buffer is still valid, with
 * small pages faulted on first touch: the same bytes, only slower.
 */
#ifndef BIGMEM_H
#define BIGMEM_H

#include <stddef.h>

/* A zeroed, writable, page-aligned buffer of bytes bytes, or NULL with
 * errno set. Release with bigmem_free(p, bytes). */
void *bigmem_alloc(size_t bytes);

void bigmem_free(void *p, size_t bytes);

#endif
