/* The JSONL line scanner behind `line_scan.scan_block`: a block of lines in, the mapping's fields out as column
   buffers, without a Python object per row.

   Each line is parsed (RFC 8259, as Python's `json.loads` reads it after a strict UTF-8 decode) and the values
   at the requested paths are kept: a scalar per line (text, integer, float, or missing), a list of texts per
   line, or a list of records per line (e.g. messages: role and content). A line whose values this scanner
   cannot vouch for is `suspect`, and the caller maps it with the row path's own code: not valid UTF-8 or JSON,
   not an object, nested deeper than the limit, NaN or Infinity, an integer past int64, a lone surrogate
   escape, a key on a path given twice, or a value of a kind the columns do not hold (true/false, an object or
   array where a scalar is read, text where an object is walked into). Suspect is always safe: it only costs
   the row path's time. tests/judgewatch/traffic/test_line_scan.py compares it with the row path. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { K_MISSING = 0, K_TEXT = 1, K_INT = 2, K_FLOAT = 3 };
enum { MODE_SCALAR = 0, MODE_TEXTS = 1, MODE_RECORDS = 2 };
#define MAX_FIELDS 8 /* record fields */
#define MAX_CHILDREN 32

typedef struct {
    char *p;
    Py_ssize_t len, cap;
} Buf;

static int reserve(Buf *b, Py_ssize_t extra) {
    if (b->len + extra <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->len + extra) cap *= 2;
    char *p = realloc(b->p, (size_t)cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* Values over cells (lines, or list elements): a kind, a text's length (its bytes in `data`), a number. */
typedef struct {
    Buf kinds, lengths, ints, floats, data;
} Cells;

typedef struct Node Node;
typedef struct {
    const char *key;
    Py_ssize_t keylen;
    long long index; /* the segment as a list index, -1 when it is not one */
    Node *node;
} Child;

struct Node {
    Child children[MAX_CHILDREN];
    int n;
    int output; /* -1: not a leaf */
};

typedef struct {
    int mode;
    int nfields;
    const char *fields[MAX_FIELDS];
    Py_ssize_t fieldlens[MAX_FIELDS];
    Cells values;            /* per line (scalar), or per element (texts) */
    Cells record[MAX_FIELDS]; /* per element, one per field (records) */
    Buf list_lengths;        /* int32 per line (texts, records) */
    Buf list_valid;          /* uint8 per line */
    Py_ssize_t mark_data, mark_elems, mark_record_data[MAX_FIELDS];
} Output;

typedef struct {
    const unsigned char *s, *end;
    int depth, max_depth;
    Output *outs;
    int nouts;
    Py_ssize_t line;
    int oom;
    Buf key; /* an escaped key, decoded */
} P;

#define SUSPECT (-1)

static inline void ws(P *p) {
    while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\r' || *p->s == '\n')) p->s++;
}

static int cells_push(P *p, Cells *c, int kind, int64_t iv, double fv) {
    if (reserve(&c->kinds, 1) || reserve(&c->lengths, 4) || reserve(&c->ints, 8) || reserve(&c->floats, 8)) {
        p->oom = 1;
        return SUSPECT;
    }
    c->kinds.p[c->kinds.len++] = (char)kind;
    int32_t zero = 0;
    memcpy(c->lengths.p + c->lengths.len, &zero, 4);
    c->lengths.len += 4;
    memcpy(c->ints.p + c->ints.len, &iv, 8);
    c->ints.len += 8;
    memcpy(c->floats.p + c->floats.len, &fv, 8);
    c->floats.len += 8;
    return 0;
}

static inline int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *s, const unsigned char *end) {
    if (end - s < 4) return -1;
    int v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval(s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static inline void put_utf8(Buf *out, uint32_t cp) {
    unsigned char *o = (unsigned char *)out->p + out->len;
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        out->len += 1;
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        out->len += 2;
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        out->len += 3;
    } else {
        o[0] = (unsigned char)(0xF0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[3] = (unsigned char)(0x80 | (cp & 0x3F));
        out->len += 4;
    }
}

/* One multi-byte UTF-8 sequence at s (s[0] >= 0x80), strictly as Python's decoder takes it: its length, or 0. */
static inline int utf8_seq(const unsigned char *s, const unsigned char *end) {
    unsigned char c = s[0];
    Py_ssize_t left = end - s;
    if (c >= 0xC2 && c <= 0xDF) return (left >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || (s[2] & 0xC0) != 0x80) return 0;
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return (s[1] >= lo && s[1] <= hi) ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return (s[1] >= lo && s[1] <= hi) ? 4 : 0;
    }
    return 0;
}

/* A string at p->s (on its opening quote). With `out`, its decoded UTF-8 is appended there. */
static int string(P *p, Buf *out) {
    const unsigned char *s = p->s + 1, *end = p->end;
    if (out && reserve(out, end - s)) { /* decoded text is never longer than its JSON */
        p->oom = 1;
        return SUSPECT;
    }
    for (;;) {
        const unsigned char *run = s;
        while (s < end && *s >= 0x20 && *s < 0x80 && *s != '"' && *s != '\\') s++;
        if (out && s > run) {
            memcpy(out->p + out->len, run, (size_t)(s - run));
            out->len += s - run;
        }
        if (s >= end) return SUSPECT; /* unterminated */
        unsigned char c = *s;
        if (c == '"') {
            p->s = s + 1;
            return 0;
        }
        if (c < 0x20) return SUSPECT; /* a raw control character: json.loads refuses it */
        if (c >= 0x80) {
            int k = utf8_seq(s, end);
            if (!k) return SUSPECT;
            if (out) {
                memcpy(out->p + out->len, s, (size_t)k);
                out->len += k;
            }
            s += k;
            continue;
        }
        /* a backslash */
        if (end - s < 2) return SUSPECT;
        unsigned char e = s[1];
        unsigned char plain = 0;
        switch (e) {
            case '"': plain = '"'; break;
            case '\\': plain = '\\'; break;
            case '/': plain = '/'; break;
            case 'b': plain = '\b'; break;
            case 'f': plain = '\f'; break;
            case 'n': plain = '\n'; break;
            case 'r': plain = '\r'; break;
            case 't': plain = '\t'; break;
            case 'u': break;
            default: return SUSPECT;
        }
        if (e != 'u') {
            if (out) out->p[out->len++] = (char)plain;
            s += 2;
            continue;
        }
        int cp = hex4(s + 2, end);
        if (cp < 0) return SUSPECT;
        s += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF) return SUSPECT; /* a lone low surrogate */
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end - s < 6 || s[0] != '\\' || s[1] != 'u') return SUSPECT; /* a lone high surrogate */
            int lo = hex4(s + 2, end);
            if (lo < 0xDC00 || lo > 0xDFFF) return SUSPECT;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            s += 6;
        }
        if (out) put_utf8(out, (uint32_t)cp);
    }
}

/* A key at p->s: validated, and given as its bytes (raw when it holds no escape, else decoded into p->key). */
static int key(P *p, const char **text, Py_ssize_t *len) {
    const unsigned char *k0 = p->s + 1;
    if (string(p, NULL)) return SUSPECT;
    Py_ssize_t raw = (Py_ssize_t)(p->s - 1 - k0);
    if (!memchr(k0, '\\', (size_t)raw)) {
        *text = (const char *)k0;
        *len = raw;
        return 0;
    }
    const unsigned char *after = p->s;
    p->s = k0 - 1;
    p->key.len = 0;
    if (string(p, &p->key)) return SUSPECT;
    p->s = after;
    *text = p->key.p;
    *len = p->key.len;
    return 0;
}

/* A number at p->s: K_INT (fits int64) or K_FLOAT (finite), as json.loads reads it; SUSPECT otherwise. */
static int number(P *p, int64_t *iv, double *fv) {
    const unsigned char *s = p->s, *start = s, *end = p->end;
    int neg = 0, is_float = 0;
    if (s < end && *s == '-') {
        neg = 1;
        s++;
    }
    if (s >= end || *s < '0' || *s > '9') return SUSPECT; /* -Infinity, or no digits */
    if (*s == '0') {
        s++;
    } else {
        while (s < end && *s >= '0' && *s <= '9') s++;
    }
    const unsigned char *int_end = s;
    if (s < end && *s == '.') {
        const unsigned char *d = s + 1;
        while (d < end && *d >= '0' && *d <= '9') d++;
        if (d > s + 1) { /* "1." is the integer 1 followed by '.', which the grammar refuses */
            is_float = 1;
            s = d;
        }
    }
    if (s < end && (*s == 'e' || *s == 'E')) {
        const unsigned char *d = s + 1;
        if (d < end && (*d == '+' || *d == '-')) d++;
        const unsigned char *digits = d;
        while (d < end && *d >= '0' && *d <= '9') d++;
        if (d > digits) {
            is_float = 1;
            s = d;
        }
    }
    p->s = s;
    if (!is_float) {
        Py_ssize_t ndigits = int_end - start - neg;
        if (ndigits > 18) return SUSPECT; /* Python's int has no bound; these columns hold int64 */
        int64_t v = 0;
        for (const unsigned char *d = start + neg; d < int_end; d++) v = v * 10 + (*d - '0');
        *iv = neg ? -v : v;
        return K_INT;
    }
    char buf[64];
    Py_ssize_t len = s - start;
    if (len >= (Py_ssize_t)sizeof buf) return SUSPECT;
    memcpy(buf, start, (size_t)len);
    buf[len] = 0;
    errno = 0;
    double v = strtod(buf, NULL); /* correctly rounded, as Python's float() */
    if (!isfinite(v)) return SUSPECT;
    *fv = v;
    return K_FLOAT;
}

static int literal(P *p, const char *word, Py_ssize_t len) {
    if (p->end - p->s < len || memcmp(p->s, word, (size_t)len) != 0) return SUSPECT;
    p->s += len;
    return 0;
}

static int value(P *p, const Node *node);

/* A scalar leaf: text, integer or float kept per line; null is missing; anything else is suspect. */
static int scalar(P *p, Output *o) {
    Cells *c = &o->values;
    Py_ssize_t at = p->line;
    unsigned char ch = *p->s;
    if (ch == '"') {
        Py_ssize_t before = c->data.len;
        if (string(p, &c->data)) return SUSPECT;
        c->kinds.p[at] = K_TEXT;
        int32_t n = (int32_t)(c->data.len - before);
        memcpy(c->lengths.p + 4 * at, &n, 4);
        return 0;
    }
    if (ch == 'n') return literal(p, "null", 4);
    int64_t iv = 0;
    double fv = 0;
    int kind = number(p, &iv, &fv);
    if (kind == SUSPECT) return SUSPECT;
    c->kinds.p[at] = (char)kind;
    memcpy(c->ints.p + 8 * at, &iv, 8);
    memcpy(c->floats.p + 8 * at, &fv, 8);
    return 0;
}

static int list_start(P *p, Output *o) {
    o->list_valid.p[p->line] = 1;
    return 0;
}

static void list_count(P *p, Output *o) {
    int32_t n;
    memcpy(&n, o->list_lengths.p + 4 * p->line, 4);
    n++;
    memcpy(o->list_lengths.p + 4 * p->line, &n, 4);
}

/* A text element of a texts leaf (a plain text value is a list of one). */
static int text_element(P *p, Output *o) {
    Cells *c = &o->values;
    if (*p->s != '"') return SUSPECT; /* a null item, a number, a record: the row path's to judge */
    Py_ssize_t before = c->data.len;
    if (string(p, &c->data)) return SUSPECT;
    if (cells_push(p, c, K_TEXT, 0, 0)) return SUSPECT;
    int32_t n = (int32_t)(c->data.len - before);
    memcpy(c->lengths.p + c->lengths.len - 4, &n, 4);
    list_count(p, o);
    return 0;
}

/* One record of a records leaf: its fields' texts (or missing); other keys are validated and skipped. */
static int record(P *p, Output *o) {
    if (*p->s != '{') return SUSPECT;
    if (++p->depth > p->max_depth) return SUSPECT;
    Py_ssize_t at[MAX_FIELDS];
    for (int f = 0; f < o->nfields; f++) {
        if (cells_push(p, &o->record[f], K_MISSING, 0, 0)) return SUSPECT;
        at[f] = o->record[f].kinds.len - 1;
    }
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        p->depth--;
        list_count(p, o);
        return 0;
    }
    unsigned seen = 0;
    for (;;) {
        if (p->s >= p->end || *p->s != '"') return SUSPECT;
        const char *name;
        Py_ssize_t namelen;
        if (key(p, &name, &namelen)) return SUSPECT;
        ws(p);
        if (p->s >= p->end || *p->s != ':') return SUSPECT;
        p->s++;
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        int field = -1;
        for (int f = 0; f < o->nfields; f++)
            if (o->fieldlens[f] == namelen && memcmp(o->fields[f], name, (size_t)namelen) == 0) field = f;
        if (field >= 0) {
            if (seen & (1u << field)) return SUSPECT; /* json.loads keeps the last: not read here */
            seen |= 1u << field;
            Cells *c = &o->record[field];
            if (*p->s == '"') {
                Py_ssize_t before = c->data.len;
                if (string(p, &c->data)) return SUSPECT;
                c->kinds.p[at[field]] = K_TEXT;
                int32_t n = (int32_t)(c->data.len - before);
                memcpy(c->lengths.p + 4 * at[field], &n, 4);
            } else if (*p->s == 'n') {
                if (literal(p, "null", 4)) return SUSPECT;
            } else {
                return SUSPECT; /* content parts, a number as a role: the row path's to judge */
            }
        } else if (value(p, NULL)) {
            return SUSPECT;
        }
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        if (*p->s == ',') {
            p->s++;
            ws(p);
            continue;
        }
        if (*p->s == '}') {
            p->s++;
            p->depth--;
            list_count(p, o);
            return 0;
        }
        return SUSPECT;
    }
}

/* A texts or records leaf: null is missing, a list holds its elements, a text is a list of one (texts). */
static int listed(P *p, Output *o) {
    unsigned char ch = *p->s;
    if (ch == 'n') return literal(p, "null", 4);
    if (ch == '"' && o->mode == MODE_TEXTS) {
        list_start(p, o);
        return text_element(p, o);
    }
    if (ch != '[') return SUSPECT;
    if (++p->depth > p->max_depth) return SUSPECT;
    list_start(p, o);
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        p->depth--;
        return 0;
    }
    for (;;) {
        if (p->s >= p->end) return SUSPECT;
        if ((o->mode == MODE_TEXTS ? text_element(p, o) : record(p, o)) != 0) return SUSPECT;
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        if (*p->s == ',') {
            p->s++;
            ws(p);
            continue;
        }
        if (*p->s == ']') {
            p->s++;
            p->depth--;
            return 0;
        }
        return SUSPECT;
    }
}

static const Node *child_by_key(const Node *node, const char *name, Py_ssize_t len, int *which) {
    for (int i = 0; i < node->n; i++) {
        const Child *c = &node->children[i];
        if (c->keylen == len && memcmp(c->key, name, (size_t)len) == 0) {
            *which = i;
            return c->node;
        }
    }
    return NULL;
}

static int object(P *p, const Node *node) {
    if (++p->depth > p->max_depth) return SUSPECT;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == '}') {
        p->s++;
        p->depth--;
        return 0;
    }
    uint64_t seen = 0;
    for (;;) {
        if (p->s >= p->end || *p->s != '"') return SUSPECT;
        const Node *next = NULL;
        int which = -1;
        if (node) {
            const char *name;
            Py_ssize_t len;
            if (key(p, &name, &len)) return SUSPECT;
            next = child_by_key(node, name, len, &which);
        } else if (string(p, NULL)) { /* no path goes on from here */
            return SUSPECT;
        }
        ws(p);
        if (p->s >= p->end || *p->s != ':') return SUSPECT;
        p->s++;
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        if (next) {
            if (seen & (1ull << which)) return SUSPECT; /* a key on a path given twice */
            seen |= 1ull << which;
            /* Text where the mapping walks into an object: at the top level it may be JSON to parse. */
            if (next->output < 0 && *p->s == '"') return SUSPECT;
        }
        if (value(p, next)) return SUSPECT;
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        if (*p->s == ',') {
            p->s++;
            ws(p);
            continue;
        }
        if (*p->s == '}') {
            p->s++;
            p->depth--;
            return 0;
        }
        return SUSPECT;
    }
}

static int array(P *p, const Node *node) {
    if (++p->depth > p->max_depth) return SUSPECT;
    p->s++;
    ws(p);
    if (p->s < p->end && *p->s == ']') {
        p->s++;
        p->depth--;
        return 0;
    }
    long long i = 0;
    for (;;) {
        if (p->s >= p->end) return SUSPECT;
        const Node *next = NULL;
        for (int k = 0; node && k < node->n; k++)
            if (node->children[k].index == i) next = node->children[k].node;
        if (value(p, next)) return SUSPECT;
        ws(p);
        if (p->s >= p->end) return SUSPECT;
        if (*p->s == ',') {
            p->s++;
            ws(p);
            i++;
            continue;
        }
        if (*p->s == ']') {
            p->s++;
            p->depth--;
            return 0;
        }
        return SUSPECT;
    }
}

/* Any value at p->s; `node` is where the paths stand here (NULL: none goes on, validate only). */
static int value(P *p, const Node *node) {
    if (p->s >= p->end) return SUSPECT;
    if (node && node->output >= 0) {
        Output *o = &p->outs[node->output];
        return o->mode == MODE_SCALAR ? scalar(p, o) : listed(p, o);
    }
    switch (*p->s) {
        case '{': return object(p, node);
        case '[': return array(p, node);
        case '"': return string(p, NULL);
        case 't': return literal(p, "true", 4);
        case 'f': return literal(p, "false", 5);
        case 'n': return literal(p, "null", 4);
        default: {
            int64_t iv;
            double fv;
            return number(p, &iv, &fv) == SUSPECT ? SUSPECT : 0; /* NaN, Infinity: suspect */
        }
    }
}

/* ---- the module: building the path tree from Python, scanning, handing back buffers ---- */

typedef struct {
    Node *nodes;
    int n, cap;
} Tree;

static Node *new_node(Tree *t) {
    if (t->n == t->cap) return NULL;
    Node *node = &t->nodes[t->n++];
    node->n = 0;
    node->output = -1;
    return node;
}

static PyObject *bytes_of(Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", b->len); }

static PyObject *cells_tuple(Cells *c) {
    return Py_BuildValue("(NNNNN)", bytes_of(&c->kinds), bytes_of(&c->lengths), bytes_of(&c->ints),
                         bytes_of(&c->floats), bytes_of(&c->data));
}

static void cells_free(Cells *c) {
    free(c->kinds.p);
    free(c->lengths.p);
    free(c->ints.p);
    free(c->floats.p);
    free(c->data.p);
}

static int zeroed(Buf *b, Py_ssize_t size) {
    b->p = calloc((size_t)(size ? size : 1), 1);
    b->len = b->cap = size;
    return b->p ? 0 : -1;
}

/* Before a line: where each output stands, so a suspect line can be taken back. */
static void mark(P *p) {
    for (int k = 0; k < p->nouts; k++) {
        Output *o = &p->outs[k];
        o->mark_data = o->values.data.len;
        o->mark_elems = o->values.kinds.len;
        for (int f = 0; f < o->nfields; f++) {
            o->mark_record_data[f] = o->record[f].data.len;
            if (f == 0) o->mark_elems = o->record[0].kinds.len;
        }
    }
}

static void take_back(P *p) {
    Py_ssize_t at = p->line;
    int32_t zero = 0;
    for (int k = 0; k < p->nouts; k++) {
        Output *o = &p->outs[k];
        Cells *c = &o->values;
        c->data.len = o->mark_data;
        if (o->mode == MODE_SCALAR) {
            c->kinds.p[at] = K_MISSING;
            memcpy(c->lengths.p + 4 * at, &zero, 4);
            continue;
        }
        memcpy(o->list_lengths.p + 4 * at, &zero, 4);
        o->list_valid.p[at] = 0;
        if (o->mode == MODE_TEXTS) {
            c->kinds.len = o->mark_elems;
            c->lengths.len = 4 * o->mark_elems;
            c->ints.len = c->floats.len = 8 * o->mark_elems;
        }
        for (int f = 0; f < o->nfields; f++) {
            Cells *r = &o->record[f];
            r->data.len = o->mark_record_data[f];
            r->kinds.len = o->mark_elems;
            r->lengths.len = 4 * o->mark_elems;
            r->ints.len = r->floats.len = 8 * o->mark_elems;
        }
    }
}

static int parse_specs(PyObject *specs, Tree *tree, Output *outs, int nouts) {
    Node *root = new_node(tree);
    for (int k = 0; k < nouts; k++) {
        PyObject *spec = PyList_GET_ITEM(specs, k); /* (segments, mode, fields) */
        PyObject *segments, *fields;
        int mode;
        if (!PyArg_ParseTuple(spec, "O!iO!", &PyTuple_Type, &segments, &mode, &PyTuple_Type, &fields)) return -1;
        if (PyTuple_GET_SIZE(fields) > MAX_FIELDS || mode < 0 || mode > 2 || PyTuple_GET_SIZE(segments) < 1) {
            PyErr_SetString(PyExc_ValueError, "bad path spec");
            return -1;
        }
        Output *o = &outs[k];
        o->mode = mode;
        o->nfields = (int)PyTuple_GET_SIZE(fields);
        for (int f = 0; f < o->nfields; f++) {
            char *text;
            Py_ssize_t len;
            if (PyBytes_AsStringAndSize(PyTuple_GET_ITEM(fields, f), &text, &len)) return -1;
            o->fields[f] = text;
            o->fieldlens[f] = len;
        }
        Node *node = root;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(segments); i++) {
            char *key;
            Py_ssize_t keylen;
            long long index;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(segments, i), "y#L", &key, &keylen, &index)) return -1;
            if (node->output >= 0) {
                PyErr_SetString(PyExc_ValueError, "a path goes on past another path's end");
                return -1;
            }
            Node *next = NULL;
            for (int c = 0; c < node->n; c++)
                if (node->children[c].keylen == keylen && memcmp(node->children[c].key, key, (size_t)keylen) == 0)
                    next = node->children[c].node;
            if (!next) {
                if (node->n == MAX_CHILDREN || !(next = new_node(tree))) {
                    PyErr_SetString(PyExc_ValueError, "too many paths");
                    return -1;
                }
                node->children[node->n++] = (Child){key, keylen, index, next};
            }
            node = next;
        }
        if (node->output >= 0 || node->n > 0) {
            PyErr_SetString(PyExc_ValueError, "a path ends where another goes on, or twice");
            return -1;
        }
        node->output = k;
    }
    return 0;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, ends;
    PyObject *specs;
    int max_depth;
    if (!PyArg_ParseTuple(args, "y*y*O!i", &data, &ends, &PyList_Type, &specs, &max_depth)) return NULL;
    PyObject *result = NULL;
    P p = {0};
    int nouts = (int)PyList_GET_SIZE(specs);
    Py_ssize_t n = ends.len / 8;
    Output *outs = calloc((size_t)(nouts ? nouts : 1), sizeof(Output));
    Tree tree = {calloc(128, sizeof(Node)), 0, 128};
    Buf suspect = {0};
    if (!outs || !tree.nodes || zeroed(&suspect, n)) {
        PyErr_NoMemory();
        goto done;
    }
    if (parse_specs(specs, &tree, outs, nouts)) goto done;
    int oom = 0;
    for (int k = 0; k < nouts; k++) {
        Output *o = &outs[k];
        if (o->mode == MODE_SCALAR) {
            Cells *c = &o->values;
            oom |= zeroed(&c->kinds, n) | zeroed(&c->lengths, 4 * n) | zeroed(&c->ints, 8 * n) |
                   zeroed(&c->floats, 8 * n);
        } else {
            oom |= zeroed(&o->list_lengths, 4 * n) | zeroed(&o->list_valid, n);
        }
    }
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    p.outs = outs;
    p.nouts = nouts;
    p.max_depth = max_depth;
    const unsigned char *base = data.buf;
    const int64_t *line_ends = ends.buf;
    Py_BEGIN_ALLOW_THREADS;
    int64_t start = 0;
    for (Py_ssize_t i = 0; i < n && !p.oom; i++) {
        int64_t stop = line_ends[i];
        if (stop < start || stop > data.len) {
            p.oom = 2;
            break;
        }
        p.s = base + start;
        p.end = base + stop;
        p.depth = 0;
        p.line = i;
        mark(&p);
        ws(&p);
        int bad = p.s >= p.end || *p.s != '{' || object(&p, tree.nodes);
        if (!bad) {
            ws(&p);
            bad = p.s != p.end; /* extra data after the object */
        }
        if (bad) {
            suspect.p[i] = 1;
            take_back(&p);
        }
        start = stop;
    }
    Py_END_ALLOW_THREADS;
    if (p.oom) {
        if (p.oom == 2)
            PyErr_SetString(PyExc_ValueError, "line ends out of order or past the data");
        else
            PyErr_NoMemory();
        goto done;
    }
    PyObject *out_list = PyList_New(nouts);
    if (!out_list) goto done;
    for (int k = 0; k < nouts; k++) {
        Output *o = &outs[k];
        PyObject *item;
        if (o->mode == MODE_SCALAR) {
            item = cells_tuple(&o->values);
        } else {
            PyObject *cells = PyTuple_New(o->mode == MODE_TEXTS ? 1 : o->nfields);
            if (cells) {
                if (o->mode == MODE_TEXTS)
                    PyTuple_SET_ITEM(cells, 0, cells_tuple(&o->values));
                else
                    for (int f = 0; f < o->nfields; f++) PyTuple_SET_ITEM(cells, f, cells_tuple(&o->record[f]));
            }
            item = cells ? Py_BuildValue("(NNN)", bytes_of(&o->list_lengths), bytes_of(&o->list_valid), cells) : NULL;
        }
        if (!item || PyErr_Occurred()) {
            Py_XDECREF(item);
            Py_DECREF(out_list);
            goto done;
        }
        PyList_SET_ITEM(out_list, k, item);
    }
    result = Py_BuildValue("(NN)", bytes_of(&suspect), out_list);
done:
    for (int k = 0; outs && k < nouts; k++) {
        cells_free(&outs[k].values);
        for (int f = 0; f < MAX_FIELDS; f++) cells_free(&outs[k].record[f]);
        free(outs[k].list_lengths.p);
        free(outs[k].list_valid.p);
    }
    free(outs);
    free(tree.nodes);
    free(suspect.p);
    free(p.key.p);
    PyBuffer_Release(&data);
    PyBuffer_Release(&ends);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS,
     "scan(data, line_ends_int64, specs, max_depth) -> (suspect per line, outputs): the block's lines, parsed"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_line_scan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__line_scan(void) { return PyModule_Create(&module); }
