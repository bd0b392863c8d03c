#ifndef FERRY_CSQLITE_SHIM_H
#define FERRY_CSQLITE_SHIM_H

#include <sqlite3.h>

// SQLITE_TRANSIENT and SQLITE_STATIC are macros that cast integers to function pointers;
// Swift cannot import them, so these return the same values.
static inline sqlite3_destructor_type ferry_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline sqlite3_destructor_type ferry_sqlite_static(void) { return SQLITE_STATIC; }

// sqlite3_db_config is variadic; this wraps its (int, int*) form.
static inline int ferry_sqlite_db_config_flag(sqlite3 *db, int op, int value, int *out) { return sqlite3_db_config(db, op, value, out); }

#endif
