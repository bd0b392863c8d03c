#ifndef FERRY_CICAL_SHIM_H
#define FERRY_CICAL_SHIM_H

// libical's recurrence expansion, time zones and parser are plain C functions Swift calls
// directly (its callback takes a context pointer, so a non-capturing Swift closure serves);
// nothing needs wrapping. This header exists only to give the module its includes.
#include <libical/ical.h>

#endif
