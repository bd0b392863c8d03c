#ifndef FERRY_CSYSTEMD_SHIM_H
#define FERRY_CSYSTEMD_SHIM_H

// sd_notify and sd_journal_sendv are not variadic, so Swift calls them directly; nothing needs
// wrapping. This header exists only to give the module its includes.
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include <sys/uio.h>

#endif
