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

/* The header of a WAL database's index (the first 48 bytes of the -shm), which every commit
   rewrites: a reader that finds it as it last was knows no connection has committed since. */
struct keywell_wal_index_header {
    unsigned long long words[6];
};

/* The WAL index's first region as `db`'s connection has mapped it, or null (not in WAL mode,
   or nothing mapped yet). Call on the connection's own thread; the mapping lasts as long as the
   connection. */
const void *keywell_sqlite_wal_index(struct sqlite3 *db);

/* Reads the header from `region` as SQLite's readers do (its first copy, a barrier, its second):
   1 with `out` filled when both copies agree, 0 while a writer is midway through them. */
int keywell_wal_index_header_read(const void *region, struct keywell_wal_index_header *out);

#endif
