/* Fuzz target for the JSON scanner (base/jscan.h) that the stream's readers and the mozlog parser
 * share. Any bytes as one line:
 *   - what the strict reader takes as a whole object, cJSON takes too, with as many members (but
 *     for lone surrogates, which the scanner lets through and cJSON refuses: jscan.h says why);
 *   - the loose reader takes whatever the strict one does, with the same members;
 *   - every cut inside an object the loose reader takes is a cut (it.cut), never invalid;
 *   - each member's value goes through the readers of values (arrays, strings decoded into a
 *     buffer of exactly their size, numbers), so ASan sees every byte they touch. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jscan.h"
#include "base/jsonw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The members of s[0, n): their count, -1 when it is not one whole object. */
static int read_object(const char *s, size_t n, bool loose, bool *cut)
{
    struct js_iter it;
    struct js_member m;
    int k = 0, r;
    if (js_obj_begin(&it, s, s + n) < 0) {
        *cut = it.cut;
        return -1;
    }
    it.loose = loose;
    while ((r = js_obj_next(&it, &m)) > 0) {
        k++;
        if (m.val[0] == '"') {
            char *out = malloc(m.val_len - 2 ? m.val_len - 2 : 1);
            if (!out)
                abort();
            if (js_decode_string(m.val + 1, m.val_len - 2, out) > m.val_len - 2)
                abort();
            free(out);
        } else if (m.val[0] == '[') {
            struct js_iter a;
            struct js_member e;
            size_t count = 0;
            js_arr_begin(&a, m.val, m.val + m.val_len);
            a.loose = loose;
            while (js_arr_next(&a, &e) > 0)
                count++;
            if (!a.done || (!loose && count != js_array_count(m.val, m.val_len)))
                abort();
        } else if (m.val[0] == '-' || js_is_digit(m.val[0])) {
            double d;
            uint64_t u;
            (void)js_number(m.val, m.val_len, &d);
            (void)js_u64(m.val, m.val_len, &u);
        }
    }
    *cut = it.cut;
    return r == 0 && js_skip_ws(it.p, it.e) == it.e ? k : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    bool cut;
    int strict = read_object(s, size, false, &cut);
    int loose = read_object(s, size, true, &cut);
    if (strict >= 0) {
        if (loose != strict)
            abort();
        if (!js_lone_surrogates(s, size, NULL)) {
            cJSON *root = cJSON_ParseWithLength(s, size);
            if (!root || !cJSON_IsObject(root) || cJSON_GetArraySize(root) != strict)
                abort();
            cJSON_Delete(root);
        }
        /* the converter's canonical form of every string-valued member, as it interns them */
        struct js_iter it;
        struct js_member m;
        js_obj_begin(&it, s, s + size);
        while (js_obj_next(&it, &m) > 0)
            if (m.val[0] == '"') {
                struct jsonw w;
                jsonw_init(&w);
                js_canonical_string(&w, m.val + 1, m.val_len - 2);
                jsonw_release(&w);
            }
    }
    if (loose >= 0) {
        /* cuts inside the object: every one of a short object, a few of a long one */
        const char *end = s + size;
        while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
            end--;
        size_t n = (size_t)(end - s);
        for (size_t k = n - 1; k > 0; k = k > 256 ? k - k / 8 - 1 : k - 1) {
            if (read_object(s, k, true, &cut) >= 0 || !cut)
                abort();
        }
    }
    return 0;
}
