#include "CSQLiteHardening.h"

#include <sqlite3.h>
#include <string.h>

int keywell_sqlite_set_defensive(struct sqlite3 *db, int on, int *now_on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, on, now_on);
}

int keywell_sqlite_set_trusted_schema(struct sqlite3 *db, int on, int *now_on) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, on, now_on);
}

/* SQLite's own size for the regions of the WAL index (WALINDEX_PGSZ). */
enum { keywell_wal_index_region_size = 32768 };

const void *keywell_sqlite_wal_index(struct sqlite3 *db) {
    sqlite3_file *file = 0;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == 0) return 0;
    const sqlite3_io_methods *methods = file->pMethods;
    if (methods == 0 || methods->iVersion < 2 || methods->xShmMap == 0) return 0;
    void volatile *region = 0;
    /* bExtend 0: only an index the connection has already made is mapped, never a new one. */
    if (methods->xShmMap(file, 0, keywell_wal_index_region_size, 0, &region) != SQLITE_OK) return 0;
    return (const void *)region;
}

int keywell_wal_index_header_read(const void *region, struct keywell_wal_index_header *out) {
    /* Writers store the second copy, then the first (walIndexWriteHdr); readers take the first,
       then the second, and trust them only when they agree (walIndexTryHdr). */
    struct keywell_wal_index_header second;
    const volatile unsigned char *bytes = (const volatile unsigned char *)region;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(out, (const void *)bytes, sizeof *out);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    memcpy(&second, (const void *)(bytes + sizeof *out), sizeof second);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return memcmp(out, &second, sizeof second) == 0;
}
