/* prefetch: see prefetch.h. */
#include "kernels/prefetch.h"
#include "core/cpu.h"

#include <pthread.h>

/* Until prefetch_tune runs: the choice for processors other than AMD's
 * family 26 and later. */
struct prefetch_tuning prefetch_tuning = { .page_l1 = 0, .line_ahead = 8192 };

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void tune(void)
{
	if (cpu_amd_family() >= 26)
		prefetch_tuning = (struct prefetch_tuning){ .page_l1 = 1, .line_ahead = 4096,
							    .q5_lines = 1 };
}

void prefetch_tune(void)
{
	pthread_once(&once, tune);
}
