/*
 * The control protocol between pam_keywell.so and keywelld: the one place its codes, sizes and
 * names are defined. The PAM module includes this file; the daemon imports it as the Swift
 * module CKeywellControl (Sources/CKeywellControl/module.modulemap). The protocol itself is
 * described in docs/control-protocol.md.
 *
 * Plain C, constants only: no functions, no types, nothing to link.
 */
#ifndef KEYWELL_CONTROL_H
#define KEYWELL_CONTROL_H

/* The socket: $XDG_RUNTIME_DIR/<KW_CONTROL_FOLDER>/<KW_CONTROL_SOCKET> (docs/control-protocol.md §1). */
#define KW_CONTROL_FOLDER "keywell"
#define KW_CONTROL_SOCKET "control"

/* Version magic at the head of every request and response; a new magic for an incompatible change. */
#define KW_CONTROL_MAGIC "KWC1"

enum {
    KW_CONTROL_MAGIC_LENGTH = 4,

    /* Request ops: one ASCII letter each (§2). */
    KW_OP_OPEN_SESSION = 'O',    /* [password] or no field */
    KW_OP_CLOSE_SESSION = 'C',   /* no field */
    KW_OP_CHANGE_PASSWORD = 'P', /* [old, new] */
    KW_OP_PING = 'Q',            /* no field */
    /* The login unlock through the TPM (docs/login-unlock.md): from root only. */
    KW_OP_OPEN_SESSION_TPM = 'T', /* [authorization value]: open session, unseal, unlock login */
    KW_OP_LOGIN_UNLOCK_ENABLE = 'E', /* [password, authorization value, TCTI configuration(, PCRs)] */
    KW_OP_LOGIN_UNLOCK_DISABLE = 'D', /* no field; from root or the user */

    /* Request: magic, op, field count; then per field a u32 length and the bytes. */
    KW_REQUEST_HEAD_LENGTH = 6,
    KW_FIELD_LENGTH_SIZE = 4,
    KW_MAX_FIELD = 8192, /* longest field either side accepts */

    /* Response: magic, i32 status, u32 message length; then the message. */
    KW_RESPONSE_HEAD_LENGTH = 12,
    KW_MAX_RESPONSE_MESSAGE = 4096, /* longest message the daemon sends */

    /* Statuses the module tells apart: OSStatus values (the daemon's SecStatus table; a Swift
     * test checks they agree). Every other non-zero status is logged as it came. */
    KW_STATUS_OK = 0,
    KW_STATUS_AUTH_FAILED = -25293, /* the keychain's password is not the login password (drift) */

    /* The login unlock's authorization value: random bytes, one SHA-256 digest long. */
    KW_LOGIN_UNLOCK_VALUE_LENGTH = 32,
};

/* Where root keeps each user's authorization value: <folder>/<uid>, the folder 0700 root and the
 * file 0600 root (docs/login-unlock.md). The PAM module reads it; `keywell login-unlock` (run by
 * root) writes and removes it. */
#define KW_LOGIN_UNLOCK_FOLDER "/var/lib/keywell/login-unlock"

#endif
