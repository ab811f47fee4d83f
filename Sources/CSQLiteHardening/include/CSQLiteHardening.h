#ifndef KEYWELL_CSQLITEHARDENING_H
#define KEYWELL_CSQLITEHARDENING_H

struct sqlite3;

/* sqlite3_db_config() is variadic, so Swift cannot call it. Each sets one option on `db` and
   returns SQLite's result code; `*now_on` receives the option's value after the call. */

/* SQLITE_DBCONFIG_DEFENSIVE: no writable_schema, no writes to shadow tables, no direct writes
   to the file through the dbstat or sqlite_dbpage tables. */
int keywell_sqlite_set_defensive(struct sqlite3 *db, int on, int *now_on);

/* SQLITE_DBCONFIG_TRUSTED_SCHEMA: with 0, SQL from the schema (triggers, views, defaults) may
   not call functions with side effects or use virtual tables (as PRAGMA trusted_schema=OFF). */
int keywell_sqlite_set_trusted_schema(struct sqlite3 *db, int on, int *now_on);

#endif
