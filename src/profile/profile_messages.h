/* profile_messages.h — late messages (profile.h, LATE MESSAGES): a failure's text that a harness
 * prints after the test's result, given to that test's marker by the converter.
 *
 * A test marker that went otherwise than expected and has no message (or one a line cut) becomes
 * a target as it is taken; a message line fills the first target of its test's name after the
 * last one filled (harnesses print the texts in the order the tests ended), with a payload of its
 * own in the converter's side buffer: the marker's members, the message, and "messageLines" when
 * the text has more than one line (the front-end shows a string field on one line). Bounded:
 * MSG_TARGETS_MAX targets, payloads of MSG_PAYLOAD_MAX, texts of MSG_TEXT_MAX, MSG_SIDE_MAX in all.
 */
#ifndef RESMON_PROFILE_MESSAGES_H
#define RESMON_PROFILE_MESSAGES_H

#include <stddef.h>

struct conv;

/* The test marker whose record was just added (the last one), payload data[0..len) (a validated
 * object), may be given a message later. 0, or -ENOMEM. */
int message_note_target(struct conv *c, const char *data, size_t len);

/* {"type":"message","test":NAME,"message":TEXT}: 1 taken (a message nothing takes too), 0 invalid,
 * -errno. */
int message_take_line(struct conv *c, const char *line, size_t len);

#endif
