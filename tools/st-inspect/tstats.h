/* tstats: summary statistics of one tensor's values, for inspection.
 *
 * Reads every element once (this is the only place st-inspect touches
 * tensor data). Elements are read with memcpy, so the data need not be
 * aligned. Floating types are widened exactly to double; NaN and infinite
 * values are counted and left out of min, max and the means.
 */
#ifndef TSTATS_H
#define TSTATS_H

#include <stdint.h>
#include "format/safetensors.h"

struct tstats {
	uint64_t n;         /* elements */
	int decoded;        /* 0: the dtype's values are not read (tstats_decodes);
			     * then every count below is 0 */
	uint64_t n_nan;
	uint64_t n_inf;
	uint64_t n_finite;  /* n - n_nan - n_inf */
	double min, max;    /* over finite values; 0 when there are none */
	double mean;        /* sum / n_finite; 0 when n_finite == 0 */
	double mean_abs;    /* sum |x| / n_finite */
};

/* Whether the values of dtype t are decoded: every dtype but the packed
 * F6_E2M3 and F6_E3M2 (the format leaves their bit order open) and C64
 * (complex: no order for min and max). F4 is read two elements a byte; the
 * statistics do not depend on which nibble comes first. */
int tstats_decodes(enum st_dtype t);

/* Computes s over n elements of type t at data. Never fails. */
void tstats_compute(struct tstats *s, const void *data, enum st_dtype t, uint64_t n);

/* The value of element i of type t at data, widened to double. */
double tstats_value(const void *data, enum st_dtype t, uint64_t i);

#endif
