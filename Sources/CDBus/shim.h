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
