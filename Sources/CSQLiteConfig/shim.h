// The connection settings of SQLite that Swift cannot make: sqlite3_db_config is variadic.
#ifndef NOTTY_CSQLITECONFIG_SHIM_H
#define NOTTY_CSQLITECONFIG_SHIM_H

#include <sqlite3.h>

// The query planner stability guarantee: a statement's plan never depends on the values
// bound to it, so binding other values never makes SQLite prepare it again.
static inline int notty_sqlite3_keep_plans(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_QPSG, 1, (int *)0);
}

#endif
