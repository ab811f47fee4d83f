#include <dbus/dbus.h>

/* The byte length of the array an iterator is inside (after dbus_message_iter_recurse), in O(1). libdbus marks this call deprecated
   in favour of dbus_message_iter_get_element_count, which walks variable-length arrays; a cheap
   size check before deciding where a call runs needs the O(1) form. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline int keywell_iter_array_byte_length(DBusMessageIter *iter) {
    return dbus_message_iter_get_array_len(iter);
}
#pragma clang diagnostic pop

#include <string.h>

/* Zeroes `KEYWELL_STACK_SCRUB_BYTES` of stack below the caller's frame. A handled call leaves
   values in the stack slots its frames used, and Swift keeps short byte strings (a `Data` of up to
   14 bytes: a short password or secret) inside the value itself, so stack slots can hold
   plaintext no explicit wipe of a buffer reaches. Called once a round of calls was handled, below
   the frames that handled them. noinline: the area must be a frame of its own, under the caller. */
#define KEYWELL_STACK_SCRUB_BYTES (48 * 1024)
__attribute__((noinline)) static void keywell_scrub_stack(void) {
    unsigned char area[KEYWELL_STACK_SCRUB_BYTES];
    explicit_bzero(area, sizeof area);
    /* Keeps the compiler from treating the area as dead. */
    __asm__ __volatile__("" : : "r"(area) : "memory");
}
