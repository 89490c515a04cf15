/* markertypes.h — the catalogue: every marker type this program produces, in the order
 * meta.markerSchema lists them (upstream's types first, as mozsystemmonitor lists them).
 *
 * Each type is defined by its owner (base/markers.h says how); this list is the one place that
 * knows them all, so it lives above every producer (observe/, testlog/, the run's own markers)
 * and no producer knows another. A new type is added here once.
 */
#ifndef RESMON_MARKERTYPES_H
#define RESMON_MARKERTYPES_H

#include <stddef.h>

#include "base/jsonw.h"
#include "base/markers.h"

/* Every type, in meta.markerSchema order. */
const struct marker_type *const *marker_types(size_t *ret_n);
/* The type named name[0..len), or NULL. */
const struct marker_type *marker_type_find(const char *name, size_t len);
/* The meta.markerSchema array, as one JSON value written to w. */
void marker_schemas_write(struct jsonw *w);

#endif
