"""kvqio -- read kvq vector files, write kvq results files (Python 3.9+, stdlib only).

A vendor whose kernel is not a C shared object (PyTorch, Triton, JAX, ...) can be
judged by kvq in *results-file mode*: read the vectors with this module, run the
kernel on every case, write a results file, then

    kvq verify --vectors kivi.vec --results mine.results

The formats are those of spec/vectors.md (normative); this module follows its
rules [VEC-FMT-01] .. [VEC-FMT-05], [VEC-RES-01], [VEC-RES-02], [VEC-CERT-01] ..
[VEC-CERT-06] and the KIVI layout of spec/kivi.md [KIVI-L-01] .. [KIVI-L-04],
[LAY-PACK-01].  Every bit pattern goes through ``struct`` ('>f', '>e', '>I'),
never through decimal text.

Reading vectors
---------------
``read_vectors(path, check_digest=True) -> VectorFile`` and
``parse_vectors(text, path, check_digest=True)`` read a
``kvq-vectors 1`` file strictly, as kvq's own reader does: the magic line, the
four header lines (``family``, ``levels``, ``seed``, ``generator``), then
``case`` lines; blank lines and ``#`` comment lines are ignored after line 1; a
``\\r`` before ``\\n`` is ignored.  A wrong magic or version, a missing or
misplaced header line, a key given twice, an unknown key, a missing key, a bad
value, an array of the wrong length, a repeated case id or a file without cases
raises ``FormatError`` (a ``ValueError``) whose text is ``file:line: what``.
The closing line ``end <count> fnv1a64:<16 hex>`` [VEC-FMT-07] is checked: the
count and the 64-bit FNV-1a digest of the case lines must agree, and no
content line may follow it (``check_digest=False`` skips the digest, which
pure Python computes at about 0.35 us a byte).  A file without it is an error when its generator
is kvq 0.2 or later (it was cut short); otherwise (older kvq, other writers) it
is read with a ``KvqFormatWarning`` (also kept in ``VectorFile.warnings``).

``VectorFile``: ``path``, ``family`` ('kivi' | 'cert'), ``levels``, ``seed`` (int),
``generator``, ``cases`` (list of ``Case`` in file order), ``trailer`` (the
``end`` line, or None), ``warnings``, ``case(id)`` -> Case, ``header_lines()``,
``end_line()``, ``to_text()`` (the whole file re-encoded: header, cases, end
line).  ``fnv1a64(data, h=None)`` is the digest.

``Case``: ``id``, ``op``, ``level``, ``status``, ``line`` (line number),
``values`` (dict key -> decoded value, in schema order), ``case[key]``,
``key in case``, ``case.get(key, default)``, ``to_line()`` (the line re-encoded
from ``values``: kvq's writer order, byte for byte what ``kvq gen`` writes).
Decoded types: decimals, ``status`` and ``flags`` -> int; names (``level``,
``grouping``, ``meta``, ``ties``, ...) -> str; binary32 arrays -> ``array('f')``
(bit-exact, NaN payloads kept); binary32 scalars -> float; binary16 arrays and
``meta=f16`` metadata -> list of float (exact: binary16 values are doubles);
``meta=f32`` metadata -> ``array('f')``; byte arrays -> bytes; ``amb`` -> list of
(index, alt) pairs; ``promote`` -> str.

Writing results
---------------
``ResultsWriter(path, subject, unavailable=None)`` (also a context manager)
writes ``kvq-results 1`` and ``subject <name>`` to a temporary file in the same
directory; ``close()`` renames it into place (so nobody reads half a file, as
with kvq's writers [VER-RUN-04]); leaving the ``with`` block by an exception, or
``abort()``, removes it.  Methods:

- ``result(case_or_id, status, outputs=(), touched=None)``: ``result id=<id> status=<n>`` then
  the output fields, ``outputs`` an iterable of (key, text) pairs or a dict
  (text already encoded; an int is accepted for ``flags``).  Outputs are
  allowed only with status 0 [VEC-RES-02].  ``touched=<key>`` (nonzero status
  only) says a failed call wrote that output; the case then FAILs [VEC-RES-03].
- ``skipped(case_or_id, reason)``: ``result id=<id> skipped=<reason>``, which
  kvq counts as SKIP, never PASS [VEC-CERT-06].
- ``comment(text)``: a ``# text`` line.

A path naming a character device or a pipe (``/dev/stdout``) is written in
place, a symbolic link is followed (its target replaced), as kvq does
[VER-OUT-02].

``read_results(path) -> ResultsFile`` (``subject``, ``unavailable``, ``results``:
list of ``Result`` with ``id``, ``status`` (None when skipped), ``skipped``,
``touched``, ``fields`` (dict of text), ``line``) reads a results file back, as
strictly as kvq (its subject name and reasons as UTF-8: they come from subjects).

Encodings (text <-> values)
---------------------------
``decode_f32(text, n=None) -> array('f')``, ``encode_f32(values)``
(8 hex digits each, big-endian digit order: ``3f800000`` is 1.0);
``decode_f32_words``/``encode_f32_words`` (ints);
``decode_f16``/``encode_f16`` (4 digits: ``3c00`` is 1.0; encoding a value that
is not a binary16 number raises ValueError); ``decode_bytes``/``encode_bytes``;
``decode_meta(text, meta, n=None)``/``encode_meta(values, meta)`` (``meta``
'f32' or 'f16'; ``encode_meta`` writes ``invalid`` for a value the format
cannot hold, as [VEC-RES-02] asks); ``decode_amb(text, n=None, lo=0, hi=255)``/
``encode_amb(pairs)`` (``-`` or ``index:alt,...``); ``decode_flags``/
``encode_flags`` (``0x%08x``); ``decode_u32``.

Scalars: ``f32_bits(x)``, ``f32_from_bits(u)``, ``f16_bits(x)``,
``f16_from_bits(u)``, ``rn32(x)`` and ``rn16(x)`` (round a float, int or
Fraction once to nearest even binary32 / binary16; +-inf when it overflows),
``fma32(a, b, c)`` (RN32 of the exact ``a*b + c`` of binary32 operands),
``round_int(q, ties)`` ('even' | 'away', [POL-TIE-01], [POL-TIE-02]).

KIVI layout (what a vendor needs to produce ``kivi-quant`` results)
------------------------------------------------------------------
``KiviShape(bits, group, grouping, meta, tokens, channels)`` and
``kivi_shape(case)``; ``kivi_params_ok``, ``kivi_shape_ok``, ``code_max(bits)``,
``kivi_elems``, ``kivi_groups``, ``kivi_group_bytes``, ``kivi_code_bytes``;
``kivi_group_elements(shape, g)`` (row-major indices of group g's elements in
element order, group order [KIVI-L-03]); ``kivi_group_of(shape, e)`` -> (g, i);
``pack_codes(codes, bits)``/``unpack_codes(data, bits, count=None)`` (LSB first
[LAY-PACK-01]); ``kivi_pack(shape, codes)`` (row-major codes -> the code bytes
in group order [KIVI-L-04]) and ``kivi_unpack(shape, data)``;
``kivi_outputs(shape, flags, codes, scale, zero, deq)`` -> the (key, text) pairs
of a status-0 ``kivi-quant`` result, in kvq's order (``codes`` packed bytes or
row-major ints; ``scale``/``zero`` stored values, encoded per ``shape.meta``;
``deq`` row-major binary32 values).

Constants: ``KVQ_OK`` .. ``KVQ_E_SUBJECT`` (status codes), ``FLAG_ZERO_SCALE``,
``FLAG_CLAMPED``, ``FLAG_SATURATED``, ``FLAG_SUBNORMAL``, ``FLAG_AMBIGUOUS``,
``FLAG_ALL``, ``F32_MAX``, ``F32_MIN_NORMAL``, ``F16_MAX``, ``F16_MIN_NORMAL``.
"""

import errno
import math
import os
import re
import stat
import struct
import sys
import tempfile
import warnings
from array import array
from collections import namedtuple
from fractions import Fraction

__all__ = [
    "FormatError", "KvqFormatWarning", "VectorFile", "fnv1a64", "Case", "read_vectors", "parse_vectors",
    "ResultsWriter", "ResultsFile", "Result", "read_results", "parse_results",
    "decode_f32", "encode_f32", "decode_f32_words", "encode_f32_words",
    "decode_f16", "encode_f16", "decode_bytes", "encode_bytes", "decode_meta",
    "encode_meta", "decode_amb", "encode_amb", "decode_flags", "encode_flags",
    "decode_u32", "f32_bits", "f32_from_bits", "f16_bits", "f16_from_bits",
    "rn32", "rn16", "fma32", "round_int", "KiviShape", "kivi_shape",
    "kivi_params_ok", "kivi_shape_ok", "code_max", "kivi_elems", "kivi_groups",
    "kivi_group_bytes", "kivi_code_bytes", "kivi_group_elements", "kivi_group_of",
    "pack_codes", "unpack_codes", "kivi_pack", "kivi_unpack", "kivi_outputs",
]

VEC_MAGIC = "kvq-vectors"
RES_MAGIC = "kvq-results"
FORMAT_VERSION = 1

# Status codes [API-STATUS-01] (frozen numbers).
KVQ_OK, KVQ_E_NONFINITE, KVQ_E_SHAPE, KVQ_E_PARAM, KVQ_E_RANGE = 0, 1, 2, 3, 4
KVQ_E_NOMEM, KVQ_E_IO, KVQ_E_FORMAT, KVQ_E_NODEVICE, KVQ_E_DEVICE = 5, 6, 7, 8, 9
KVQ_E_SUBJECT = 10
STATUS_COUNT = 11

# The flags word [API-FLAGS-01].
FLAG_ZERO_SCALE = 0x01
FLAG_CLAMPED = 0x02
FLAG_SATURATED = 0x04
FLAG_SUBNORMAL = 0x08
FLAG_AMBIGUOUS = 0x10
FLAG_ALL = 0x1F

F32_MAX = struct.unpack(">f", bytes.fromhex("7f7fffff"))[0]   # 0x1.fffffep+127
F32_MIN_NORMAL = 2.0 ** -126
F16_MAX = 65504.0
F16_MIN_NORMAL = 2.0 ** -14

FNV_OFFSET = 0xCBF29CE484222325  # FNV-1a 64 [VEC-FMT-07]
FNV_PRIME = 0x100000001B3
MAX_FILE_ELEMS = 1 << 24        # values per array kvq accepts from a file
ID_MAX = 63                     # characters of a case id
_LITTLE = sys.byteorder == "little"
_HEX_RE = re.compile(r"[0-9a-fA-F]*\Z")
_DEC_RE = re.compile(r"[0-9]+\Z")
_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,%d}\Z" % ID_MAX)
_RKEY_RE = re.compile(r"[a-z0-9_]+\Z")
_BLANK_RE = re.compile(r"[ \t]+")


class KvqFormatWarning(UserWarning):
    """A file read, with a caveat (a vector file without an end line)."""


class FormatError(ValueError):
    """A malformed file: str() is 'file:line: what' (line 0: the file as a whole)."""

    def __init__(self, path, line, what):
        self.path, self.line, self.what = path, line, what
        ValueError.__init__(self, "%s:%d: %s" % (path, line, what) if line > 0 else "%s: %s" % (path, what))


# ---- scalars ------------------------------------------------------------------

def f32_from_bits(u):
    """The binary32 value of the 32-bit encoding u, as a float (exact)."""
    return struct.unpack(">f", struct.pack(">I", u & 0xFFFFFFFF))[0]


def f32_bits(x):
    """The 32-bit encoding of x, which must be a binary32 value (exactly).

    A NaN encodes as the platform's conversion gives it (payloads are not
    carried by floats: use array('f') or the *_words functions for those)."""
    try:
        b = struct.pack(">f", x)
    except OverflowError:
        raise ValueError("%r is not a binary32 value (overflows)" % (x,)) from None
    if x == x and struct.unpack(">f", b)[0] != x:
        raise ValueError("%r is not a binary32 value" % (x,))
    return struct.unpack(">I", b)[0]


def f16_from_bits(u):
    """The binary16 value of the 16-bit encoding u, as a float (exact)."""
    return struct.unpack(">e", struct.pack(">H", u & 0xFFFF))[0]


def f16_bits(x):
    """The 16-bit encoding of x, which must be a binary16 value (exactly)."""
    try:
        b = struct.pack(">e", x)
    except (OverflowError, struct.error):
        raise ValueError("%r is not a binary16 value (overflows)" % (x,)) from None
    if x == x and struct.unpack(">e", b)[0] != x:
        raise ValueError("%r is not a binary16 value" % (x,))
    return struct.unpack(">H", b)[0]


def _round_fraction(v, p, emin, limit):
    """Exact v (Fraction, nonzero) rounded to nearest even onto a binary format
    with p significant bits, smallest normal 2^emin, gradual underflow; returns
    +-inf when the rounded magnitude reaches `limit` (2^(emax+1))."""
    neg = v < 0
    a = -v if neg else v
    num, den = a.numerator, a.denominator
    e = num.bit_length() - den.bit_length()          # 2^e <= a < 2^(e+2)
    if (num << max(0, -e)) < (den << max(0, e)):
        e -= 1                                       # now 2^e <= a < 2^(e+1)
    q = max(e, emin) - (p - 1)                       # exponent of the quantum
    if q >= 0:
        den <<= q
    else:
        num <<= -q
    k, rem = divmod(num, den)
    if 2 * rem > den or (2 * rem == den and (k & 1)):
        k += 1
    r = math.ldexp(float(k), q) if k else 0.0        # k <= 2^p: exact
    if r >= limit:
        r = math.inf
    return -r if neg else r


def rn32(x):
    """x rounded once to nearest even binary32, as a float; +-inf on overflow.

    x: a float (binary64), an int or a Fraction.  For a float this is one
    C conversion (double -> float) through struct, which rounds correctly; for
    int and Fraction the rounding is exact integer arithmetic.  (A zero Fraction
    or int gives +0.)"""
    if isinstance(x, float):
        try:
            return struct.unpack(">f", struct.pack(">f", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    v = Fraction(x)
    if v == 0:
        return 0.0
    return _round_fraction(v, 24, -126, 2.0 ** 128)


def rn16(x):
    """x rounded once to nearest even binary16, as a float; +-inf on overflow
    (exactly when |x| >= 65520 [POL-F16-02]).  x: float, int or Fraction."""
    if isinstance(x, float):
        if x != x or math.isinf(x):
            return x
        try:
            return struct.unpack(">e", struct.pack(">e", x))[0]
        except OverflowError:
            return math.copysign(math.inf, x)
    v = Fraction(x)
    if v == 0:
        return 0.0
    return _round_fraction(v, 11, -14, 65536.0)


def _dbits(h):
    return struct.unpack(">Q", struct.pack(">d", h))[0]


def fma32(a, b, c):
    """RN32(a*b + c) with one rounding (C fmaf) for binary32 operands a, b, c.

    Why this is exact in binary64: a*b of two binary32 values has at most 48
    significant bits, so the binary64 product is exact (and neither overflows
    nor underflows binary64).  The sum p + c is not exact in binary64, and
    rounding it to binary64 then to binary32 can round twice wrongly, so the
    binary64 sum is made *round-to-odd*: TwoSum gives the exact error err of
    h = RN64(p + c); when err != 0 and h's last bit is even, h moves one ulp
    towards err.  Rounding a round-to-odd binary64 value (53 >= 24 + 2 bits)
    to binary32 gives the correctly rounded result (Boldo and Melquiond)."""
    p = a * b
    h = p + c
    if math.isinf(h) or h != h:
        return rn32(h)
    bb = h - p
    err = (p - (h - bb)) + (c - bb)
    if err != 0.0 and not (_dbits(h) & 1):
        h = math.nextafter(h, math.inf if err > 0 else -math.inf)
    return rn32(h)


def _fma32_exact(a, b, c):
    """fma32 by exact rational arithmetic (slow; the tests compare the two)."""
    if any(math.isinf(v) or v != v for v in (a, b, c)):
        return rn32(a * b + c)
    v = Fraction(a) * Fraction(b) + Fraction(c)
    if v == 0:
        return a * b + c     # exact zero: binary64 gives IEEE's sign of the zero sum
    r = _round_fraction(v, 24, -126, 2.0 ** 128)
    return r if r != 0 else math.copysign(0.0, float(v))


def round_int(q, ties="even"):
    """The integer nearest to the finite float q; halfway: the even one
    ('even', [POL-TIE-01]) or the one of larger magnitude ('away',
    [POL-TIE-02]).  The remainder q - floor(q) is exact, so the tie test is."""
    a = abs(q)
    fl = math.floor(a)
    d = a - fl
    up = d > 0.5 or (d == 0.5 and (ties == "away" or fl % 2 == 1))
    k = fl + (1 if up else 0)
    return -k if q < 0 else k


# ---- hex encodings --------------------------------------------------------------

def _check_hex(text, width, n, what):
    if not _HEX_RE.match(text):
        raise ValueError("%s: bad hex digit" % what)
    if len(text) % width:
        raise ValueError("%s: %d hex digits, not a multiple of %d" % (what, len(text), width))
    if n is not None and len(text) != width * n:
        raise ValueError("%s: %d hex digits, expected %d" % (what, len(text), width * n))


def decode_f32(text, n=None, what="binary32 array"):
    """8 hex digits a binary32 value -> array('f') (bit-exact)."""
    _check_hex(text, 8, n, what)
    a = array("f")
    a.frombytes(bytes.fromhex(text))
    if _LITTLE:
        a.byteswap()
    return a


def encode_f32(values):
    """binary32 values (array('f'), or floats that are binary32 values) -> hex."""
    if isinstance(values, array) and values.typecode == "f":
        a = array("f", values)
        if _LITTLE:
            a.byteswap()
        return a.tobytes().hex()
    return "".join("%08x" % f32_bits(v) for v in values)


def decode_f32_words(text, n=None, what="binary32 array"):
    """8 hex digits each -> list of 32-bit encodings (ints)."""
    _check_hex(text, 8, n, what)
    return [int(text[i:i + 8], 16) for i in range(0, len(text), 8)]


def encode_f32_words(words):
    return "".join("%08x" % (w & 0xFFFFFFFF) for w in words)


def decode_f16(text, n=None, what="binary16 array"):
    """4 hex digits a binary16 value -> list of float (exact)."""
    _check_hex(text, 4, n, what)
    k = len(text) // 4
    return list(struct.unpack(">%de" % k, bytes.fromhex(text)))


def encode_f16(values):
    """binary16 values (floats exactly representable in binary16) -> hex."""
    return "".join("%04x" % f16_bits(v) for v in values)


def decode_bytes(text, n=None, what="byte array"):
    """2 hex digits a byte -> bytes."""
    _check_hex(text, 2, n, what)
    return bytes.fromhex(text)


def encode_bytes(data):
    return bytes(data).hex()


def decode_meta(text, meta, n=None, what="metadata"):
    """Metadata in the case's storage format [VEC-FMT-05]: 'f32' -> array('f'),
    'f16' -> list of float."""
    if meta == "f16":
        return decode_f16(text, n, what)
    if meta == "f32":
        return decode_f32(text, n, what)
    raise ValueError("meta must be 'f32' or 'f16', not %r" % (meta,))


def encode_meta(values, meta, invalid=True):
    """Stored metadata -> text: binary32 (meta 'f32') or binary16 ('f16').  A
    value the format cannot hold gives the word 'invalid' [VEC-RES-02] (or a
    ValueError with invalid=False)."""
    try:
        if meta == "f16":
            return encode_f16(values)
        if meta == "f32":
            return encode_f32(values)
    except ValueError:
        if invalid:
            return "invalid"
        raise
    raise ValueError("meta must be 'f32' or 'f16', not %r" % (meta,))


def decode_amb(text, n=None, lo=0, hi=255, what="amb"):
    """'-' or 'index:alt,...' -> list of (index, alt); indices strictly
    increasing and below n, alt in [lo, hi] ('-' sign allowed when lo < 0)."""
    if text == "-":
        return []
    out = []
    prev = -1
    for k, item in enumerate(text.split(",")):
        idx, colon, alt = item.partition(":")
        neg = lo < 0 and alt.startswith("-")
        digits = alt[1:] if neg else alt
        if not colon or not _DEC_RE.match(idx) or not _DEC_RE.match(digits):
            raise ValueError("%s: entry %d is not decimal index:alt" % (what, k))
        i, a = int(idx), int(digits) * (-1 if neg else 1)
        if i >= 1 << 64 or (n is not None and i >= n):
            raise ValueError("%s: index %d out of range" % (what, i))
        if i <= prev:
            raise ValueError("%s: indices not strictly increasing at %d" % (what, i))
        if a > hi or a < lo:
            raise ValueError("%s: alternative code %d outside [%d, %d]" % (what, a, lo, hi))
        out.append((i, a))
        prev = i
    return out


def encode_amb(pairs):
    pairs = list(pairs)
    if not pairs:
        return "-"
    return ",".join("%d:%d" % (i, a) for i, a in pairs)


def decode_u32(text, what="decimal"):
    if not _DEC_RE.match(text) or int(text) > 0xFFFFFFFF:
        raise ValueError("%s: '%.40s' is not a decimal number below 2^32" % (what, text))
    return int(text)


def decode_flags(text, what="flags"):
    """'0x' + 8 hex digits -> int."""
    if len(text) != 10 or text[0] != "0" or text[1] not in "xX" or not _HEX_RE.match(text[2:]):
        raise ValueError("%s: '%.40s' is not 0x followed by 8 hex digits" % (what, text))
    return int(text[2:], 16)


def encode_flags(u):
    return "0x%08x" % (u & 0xFFFFFFFF)


# ---- KIVI layout [KIVI-L-01..04] [LAY-PACK-01] -------------------------------------

KiviShape = namedtuple("KiviShape", "bits group grouping meta tokens channels")
KiviShape.__doc__ = ("A kivi-quant shape: bits n, group G, grouping 'channel' | 'token', "
                     "meta 'f32' | 'f16', tokens T, channels D [KIVI-L-01].")


def kivi_shape(case):
    """The KiviShape of a kivi-quant Case (or of a dict of its values)."""
    v = case.values if isinstance(case, Case) else case
    return KiviShape(v["bits"], v["group"], v["grouping"], v["meta"], v["tokens"], v["channels"])


def code_max(bits):
    return (1 << bits) - 1


def kivi_params_ok(s):
    """bits in {1,2,4,8}, G a multiple of 8 in [8, 4096], grouping and meta
    known [KIVI-L-02]; otherwise KVQ_E_PARAM."""
    return (s.bits in (1, 2, 4, 8) and 8 <= s.group <= 4096 and s.group % 8 == 0
            and s.grouping in ("channel", "token") and s.meta in ("f32", "f16"))


def kivi_shape_ok(s):
    """The extent fits [KIVI-L-02] (parameters checked first); else KVQ_E_SHAPE."""
    if s.tokens == 0 or s.channels == 0 or s.tokens > 1 << 24 or s.channels > 1 << 24:
        return False
    if s.tokens * s.channels > 1 << 36:
        return False
    return (s.tokens if s.grouping == "channel" else s.channels) % s.group == 0


def kivi_elems(s):
    return s.tokens * s.channels


def kivi_groups(s):
    return s.tokens * s.channels // s.group


def kivi_group_bytes(s):
    return s.group * s.bits // 8


def kivi_code_bytes(s):
    return kivi_groups(s) * kivi_group_bytes(s)


def kivi_group_elements(s, g):
    """Row-major indices of group g's G elements, element i first [KIVI-L-03]:
    per channel g = tb*D + c holds x[(tb*G + i)*D + c]; per token g holds
    x[g*G + i]."""
    G, D = s.group, s.channels
    if s.grouping == "channel":
        tb, c = divmod(g, D)
        return range(tb * G * D + c, (tb * G + G) * D + c, D)
    return range(g * G, g * G + G)


def kivi_group_of(s, e):
    """(g, i) of the row-major element e (the inverse of kivi_group_elements)."""
    G, D = s.group, s.channels
    t, c = divmod(e, D)
    if s.grouping == "channel":
        tb, i = divmod(t, G)
        return tb * D + c, i
    return divmod(e, G)


def pack_codes(codes, bits):
    """b-bit codes -> bytes, LSB first: element i in byte i*b//8 at bit
    (i*b) % 8 [LAY-PACK-01].  len(codes)*bits must be a multiple of 8."""
    codes = list(codes)
    if bits not in (1, 2, 4, 8):
        raise ValueError("bits must be 1, 2, 4 or 8")
    if (len(codes) * bits) % 8:
        raise ValueError("%d codes of %d bits do not fill whole bytes" % (len(codes), bits))
    cmax = code_max(bits)
    out = bytearray(len(codes) * bits // 8)
    for i, c in enumerate(codes):
        if not 0 <= c <= cmax:
            raise ValueError("code %r of element %d outside [0, %d]" % (c, i, cmax))
        out[i * bits >> 3] |= c << ((i * bits) & 7)
    return bytes(out)


def unpack_codes(data, bits, count=None):
    """The inverse of pack_codes: the first `count` codes (default: all)."""
    if count is None:
        count = len(data) * 8 // bits
    cmax = code_max(bits)
    return [(data[i * bits >> 3] >> ((i * bits) & 7)) & cmax for i in range(count)]


def kivi_pack(s, codes):
    """Row-major codes (T*D ints) -> the code array: group g's codes packed at
    bytes g*B .. g*B + B - 1, B = G*bits/8 [KIVI-L-04]."""
    if len(codes) != kivi_elems(s):
        raise ValueError("%d codes for %d elements" % (len(codes), kivi_elems(s)))
    out = bytearray()
    for g in range(kivi_groups(s)):
        out += pack_codes([codes[e] for e in kivi_group_elements(s, g)], s.bits)
    return bytes(out)


def kivi_unpack(s, data):
    """The code array -> row-major codes (the inverse of kivi_pack)."""
    if len(data) != kivi_code_bytes(s):
        raise ValueError("%d code bytes, expected %d" % (len(data), kivi_code_bytes(s)))
    out = [0] * kivi_elems(s)
    B = kivi_group_bytes(s)
    for g in range(kivi_groups(s)):
        for e, c in zip(kivi_group_elements(s, g), unpack_codes(data[g * B:(g + 1) * B], s.bits, s.group)):
            out[e] = c
    return out


def kivi_outputs(s, flags, codes, scale, zero, deq):
    """The output fields of a status-0 kivi-quant result, in kvq's order:
    flags, codes, scale, zero, deq [VEC-RES-02].  codes: the packed code array
    (bytes) or T*D row-major ints; scale, zero: the stored metadata (floats,
    encoded in shape.meta's format, 'invalid' where impossible); deq: T*D
    binary32 values, row-major."""
    if not isinstance(codes, (bytes, bytearray)):
        codes = kivi_pack(s, codes)
    return [("flags", encode_flags(flags)), ("codes", encode_bytes(codes)),
            ("scale", encode_meta(scale, s.meta)), ("zero", encode_meta(zero, s.meta)),
            ("deq", encode_f32(deq))]


# ---- schemas ([VEC-FMT-03..05], [VEC-CERT-02..05]) -------------------------------------
#
# A field: key, type, role ('case', 'in', 'exp', 'ref'), count (a function of
# the values read so far, for arrays), names (for 'enum').  Types: id, op,
# status, flags, u32, enum, f32, a_f32, a_f16, a_meta, a_u8, amb, promote,
# words15, words3.  Roles 'exp' and 'ref' are present exactly when status is 0;
# role 'opt' is a case field that may be absent (its value is then names[0], and
# it is not written when it has that value): the step variant [CERT-VAR-02].

_Field = namedtuple("_Field", "key type role count names")
_Op = namedtuple("_Op", "name family fields outputs levels check amb_range")


def _f(key, type_, role="in", count=None, names=None):
    return _Field(key, type_, role, count, names)


_LEVELS = ("exact", "bounded")
_POLICY = [_f("ties", "enum", "case", names=("even", "away")),
           _f("overflow", "enum", "case", names=("saturate", "nan")),
           _f("subnormal", "enum", "case", names=("keep", "daz"))]


def _kshape(v):
    return KiviShape(v["bits"], v["group"], v["grouping"], v["meta"], v["tokens"], v["channels"])


def _kvalid(v):
    s = _kshape(v)
    return kivi_params_ok(s) and kivi_shape_ok(s)


def _k_elems(v):
    return v["tokens"] * v["channels"]


def _k_out_elems(v):
    return _k_elems(v) if _kvalid(v) else 0


def _k_groups(v):
    return kivi_groups(_kshape(v)) if _kvalid(v) else 0


def _k_code_bytes(v):
    return kivi_code_bytes(_kshape(v)) if _kvalid(v) else 0


def _k_check(v):
    if _k_elems(v) > MAX_FILE_ELEMS:
        return "tokens*channels exceeds %d" % MAX_FILE_ELEMS
    if v["status"] == 0 and not _kvalid(v):
        return "shape is not valid for a status-0 case"
    return None


_KIVI_FIELDS = [
    _f("id", "id", "case"), _f("level", "enum", "case", names=_LEVELS), _f("op", "op", "case"),
    _f("bits", "u32"), _f("group", "u32"),
    _f("grouping", "enum", names=("channel", "token")), _f("meta", "enum", names=("f32", "f16")),
    _f("tokens", "u32"), _f("channels", "u32"),
] + _POLICY + [
    _f("status", "status", "case"), _f("flags", "flags", "case"),
    _f("x", "a_f32", count=_k_elems),
    _f("codes", "a_u8", "exp", _k_code_bytes), _f("scale", "a_meta", "exp", _k_groups),
    _f("zero", "a_meta", "exp", _k_groups), _f("deq", "a_f32", "exp", _k_out_elems),
    _f("real", "a_u8", "ref", _k_code_bytes), _f("amb", "amb", "ref", _k_out_elems),
]

# CERT [VEC-CERT-02], [VEC-CERT-03] (kvq_layout.h: block 16 tokens, value groups of 16 channels).


def _c_valid(v):
    n, d = v["tokens"], v["dim"]
    return 1 <= n <= 1 << 24 and 16 <= d <= 512 and d % 16 == 0


def _c_nd(v):
    return v["tokens"] * v["dim"]


def _c_dim(v):
    return v["dim"]


def _c_blocks(v):
    return (v["tokens"] + 15) // 16


def _c_nq(v):
    return v["tokens"] // 16 if _c_valid(v) else 0


def _c_key_code_bytes(v):
    return _c_nq(v) * 16 * v["dim"]


def _c_key_meta(v):
    return _c_nq(v) * v["dim"]


def _c_value_groups(v):
    return _c_nq(v) * 16 * (v["dim"] // 16)


def _c_value_code_bytes(v):
    return _c_value_groups(v) * 8


def _c_value_elems(v):
    return _c_nq(v) * 16 * v["dim"]


def _c_out_blocks(v):
    return _c_blocks(v) if _c_valid(v) else 0


def _c_check(v):
    if _c_nd(v) > MAX_FILE_ELEMS or v["tokens"] > 1 << 24 or v["dim"] > 65536:
        return "tokens*dim exceeds %d, tokens exceed %d or dim exceeds 65536" % (MAX_FILE_ELEMS, 1 << 24)
    if v["status"] == 0 and not _c_valid(v):
        return "shape is not valid for a status-0 case [CERT-L-01]"
    return None


_CERT_HEAD = [_f("id", "id", "case"), _f("level", "enum", "case", names=_LEVELS), _f("op", "op", "case"),
              _f("tokens", "u32"), _f("dim", "u32")] + _POLICY + [_f("status", "status", "case")]

_CERT_KEY_FIELDS = _CERT_HEAD + [
    _f("flags", "flags", "case"), _f("k", "a_f32", count=_c_nd),
    _f("codes", "a_u8", "exp", _c_key_code_bytes), _f("sigma", "a_f32", "exp", _c_key_meta),
    _f("z", "a_f32", "exp", _c_key_meta), _f("real", "a_u8", "ref", _c_key_code_bytes),
    _f("amb", "amb", "ref", _c_key_code_bytes),
]
_CERT_VALUE_FIELDS = _CERT_HEAD + [
    _f("flags", "flags", "case"), _f("v", "a_f32", count=_c_nd),
    _f("codes", "a_u8", "exp", _c_value_code_bytes), _f("vscale", "a_f16", "exp", _c_value_groups),
    _f("vzero", "a_f16", "exp", _c_value_groups), _f("real", "a_u8", "ref", _c_value_code_bytes),
    _f("amb", "amb", "ref", _c_value_elems), _f("eta", "a_f32", "exp", _c_out_blocks),
    _f("nu", "a_f32", "exp", _c_out_blocks),
]
_CERT_VARIANTS = ("paper", "sparse")      # [CERT-VAR-01]; absent: paper
_CERT_STEP_FIELDS = _CERT_HEAD[:3] + [_f("variant", "enum", "opt", names=_CERT_VARIANTS)] + _CERT_HEAD[3:] + [
    _f("scale", "f32"), _f("tau", "f32"), _f("kmin", "u32"), _f("kmax", "u32"), _f("vtol", "f32"),
    _f("eps_guard", "f32"), _f("eps_dense", "f32"), _f("r", "u32"), _f("start", "u32"),
    _f("promote", "promote"), _f("q", "a_f32", count=_c_dim), _f("k", "a_f32", count=_c_nd),
    _f("v", "a_f32", count=_c_nd),
]

# SAGE [VEC-SAGE-02], [VEC-SAGE-03] (kvq_sage_layout.h: shapes, the slot counts of [SAGE-MAP-03]).

_S_ROLES = ("q", "k")
_S_GRANS = ("thread", "warp", "block")
_S_ROUNDINGS = ("paper", "public")
_S_FMTS = ("e4m3", "e5m2")
_S_MAX = 1 << 24


def _s_shape_ok(v):
    return 1 <= v["tokens"] <= _S_MAX and v["dim"] in (64, 128)


def _s_smooth_ok(v):
    return _s_shape_ok(v) and 1 <= v["seg"] <= _S_MAX


def _s_qk_ok(v):
    b, cw = v["block"], v["warps"]
    if v["bits"] not in (4, 8):
        return False
    if v["role"] == "q":
        return 1 <= cw <= 16 and 16 * cw <= b <= 1024 and b % (16 * cw) == 0
    return cw == 1 and 32 <= b <= 1024 and b % 32 == 0


def _s_qk_valid(v):
    return _s_smooth_ok(v) and _s_qk_ok(v)


def _s_nd(v):
    return v["tokens"] * v["dim"]


def _s_mean(v):
    return -(-v["tokens"] // v["seg"]) * v["dim"] if _s_smooth_ok(v) else 0


def _s_scales(v):
    if not _s_qk_valid(v):
        return 0
    g, cw = v["gran"], v["warps"]
    per = ({"thread": 8 * cw, "warp": cw, "block": 1} if v["role"] == "q"
           else {"thread": 4, "warp": 1, "block": 1})[g]
    return -(-v["tokens"] // v["block"]) * per


def _s_code_bytes(v):
    return _s_nd(v) * v["bits"] // 8 if _s_qk_valid(v) else 0


def _s_p_valid(v):
    return 1 <= v["rows"] <= _S_MAX and 1 <= v["cols"] <= _S_MAX


def _s_rc(v):
    return v["rows"] * v["cols"]


def _s_ds_valid(v):
    return _s_shape_ok(v) and 1 <= v["rows"] <= _S_MAX


_S_MODELS = ("wgmma", "mma-sm90")
_S_PV_MAX_ROWS, _S_PV_MAX_N = 256, 1 << 16


def _s_pv_valid(v):
    return (1 <= v["rows"] <= _S_PV_MAX_ROWS and 1 <= v["n"] <= _S_PV_MAX_N
            and v["buffer"] in (0, 64, 128))


def _s_pv_out(v):
    return v["rows"] if _s_pv_valid(v) else 0


def _s_attn_valid(v):
    return (1 <= v["nq"] <= _S_MAX and 1 <= v["nk"] <= _S_MAX and v["dim"] == 128 and v["causal"] in (0, 1)
            and v["buffer"] in (0, 64, 128) and v["bits"] in (4, 8)
            and 2.0 ** -126 <= v["tau"] <= 2.0 ** 16)


def _s_attn_out(v):
    return v["nq"] * 128 if _s_attn_valid(v) else 0


def _s_check(v):
    op = v["op"]
    if op == "sage-attn":
        if v["nq"] > 1 << 16 or v["nk"] > 1 << 16:
            return "nq or nk above 65536"
        if v["status"] == 0 and not _s_attn_valid(v):
            return "parameters or shape not valid for a status-0 case"
        return None
    if op == "sage-pv":
        if v["rows"] > _S_PV_MAX_ROWS or v["n"] > _S_PV_MAX_N:
            return "rows above %d or n above %d" % (_S_PV_MAX_ROWS, _S_PV_MAX_N)
        if v["rows"] * v["n"] > MAX_FILE_ELEMS:
            return "an array exceeds %d values" % MAX_FILE_ELEMS
        if v["status"] == 0 and not _s_pv_valid(v):
            return "parameters or shape not valid for a status-0 case"
        return None
    if op == "sage-p":
        sizes = [_s_rc(v)]
    elif op == "sage-ds":
        sizes = [_s_nd(v), v["rows"] * v["dim"], v["rows"] * v["tokens"]]
    else:
        sizes = [_s_nd(v)]
    if max(sizes) > MAX_FILE_ELEMS:
        return "an array exceeds %d values" % MAX_FILE_ELEMS
    ok = {"sage-qk": _s_qk_valid, "sage-p": _s_p_valid, "sage-v": _s_shape_ok, "sage-ds": _s_ds_valid}[op](v)
    if v["status"] == 0 and not ok:
        return "parameters or shape not valid for a status-0 case"
    return None


_S_HEAD = [_f("id", "id", "case"), _f("level", "enum", "case", names=_LEVELS), _f("op", "op", "case")]
_SAGE_QK_FIELDS = _S_HEAD + [
    _f("role", "enum", names=_S_ROLES), _f("bits", "u32"), _f("gran", "enum", names=_S_GRANS),
    _f("block", "u32"), _f("warps", "u32"), _f("rounding", "enum", names=_S_ROUNDINGS), _f("seg", "u32"),
    _f("tokens", "u32"), _f("dim", "u32"),
] + _POLICY + [
    _f("status", "status", "case"), _f("flags", "flags", "case"), _f("x", "a_f32", count=_s_nd),
    _f("mean", "a_f32", "exp", _s_mean), _f("scale", "a_f32", "exp", _s_scales),
    _f("codes", "a_u8", "exp", _s_code_bytes),
]
_SAGE_P_FIELDS = _S_HEAD + [
    _f("fmt", "enum", names=_S_FMTS), _f("rows", "u32"), _f("cols", "u32"),
] + _POLICY + [
    _f("status", "status", "case"), _f("flags", "flags", "case"), _f("p", "a_f32", count=_s_rc),
    _f("codes", "a_u8", "exp", lambda v: _s_rc(v) if _s_p_valid(v) else 0),
    _f("rowsum", "a_f32", "exp", lambda v: v["rows"] if _s_p_valid(v) else 0),
]
_SAGE_V_FIELDS = _S_HEAD + [
    _f("fmt", "enum", names=_S_FMTS), _f("tokens", "u32"), _f("dim", "u32"),
] + _POLICY + [
    _f("status", "status", "case"), _f("flags", "flags", "case"), _f("v", "a_f32", count=_s_nd),
    _f("scale", "a_f32", "exp", lambda v: v["dim"] if _s_shape_ok(v) else 0),
    _f("codes", "a_u8", "exp", lambda v: _s_nd(v) if _s_shape_ok(v) else 0),
]
_SAGE_DS_FIELDS = _S_HEAD + [
    _f("rows", "u32"), _f("tokens", "u32"), _f("dim", "u32"), _f("tau", "f32"),
    _f("status", "status", "case"), _f("qm", "a_f32", count=lambda v: v["rows"] * v["dim"]),
    _f("ks", "a_f32", count=_s_nd),
    _f("ds", "a_f32", "exp", lambda v: v["rows"] * v["tokens"] if _s_ds_valid(v) else 0),
]

_SAGE_PV_FIELDS = _S_HEAD + [
    _f("model", "enum", names=_S_MODELS), _f("fmt", "enum", names=_S_FMTS), _f("buffer", "u32"),
    _f("rows", "u32"), _f("n", "u32"), _f("status", "status", "case"),
    _f("c", "a_f32", count=lambda v: v["rows"]), _f("a", "a_u8", count=lambda v: v["rows"] * v["n"]),
    _f("b", "a_u8", count=lambda v: v["rows"] * v["n"]),
    _f("d", "a_f32", "exp", _s_pv_out), _f("lo", "a_f32", "ref", _s_pv_out), _f("hi", "a_f32", "ref", _s_pv_out),
]

_SAGE_ATTN_FIELDS = _S_HEAD + [
    _f("nq", "u32"), _f("nk", "u32"), _f("dim", "u32"), _f("causal", "u32"), _f("buffer", "u32"),
    _f("bits", "u32"), _f("tau", "f32"), _f("status", "status", "case"),
    _f("q", "a_f32", count=lambda v: v["nq"] * 128), _f("k", "a_f32", count=lambda v: v["nk"] * 128),
    _f("v", "a_f32", count=lambda v: v["nk"] * 128),
    _f("lo", "a_f32", "ref", _s_attn_out), _f("hi", "a_f32", "ref", _s_attn_out),
    _f("bound", "a_f32", "ref", _s_attn_out),
]

_OPS = {
    "kivi-quant": _Op("kivi-quant", "kivi", _KIVI_FIELDS, ("flags", "codes", "scale", "zero", "deq"),
                      _LEVELS, _k_check, lambda v: (0, code_max(v["bits"]))),
    "cert-keys": _Op("cert-keys", "cert", _CERT_KEY_FIELDS, ("flags", "codes", "sigma", "z"),
                     _LEVELS, _c_check, lambda v: (-128, 127)),
    "cert-values": _Op("cert-values", "cert", _CERT_VALUE_FIELDS,
                       ("flags", "codes", "scale", "zero", "eta", "nu"), _LEVELS, _c_check,
                       lambda v: (0, 15)),
    "cert-step": _Op("cert-step", "cert", _CERT_STEP_FIELDS,
                     ("out", "sel", "prom", "rec", "decl", "delta1"), ("bounded",), _c_check,
                     lambda v: (0, 255)),
    "sage-qk": _Op("sage-qk", "sage", _SAGE_QK_FIELDS, ("flags", "mean", "scale", "codes"), ("exact",),
                   _s_check, lambda v: (0, 255)),
    "sage-p": _Op("sage-p", "sage", _SAGE_P_FIELDS, ("flags", "codes", "rowsum"), ("exact",), _s_check,
                  lambda v: (0, 255)),
    "sage-v": _Op("sage-v", "sage", _SAGE_V_FIELDS, ("flags", "scale", "codes"), ("exact",), _s_check,
                  lambda v: (0, 255)),
    "sage-ds": _Op("sage-ds", "sage", _SAGE_DS_FIELDS, ("ds",), ("exact",), _s_check, lambda v: (0, 255)),
    "sage-pv": _Op("sage-pv", "sage", _SAGE_PV_FIELDS, ("d",), _LEVELS, _s_check, lambda v: (0, 255)),
    "sage-attn": _Op("sage-attn", "sage", _SAGE_ATTN_FIELDS, ("o",), ("bounded",), _s_check, lambda v: (0, 255)),
}
_FAMILIES = ("kivi", "cert", "sage")
_LEVEL_SETS = ("smoke", "standard")


def _decode_scalar(f, text):
    if f.type == "id":
        if not _ID_RE.match(text):
            raise ValueError("bad case id '%.70s'" % text)
        return text
    if f.type == "op":
        return text
    if f.type == "status":
        if not _DEC_RE.match(text) or int(text) >= STATUS_COUNT:
            raise ValueError("status: '%.40s' is not a kvq_status" % text)
        return int(text)
    if f.type == "flags":
        u = decode_flags(text)
        if u & ~FLAG_ALL:
            raise ValueError("flags: '%.40s' has bits outside KVQ_FLAG_ALL" % text)
        return u
    if f.type == "u32":
        return decode_u32(text, f.key)
    if f.type == "enum":
        if text not in f.names:
            raise ValueError("%s: unknown value '%.40s'" % (f.key, text))
        return text
    if f.type == "f32":
        return decode_f32(text, 1, f.key)[0]
    if f.type == "promote":
        if text == "threshold" or (text.startswith("budget:") and _DEC_RE.match(text[7:])
                                   and int(text[7:]) < 0xFFFFFFFF):
            return text
        raise ValueError("promote: '%.40s' is neither 'threshold' nor 'budget:<decimal>'" % text)
    raise ValueError("%s: not a scalar field" % f.key)


def _encode_value(f, v, values):
    t = f.type
    if t in ("id", "op", "enum", "promote"):
        return v
    if t in ("status", "u32"):
        return "%d" % v
    if t == "flags":
        return encode_flags(v)
    if t == "f32":
        return "%08x" % f32_bits(v)
    if t == "a_f32":
        return encode_f32(v)
    if t == "a_f16":
        return encode_f16(v)
    if t == "a_meta":
        return encode_meta(v, values["meta"], invalid=False)
    if t == "a_u8":
        return encode_bytes(v)
    if t == "amb":
        return encode_amb(v)
    raise ValueError("%s: cannot encode type %s" % (f.key, t))


def _decode_array(f, text, values, op):
    n = f.count(values)
    if n > MAX_FILE_ELEMS:
        raise ValueError("%s: more than %d values" % (f.key, MAX_FILE_ELEMS))
    if f.type == "a_f32":
        return decode_f32(text, n, f.key)
    if f.type == "a_f16":
        return decode_f16(text, n, f.key)
    if f.type == "a_meta":
        return decode_meta(text, values["meta"], n, f.key)
    if f.type == "a_u8":
        return decode_bytes(text, n, f.key)
    if f.type == "amb":
        lo, hi = op.amb_range(values)
        return decode_amb(text, n, lo, hi, f.key)
    raise ValueError("%s: not an array field" % f.key)


# ---- vector files -------------------------------------------------------------------

class Case:
    """One case of a vector file: see the module docstring."""

    __slots__ = ("op", "values", "line")

    def __init__(self, op, values, line=0):
        self.op = op            # the operation's name, e.g. 'kivi-quant'
        self.values = values    # key -> decoded value, in schema order
        self.line = line        # line number in the file

    id = property(lambda self: self.values["id"])
    level = property(lambda self: self.values["level"])
    status = property(lambda self: self.values["status"])

    def __getitem__(self, key):
        return self.values[key]

    def __contains__(self, key):
        return key in self.values

    def get(self, key, default=None):
        return self.values.get(key, default)

    def to_line(self):
        """The case line (no newline) re-encoded from the decoded values, in
        kvq's writer order: the bytes kvq gen writes for the same case."""
        op = _OPS[self.op]
        parts = ["case"]
        for f in op.fields:
            if f.role == "opt" and self.values.get(f.key) == f.names[0]:
                continue
            if f.key in self.values:
                parts.append("%s=%s" % (f.key, _encode_value(f, self.values[f.key], self.values)))
        return " ".join(parts)

    def __repr__(self):
        return "Case(%s, op=%s, level=%s, status=%d, line %d)" % (
            self.id, self.op, self.level, self.status, self.line)


class VectorFile:
    """A parsed kvq-vectors file: see the module docstring."""

    def __init__(self, path, family, levels, seed, generator, cases, trailer=None):
        self.path, self.family, self.levels = path, family, levels
        self.seed, self.generator, self.cases, self.trailer = seed, generator, cases, trailer
        self.warnings = []
        self._by_id = {c.id: c for c in cases}

    def case(self, case_id):
        return self._by_id[case_id]

    def __iter__(self):
        return iter(self.cases)

    def __len__(self):
        return len(self.cases)

    def header_lines(self):
        """The magic and header lines as kvq writes them."""
        return ["%s %d" % (VEC_MAGIC, FORMAT_VERSION), "family " + self.family,
                "levels " + self.levels, "seed 0x%016x" % self.seed, "generator " + self.generator]

    def end_line(self, case_lines=None):
        """`end <count> fnv1a64:<digest>` of the case lines (default: the cases
        re-encoded) [VEC-FMT-07]."""
        if case_lines is None:
            case_lines = [c.to_line() for c in self.cases]
        h = FNV_OFFSET
        for ln in case_lines:
            h = fnv1a64(ln + "\n", h)
        return "end %d fnv1a64:%016x" % (len(case_lines), h)

    def to_text(self):
        """The whole file as kvq writes it: header, case lines, end line."""
        lines = [c.to_line() for c in self.cases]
        return "\n".join(self.header_lines() + lines + [self.end_line(lines)]) + "\n"


def _lines(data, path, ascii_only=True):
    """(line number, text) of every line, '\\n' split and a '\\r' before it removed.
    ascii_only: a byte above 0x7f is an error of its line (vector files); else
    text is read as UTF-8, undecodable bytes kept as surrogate escapes (results
    files, whose subject names and reasons come from subjects)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if b"\0" in data:
        raise FormatError(path, 0, "contains a NUL byte (not a text file)")
    pieces = data.split(b"\n")
    last = pieces.pop()                            # after the final '\n' (or the whole file)
    out = []
    for no, b in enumerate(pieces, 1):
        if b.endswith(b"\r"):                      # a '\r' right before '\n' is ignored
            b = b[:-1]
        out.append((no, b))
    if last:
        out.append((len(pieces) + 1, last))
    for k, (no, b) in enumerate(out):
        if not ascii_only:
            out[k] = (no, b.decode("utf-8", "surrogateescape"))
            continue
        try:
            out[k] = (no, b.decode("ascii"))
        except UnicodeDecodeError:
            raise FormatError(path, no, "not ASCII text") from None
    return out


def _is_content(s):
    t = s.lstrip(" \t")
    return t != "" and not t.startswith("#")


class _Reader:
    def __init__(self, data, path, ascii_only=True):
        self.path = path
        self.lines = _lines(data, path, ascii_only)
        self.pos = 0
        self.no = 0

    def next(self):
        if self.pos >= len(self.lines):
            return None
        self.no, s = self.lines[self.pos]
        self.pos += 1
        return s

    def next_content(self):
        while True:
            s = self.next()
            if s is None or _is_content(s):
                return s

    def fail(self, what, line=None):
        raise FormatError(self.path, self.no if line is None else line, what)

    def magic(self, magic):
        s = self.next()
        if s is None:
            raise FormatError(self.path, 1, "empty file, expected '%s %d'" % (magic, FORMAT_VERSION))
        tok = [t for t in _BLANK_RE.split(s) if t]
        if len(tok) != 2 or tok[0] != magic:
            self.fail("not a %s file (first line must be '%s %d')" % (magic, magic, FORMAT_VERSION))
        if not _DEC_RE.match(tok[1]) or int(tok[1]) != FORMAT_VERSION:
            self.fail("unsupported version '%.20s' (this reader reads %d)" % (tok[1], FORMAT_VERSION))

    def header(self, key, maxlen=63):
        s = self.next_content()
        if s is None:
            raise FormatError(self.path, self.no, "missing header line '%s'" % key)
        if not s.startswith(key + " ") or len(s) == len(key) + 1:
            self.fail("expected header line '%s <value>'" % key)
        v = s[len(key) + 1:]
        if len(v) > maxlen:
            self.fail("header '%s' too long" % key)
        return v


def _split_pairs(tokens, r):
    pairs = {}
    for t in tokens:
        k, eq, v = t.partition("=")
        if not eq:
            r.fail("field '%.40s' is not key=value" % t)
        if k in pairs:
            r.fail("key '%s' given twice" % k)
        pairs[k] = v
    return pairs


def _parse_case(tokens, family, r):
    p = _split_pairs(tokens, r)
    opname = p.get("op")
    if opname is None:
        r.fail("missing key 'op'")
    op = _OPS.get(opname)
    if op is None:
        r.fail("op: unknown operation '%.40s'" % opname)
    if op.family != family:
        r.fail("op %s is not an operation of family %s" % (opname, family))
    keys = {f.key for f in op.fields}
    for k in p:
        if k not in keys:
            if any(k in {f.key for f in o.fields} for o in _OPS.values() if o.family == family):
                r.fail("key '%s' is not a field of %s" % (k, opname))
            r.fail("unknown key '%.40s'" % k)
    for f in op.fields:
        if f.role in ("case", "in") and f.key not in p:
            r.fail("missing key '%s'" % f.key)
    vals = {}
    try:
        for f in op.fields:                       # scalars of the case and the inputs
            if f.role in ("case", "in") and f.count is None:
                vals[f.key] = _decode_scalar(f, p[f.key])
            elif f.role == "opt":
                vals[f.key] = _decode_scalar(f, p[f.key]) if f.key in p else f.names[0]
        if vals["level"] not in op.levels:
            raise ValueError("level: a %s case is judged at the %s level only" % (opname, "/".join(op.levels)))
        msg = op.check(vals)
        if msg:
            raise ValueError(msg)
        for f in op.fields:
            if f.role in ("exp", "ref"):
                if vals["status"] == 0 and f.key not in p:
                    raise ValueError("missing key '%s' (status 0)" % f.key)
                if vals["status"] != 0 and f.key in p:
                    raise ValueError("key '%s' given for a case that expects an error" % f.key)
        for f in op.fields:                       # arrays, in schema order
            if f.count is not None and f.key in p:
                vals[f.key] = _decode_array(f, p[f.key], vals, op)
    except ValueError as e:
        r.fail(str(e))
    ordered = {f.key: vals[f.key] for f in op.fields if f.key in vals}
    return Case(opname, ordered, r.no)


def _generated_before(generator, version):
    """Whether the generator line names a kvq older than version (a tuple)."""
    m = re.match(r"kvq (\d+)\.(\d+)\.(\d+)", generator)
    return m is not None and tuple(int(x) for x in m.groups()) < version


def parse_vectors(data, path="<vectors>", check_digest=True):
    """Parse the text (str or bytes) of a kvq-vectors file -> VectorFile.

    check_digest=False skips the end line's FNV-1a digest (pure Python costs
    about 0.35 us a byte: some 5 s for the 15 MB standard KIVI file); its
    count and form are still checked."""
    r = _Reader(data, path)
    r.magic(VEC_MAGIC)
    family = r.header("family")
    if family not in _FAMILIES:
        r.fail("unknown family '%s' (%s)" % (family, ", ".join(_FAMILIES)))
    levels = r.header("levels")
    if levels not in _LEVEL_SETS:
        r.fail("unknown level set '%s'" % levels)
    seed_text = r.header("seed")
    if len(seed_text) != 18 or not seed_text.startswith("0x") or not _HEX_RE.match(seed_text[2:]):
        r.fail("seed must be 0x followed by 16 hex digits")
    generator = r.header("generator")
    cases, seen, trailer, digest = [], {}, None, FNV_OFFSET
    while True:
        s = r.next_content()
        if s is None:
            break
        if trailer is not None:
            r.fail("content after the 'end' line")
        if s.startswith("end") and (len(s) == 3 or s[3] == " "):
            trailer = _end_line(s, len(cases), digest if check_digest else None, r)  # [VEC-FMT-07]
            continue
        if check_digest:
            digest = fnv1a64(s + "\n", digest)
        tok = [t for t in _BLANK_RE.split(s) if t]
        if tok[0] != "case":
            r.fail("expected a 'case' line, found '%.20s'" % tok[0])
        c = _parse_case(tok[1:], family, r)
        if c.id in seen:
            r.fail("case id '%s' repeats line %d" % (c.id, seen[c.id]))
        seen[c.id] = r.no
        cases.append(c)
    if not cases:
        r.fail("no cases")
    if _generated_before(generator, (0, 4, 0)):
        # cert-step cases of kvq before 0.4.0 are sparse steps [CERT-VAR-02]
        for c in cases:
            if c.op == "cert-step":
                c.values["variant"] = "sparse"
    vf = VectorFile(path, family, levels, int(seed_text[2:], 16), generator, cases, trailer)
    if trailer is None:
        if writes_end_line(generator):
            r.fail("no end line after %d cases: the file is cut short (its generator, %s, always "
                   "writes one) [VEC-FMT-07]" % (len(cases), generator))
        msg = ("%s: no end line (generator '%s'): a copy cut at a line boundary cannot be told "
               "from the whole file [VEC-FMT-07]" % (path, generator))
        vf.warnings.append(msg)
        warnings.warn(msg, KvqFormatWarning, stacklevel=2)
    return vf


def fnv1a64(data, h=None):
    """64-bit FNV-1a of data (str: its ASCII bytes), continuing from h."""
    if isinstance(data, str):
        data = data.encode("ascii")
    h = FNV_OFFSET if h is None else h
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def writes_end_line(generator):
    """Whether a generator line names a kvq that always writes the end line
    (kvq 0.2 and later) [VEC-FMT-07]."""
    m = re.match(r"kvq\s*(\d+)\.(\d+)\.", generator)
    return bool(m) and (int(m.group(1)) > 0 or int(m.group(2)) >= 2)


def _end_line(s, ncases, digest, r):
    """`end <count> fnv1a64:<16 hex>`: the count and the digest of the case
    lines before it must agree [VEC-FMT-07]; returns the line's text."""
    tok = [t for t in _BLANK_RE.split(s) if t]
    if (len(tok) != 3 or not _DEC_RE.match(tok[1]) or int(tok[1]) >= 1 << 64
            or not tok[2].startswith("fnv1a64:") or len(tok[2]) != 24 or not _HEX_RE.match(tok[2][8:])):
        r.fail("the end line must be 'end <cases> fnv1a64:<16 hex digits>'")
    if int(tok[1]) != ncases:
        r.fail("the end line counts %s cases, the file holds %d (a file cut short or cases lost)"
               % (tok[1], ncases))
    if digest is not None and int(tok[2][8:], 16) != digest:
        r.fail("the case lines' digest is fnv1a64:%016x, the end line says %s (a case line changed)"
               % (digest, tok[2]))
    return s


def read_vectors(path, check_digest=True):
    """Read and parse a kvq-vectors file -> VectorFile (FormatError if malformed)."""
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_vectors(data, os.fspath(path), check_digest)


# ---- results files ---------------------------------------------------------------------

Result = namedtuple("Result", "id status skipped touched fields line")
Result.__doc__ = ("One result line: status None when skipped; touched: the output a failed "
                  "call wrote [VEC-RES-03] or None; fields: key -> text.")


class ResultsFile:
    def __init__(self, path, subject, unavailable, results):
        self.path, self.subject, self.unavailable = path, subject, unavailable
        self.results = results
        self._by_id = {r.id: r for r in results}

    def result(self, case_id):
        return self._by_id[case_id]

    def __iter__(self):
        return iter(self.results)

    def __len__(self):
        return len(self.results)


def parse_results(data, path="<results>"):
    """Parse the text of a kvq-results file -> ResultsFile (as kvq reads it:
    output fields stay text; they are decoded against the case's operation)."""
    r = _Reader(data, path, ascii_only=False)
    r.magic(RES_MAGIC)
    subject = r.header("subject")
    unavailable, results, seen = None, [], {}
    while True:
        s = r.next_content()
        if s is None:
            break
        if s.startswith("unavailable "):
            if results or unavailable is not None:
                r.fail("'unavailable' must come alone, before any result")
            unavailable = s[12:]
            continue
        tok = [t for t in _BLANK_RE.split(s) if t]
        if tok[0] != "result":
            r.fail("expected a 'result' line")
        if unavailable is not None:
            r.fail("a result after 'unavailable'")
        p = _split_pairs(tok[1:], r)
        for k in p:
            if not _RKEY_RE.match(k):
                r.fail("bad key '%.40s'" % k)
        rid, status, skipped = p.get("id"), p.get("status"), p.get("skipped")
        if rid is None or (status is None) == (skipped is None):
            r.fail("a result needs id= and status= (or skipped=, without status=)")
        if not _ID_RE.match(rid):
            r.fail("bad case id '%.70s'" % rid)
        if skipped is not None:
            if len(p) > 2:
                r.fail("output fields given with skipped=")
            if skipped == "":
                r.fail("skipped= needs a reason")
            res = Result(rid, None, skipped, None, {}, r.no)
        else:
            if not _DEC_RE.match(status) or int(status) > 255:
                r.fail("status: '%.40s' is not a decimal status" % status)
            touched = p.get("touched")
            fields = {k: v for k, v in p.items() if k not in ("id", "status", "touched")}
            if int(status) != 0:
                if fields:
                    r.fail("key '%s' given with a nonzero status" % next(iter(fields)))
                if touched is not None and not _RKEY_RE.match(touched):
                    r.fail("touched= needs the key of an output")
            elif touched is not None:
                r.fail("touched= belongs to a result with a nonzero status")
            res = Result(rid, int(status), None, touched, fields, r.no)
        if rid in seen:
            r.fail("result for '%s' repeats line %d" % (rid, seen[rid]))
        seen[rid] = r.no
        results.append(res)
    return ResultsFile(path, subject, unavailable, results)


def read_results(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return parse_results(data, os.fspath(path))


class ResultsWriter:
    """Writes a kvq-results file atomically: see the module docstring."""

    def __init__(self, path, subject, unavailable=None):
        path = os.fspath(path)
        if not subject or len(subject) > 63 or any(ch in subject for ch in "\r\n\0") or not subject.isascii():
            raise ValueError("subject: 1 to 63 ASCII characters on one line")
        if unavailable is not None and (not unavailable.strip() or any(ch in unavailable for ch in "\r\n\0")):
            raise ValueError("unavailable: a reason on one line")
        self.path = path
        self._tmp = None
        # As kvq writes its files [VER-RUN-04], [VER-OUT-02]: a character
        # device or a pipe is written in place, a symbolic link is followed
        # (its target replaced), a directory is an error; anything else is
        # written to a new temporary file beside it and renamed into place.
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            self._fh = open(path, "w", encoding="ascii", newline="\n")
        else:
            self._target = os.path.realpath(path)
            d = os.path.dirname(self._target)
            fd, self._tmp = tempfile.mkstemp(prefix="." + os.path.basename(self._target)[:100] + ".",
                                             suffix=".tmp", dir=d)
            self._fh = os.fdopen(fd, "w", encoding="ascii", newline="\n")
        self._ids = set()
        self._closed = False
        self._unavailable = unavailable is not None
        self._fh.write("%s %d\nsubject %s\n" % (RES_MAGIC, FORMAT_VERSION, subject))
        if unavailable is not None:
            self._fh.write("unavailable %s\n" % unavailable)

    def _id(self, case_or_id):
        rid = case_or_id.id if isinstance(case_or_id, Case) else case_or_id
        if not _ID_RE.match(rid):
            raise ValueError("bad case id %r" % (rid,))
        if rid in self._ids:
            raise ValueError("a second result for %r" % (rid,))
        if self._unavailable:
            raise ValueError("no result may follow 'unavailable'")
        self._ids.add(rid)
        return rid

    def result(self, case_or_id, status, outputs=(), touched=None):
        """`result id=... status=...` and, with status 0, the output fields;
        with a nonzero status, touched=<key> names an output the failed call
        wrote (its case then FAILs) [VEC-RES-03]."""
        if not isinstance(status, int) or not 0 <= status <= 255:
            raise ValueError("status must be an int in 0..255")
        items = list(outputs.items() if isinstance(outputs, dict) else outputs)
        if status != 0 and items:
            raise ValueError("output fields with a nonzero status")
        if touched is not None and (status == 0 or not _RKEY_RE.match(touched)):
            raise ValueError("touched: the key of an output, with a nonzero status only")
        rid = self._id(case_or_id)
        parts = ["result id=%s status=%d" % (rid, status)]
        if touched is not None:
            parts.append("touched=" + touched)
        keys = set()
        for k, v in items:
            if not _RKEY_RE.match(k) or k in ("id", "status", "skipped") or k in keys:
                raise ValueError("bad or repeated output key %r" % (k,))
            keys.add(k)
            if k == "flags" and isinstance(v, int):
                v = encode_flags(v)
            if not isinstance(v, str) or not v or _BLANK_RE.search(v) or "\n" in v or not v.isascii():
                raise ValueError("output %s: a non-empty ASCII token" % k)
            parts.append("%s=%s" % (k, v))
        self._fh.write(" ".join(parts) + "\n")

    def skipped(self, case_or_id, reason):
        """`result id=... skipped=<reason>`: SKIP, never PASS [VEC-CERT-06]."""
        if not reason or _BLANK_RE.search(reason) or "\n" in reason or "=" in reason:
            raise ValueError("skipped: one token of reason")
        self._fh.write("result id=%s skipped=%s\n" % (self._id(case_or_id), reason))

    def comment(self, text):
        for ln in str(text).splitlines() or [""]:
            self._fh.write("# %s\n" % ln)

    def close(self):
        """Finish the file and rename it into place."""
        if self._closed:
            return
        self._closed = True
        try:
            self._fh.flush()
            if self._tmp is not None:
                os.fsync(self._fh.fileno())
            self._fh.close()
            if self._tmp is not None:
                os.replace(self._tmp, self._target)
        except BaseException:
            self._remove()
            raise

    def abort(self):
        """Drop the temporary file; nothing appears under path."""
        if self._closed:
            return
        self._closed = True
        self._fh.close()
        self._remove()

    def _remove(self):
        if self._tmp is None:
            return
        try:
            os.unlink(self._tmp)
        except FileNotFoundError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.close()
        else:
            self.abort()
        return False
