#include "CSQLiteHardening.h"

#include <sqlite3.h>

int keywell_sqlite_set_defensive(struct sqlite3 *db, int on, int *now_on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, now_on);
}

int keywell_sqlite_set_trusted_schema(struct sqlite3 *db, int on, int *now_on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, on, now_on);
}
