/* profile_conv.h — the converter's state, shared by its modules (not for callers: profile.h is
 * the converter's face).
 *
 * Two passes over the stream. Pass 1 (profile.c) reads it line by line through one buffer
 * (streamread.h), validates every line completely (jscan.h: a payload copied into the profile
 * unchecked could make the whole profile unreadable), and keeps a 32-byte record per marker
 * (struct rec), the names interned (intern.h), what is open right now (struct open_set), the
 * counters' samples (profile_counters.h) and the tests a late message may still fill
 * (profile_messages.h). Pass 2 (profile_write.h) closes what is still open and writes the profile;
 * the markers' payloads are copied from the input in file order through a read window, so the
 * input is read sequentially twice and nothing grows with payload sizes. Pass 1 can also follow a
 * stream as it grows (profile_conv_*), so that a stop request only waits for pass 2, and pass 2
 * takes back what it added, so that it can run again later.
 *
 * A payload lives in the input (the record points at its bytes by offset) or, when the converter
 * made or changed it, in conv.side (REC_SIDE). Every function here that may fail returns 0 or
 * -errno, and a line taker 1 (taken), 0 (invalid: skipped and counted) or -errno.
 */
#ifndef RESMON_PROFILE_CONV_H
#define RESMON_PROFILE_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "base/jscan.h"
#include "base/jsonw.h"
#include "profile/intern.h"
#include "profile/profile_counters.h"
#include "profile/streamread.h"

#define CONV_CHUNK (1u << 20) /* the output buffer, the read window over the input */

struct rec {
    uint64_t off;      /* payload offset in the input, or in conv.side when REC_SIDE */
    double start, end; /* ms; end NAN for an instant */
    uint32_t len_cat;  /* payload length (0: null) | category << 24 */
    uint32_t name;     /* stringArray index | REC_SIDE */
};
#define REC_SIDE (UINT32_C(1) << 31)
#define REC_LEN_MASK UINT32_C(0xFFFFFF)

/* What is open right now: only the (kind,key)s opened and not yet closed are kept, so a run of a
 * million tests, each opened and closed, holds a handful of entries, not a million. */
#define OPEN_NONE UINT32_MAX
struct open_ent {
    uint64_t off;  /* the open line in the input */
    uint32_t len;  /* its length; OPEN_NONE: a free entry */
    uint32_t prev; /* the entry this one shadows (same kind and key, opened earlier) */
    uint32_t next; /* the next key in the same bucket; in the free list, the next free entry */
    uint32_t key_len;
    uint64_t hash;
    char *key;     /* "kind\0key", the raw JSON texts */
};

struct open_set {
    struct open_ent *ent;
    uint32_t n, cap, free_head, live;
    uint32_t *bucket; /* the top entry of each key, chained through next */
    uint32_t nbucket; /* a power of two */
};

struct conv {
    int in_fd;
    struct sread rd;       /* the stream's lines (streamread.h) */
    bool started;          /* the meta line has been taken */
    struct rec *recs;
    size_t nrec, rcap;
    struct intern names;
    struct open_set opens;
    struct jsonw side;     /* generated payloads */
    struct jsonw tmp;
    uint64_t meta_off, thread_off;
    size_t meta_len, thread_len;
    bool have_thread, have_clock;
    char run_name[64]; /* the run's thread's name: no dumped process's track may read the same */
    uint64_t t0_ns;
    unsigned ncat;
    int logical_cpus;
    double last_ms;
    uint64_t skipped, closed;
    uint64_t max_markers;                /* 0: no limit (profile.h, MARKER LIMIT) */
    struct counter counters[MAX_COUNTERS];
    unsigned ncounters, counters_written;
    uint8_t *counter_of; /* per name id: counter index + 1, 0 none */
    uint8_t *hidden;     /* per name id: whose markers a hidden track draws (profile_write.c) */
    size_t counter_of_len;
    uint64_t dropped_routine, dropped_other; /* markers left out past the limit */
    /* Test markers a message line may still fill (LATE MESSAGES, profile.h): a hash of each one's
     * name and its record, in stream order; a filled one's record becomes REC_NONE. */
    struct msg_target {
        uint64_t hash;
        uint32_t rec;
    } *targets;
    size_t ntargets, targets_cap, target_next; /* target_next: where the next search starts */
    uint64_t message_bytes;                    /* side bytes the filled payloads take */
    struct pstacks *stacks;                  /* stack lines of dumped processes, NULL: none */
    struct pcpu *cpu;                        /* sampled stacks (profile_cpu.h), NULL: none */
    /* output */
    int out_fd;
    char *obuf, *wbuf;     /* output buffer; read window over the input's payloads */
    size_t olen;
    uint64_t obytes;       /* bytes of profile written (compressed: what reached the file) */
    int oerr;
    z_stream *gz;          /* gzip output, or NULL */
    char *zbuf;
};

/* Pass 1's helpers (profile.c) the other modules use. */
void conv_note_time(struct conv *c, double ms); /* the last timestamp seen (profilingEndTime) */
int conv_add_rec(struct conv *c, int64_t name_id, double start, double end, unsigned cat, uint64_t off,
                 size_t len, bool side);
/* The text of a string value given as its raw JSON text (quotes included), in one spelling
 * whatever its escapes (js_canonical_string, in c->tmp when it has any). */
int conv_canonical_text(struct conv *c, const char *v, size_t n, const char **ret, size_t *ret_len);
/* Intern a name given as the raw JSON text of a string value (quotes included); its id or -errno. */
int64_t conv_intern_name(struct conv *c, const char *v, size_t n);
/* The category a "category" member names (0 when absent or outside meta.categories). */
unsigned conv_category(const struct conv *c, const struct js_member *m);
/* len bytes of the input at off (-EIO: the file shrank under us). */
int conv_pread(int fd, char *buf, size_t len, uint64_t off);

/* The start of an open line in ms, or NAN. */
double conv_state_start(const struct conv *c, const struct sline_state *f);

#endif
