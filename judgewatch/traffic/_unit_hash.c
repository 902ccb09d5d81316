/* The sampling rule's hash unit for many interaction ids in one call: `unit_hashes.units_of_inputs` in C.

   Per input: sha256(input) -> its first 16 bytes as 32 lowercase hex digits (the interaction id) -> BLAKE2b-512
   of salt + those digits -> the first 8 bytes read big-endian, over 2**64. SHA-256 is OpenSSL's; BLAKE2b is
   RFC 7693's, written out here because OpenSSL 3 reaches it only through EVP, whose per-call overhead is larger
   than the hash itself on these short messages. tests/judgewatch/traffic/test_unit_hashes.py checks it against
   hashlib. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>

static const uint64_t IV[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const uint8_t SIGMA[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t rotr(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; k--) v = (v << 8) | p[k];
    return v;
}

#define G(a, b, c, d, x, y)          \
    do {                             \
        a = a + b + (x);             \
        d = rotr(d ^ a, 32);         \
        c = c + d;                   \
        b = rotr(b ^ c, 24);         \
        a = a + b + (y);             \
        d = rotr(d ^ a, 16);         \
        c = c + d;                   \
        b = rotr(b ^ c, 63);         \
    } while (0)

static void compress(uint64_t h[8], const uint8_t block[128], uint64_t t, int last) {
    uint64_t m[16], v[16];
    for (int i = 0; i < 16; i++) m[i] = load64(block + 8 * i);
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = IV[i];
    }
    v[12] ^= t;
    if (last) v[14] = ~v[14];
#pragma GCC unroll 12
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = SIGMA[r];
        G(v[0], v[4], v[8], v[12], m[s[0]], m[s[1]]);
        G(v[1], v[5], v[9], v[13], m[s[2]], m[s[3]]);
        G(v[2], v[6], v[10], v[14], m[s[4]], m[s[5]]);
        G(v[3], v[7], v[11], v[15], m[s[6]], m[s[7]]);
        G(v[0], v[5], v[10], v[15], m[s[8]], m[s[9]]);
        G(v[1], v[6], v[11], v[12], m[s[10]], m[s[11]]);
        G(v[2], v[7], v[8], v[13], m[s[12]], m[s[13]]);
        G(v[3], v[4], v[9], v[14], m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/* The first 8 bytes of BLAKE2b-512(msg), read big-endian. */
static uint64_t blake2b_first8(const uint8_t *msg, size_t len) {
    uint64_t h[8];
    uint8_t block[128];
    memcpy(h, IV, sizeof h);
    h[0] ^= 0x01010000ULL ^ 64;  /* no key, 64-byte digest */
    size_t done = 0;
    while (len - done > 128) {
        compress(h, msg + done, done + 128, 0);
        done += 128;
    }
    memset(block, 0, sizeof block);
    memcpy(block, msg + done, len - done);
    compress(h, block, len, 1);
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) v = (v << 8) | ((h[0] >> (8 * k)) & 0xff);
    return v;
}

static const char HEX[] = "0123456789abcdef";

/* units(inputs: list[bytes], salt: bytes) -> bytes: n float64 (native order), `hash_unit` of each input's id. */
static PyObject *units(PyObject *self, PyObject *args) {
    PyObject *inputs;
    const char *salt;
    Py_ssize_t salt_len;
    if (!PyArg_ParseTuple(args, "O!y#", &PyList_Type, &inputs, &salt, &salt_len)) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(inputs);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    uint8_t *msg = PyMem_Malloc(salt_len + 32);
    if (out == NULL || msg == NULL) {
        Py_XDECREF(out);
        PyMem_Free(msg);
        return PyErr_NoMemory();
    }
    double *unit = (double *)PyBytes_AS_STRING(out);
    memcpy(msg, salt, salt_len);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(inputs, i);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "input %zd is not bytes", i);
            Py_DECREF(out);
            PyMem_Free(msg);
            return NULL;
        }
        uint8_t sha[SHA256_DIGEST_LENGTH];
        SHA256_CTX ctx;
        SHA256_Init(&ctx);
        SHA256_Update(&ctx, PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item));
        SHA256_Final(sha, &ctx);
        for (int k = 0; k < 16; k++) {
            msg[salt_len + 2 * k] = HEX[sha[k] >> 4];
            msg[salt_len + 2 * k + 1] = HEX[sha[k] & 15];
        }
        unit[i] = (double)blake2b_first8(msg, (size_t)salt_len + 32) / 18446744073709551616.0;
    }
    PyMem_Free(msg);
    return out;
}

static PyMethodDef methods[] = {
    {"units", units, METH_VARARGS, "units(inputs: list[bytes], salt: bytes) -> bytes of float64: hash_unit per input"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_unit_hash", "The sampling rule's hash in C.", -1, methods};

PyMODINIT_FUNC PyInit__unit_hash(void) { return PyModule_Create(&module); }
