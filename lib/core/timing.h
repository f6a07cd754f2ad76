/* timing: the clock and the summary statistics every benchmark uses.
 *
 * Benchmarks report a spread, not a single number: the median (robust to a
 * busy machine), the minimum and the maximum of repeated measurements.
 */
#ifndef TIMING_H
#define TIMING_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin: use differences). */
double time_now(void);

struct spread {
	double median, min, max;
};

/* The spread of v[0..n) (n >= 1), which it sorts in place. The median of an
 * even count is the mean of the two middle values. */
struct spread spread_of(double *v, int n);

#endif
